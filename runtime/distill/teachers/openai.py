"""A teacher behind any OpenAI-compatible `/v1/chat/completions` endpoint.

A vLLM server, `transformers serve`, or a hosted provider. Requests run
concurrently (``concurrency``), each with a timeout (``timeout_s``), and are retried
with exponential backoff on 429, 5xx and connection errors (``max_retries``).
Before any work, ``GET /v1/models`` with a short connect timeout checks that the
endpoint answers, so a wrong URL fails in seconds with a message naming the URL.

The base URL is ``base_url`` or the environment variable named by ``base_url_env``;
the API key (optional for local servers) comes from the variable named by
``api_key_env``.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from craftc.ir import Teacher as TeacherSpec
from runtime.distill.teachers.base import Candidate, TeacherError, TeacherRequest, TeacherUnreachable

__all__ = ["OpenAITeacher", "resolve_base_url"]

PROBE_TIMEOUT_S = 3.0
_RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


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

    # ----------------------------------------------------------- http

    def _request(self, method: str, path: str, body: dict | None, timeout: float) -> dict:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base_url + path, data=data, headers=headers, method=method)
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - user-configured URL
            return json.loads(response.read().decode("utf-8"))

    def check_reachable(self) -> None:
        """``GET /v1/models`` with a short timeout; raises `TeacherUnreachable` on failure."""
        url = f"{self.base_url}/v1/models"
        try:
            self._request("GET", "/v1/models", None, PROBE_TIMEOUT_S)
        except urllib.error.HTTPError as err:
            if err.code in (401, 403):
                raise TeacherError(f"openai teacher: {url} refused the API key (HTTP {err.code}); "
                                   f"check the key in `{self.spec.api_key_env}`") from None
            if err.code >= 500:
                raise TeacherUnreachable(f"openai teacher: {url} answered HTTP {err.code}; "
                                         "check that the server is healthy") from None
        except (urllib.error.URLError, OSError, ValueError) as err:
            reason = getattr(err, "reason", err)
            raise TeacherUnreachable(
                f"openai teacher: cannot reach {url} ({reason}); start the server "
                "(e.g. `vllm serve MODEL` or `transformers serve MODEL`) or fix `base_url` in the teacher block"
            ) from None
        self._probed = True

    def complete(self, system: str, messages: tuple[dict[str, str], ...], seed: int) -> dict[str, Any]:
        """One chat completion with retries; returns ``{"text", "finish_reason", "attempts", "usage"}``.

        ``usage`` is the server's token count (``prompt_tokens``, ``completion_tokens``),
        zeros when the server reports none.
        """
        body = {"model": self.spec.model, "seed": seed, "temperature": self.spec.temperature,
                "max_tokens": self.spec.max_new_tokens, "stream": False,
                "messages": [{"role": "system", "content": system}, *messages]}
        last_error = ""
        for attempt in range(self.spec.max_retries + 1):
            if attempt:
                time.sleep(min(8.0, 0.25 * 2 ** (attempt - 1)))
            try:
                reply = self._request("POST", "/v1/chat/completions", body, self.spec.timeout_s)
            except urllib.error.HTTPError as err:
                detail = err.read().decode("utf-8", "replace")[:300]
                if err.code not in _RETRY_STATUS:
                    raise TeacherError(f"openai teacher: {self.base_url}/v1/chat/completions answered "
                                       f"HTTP {err.code}: {detail}; check `model` and the request settings") from None
                last_error = f"HTTP {err.code}: {detail}"
                continue
            except (urllib.error.URLError, OSError, TimeoutError) as err:
                last_error = str(getattr(err, "reason", err))
                continue
            try:
                choice = reply["choices"][0]
                text = choice["message"]["content"] or ""
            except (KeyError, IndexError, TypeError):
                raise TeacherError(f"openai teacher: unexpected reply from {self.base_url}: "
                                   f"{json.dumps(reply)[:300]}") from None
            usage = reply.get("usage") or {}
            return {"text": text, "finish_reason": choice.get("finish_reason"), "attempts": attempt + 1,
                    "usage": {k: int(usage.get(k) or 0) for k in ("prompt_tokens", "completion_tokens")}}
        raise TeacherUnreachable(f"openai teacher: {self.base_url}/v1/chat/completions failed after "
                                 f"{self.spec.max_retries + 1} attempts ({last_error}); check the server "
                                 "or raise `timeout_s` / `max_retries` in the teacher block")

    def generate(self, requests: list[TeacherRequest]) -> list[Candidate]:
        if not self._probed:
            self.check_reachable()
        jobs = [(r, i, request) for r, request in enumerate(requests) for i in range(request.n)]

        def run(job: tuple[int, int, TeacherRequest]) -> Candidate:
            r, i, request = job
            reply = self.complete(request.system, request.messages, request.seed * 1000 + i)
            return Candidate(reply["text"], r, i, {"teacher": "openai", "model": self.spec.model,
                                                   "finish_reason": reply["finish_reason"],
                                                   "attempts": reply["attempts"]})

        with ThreadPoolExecutor(max_workers=max(1, self.spec.concurrency)) as pool:
            return list(pool.map(run, jobs))
