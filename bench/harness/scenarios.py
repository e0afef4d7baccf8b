"""The measurements of bench/run, one function per benchmark; each returns a JSON-able dict."""

import json
import os
import re
import subprocess
import time
import urllib.request

from . import procs
from .repl import Repl


def mock_stats(base):
    with urllib.request.urlopen(f"{base}/stats", timeout=10) as r:
        return json.loads(r.read())


def cold_start(c, args, runs):
    """`hermes <args>`: median wall and peak RSS."""
    return procs.cold(c.argv(*args), c.env(), c.cwd, runs)


def oneshot(c, runs, mock_base):
    """`chat -q "turn 1"` against the 1-tool-call script: wall (around GNU time) and peak RSS
    of the same runs, after one warm-up run. The answer must be on stdout."""
    argv = c.argv("chat", "-q", "turn 1")
    check = lambda out: "ack 1 done" in out  # noqa: E731
    procs.run_wall(argv, c.env(), c.cwd, check=check)
    walls, rss, requests = [], [], []
    for _ in range(runs):
        before = mock_stats(mock_base)["requests"]
        walls.append(procs.run_wall(argv, c.env(), c.cwd, check=check)[0])
        requests.append(mock_stats(mock_base)["requests"] - before)
        rss.append(procs.peak_rss_mb(argv, c.env(), c.cwd))
    return {
        "wall_ms": procs.median(walls),
        "wall_ms_min": min(walls),
        "wall_ms_max": max(walls),
        "rss_mb": procs.median(rss),
        "model_requests_per_run": procs.median(requests),
        "runs": runs,
    }


def start_repl(c, timeout=120):
    repl = Repl(c.argv(), c.env(), c.cwd)
    repl.wait_for(c.prompt, 0, timeout)
    repl.settle(quiet=0.5, limit=10)
    return repl


def one_turn(repl, c, n):
    """Types `turn n`; returns ms from Enter to "ack n done" on screen. Then waits for the
    idle prompt and a quiet screen (not counted)."""
    start = len(repl.text)
    sent = repl.send_line(f"turn {n}")
    seen, end = repl.wait_for(f"ack {n} done", start, 120)
    repl.wait_for(c.prompt, end, 60)
    repl.settle(quiet=0.2, limit=3)
    return (seen - sent) * 1000


def turn_overhead(c, runs, turns, mock_base):
    """`runs` REPL sessions of `turns` turns each (1 tool call per turn). Per run: the sum over
    turns of (Enter → final answer on screen) minus the mock's busy time in that run, divided
    by `turns`. Reported: the median run."""
    per_turn, mock_ms, cpu = [], [], []
    for _ in range(runs):
        repl = start_repl(c)
        try:
            before = mock_stats(mock_base)["busy_ms"]
            cpu_before = procs.cpu_ms(repl.pid)
            total = sum(one_turn(repl, c, n) for n in range(1, turns + 1))
            cpu.append((procs.cpu_ms(repl.pid) - cpu_before) / turns)
            mock = mock_stats(mock_base)["busy_ms"] - before
        finally:
            repl.close(c.quit_line)
        per_turn.append((total - mock) / turns)
        mock_ms.append(mock / turns)
    return {
        "per_turn_ms": procs.median(per_turn),
        "per_turn_ms_runs": per_turn,
        "cpu_ms_per_turn": procs.median(cpu),
        "mock_ms_per_turn": procs.median(mock_ms),
        "turns": turns,
        "runs": runs,
        "driver": "REPL in a pseudo-terminal",
    }


def idle_repl(c, seconds):
    """RSS of the REPL process (and of its process tree) after `seconds` idle at the prompt."""
    repl = start_repl(c)
    try:
        time.sleep(seconds)
        main, tree = procs.tree_rss_kb(repl.pid)
    finally:
        repl.close(c.quit_line)
    return {"rss_mb": main / 1024, "tree_rss_mb": tree / 1024, "idle_s": seconds}


def soak(c, turns, every, mock_base):
    """One REPL session of `turns` turns; RSS and state.db size sampled every `every` turns.
    Growth per turn = least-squares slope over the samples from turn `every` on (the first
    turns warm allocator pools and caches)."""
    repl = start_repl(c)
    samples = []
    try:
        samples.append({"turn": 0, "rss_kb": procs.tree_rss_kb(repl.pid)[0], "db_bytes": c.db_bytes()})
        latency = []
        for n in range(1, turns + 1):
            latency.append(one_turn(repl, c, n))
            if n % every == 0:
                samples.append({
                    "turn": n,
                    "rss_kb": procs.tree_rss_kb(repl.pid)[0],
                    "db_bytes": c.db_bytes(),
                    "turn_ms_median_last": procs.median(latency[-every:]),
                })
        # Then a fresh session in the same process, for `every` * 2 more turns: if the RSS
        # stays put there, the growth above was the history (and the high-water mark of
        # requests that grow with it), not memory lost per turn.
        start = len(repl.text)
        repl.send_line("/new")
        repl.wait_for(c.prompt, start, 60)
        repl.settle(quiet=0.3, limit=5)
        after_new = procs.tree_rss_kb(repl.pid)[0]
        for n in range(turns + 1, turns + 2 * every + 1):
            one_turn(repl, c, n)
        after_more = procs.tree_rss_kb(repl.pid)[0]
    finally:
        repl.close(c.quit_line)
    tail = [s for s in samples if s["turn"] >= every]
    return {
        "turns": turns,
        "samples": samples,
        "rss_mb_first_sample": tail[0]["rss_kb"] / 1024 if tail else None,
        "rss_mb_end": samples[-1]["rss_kb"] / 1024,
        "rss_mb_after_new_session_turns": after_more / 1024,
        "rss_kb_after_new_session": after_new,
        "rss_kb_after_new_session_turns": after_more,
        "new_session_turns": 2 * every,
        "rss_growth_kb_per_turn": slope([(s["turn"], s["rss_kb"]) for s in tail]),
        "db_growth_kb_per_turn": slope([(s["turn"], s["db_bytes"] / 1024) for s in tail]),
    }


def slope(points):
    if len(points) < 2:
        return None
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    den = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else None


def store_run(argv, timeout=7200):
    done = subprocess.run(argv, capture_output=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-800:]}")
    out = json.loads(done.stdout.decode().strip().splitlines()[-1])
    out["db_mb"] = out["db_bytes"] / 1e6
    return out


def store_same_file(ours_argv, peer_argv, db, messages, rounds):
    """Both programs insert into one `state.db` (Python Hermes' schema, version 22): `rounds`
    rounds of `messages // rounds` messages each, the two taking turns (ABBA order: the peer
    starts, so its `SessionDB` creates the file as a Python-made home has it), each through its
    own API with one committed transaction per message. `*_argv` are the insert-only commands
    without `--db`, `--messages`, `--prefix`. Returns per program the mean, median and p99 per
    message over all its rounds, and the file size at the end."""
    per_round = max(messages // rounds, 1)
    runs = {"ours": [], "peer": []}
    for r in range(rounds):
        order = ["peer", "ours"] if r % 2 == 0 else ["ours", "peer"]
        for who in order:
            argv = (ours_argv if who == "ours" else peer_argv) + [
                "--db", str(db), "--messages", str(per_round), "--prefix", f"{who}r{r}"]
            out = store_run(argv)
            runs[who].append(out)
    size = sum((db.parent / (db.name + s)).stat().st_size
               for s in ("", "-wal", "-shm") if (db.parent / (db.name + s)).exists())

    def summary(rs):
        total = sum(x["messages"] for x in rs)
        return {
            "messages": total,
            "rounds": len(rs),
            "insert_us_per_message": sum(x["insert_s"] for x in rs) * 1e6 / max(total, 1),
            # The median of the rounds' medians and the worst round's p99.
            "insert_p50_us": sorted(x["insert_p50_us"] for x in rs)[len(rs) // 2],
            "insert_p99_us": max(x["insert_p99_us"] for x in rs),
            "per_round_us": [x["insert_us_per_message"] for x in rs],
            "db_mb_at_end": size / 1e6,
        }
    return {"ours": summary(runs["ours"]), "peer": summary(runs["peer"])}


def parse_local(text):
    """Numbers of bench/local_model.sh's output."""
    grab = lambda key: re.search(rf"^{key}:\s+([0-9.]+)", text, re.M)  # noqa: E731
    load, prefill, decode = grab("load"), grab("prefill"), grab("decode")
    threads = re.search(r"^threads:\s+(\d+)", text, re.M)
    context = re.search(r"^context:\s+(\d+)", text, re.M)
    rss = re.search(r"^rss:\s+([0-9.]+) MB \(peak ([0-9.]+) MB\)", text, re.M)
    if not (prefill and decode):
        return {"skipped": f"unexpected output: {text[-300:]!r}"}
    return {
        "load_s": float(load.group(1)) if load else None,
        "prefill_tok_s": float(prefill.group(1)),
        "decode_tok_s": float(decode.group(1)),
        "threads": int(threads.group(1)) if threads else None,
        "context_tokens": int(context.group(1)) if context else None,
        "rss_mb": float(rss.group(1)) if rss else None,
        "peak_rss_mb": float(rss.group(2)) if rss else None,
    }


def parse_inprocess(text):
    m = re.search(r"median ([0-9.]+) µs, min ([0-9.]+) µs, max ([0-9.]+) µs", text)
    if not m:
        return {"skipped": f"unexpected output: {text[-300:]!r}"}
    cpu = re.search(r"process CPU time per turn [^:]*: ([0-9.]+) µs", text)
    return {"per_turn_ms": float(m.group(1)) / 1000, "min_ms": float(m.group(2)) / 1000,
            "max_ms": float(m.group(3)) / 1000,
            "cpu_ms_per_turn": float(cpu.group(1)) / 1000 if cpu else None}


def local_chat(hermes_bin, gguf, runs):
    """`hermes chat -q "What is the capital of France?"` end to end on the embedded model
    (issue 19): the first run after installing the model (empty prompt cache), then `runs`
    warm runs (the saved prefix is reused), for the default tools and for `-t file,terminal`;
    peak RSS of a warm run and the size of one saved prefix."""
    import tempfile
    from pathlib import Path
    question = ["chat", "-q", "What is the capital of France?"]
    out = {}
    for label, extra in (("default", []), ("file_terminal", ["-t", "file,terminal"])):
        with tempfile.TemporaryDirectory(prefix="hermes-bench-local-") as tmp:
            home = Path(tmp) / "home"
            (home / "models").mkdir(parents=True)
            os.symlink(gguf, home / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf")
            env = {"HERMES_HOME": str(home), "PATH": os.environ.get("PATH", ""),
                   "HOME": tmp}
            argv = [str(hermes_bin), *question, *extra]
            ok = lambda text: "Paris" in text  # noqa: E731
            first, _ = procs.run_wall(argv, env, tmp, check=ok)
            walls = [procs.run_wall(argv, env, tmp, check=ok)[0] for _ in range(runs)]
            rss = procs.peak_rss_mb(argv, env, tmp)
            states = list((home / "cache" / "prompt").glob("*.state"))
            entry = max((s.stat().st_size for s in states), default=0)
            repl_ms = local_repl_answer(hermes_bin, extra, env, tmp)
            out[label] = {
                "repl_first_answer_ms": repl_ms,
                "first_run_ms": first,
                "warm_ms": procs.median(walls),
                "warm_ms_min": min(walls),
                "warm_ms_max": max(walls),
                "peak_rss_mb": rss,
                "cache_entries": len(states),
                "cache_entry_mb": entry / (1024 * 1024),
                "runs": runs,
            }
    return out


def llamacpp_venv():
    """The llama-cpp-python venv that `scripts/llamacpp-server-check.sh` sets up (its
    `HERMES_PEER_CACHE`), or None when it is missing."""
    from pathlib import Path
    cache = os.environ.get("HERMES_PEER_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "hermes-peer")
    python = Path(cache) / "llamacpp-venv" / "bin" / "python"
    if not python.exists():
        return None
    probe = subprocess.run([str(python), "-c", "import llama_cpp.server, llama_cpp; print(llama_cpp.__version__)"],
                           capture_output=True, text=True)
    return (python, probe.stdout.strip()) if probe.returncode == 0 else None


def local_chat_peer(hermes_bin, gguf, runs, n_ctx):
    """The peer figure of issue 19: the same question, through the same hermes binary, to
    llama-cpp-python's OpenAI-compatible server on loopback serving the same GGUF with the
    same context size and thread count. The server keeps the last prompt's KV state in
    memory, so its warm runs reuse the shared prefix as ours do. Rows: `-t file,terminal`
    (the same request as ours) and hermes' default tools for any OpenAI-compatible server
    (`hermes-cli`, what a user of a llama.cpp server gets without `-t`)."""
    import socket
    import tempfile
    from pathlib import Path
    found = llamacpp_venv()
    if found is None:
        return {"skipped": "no llama-cpp-python venv (run scripts/llamacpp-server-check.sh once)"}
    python, version = found
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory(prefix="hermes-bench-llamacpp-") as tmp:
        log = open(Path(tmp) / "server.log", "w")
        server = subprocess.Popen(
            [str(python), "-m", "llama_cpp.server", "--model", gguf, "--model_alias", "smollm2-135m",
             "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx),
             "--n_threads", str(os.cpu_count() or 1)],
            stdout=log, stderr=subprocess.STDOUT)
        try:
            base = f"http://127.0.0.1:{port}/v1"
            deadline = time.time() + 120
            while True:
                try:
                    with urllib.request.urlopen(f"{base}/models", timeout=2):
                        break
                except OSError:
                    if server.poll() is not None or time.time() > deadline:
                        return {"skipped": "llama-cpp-python server did not start: "
                                + (Path(tmp) / "server.log").read_text()[-300:]}
                    time.sleep(0.25)
            out = {"server": f"llama-cpp-python {version}", "n_ctx": n_ctx}
            # The server renders the conversation and the tools with its own chat handler, not
            # hermes' local prompt, and SmolLM2-135M then often misses "Paris": the figure is
            # the time of a whole answer, whatever it says; the answer is recorded with it.
            ok = lambda text: bool(text.strip())  # noqa: E731
            for label, extra in (("file_terminal", ["-t", "file,terminal", "--prompt-profile", "compact"]),
                                 ("memory", ["-t", "memory", "--prompt-profile", "compact"])):
                home = Path(tmp) / f"home-{label}"
                home.mkdir()
                env = {"HERMES_HOME": str(home), "PATH": os.environ.get("PATH", ""), "HOME": tmp}
                argv = [str(hermes_bin), "chat", "-q", "What is the capital of France?",
                        "--provider", "custom", "--base-url", base, "--model", "smollm2-135m", *extra]
                first, answer = procs.run_wall(argv, env, tmp, check=ok)
                walls = [procs.run_wall(argv, env, tmp, check=ok)[0] for _ in range(runs)]
                out[label] = {"first_run_ms": first, "warm_ms": procs.median(walls),
                              "warm_ms_min": min(walls), "warm_ms_max": max(walls), "runs": runs,
                              "answer": str(answer).strip()[:200]}
            return out
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
            log.close()


def local_repl_answer(hermes_bin, extra, env, cwd):
    """REPL on the embedded model, cache warm: ms from Enter to the answer's "Paris" on
    screen (the answer is 8 tokens, so this is the first token plus ~60 ms of decode)."""
    repl = Repl([str(hermes_bin), *extra], env, cwd)
    try:
        repl.wait_for("❯ ", 0, 120)
        repl.settle(quiet=0.5, limit=10)
        start = len(repl.text)
        sent = repl.send_line("What is the capital of France?")
        seen, _ = repl.wait_for("Paris", start, 120)
        return (seen - sent) * 1000
    finally:
        repl.close()


def pg_migrate(hermes_bin, store_bin, dsn, work, messages):
    """`hermes sessiondb migrate` speed: a state.db of `messages` messages (the store
    benchmark's corpus, insert-only) copied into a fresh database of the server `dsn`
    names, verified as the command verifies every copy. Returns messages/s over the
    command's wall time."""
    work.mkdir(parents=True, exist_ok=True)
    db = work / "state.db"
    store_run([str(store_bin), "--insert-only", "--db", str(db), "--messages", str(messages)])
    target = f"bench_migrate_{os.getpid()}"
    subprocess.run(["psql", dsn, "-q", "-c", f"CREATE DATABASE {target}"], check=True,
                   capture_output=True)
    to = dsn.rsplit("/", 1)[0] + "/" + target
    home = work / "home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, "HERMES_HOME": str(home), "HOME": str(home)}
    try:
        start = time.perf_counter()
        done = subprocess.run([str(hermes_bin), "sessiondb", "migrate", "--from", f"sqlite://{db}",
                               "--to", to], capture_output=True, text=True, env=env, timeout=7200)
        wall = time.perf_counter() - start
        if done.returncode != 0:
            raise RuntimeError(f"migrate exited {done.returncode}: {done.stderr[-800:]}")
    finally:
        subprocess.run(["psql", dsn, "-q", "-c", f"DROP DATABASE IF EXISTS {target}"],
                       capture_output=True)
    return {"messages": messages, "wall_s": wall, "messages_per_s": messages / wall}
