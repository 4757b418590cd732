"""A fake OpenAI-compatible teacher server for tests and benchmarks/teacher_scale.py.

It answers ``POST /v1/chat/completions`` after ``latency`` seconds with a deterministic
reply (the same request, the same text and ``usage``), injects failures, and counts
what it was asked:

- ``flaky``: a share of requests (chosen by a hash of the request) answer HTTP 429 on
  their first attempt, and as many again HTTP 500 on their first two attempts, so a
  client with retries gets every answer;
- ``broken``: a predicate on the last user message; a request it holds answers HTTP 500
  on every attempt.

Counts (``GET /stats`` as JSON, or the attributes): ``posts`` (every attempt),
``answered`` (200s per request key: a key answered twice was paid twice), ``in_flight``
(requests received and not yet answered), the sums of the ``usage`` it sent.

Run alone: ``python tests/distill/teacher_server.py --port 8765 --latency 0.02 --flaky 0.05``
prints its URL and serves until killed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def request_key(body: dict) -> str:
    """What decides an answer: the messages, the seed and the sampling settings."""
    return hashlib.sha256(json.dumps([body.get("model"), body.get("messages"), body.get("seed"),
                                      body.get("temperature"), body.get("max_tokens")],
                                     sort_keys=True).encode()).hexdigest()


class TeacherServer:
    def __init__(self, latency: float = 0.0, flaky: float = 0.0, broken: Callable[[str], bool] | None = None,
                 port: int = 0, jitter: float = 0.5):
        self.latency, self.flaky, self.broken, self.jitter = latency, flaky, broken, jitter
        self.posts = 0
        self.answered: Counter[str] = Counter()
        self.attempts: Counter[str] = Counter()
        self.in_flight = 0
        self.prompt_tokens = self.completion_tokens = 0
        self.status: Counter[int] = Counter()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"       # keep-alive: the client pools its connections
            disable_nagle_algorithm = True     # headers and body are two writes: no delayed-ACK stall

            def log_message(self, *args):
                pass

            def _send(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status == 429:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path.endswith("/stats"):
                    return self._send(200, server.stats())
                self._send(200, {"object": "list", "data": [{"id": "teacher-model"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                key = request_key(body)
                with server._lock:
                    server.posts += 1
                    server.attempts[key] += 1
                    attempt = server.attempts[key]
                    server.in_flight += 1
                try:
                    status, reply = server.answer(body, key, attempt)
                    if server.latency:
                        time.sleep(server.latency * random.uniform(1 - server.jitter, 1 + server.jitter))
                    with server._lock:
                        server.status[status] += 1
                        if status == 200:
                            server.answered[key] += 1
                            server.prompt_tokens += reply["usage"]["prompt_tokens"]
                            server.completion_tokens += reply["usage"]["completion_tokens"]
                    self._send(status, reply)
                finally:
                    with server._lock:
                        server.in_flight -= 1

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 512

            def handle_error(self, request, client_address):
                if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):   # a killed client: expected
                    super().handle_error(request, client_address)

        self.httpd = Server(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def answer(self, body: dict, key: str, attempt: int) -> tuple[int, dict]:
        ask = body["messages"][-1]["content"]
        if self.broken is not None and self.broken(ask):
            return 500, {"error": {"message": "injected: this request always fails"}}
        draw = int(key[:8], 16) / 0xFFFFFFFF
        if draw < self.flaky and attempt == 1:
            return 429, {"error": {"message": "injected: rate limited"}}
        if self.flaky <= draw < 2 * self.flaky and attempt <= 2:
            return 500, {"error": {"message": "injected: server error"}}
        text = (f"<THINK>\nThe analyst asks: {ask}\n</THINK>\n<PLAN>\nAnswer with one query ({key[:8]}).\n"
                f"</PLAN>\n<CODE>\nresult = api.query(\"SELECT {int(key[:4], 16)} AS x\")\n</CODE>")
        prompt = sum(len(m["content"]) for m in body["messages"])
        return 200, {"id": f"chatcmpl-{key[:12]}", "object": "chat.completion", "model": body.get("model"),
                     "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                  "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": prompt // 4 + 1, "completion_tokens": len(text) // 4 + 1,
                               "total_tokens": prompt // 4 + len(text) // 4 + 2}}

    def stats(self) -> dict:
        with self._lock:
            return {"posts": self.posts, "answered": sum(self.answered.values()),
                    "answered_keys": len(self.answered),
                    "answered_more_than_once": sum(1 for n in self.answered.values() if n > 1),
                    "in_flight": self.in_flight, "status": {str(k): v for k, v in sorted(self.status.items())},
                    "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}

    def __enter__(self) -> TeacherServer:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--flaky", type=float, default=0.0)
    args = parser.parse_args()
    server = TeacherServer(args.latency, args.flaky, port=args.port)
    print(server.url, flush=True)
    server.httpd.serve_forever()


if __name__ == "__main__":
    main()
