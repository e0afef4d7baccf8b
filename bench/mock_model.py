"""Instant OpenAI-compatible model server for the side-by-side benchmarks (loopback only).

    python3 bench/mock_model.py [--port 0]      # prints "PORT <n>" on stdout once listening

Both hermes (Rust) and Python Hermes talk to it as a `custom` provider at
http://127.0.0.1:<port>/v1. The reply depends only on the request, so any number of
conversations can run against it:

- model `bench-plain`: every call answers with the text "Plain answer.".
- model `bench-tool`: a call whose last message is from the user answers with ONE tool call,
  `read_file {"path": "bench.txt"}`; a call whose last message is a tool result answers with
  the final text "ack <N> done", where <N> is the number in the latest user message
  ("turn 17" gives "ack 17 done"), so a driver can see which turn finished.
- any call that offers no tools (title generation and other side calls) gets a short text.

Streaming (`"stream": true`, SSE with a usage chunk) and plain JSON responses are both served.
`GET /stats` returns {"requests": n, "busy_ms": t}: the number of completion requests and the
total time the server spent on them, from the moment a request's first line was read (header
parsing, which is slow in Python's http.server, included) to the last byte written, which the
harness subtracts as "mock time". `POST /reset` zeroes both.
"""

import argparse
import json
import re
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
STATS = {"requests": 0, "busy_ns": 0}
TURN_RE = re.compile(r"(\d+)")


def _text_of(message):
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def decide(request):
    """Returns ("text", str) or ("tool", name, arguments_json) for one completion request."""
    model = request.get("model", "")
    messages = request.get("messages") or []
    if not request.get("tools") or model.endswith("plain"):
        return ("text", "Plain answer." if model.endswith("plain") else "Bench side answer.")
    last = messages[-1] if messages else {}
    if last.get("role") == "user":
        return ("tool", "read_file", json.dumps({"path": "bench.txt"}))
    turn = ""
    for message in reversed(messages):
        if message.get("role") == "user":
            found = TURN_RE.findall(_text_of(message))
            turn = found[-1] if found else ""
            break
    return ("text", f"ack {turn} done")


def _usage():
    return {"prompt_tokens": 120, "completion_tokens": 8, "total_tokens": 128}


def _chunk(ident, model, delta, finish=None):
    return {
        "id": ident,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def stream_body(reply, model, ident, with_usage):
    events = [_chunk(ident, model, {"role": "assistant", "content": ""})]
    if reply[0] == "text":
        words = reply[1].split(" ")
        for i, word in enumerate(words):
            events.append(_chunk(ident, model, {"content": word if i == 0 else " " + word}))
        events.append(_chunk(ident, model, {}, "stop"))
    else:
        call = {
            "index": 0,
            "id": f"call_{ident[-8:]}",
            "type": "function",
            "function": {"name": reply[1], "arguments": reply[2]},
        }
        events.append(_chunk(ident, model, {"tool_calls": [call]}))
        events.append(_chunk(ident, model, {}, "tool_calls"))
    if with_usage:
        last = _chunk(ident, model, {})
        last["choices"] = []
        last["usage"] = _usage()
        events.append(last)
    out = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    return out.encode()


def json_body(reply, model, ident):
    message = {"role": "assistant", "content": None}
    finish = "stop"
    if reply[0] == "text":
        message["content"] = reply[1]
    else:
        finish = "tool_calls"
        message["tool_calls"] = [
            {
                "id": f"call_{ident[-8:]}",
                "type": "function",
                "function": {"name": reply[1], "arguments": reply[2]},
            }
        ]
    body = {
        "id": ident,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": _usage(),
    }
    return json.dumps(body).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_args):
        pass

    def parse_request(self):
        # Called right after the request line arrived: the mock's time starts here, so
        # parsing the headers counts as the mock's, not as the client's.
        self.arrived_ns = time.perf_counter_ns()
        return super().parse_request()

    def setup(self):
        super().setup()
        # Without this, the header and body writes meet Nagle's algorithm and the client's
        # delayed ACK: ~40 ms added to every response, which is not the model's "instant".
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _send(self, status, body, content_type="application/json"):
        head = (
            f"HTTP/1.1 {status} {'OK' if status == 200 else 'Not Found'}\r\n"
            f"Content-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        self.wfile.write(head + body)
        self.wfile.flush()

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            models = [{"id": m, "object": "model", "owned_by": "bench"} for m in ("bench-tool", "bench-plain")]
            self._send(200, json.dumps({"object": "list", "data": models}).encode())
        elif self.path == "/stats":
            with LOCK:
                stats = {"requests": STATS["requests"], "busy_ms": STATS["busy_ns"] / 1e6}
            self._send(200, json.dumps(stats).encode())
        else:
            self._send(404, b'{"error": {"message": "not found"}}')

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path == "/reset":
            with LOCK:
                STATS["requests"] = 0
                STATS["busy_ns"] = 0
            self._send(200, b"{}")
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, b'{"error": {"message": "not found"}}')
            return
        start = getattr(self, "arrived_ns", None) or time.perf_counter_ns()
        request = json.loads(raw or b"{}")
        model = request.get("model", "bench-tool")
        ident = f"chatcmpl-{start:x}"
        reply = decide(request)
        if request.get("stream"):
            with_usage = bool((request.get("stream_options") or {}).get("include_usage", True))
            self._send(200, stream_body(reply, model, ident, with_usage), "text/event-stream")
        else:
            self._send(200, json_body(reply, model, ident))
        spent = time.perf_counter_ns() - start
        with LOCK:
            STATS["requests"] += 1
            STATS["busy_ns"] += spent


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
