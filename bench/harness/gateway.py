"""Gateway memory (issue 6 item 1, issue 7 "Memory"): the release binary's `hermes gateway run`
serving the signed webhook adapter on loopback, replies POSTed to a callback server in this
process, the mock model as its `custom` provider (model `bench-plain`: one text answer per
call, so a turn stores 2 messages).

Phase 1 routes `sessions` chats × `turns` turns (2 × `turns` stored messages per session)
with `gateway.agent_cache_size: 1` — the smallest cache the gateway accepts, so after the
last reply at most one agent stays live — then reads the RSS after `settle_s` seconds idle.
Phase 2 restarts the gateway on the same `HERMES_HOME` once per N in `live`, with
`agent_cache_size: N`, routes one more message to every chat (each agent is rebuilt from the
store, the N most recent stay cached) and reads the RSS after `settle_s` seconds: N live agents
on top of the same routed sessions. Within a chat, a message is sent only after the reply to
the previous one arrived (the default busy mode would otherwise interrupt the running turn);
`concurrency` chats are in flight at once.

The settle time is meant to be longer than the gateway's `idle_release_after` (default 60 s),
so the idle figures are taken after the gateway gave free heap and code pages back
(`crates/hermes-gateway/src/idle.rs`); `after_routing_*` is the RSS while it was serving.
"""

import hashlib
import hmac
import http.client
import json
import socket
import sqlite3
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from . import procs

SECRET = "bench-webhook-secret"

CONFIG = """model:
  provider: custom
  base_url: {base_url}
  default: bench-plain
gateway:
  agent_cache_size: {cache}
{extra}"""


class Callbacks:
    """The callback receiver: counts replies per chat id and wakes waiters."""

    def __init__(self):
        self.cond = threading.Condition()
        self.replies = {}
        self.total = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    chat = str(json.loads(body).get("chat_id"))
                except (ValueError, AttributeError):
                    chat = "?"
                reply = b'{"ok": true}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)
                with outer.cond:
                    outer.replies[chat] = outer.replies.get(chat, 0) + 1
                    outer.total += 1
                    outer.cond.notify_all()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/callback"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def count(self, chat):
        with self.cond:
            return self.replies.get(chat, 0)

    def wait_more(self, chat, seen, timeout):
        """Waits until chat `chat` has more than `seen` replies."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while self.replies.get(chat, 0) <= seen:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(f"no reply for chat {chat} within {timeout} s")
                self.cond.wait(left)

    def close(self):
        self.server.shutdown()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class GatewayProc:
    """`hermes gateway run` with the webhook adapter on `port`."""

    def __init__(self, c, port, callback_url, log_path, extra_env=None):
        self.port = port
        env = {
            **c.env(),
            **(extra_env or {}),
            "WEBHOOK_SECRET": SECRET,
            "WEBHOOK_PORT": str(port),
            "WEBHOOK_CALLBACK_URL": callback_url,
            "WEBHOOK_ALLOW_ALL_USERS": "true",
        }
        self.log = open(log_path, "ab")
        self.proc = subprocess.Popen(c.argv("gateway", "run"), env=env, cwd=c.cwd,
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gateway exited with {self.proc.returncode}; log: {log_path}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"gateway did not listen on {port} within 60 s")
                time.sleep(0.05)
        self.conn = threading.local()

    def post(self, chat, text):
        body = json.dumps({"chat_id": chat, "user_id": f"u{chat}", "text": text}).encode()
        sig = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request("POST", "/webhook", body, {"Content-Type": "application/json",
                                                     "X-Hermes-Signature": sig})
            status = conn.getresponse().status
        finally:
            conn.close()
        if status != 202:
            raise RuntimeError(f"webhook answered {status} for chat {chat}")

    def rss_mb(self):
        return procs.tree_rss_kb(self.proc.pid)[0] / 1024

    def sample(self, prefix, out):
        """Records RSS, and its anonymous and file-backed parts, in MB under `prefix`."""
        anon, file = procs.rss_split_kb(self.proc.pid)
        out[f"{prefix}rss_mb"] = self.rss_mb()
        out[f"{prefix}anon_mb"] = anon / 1024
        out[f"{prefix}file_mb"] = file / 1024

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def drive(gw, callbacks, chats, turns, concurrency, label):
    """Sends `turns` messages to each chat (each after the previous reply); returns the wall
    time in seconds."""
    def one_chat(chat):
        for t in range(turns):
            seen = callbacks.count(chat)
            gw.post(chat, f"{label} {t + 1} in chat {chat}")
            callbacks.wait_more(chat, seen, 120)

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        for f in [pool.submit(one_chat, chat) for chat in chats]:
            f.result()
    return time.perf_counter() - start


def stored_messages(home):
    """(webhook sessions, their messages, minimum messages in one) from state.db, read-only."""
    db = sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True)
    try:
        rows = db.execute(
            "SELECT s.id, count(m.id) FROM sessions s LEFT JOIN messages m ON m.session_id = s.id "
            "WHERE s.source = 'webhook' GROUP BY s.id").fetchall()
    finally:
        db.close()
    counts = [n for _, n in rows]
    return len(counts), sum(counts), (min(counts) if counts else 0)


def gateway_memory(c, mock_base, sessions, turns, live, settle_s, concurrency=16, extra_env=None,
                   idle_release_after=None):
    """See the module docstring. Returns RSS figures in MB and the routing throughput.
    `extra_env` is added to the gateway's environment (for example `GLIBC_TUNABLES`);
    `idle_release_after` (seconds) is written to config.yaml when given (0 turns the idle
    release off), otherwise the gateway's default applies."""
    extra = ("" if idle_release_after is None
             else f"  idle_release_after: {idle_release_after}\n")
    home = Path(c.home)
    callbacks = Callbacks()
    chats = [str(100000 + i) for i in range(sessions)]
    out = {"sessions": sessions, "messages_per_session": 2 * turns, "settle_s": settle_s,
           "idle_release_after_s": idle_release_after,
           "concurrency": concurrency, "live": []}
    try:
        (home / "config.yaml").write_text(CONFIG.format(base_url=f"{mock_base}/v1", cache=1, extra=extra))
        gw = GatewayProc(c, free_port(), callbacks.url, home / "gateway-bench.log", extra_env)
        try:
            time.sleep(min(settle_s, 5))
            gw.sample("fresh_", out)
            wall = drive(gw, callbacks, chats, turns, concurrency, "message")
            out["routing_s"] = wall
            out["turns_per_s"] = sessions * turns / wall
            gw.sample("after_routing_", out)
            time.sleep(settle_s)
            gw.sample("idle_", out)
        finally:
            gw.stop()
        n_sessions, n_messages, fewest = stored_messages(home)
        out.update(stored_sessions=n_sessions, stored_messages=n_messages,
                   fewest_messages_in_a_session=fewest)
        if n_sessions != sessions or fewest < 2 * turns:
            raise RuntimeError(f"state.db has {n_sessions} webhook sessions, the smallest with "
                               f"{fewest} messages; expected {sessions} with {2 * turns}")
        for n in live:
            (home / "config.yaml").write_text(CONFIG.format(base_url=f"{mock_base}/v1", cache=n, extra=extra))
            gw = GatewayProc(c, free_port(), callbacks.url, home / "gateway-bench.log", extra_env)
            try:
                drive(gw, callbacks, chats, 1, concurrency, "again")
                time.sleep(settle_s)
                sample = {"agents": n}
                gw.sample("", sample)
                out["live"].append(sample)
            finally:
                gw.stop()
    finally:
        callbacks.close()
    return out
