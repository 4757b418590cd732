"""A teacher behind any OpenAI-compatible `/v1/chat/completions` endpoint.

A vLLM server, `transformers serve`, or a hosted provider, asked through one pooled
`httpx.Client` (keep-alive connections, at most ``concurrency`` of them). The teacher
block's settings map onto it: ``timeout`` is the per-request read/write timeout (the
connect timeout is the shorter of it and 10 s), ``concurrency`` the requests in flight
and the pool's size, ``max_retries`` the retries of one request, with exponential
backoff (and the server's ``Retry-After``, up to 30 s) on 429, 5xx, timeouts and
connection errors. Before any work, ``GET /v1/models`` with a short timeout checks that
the endpoint answers, so a wrong URL fails in seconds with a message naming the URL.

A request that still fails after its retries raises `RequestFailed`, as does one the
server refuses for itself (HTTP 400, 413, 422: e.g. a prompt over the model's context);
the distill step records and counts it and goes on (``teacher { max_failed SHARE }``).
A refusal that every request would get (401, 403, 404: the key, the model) stops at once.

The base URL is ``base_url`` or the environment variable named by ``base_url_env``;
the API key (optional for local servers) comes from the variable named by
``api_key_env``.
"""

from __future__ import annotations

import json
import os
import random
import socket
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from craftc.ir import Teacher as TeacherSpec
from runtime.distill.teachers.base import Candidate, RequestFailed, TeacherError, TeacherRequest, TeacherUnreachable

__all__ = ["OpenAITeacher", "resolve_base_url", "candidate_seed"]

PROBE_TIMEOUT_S = 3.0
CONNECT_TIMEOUT_S = 10.0
MAX_RETRY_AFTER_S = 30.0
_RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
# Refusals of one request for what it holds; other requests may still be answered.
_REQUEST_STATUS = {400, 413, 422}


def candidate_seed(request: TeacherRequest, index: int) -> int:
    """The ``seed`` sent for candidate ``index`` of ``request`` (one request per candidate)."""
    return request.seed * 1000 + index


def resolve_base_url(spec: TeacherSpec, env: Mapping[str, str]) -> str:
    """The endpoint root without a trailing ``/v1``; a clear error when it is not set."""
    url = spec.base_url
    if not url and spec.base_url_env:
        url = env.get(spec.base_url_env)
        if not url:
            raise TeacherError(f"openai teacher: environment variable `{spec.base_url_env}` is not set; "
                               f"export {spec.base_url_env}=http://HOST:PORT/v1")
    if not url:
        raise TeacherError("openai teacher: no endpoint; set `base_url \"http://HOST:PORT/v1\"` or "
                           "`base_url env(\"VAR\")` in the teacher block")
    url = url.rstrip("/")
    return url[:-3] if url.endswith("/v1") else url


class OpenAITeacher:
    """Candidates from an OpenAI-compatible chat endpoint."""

    name = "openai teacher"
    kind = "openai"

    def __init__(self, spec: TeacherSpec, env: Mapping[str, str] | None = None):
        env = os.environ if env is None else env
        if not spec.model:
            raise TeacherError("openai teacher: no `model`; set `model \"NAME\"` in the teacher block")
        self.spec = spec
        self.base_url = resolve_base_url(spec, env)
        self.api_key = env.get(spec.api_key_env) if spec.api_key_env else None
        if spec.api_key_env and not self.api_key:
            raise TeacherError(f"openai teacher: environment variable `{spec.api_key_env}` is not set; "
                               f"export {spec.api_key_env}=<your API key>")
        self._probed = False
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    # ----------------------------------------------------------- http

    @property
    def client(self) -> httpx.Client:
        """The pooled client, made on first use (``timeout``, ``concurrency`` from the teacher block)."""
        with self._lock:
            if self._client is None:
                headers = {"Accept": "application/json"}
                if self.api_key:
                    headers["Authorization"] = f"Bearer {self.api_key}"
                size = max(1, self.spec.concurrency)
                limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
                # A request goes out in several writes (headers, body): without TCP_NODELAY a
                # kept-alive connection waits for the server's delayed ACK, ~40 ms a request.
                transport = httpx.HTTPTransport(limits=limits,
                                                socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
                self._client = httpx.Client(
                    base_url=self.base_url, headers=headers, transport=transport,
                    timeout=httpx.Timeout(self.spec.timeout_s, connect=min(CONNECT_TIMEOUT_S, self.spec.timeout_s)))
            return self._client

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def check_reachable(self) -> None:
        """``GET /v1/models`` with a short timeout; raises `TeacherUnreachable` on failure."""
        url = f"{self.base_url}/v1/models"
        try:
            response = self.client.get("/v1/models", timeout=PROBE_TIMEOUT_S)
        except (httpx.HTTPError, OSError, ValueError) as err:
            raise TeacherUnreachable(
                f"openai teacher: cannot reach {url} ({_reason(err)}); start the server "
                "(e.g. `vllm serve MODEL` or `transformers serve MODEL`) or fix `base_url` in the teacher block"
            ) from None
        if response.status_code in (401, 403):
            raise TeacherError(f"openai teacher: {url} refused the API key (HTTP {response.status_code}); "
                               f"check the key in `{self.spec.api_key_env}`")
        if response.status_code >= 500:
            raise TeacherUnreachable(f"openai teacher: {url} answered HTTP {response.status_code}; "
                                     "check that the server is healthy")
        self._probed = True

    def complete(self, system: str, messages: tuple[dict[str, str], ...], seed: int) -> dict[str, Any]:
        """One chat completion with retries; returns ``{"text", "finish_reason", "attempts", "usage"}``.

        ``usage`` is the server's token count (``prompt_tokens``, ``completion_tokens``),
        zeros when the server reports none. Raises `RequestFailed` when the request still
        fails after ``max_retries`` retries or the server refuses it for what it holds.
        """
        url = f"{self.base_url}/v1/chat/completions"
        body = {"model": self.spec.model, "seed": seed, "temperature": self.spec.temperature,
                "max_tokens": self.spec.max_new_tokens, "stream": False,
                "messages": [{"role": "system", "content": system}, *messages]}
        last_error, wait = "", 0.0
        attempts = self.spec.max_retries + 1
        for attempt in range(attempts):
            if attempt:
                backoff = min(8.0, 0.25 * 2 ** (attempt - 1))
                time.sleep(max(wait, backoff * random.uniform(0.8, 1.2)))
            wait = 0.0
            try:
                response = self.client.post("/v1/chat/completions", json=body)
            except (httpx.HTTPError, OSError) as err:
                last_error = _reason(err)
                continue
            status = response.status_code
            if status != 200:
                detail = response.text[:300]
                if status in _RETRY_STATUS:
                    last_error, wait = f"HTTP {status}: {detail}", _retry_after(response)
                    continue
                if status in _REQUEST_STATUS:
                    raise RequestFailed(f"openai teacher: {url} refused the request (HTTP {status}: {detail})",
                                        attempt + 1, f"HTTP {status}: {detail}")
                raise TeacherError(f"openai teacher: {url} answered HTTP {status}: {detail}; "
                                   "check `model` and the request settings")
            try:
                reply = response.json()
                choice = reply["choices"][0]
                text = choice["message"]["content"] or ""
            except (ValueError, KeyError, IndexError, TypeError):
                raise TeacherError(f"openai teacher: unexpected reply from {self.base_url}: "
                                   f"{response.text[:300]}") from None
            usage = reply.get("usage") or {}
            return {"text": text, "finish_reason": choice.get("finish_reason"), "attempts": attempt + 1,
                    "usage": {k: int(usage.get(k) or 0) for k in ("prompt_tokens", "completion_tokens")}}
        raise RequestFailed(f"openai teacher: {url} failed after {attempts} attempts ({last_error}); check the "
                            "server or raise `timeout` / `max_retries` in the teacher block", attempts, last_error)

    def answer(self, request: TeacherRequest, index: int) -> tuple[Candidate, dict[str, Any]]:
        """Candidate ``index`` of ``request`` and the reply's ``attempts`` and ``usage``.

        The candidate's metadata holds what the reply says (its text's finish reason, its
        tokens), never how many tries it took: an answer read back from the teacher cache
        is the same record as the one received.
        """
        reply = self.complete(request.system, request.messages, candidate_seed(request, index))
        metadata = {"teacher": "openai", "model": self.spec.model, "finish_reason": reply["finish_reason"],
                    "usage": reply["usage"]}
        return Candidate(reply["text"], 0, index, metadata), {"attempts": reply["attempts"], "usage": reply["usage"]}

    def generate(self, requests: list[TeacherRequest]) -> list[Candidate]:
        if not self._probed:
            self.check_reachable()
        jobs = [(r, i, request) for r, request in enumerate(requests) for i in range(request.n)]

        def run(job: tuple[int, int, TeacherRequest]) -> Candidate:
            r, i, request = job
            candidate, _ = self.answer(request, i)
            return Candidate(candidate.text, r, i, candidate.metadata)

        with ThreadPoolExecutor(max_workers=max(1, self.spec.concurrency)) as pool:
            return list(pool.map(run, jobs))


def _reason(err: BaseException) -> str:
    text = str(err) or type(err).__name__
    return f"{type(err).__name__}: {text}" if isinstance(err, httpx.TimeoutException) else text


def _retry_after(response: httpx.Response) -> float:
    """The server's ``Retry-After`` in seconds (a number of seconds only), capped."""
    try:
        return min(MAX_RETRY_AFTER_S, max(0.0, float(response.headers.get("retry-after", "0"))))
    except ValueError:
        return 0.0
