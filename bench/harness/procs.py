"""Process measurements: wall time, peak RSS (GNU time), RSS of a running process tree."""

import os
import shutil
import statistics
import subprocess
import time


def gnu_time():
    """Path of GNU time (`apt-get install time`), or None."""
    if os.access("/usr/bin/time", os.X_OK):
        return "/usr/bin/time"
    return shutil.which("gtime")


def run_wall(argv, env, cwd, stdin=subprocess.DEVNULL, check=None):
    """Runs `argv` once; returns (wall ms, stdout text). `check(stdout)` must hold."""
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, stdin=stdin, capture_output=True, timeout=600)
    wall = (time.perf_counter() - start) * 1000
    out = done.stdout.decode("utf-8", "replace")
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", "replace")[-800:]
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {err}")
    if check is not None and not check(out):
        raise RuntimeError(f"{' '.join(argv)}: unexpected output {out[-400:]!r}")
    return wall, out


def peak_rss_mb(argv, env, cwd):
    """Peak RSS in MB of one run of `argv` (GNU time's %M: the max over the process and the
    descendants it waited for), or None without GNU time. A child spawned from Python would
    start as a copy of the Python process, so its own rusage would count Python's pages."""
    gt = gnu_time()
    if gt is None:
        return None
    done = subprocess.run(
        [gt, "-f", "%M", *argv], env=env, cwd=cwd, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=600,
    )
    last = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1]
    return int(last) / 1024


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def cold(argv, env, cwd, runs, check=None):
    """Median wall (ms) and median peak RSS (MB) of `runs` runs after one warm-up run."""
    run_wall(argv, env, cwd, check=check)
    walls = [run_wall(argv, env, cwd, check=check)[0] for _ in range(runs)]
    rss = [peak_rss_mb(argv, env, cwd) for _ in range(runs)]
    return {
        "wall_ms": median(walls),
        "wall_ms_min": min(walls),
        "wall_ms_max": max(walls),
        "rss_mb": median(rss),
        "runs": runs,
    }


def _children():
    """Map pid -> list of child pids, from /proc."""
    kids = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def rss_kb(pid):
    """VmRSS of one process in KB (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_split_kb(pid):
    """(anonymous RSS, file-backed RSS) of one process in KB (`RssAnon`, `RssFile`;
    shared memory is left out): heap and stacks versus mapped pages of the binary and
    its libraries, which other processes running the same binary share."""
    found = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key = line.split(":", 1)[0]
                if key in ("RssAnon", "RssFile"):
                    found[key] = int(line.split()[1])
    except OSError:
        pass
    return found.get("RssAnon", 0), found.get("RssFile", 0)


def tree_rss_kb(pid):
    """(RSS of `pid`, RSS summed over `pid` and all its descendants), in KB."""
    kids = _children()
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        total += rss_kb(p)
        stack.extend(kids.get(p, []))
    return rss_kb(pid), total


def cpu_ms(pid):
    """User + system CPU time of `pid` so far, in ms (/proc/<pid>/stat, clock-tick resolution)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12])  # utime, stime
    return ticks * 1000 / os.sysconf("SC_CLK_TCK")
