"""API turns through gateway replicas (issue 21 "Benchmarks"): N release-build `hermes gateway
run` processes with the API server on loopback, all on one store, the mock model as their
`custom` provider (model `bench-plain`: one text answer per call, so a turn stores 2
messages). The client spreads `turns` non-streaming `/v1/chat/completions` requests over the
replicas round-robin (what a load balancer does), `concurrency` in flight, over `sessions`
API sessions (`X-Hermes-Session-Id`; each client worker owns `sessions / concurrency` of them
and sends a session's next turn only after the last one was answered, since the API refuses
a second turn of a busy session with 409), so consecutive turns of a session land on
different replicas and each takes the session's lease and reads its history from the store.

Reported per configuration: turns/s over the wall time of the whole batch, and the p50/p99
latency of one turn as the client saw it. Configurations: one process on SQLite (its own
state.db), and 1, 2 and 3 replicas on PostgreSQL (a fresh schema each).
"""
import http.client
import json
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import homes
from .gateway import free_port

API_KEY = "bench-api-key"
CONFIG = """model:
  provider: custom
  base_url: {base_url}
  default: bench-plain
{store}"""


class ApiReplica:
    """One `hermes gateway run` serving only the API server on `port`."""

    def __init__(self, c, port, log_path):
        self.port = port
        env = {**c.env(), "API_SERVER_ENABLED": "true", "API_SERVER_PORT": str(port),
               "API_SERVER_KEY": API_KEY}
        self.log = open(log_path, "ab")
        self.proc = subprocess.Popen(c.argv("gateway", "run"), env=env, cwd=c.cwd,
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 60
        while not self.ready():
            if self.proc.poll() is not None:
                raise RuntimeError(f"gateway exited with {self.proc.returncode}; log: {log_path}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the API server did not answer on {port} within 60 s")
            time.sleep(0.05)

    def ready(self):
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
            conn.request("GET", "/health/ready")
            ok = conn.getresponse().status == 200
            conn.close()
            return ok
        except OSError:
            return False

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def one_turn(port, session, text):
    """One API turn; its latency in seconds. Raises on anything but a 200 with an answer."""
    body = json.dumps({"model": "hermes-agent",
                       "messages": [{"role": "user", "content": text}]}).encode()
    started = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("POST", "/v1/chat/completions", body, {
            "Content-Type": "application/json", "Authorization": f"Bearer {API_KEY}",
            "X-Hermes-Session-Id": session})
        response = conn.getresponse()
        payload = response.read()
    finally:
        conn.close()
    elapsed = time.perf_counter() - started
    if response.status != 200:
        raise RuntimeError(f"API turn answered {response.status}: {payload[:200]!r}")
    if not json.loads(payload)["choices"][0]["message"]["content"]:
        raise RuntimeError("API turn without an answer")
    return elapsed


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def api_turns(hermes_bin, mock_base, work, replicas, store, turns, sessions, concurrency):
    """Runs one configuration; `store` is the config's `sessiondb` section ('' for SQLite)."""
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    procs = []
    try:
        for i in range(replicas):
            c = homes.ours(hermes_bin, f"{mock_base}/v1", work)
            (c.home / "config.yaml").write_text(CONFIG.format(base_url=f"{mock_base}/v1", store=store))
            procs.append(ApiReplica(c, free_port(), work / f"replica-{i}.log"))
        # Warm-up: every replica serves one turn of its own first (agent assembly, pools).
        for i, p in enumerate(procs):
            one_turn(p.port, f"warm-{i}", "warm up")
        counter = iter(range(turns))
        lock = threading.Lock()

        def next_turn():
            with lock:
                return next(counter, None)

        latencies = []
        own = max(1, sessions // concurrency)

        def worker(w):
            k = 0
            while (n := next_turn()) is not None:
                port = procs[n % len(procs)].port
                session = f"s{w}-{k % own}"
                k += 1
                latencies.append(one_turn(port, session, f"turn {n}"))

        started = time.perf_counter()
        with ThreadPoolExecutor(concurrency) as pool:
            for f in [pool.submit(worker, w) for w in range(concurrency)]:
                f.result()
        wall = time.perf_counter() - started
        return {
            "replicas": replicas,
            "turns": turns,
            "sessions": sessions,
            "concurrency": concurrency,
            "turns_per_s": turns / wall,
            "p50_ms": percentile(latencies, 0.50) * 1000,
            "p99_ms": percentile(latencies, 0.99) * 1000,
        }
    finally:
        for p in procs:
            p.stop()
