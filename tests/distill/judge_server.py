"""A tiny OpenAI-compatible judge server for tests: canned verdicts, counted requests.

``mode`` is ``json`` (a verdict derived from the prompt: fail when the plan names a
physical table or SQL, plus every seventh prompt malformed) or ``malformed`` (never
JSON). ``fail_after`` makes it answer HTTP 503 after that many completions, as a
server going away would.
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class JudgeServer:
    def __init__(self, mode: str = "json", fail_after: int | None = None):
        self.mode, self.fail_after, self.requests = mode, fail_after, 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._send(200, {"object": "list", "data": [{"id": "judge-model"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server._lock:
                    server.requests += 1
                    if server.fail_after is not None and server.requests > server.fail_after:
                        return self._send(503, {"error": "going away"})
                prompt = body["messages"][-1]["content"]
                self._send(200, {"choices": [{"message": {"role": "assistant", "content": server.reply(prompt)},
                                              "finish_reason": "stop"}],
                                 "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": 12}})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def reply(self, prompt: str) -> str:
        if self.mode == "malformed" or int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % 7 == 0:
            return "VERDICT: PASS"
        plan = prompt.split("PLAN:", 1)[-1].split("CODE:", 1)[0]
        leak = any(word in plan for word in ("SELECT", "_fact", "_dim", "adw."))
        return json.dumps({"verdict": "fail" if leak else "pass",
                           "reason": "the plan leaks schema names" if leak else "the plan answers the question"})

    def __enter__(self) -> JudgeServer:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
