"""Wall time and peak RSS of a whole command, median of N runs (default 21).

    python3 bench/process_stats.py [-n N] COMMAND [ARGS...]

Peak RSS comes from wait4()'s rusage of each child (ru_maxrss, KiB on Linux).
"""
import os
import statistics
import subprocess
import sys
import time


def run_once(cmd):
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)} failed with status {status}")
    return wall, usage.ru_maxrss


def main():
    args = sys.argv[1:]
    n = 21
    if args[:1] == ["-n"]:
        n, args = int(args[1]), args[2:]
    run_once(args)  # warm the page cache
    samples = [run_once(args) for _ in range(n)]
    walls = sorted(s[0] * 1000 for s in samples)
    rss = sorted(s[1] / 1024 for s in samples)
    print(
        f"{' '.join(args)}: wall median {statistics.median(walls):.2f} ms "
        f"(min {walls[0]:.2f}, max {walls[-1]:.2f}); peak RSS median {statistics.median(rss):.1f} MB "
        f"over {n} runs"
    )


if __name__ == "__main__":
    main()
