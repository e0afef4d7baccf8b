"""Wall time and peak RSS of a whole command, median of N runs (default 21).

    python3 bench/process_stats.py [-n N] COMMAND [ARGS...]

Wall time: measured around a direct spawn. Peak RSS: from GNU time (`/usr/bin/time -f %M`,
Debian package `time`) in separate runs — a child spawned by Python starts as a copy of the
Python process, so its own rusage would report Python's resident pages, not the command's.
"""
import os
import shutil
import statistics
import subprocess
import sys
import time


def wall_once(cmd):
    start = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed with exit code {done.returncode}")
    return wall * 1000


def rss_once(gnu_time, cmd):
    done = subprocess.run(
        [gnu_time, "-f", "%M", *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    return int(done.stderr.strip().splitlines()[-1]) / 1024


def main():
    args = sys.argv[1:]
    n = 21
    if args[:1] == ["-n"]:
        n, args = int(args[1]), args[2:]
    wall_once(args)  # warm the page cache
    walls = sorted(wall_once(args) for _ in range(n))
    line = (
        f"{' '.join(args)}: wall median {statistics.median(walls):.2f} ms "
        f"(min {walls[0]:.2f}, max {walls[-1]:.2f})"
    )
    gnu_time = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else shutil.which("gtime")
    if gnu_time:
        rss = sorted(rss_once(gnu_time, args) for _ in range(n))
        line += f"; peak RSS median {statistics.median(rss):.1f} MB"
    else:
        line += "; peak RSS not measured (install GNU time: apt-get install time)"
    print(line + f" over {n} runs")


if __name__ == "__main__":
    main()
