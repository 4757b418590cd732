"""LLM judges: a prompt from the plan, an OpenAI-compatible model, a strict verdict, a cache.

Each llm judge asks one judgement (``prompt_plan``, ``plan_code`` or ``business``)
with the prompt the compiler emitted to ``prompts/judges/<name>.md``: a ``## system``
and a ``## user`` section, the user one holding ``$ask``, ``$params``, ``$plan`` and
``$code``. The model must answer with exactly one JSON object,
``{"verdict": "pass" | "fail", "reason": "..."}``; anything else is an
**abstention**: counted in the funnel, left out of the vote.

Verdicts are cached on disk (SQLite, one row per reply, committed as it arrives),
keyed by the model settings and the rendered prompt, so a rerun of the gate, or a
run that stopped when the server went away, asks only about what is not cached.
Requests run ``concurrency`` at a time, each retried with backoff by the backend.
Each verdict records its cost: requests sent and tokens used (0 when cached).

Example:
    >>> parse_verdict('{"verdict": "fail", "reason": "the plan drops the date filter"}')
    (False, 'the plan drops the date filter')
    >>> parse_verdict('VERDICT: PASS')[0] is None
    True
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import string
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.distill.teachers.base import TeacherError, TeacherRequest, TeacherUnreachable

__all__ = ["JudgePrompt", "VerdictCache", "LlmJudge", "LlmJudgeUnreachable", "parse_verdict", "cache_key",
           "CACHE_FILE"]

CACHE_FILE = "verdicts.sqlite"
_PLACEHOLDERS = ("ask", "params", "plan", "code")


class LlmJudgeUnreachable(TeacherError):
    """The judge's endpoint stopped answering; verdicts received so far are in the cache."""


def parse_verdict(text: str) -> tuple[bool | None, str]:
    """``(passed, reason)`` from a reply; ``passed`` is None (an abstention) unless the reply
    is exactly one JSON object with ``verdict`` ``pass``/``fail`` and a non-empty ``reason``."""
    try:
        data = json.loads(text.strip())
    except ValueError:
        return None, f"malformed verdict (not JSON): {text.strip()[:120]!r}"
    if not isinstance(data, dict) or set(data) != {"verdict", "reason"}:
        return None, f"malformed verdict (want exactly `verdict` and `reason`): {text.strip()[:120]!r}"
    verdict, reason = data["verdict"], data["reason"]
    if verdict not in ("pass", "fail") or not isinstance(reason, str) or not reason.strip():
        return None, f"malformed verdict (verdict must be pass or fail, with a reason): {text.strip()[:120]!r}"
    return verdict == "pass", reason.strip()[:300]


@dataclass(frozen=True)
class JudgePrompt:
    """The two sections of ``prompts/judges/<name>.md``."""

    system: str
    user: str

    @classmethod
    def parse(cls, text: str, path: str = "prompt") -> JudgePrompt:
        sections: dict[str, list[str]] = {}
        current = None
        for line in text.splitlines():
            if line.startswith("## ") and line[3:].strip() in ("system", "user"):
                current = line[3:].strip()
                sections[current] = []
            elif current:
                sections[current].append(line)
        if set(sections) != {"system", "user"} or "$" not in "".join(sections["user"]):
            raise TeacherError(f"{path} must have a `## system` and a `## user` section with $ask, $plan or "
                               "$code; recompile the plan with `craftc compile`")
        return cls(*("\n".join(sections[k]).strip("\n") for k in ("system", "user")))

    def render(self, ask: str, params: dict, plan: str, code: str) -> str:
        """The user message for one candidate (values are inserted, never parsed)."""
        values = {"ask": ask, "plan": plan or "(none)", "code": code or "(none)",
                  "params": "\n".join(f"{k} = {v!r}" for k, v in params.items()) or "(none)"}
        return string.Template(self.user).safe_substitute(values)


def cache_key(model: dict[str, Any], system: str, user: str) -> str:
    """The cache key of one judge request: the model settings and the whole prompt."""
    return hashlib.sha256(json.dumps([model, system, user], sort_keys=True).encode()).hexdigest()


class VerdictCache:
    """Replies on disk, one committed row each; a stopped run loses nothing it received."""

    def __init__(self, directory: Path):
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / CACHE_FILE
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, judge TEXT, text TEXT, "
                         "requests INTEGER, prompt_tokens INTEGER, completion_tokens INTEGER)")

    def get(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT text FROM replies WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, judge: str, text: str, cost: dict[str, int]) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?)",
                             (key, judge, text, cost["requests"], cost["prompt_tokens"], cost["completion_tokens"]))

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]

    def close(self) -> None:
        self._db.close()


def _no_cost() -> dict[str, int]:
    return {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0}


class LlmJudge:
    """One llm judge: its prompt, its backend (an `OpenAITeacher`), its cache."""

    kind = "llm"

    def __init__(self, name: str, weight: float, prompt: JudgePrompt, backend, cache: VerdictCache,
                 seed: int = 0, concurrency: int = 4):
        self.name, self.weight, self.prompt, self.backend = name, weight, prompt, backend
        self.cache, self.seed, self.concurrency = cache, seed, max(1, concurrency)
        spec = getattr(backend, "spec", None)
        self.model = {"model": getattr(spec, "model", backend.name), "temperature": getattr(spec, "temperature", None),
                      "max_tokens": getattr(spec, "max_new_tokens", None)}
        self.endpoint = getattr(backend, "base_url", backend.name)

    def _ask(self, user: str) -> tuple[str, dict[str, int]]:
        if hasattr(self.backend, "complete"):
            reply = self.backend.complete(self.prompt.system, ({"role": "user", "content": user},), self.seed)
            usage = reply.get("usage", {})
            return reply["text"], {"requests": reply["attempts"], "prompt_tokens": usage.get("prompt_tokens", 0),
                                   "completion_tokens": usage.get("completion_tokens", 0)}
        candidate = self.backend.generate([TeacherRequest(self.prompt.system, ({"role": "user", "content": user},),
                                                          1, self.seed)])[0]
        return candidate.text, {**_no_cost(), "requests": 1}

    def replies(self, users: list[str]) -> list[tuple[str, dict[str, int], bool]]:
        """``(text, cost, cached)`` per user message; misses are asked concurrently and cached."""
        keys = [cache_key(self.model, self.prompt.system, u) for u in users]
        out: dict[str, tuple[str, dict[str, int], bool]] = {}
        for key in dict.fromkeys(keys):
            text = self.cache.get(key)
            if text is not None:
                out[key] = (text, _no_cost(), True)
        missing = {key: user for key, user in zip(keys, users) if key not in out}
        if missing:
            if hasattr(self.backend, "check_reachable") and not getattr(self.backend, "_probed", True):
                self._reachable()
            with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
                futures = {pool.submit(self._ask, user): key for key, user in missing.items()}
                done, pending = wait(futures, return_when=FIRST_EXCEPTION)
                failed = next((f for f in done if f.exception() is not None), None)
                for future in pending:
                    future.cancel()
                for future in [*done, *(f for f in pending if not f.cancelled())]:
                    if future.exception() is None:
                        text, cost = future.result()
                        self.cache.put(futures[future], self.name, text, cost)
                        out[futures[future]] = (text, cost, False)
                    elif failed is None:
                        failed = future
            if failed is not None:
                raise self._unreachable(failed.exception()) from None
        # A prompt asked twice (identical candidates) costs once; the repeat reads the first reply.
        seen: set[str] = set()
        answers = []
        for key in keys:
            answers.append(out[key] if key not in seen else (out[key][0], _no_cost(), True))
            seen.add(key)
        return answers

    def _reachable(self) -> None:
        try:
            self.backend.check_reachable()
        except TeacherError as err:
            raise self._unreachable(err) from None

    def _unreachable(self, err: BaseException) -> LlmJudgeUnreachable:
        detail = str(err).replace("openai teacher: ", "").replace("in the teacher block", "in the judge's backend")
        if not isinstance(err, TeacherError | TeacherUnreachable):
            detail = f"{type(err).__name__}: {err}"
        return LlmJudgeUnreachable(f"llm judge `{self.name}` at {self.endpoint}: {detail}; the {len(self.cache)} "
                                   f"verdicts received are cached in {self.cache.path.parent} and a rerun resumes "
                                   "from them")

    def judge_many(self, cases: list, verdict_type: Callable) -> list:
        users = [self.prompt.render(c.ask, c.params, c.plan, c.code) for c in cases]
        verdicts = []
        for text, cost, cached in self.replies(users):
            passed, reason = parse_verdict(text)
            verdicts.append(verdict_type(self.name, passed, reason, self.weight,
                                         {**cost, "cached": cached}))
        return verdicts
