"""The distill step's teacher requests as a stream: cached, bounded, counted.

`TeacherStream.run` yields one `Answer` per candidate, in request order then candidate
order, as the answers come in, so the step appends each to ``candidates.jsonl`` and
keeps none in memory: at most a window of ``4 x concurrency`` requests is in flight or
waiting for an earlier one to be yielded.

- **Cache.** A model teacher's answers go through the teacher cache
  (`runtime.distill.teacher_cache`): a cached answer is read back, never asked again;
  a received one is committed before it is yielded. The synthetic teacher is free and
  is not cached.
- **Failures.** A request that fails after every retry (`RequestFailed`) is yielded as
  a failed `Answer` and counted; the stream goes on until more than ``teacher
  { max_failed SHARE }`` of the requests failed, then sends nothing new, lets the
  requests in flight finish (their answers are cached) and raises `TooManyFailures`.
- **Budget.** With ``teacher { budget TOKENS }``, a request is sent only while the
  prompt + completion tokens of the answers so far (cached ones included) are under the
  budget; past it the stream drains and raises `BudgetReached`. Raising the budget and
  rerunning resumes where it stopped.
- **Counts.** `StreamStats`: answers, reused, sent, retries, failed, tokens (all
  answers) and tokens paid by this run.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from runtime.distill.teacher_cache import AnswerCache, answer_key
from runtime.distill.teachers.base import Candidate, RequestFailed, TeacherError, TeacherRequest

__all__ = ["Answer", "StreamStats", "TeacherStream", "TeacherStopped", "TooManyFailures", "BudgetReached",
           "StreamProgress", "BATCH"]

BATCH = 32      # requests per `generate` call of a batch backend (synthetic, hf, vllm)
_NO_USAGE = {"prompt_tokens": 0, "completion_tokens": 0}


class TeacherStopped(TeacherError):
    """The stream stopped on purpose (failure share, budget); every answer received is cached."""


class TooManyFailures(TeacherStopped):
    pass


class BudgetReached(TeacherStopped):
    pass


@dataclass(frozen=True)
class Answer:
    """Candidate ``candidate_index`` of request ``request_index``, or why it failed."""

    request_index: int
    candidate_index: int
    candidate: Candidate | None      # None: failed after every retry (``error`` says why)
    usage: dict[str, int]
    attempts: int
    cached: bool
    error: str = ""


@dataclass
class StreamStats:
    answers: int = 0           # answers yielded (received, or read from the cache)
    reused: int = 0            # ... of them from the cache
    sent: int = 0              # ... of them received from the teacher in this run
    retries: int = 0           # requests sent again after a 429, 5xx, timeout or lost connection
    failed: int = 0            # requests that failed after every retry
    prompt_tokens: int = 0     # usage of every answer yielded, cached ones included
    completion_tokens: int = 0
    paid_prompt_tokens: int = 0        # usage of the answers received in this run
    paid_completion_tokens: int = 0
    started: float = field(default_factory=time.monotonic)

    @property
    def requests_per_s(self) -> float:
        wall = time.monotonic() - self.started
        return self.sent / wall if wall > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"answers": self.answers, "reused": self.reused, "sent": self.sent, "retries": self.retries,
                "failed": self.failed, "requests_per_s": round(self.requests_per_s, 1),
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "tokens": self.prompt_tokens + self.completion_tokens,
                "paid_this_run": {"prompt_tokens": self.paid_prompt_tokens,
                                  "completion_tokens": self.paid_completion_tokens}}


class TeacherStream:
    """One teacher's answers for the distill step (and its repair rounds), through the cache.

    Args:
        teacher: A backend (`runtime.distill.teachers`). One with ``answer(request, i)``
            (openai) is asked one candidate per request, ``concurrency`` at a time; the
            others through ``generate`` in batches of `BATCH` requests.
        spec: The teacher block (``concurrency``, ``max_failed``, ``budget``, sampling).
        cache: The teacher cache, or None (the synthetic teacher).
        total: The number of candidates the step asks for; ``max_failed`` is a share of it.
    """

    def __init__(self, teacher, spec, cache: AnswerCache | None, total: int):
        self.teacher, self.spec, self.cache = teacher, spec, cache
        self.allowed_failures = math.floor(getattr(spec, "max_failed", 0.0) * total)
        self.total = total
        self.budget = getattr(spec, "budget", None)
        self.stats = StreamStats()
        self.first_failures: list[tuple[int, int, str]] = []    # (request, candidate, error), a few
        self._spent = 0        # tokens of the answers so far, counted as they arrive (the budget's gauge)
        self._lock = threading.Lock()
        self._sampling = {"kind": getattr(teacher, "kind", teacher.name), "model": getattr(spec, "model", None),
                          "temperature": getattr(spec, "temperature", None),
                          "max_new_tokens": getattr(spec, "max_new_tokens", None)}
        self._concurrent = cache is not None and hasattr(teacher, "answer")

    # ------------------------------------------------------------ keys

    def key(self, request: TeacherRequest, index: int) -> str:
        if self._concurrent:
            from runtime.distill.teachers.openai import candidate_seed
            seed = [candidate_seed(request, index)]       # one request per candidate: what it sends
        else:
            seed = [request.seed, request.n, index]       # one call writes all n candidates
        return answer_key(self._sampling, request.system, request.messages, seed)

    # ------------------------------------------------------------ run

    def run(self, requests: list[TeacherRequest]) -> Iterator[Answer]:
        """Answers in request then candidate order; raises `TeacherStopped` after the last
        answer it could give when the failure share or the budget stops it."""
        answers = self._one_by_one(requests) if self._concurrent else self._batched(requests)
        for answer in answers:
            self._count(answer)
            yield answer

    def generate(self, requests: list[TeacherRequest]) -> list[Candidate | None]:
        """`run` as a list of candidates, None where a request failed (the repair rounds)."""
        return [a.candidate for a in self.run(requests)]

    def _count(self, answer: Answer) -> None:
        s = self.stats
        if answer.candidate is None:
            s.failed += 1
            s.retries += max(0, answer.attempts - 1)
            if len(self.first_failures) < 3:
                self.first_failures.append((answer.request_index, answer.candidate_index, answer.error))
            return
        s.answers += 1
        s.prompt_tokens += answer.usage.get("prompt_tokens", 0)
        s.completion_tokens += answer.usage.get("completion_tokens", 0)
        if answer.cached:
            s.reused += 1
            return
        s.retries += max(0, answer.attempts - 1)
        if self.cache is not None:
            s.sent += 1
            s.paid_prompt_tokens += answer.usage.get("prompt_tokens", 0)
            s.paid_completion_tokens += answer.usage.get("completion_tokens", 0)

    def _spend(self, usage: dict[str, int]) -> None:
        with self._lock:
            self._spent += usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)

    def _over_budget(self) -> bool:
        with self._lock:
            return self.budget is not None and self._spent >= self.budget

    def _probe(self) -> None:
        if hasattr(self.teacher, "check_reachable") and not getattr(self.teacher, "_probed", True):
            self.teacher.check_reachable()

    def _ask(self, r: int, i: int, request: TeacherRequest, key: str) -> Answer | None:
        if self._over_budget():     # checked as the request goes out: at most `concurrency` pass the budget
            return None
        try:
            candidate, info = self.teacher.answer(request, i)
        except RequestFailed as err:
            return Answer(r, i, None, dict(_NO_USAGE), err.attempts, False, err.reason or str(err))
        self.cache.put(key, self.teacher.kind, candidate.text, candidate.metadata, info["usage"], info["attempts"])
        self._spend(info["usage"])
        return Answer(r, i, replace(candidate, request_index=r, candidate_index=i), info["usage"],
                      info["attempts"], False)

    def _one_by_one(self, requests: list[TeacherRequest]) -> Iterator[Answer]:
        window = max(256, 32 * self.spec.concurrency)
        jobs = ((r, i, request) for r, request in enumerate(requests) for i in range(request.n))
        queue: deque[Answer | Future] = deque()
        stop: TeacherStopped | None = None
        failed = self.stats.failed
        pool = ThreadPoolExecutor(max_workers=max(1, self.spec.concurrency), thread_name_prefix="teacher")
        try:
            while True:
                while stop is None and len(queue) < window:
                    job = next(jobs, None)
                    if job is None:
                        break
                    r, i, request = job
                    key = self.key(request, i)
                    hit = self.cache.get(key)
                    if hit is not None:
                        self._spend(hit.usage)
                        queue.append(Answer(r, i, Candidate(hit.text, r, i, hit.metadata), hit.usage, hit.attempts,
                                            True))
                        continue
                    if self._over_budget():
                        stop = self._budget_reached()
                        break
                    self._probe()
                    queue.append(pool.submit(self._ask, r, i, request, key))
                if not queue:
                    break
                head = queue.popleft()
                answer = head.result() if isinstance(head, Future) else head
                if answer is None:          # not sent: the budget was reached
                    stop = stop or self._budget_reached()
                    break
                if answer.candidate is None:
                    failed += 1
                    if failed > self.allowed_failures and stop is None:
                        stop = TooManyFailures("")      # the message is written once every count is in
                yield answer
        finally:
            for item in queue:
                if isinstance(item, Future):
                    item.cancel()
            pool.shutdown(wait=True, cancel_futures=True)    # answers in flight still reach the cache
        if stop is not None:
            raise stop

    def _batched(self, requests: list[TeacherRequest]) -> Iterator[Answer]:
        for start in range(0, len(requests), BATCH):
            batch = requests[start:start + BATCH]
            if self.cache is None:
                for c in self.teacher.generate(batch):
                    r = start + c.request_index
                    yield Answer(r, c.candidate_index, replace(c, request_index=r),
                                 c.metadata.get("usage", _NO_USAGE), 1, False)
                continue
            keys = [[self.key(request, i) for i in range(request.n)] for request in batch]
            got: dict[int, list] = {}
            for b, request_keys in enumerate(keys):
                hits = [self.cache.get(k) for k in request_keys]
                if all(h is not None for h in hits):
                    got[b] = [Answer(start + b, i, Candidate(h.text, start + b, i, h.metadata), h.usage, h.attempts,
                                     True) for i, h in enumerate(hits)]
            missing = [b for b in range(len(batch)) if b not in got]
            first_miss = missing[0] if missing else len(batch)
            for b in range(first_miss):     # the budget counts the cached answers before the first miss
                for answer in got[b]:
                    self._spend(answer.usage)
            stop = self._budget_reached() if missing and self._over_budget() else None
            if missing and stop is None:
                for c in self.teacher.generate([batch[b] for b in missing]):
                    b = missing[c.request_index]
                    usage = c.metadata.get("usage", _NO_USAGE)
                    self.cache.put(keys[b][c.candidate_index], getattr(self.teacher, "kind", self.teacher.name),
                                   c.text, c.metadata, usage, 1)
                    got.setdefault(b, []).append(Answer(start + b, c.candidate_index,
                                                        replace(c, request_index=start + b), usage, 1, False))
                for b in range(first_miss, len(batch)):
                    for answer in got[b]:
                        self._spend(answer.usage)
            for b in range(len(batch)):
                if b not in got:
                    break
                yield from got[b]
            if stop is not None:
                raise stop

    # ------------------------------------------------------------ messages

    def _budget_reached(self) -> BudgetReached:
        return BudgetReached("")

    def explain(self, stop: TeacherStopped, where: str, describe) -> str:
        """The line a stopped step ends with. ``where`` names the cache, ``describe(r, i)``
        a request (its candidate id)."""
        s = self.stats
        kept = f"the {s.answers} answers so far are kept in {where} ({s.reused} of them reused), and a rerun " \
               "sends only the requests still missing"
        if isinstance(stop, BudgetReached):
            return (f"teacher budget reached: {s.prompt_tokens + s.completion_tokens} of `budget {self.budget}` "
                    f"tokens used by {s.answers} of {self.total} answers; {kept}. Raise `budget` in the teacher "
                    "block to go on")
        share = getattr(self.spec, "max_failed", 0.0)
        examples = "; ".join(f"`{describe(r, i)}`: {error[:200]}" for r, i, error in self.first_failures)
        return (f"{s.failed} teacher requests failed after every retry, more than `max_failed {share:.2%}` of "
                f"{self.total} allows ({self.allowed_failures}): {examples}; {kept}. Fix the endpoint, or raise "
                "`max_failed` (or `max_retries`, `timeout`) in the teacher block")


class StreamProgress:
    """The console's progress line: answers, requests/s, reused, retries, failures, ETA.

    On a terminal a live bar; elsewhere (a log file) a plain line every ``every_s`` seconds.
    """

    def __init__(self, console, label: str, total: int, every_s: float = 30.0):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self.console, self.label, self.total, self.every_s = console, label, total, every_s
        self.live = console is not None and console.is_terminal
        self._progress = Progress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                                  MofNCompleteColumn(), TextColumn("{task.fields[stats]}"),
                                  console=console, transient=True, disable=not self.live)
        self._task = None
        self._last = time.monotonic()

    def __enter__(self) -> StreamProgress:
        self._progress.__enter__()
        self._task = self._progress.add_task(self.label, total=self.total, stats="")
        return self

    def __exit__(self, *exc) -> None:
        self._progress.__exit__(*exc)

    def line(self, stats: StreamStats, done: int) -> str:
        rate = stats.requests_per_s
        left = self.total - done
        eta = f"{_duration(left / rate)}" if rate > 0 and left > 0 else "-"
        return (f"{rate:.1f} req/s  reused {stats.reused}  retries {stats.retries}  failed {stats.failed}  "
                f"ETA {eta}")

    def update(self, stats: StreamStats, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < (0.2 if self.live else self.every_s):
            return
        self._last = now
        done = stats.answers + stats.failed
        if self.live:
            self._progress.update(self._task, completed=done, stats=self.line(stats, done))
        elif self.console is not None:
            self.console.print(f"{self.label}: {done}/{self.total}  {self.line(stats, done)}")


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"
