"""The one interface every teacher backend implements.

A teacher turns requests (a system prompt, the conversation so far, how many
candidates, a seed) into candidate assistant turns. Backends differ only in where
the text comes from: the synthetic teacher builds it from reference solutions, the
others ask a model. The distill step never knows which one it talks to.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["TeacherRequest", "Candidate", "Teacher", "TeacherError", "TeacherUnreachable", "RequestFailed"]


class TeacherError(RuntimeError):
    """A teacher that cannot produce candidates; the message names the thing and the fix."""


class TeacherUnreachable(TeacherError):
    """A teacher endpoint that does not answer; the message names the URL and the fix."""


class RequestFailed(TeacherUnreachable):
    """One request that failed after every retry, or that the endpoint refused for itself
    (HTTP 400: e.g. a prompt longer than the model's context). The distill step records
    and counts it and goes on (``teacher { max_failed SHARE }``); ``attempts`` were sent."""

    def __init__(self, message: str, attempts: int, reason: str):
        super().__init__(message)
        self.attempts, self.reason = attempts, reason


@dataclass(frozen=True)
class TeacherRequest:
    """One prompt to complete ``n`` times.

    ``context`` carries what only the synthetic teacher reads (the instance's
    reference PLAN and CODE, its params); model backends ignore it.
    """

    system: str
    messages: tuple[dict[str, str], ...]
    n: int
    seed: int
    context: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Candidate:
    """One candidate assistant turn and what is known about how it was made."""

    text: str
    request_index: int
    candidate_index: int
    metadata: dict[str, Any] = field(default_factory=dict)


class Teacher(Protocol):
    """What a backend provides: a name for reports and a batched ``generate``."""

    name: str

    def generate(self, requests: list[TeacherRequest]) -> list[Candidate]:
        """``n`` candidates for each request, in request order then candidate order."""
        ...
