"""The one interface every teacher backend implements.

A teacher turns requests (a system prompt, the conversation so far, how many
candidates, a seed) into candidate assistant turns. Backends differ only in where
the text comes from: the synthetic teacher builds it from reference solutions, the
others ask a model. The distill step never knows which one it talks to.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["TeacherRequest", "Candidate", "Teacher", "TeacherError", "TeacherUnreachable"]


class TeacherError(RuntimeError):
    """A teacher that cannot produce candidates; the message names the thing and the fix."""


class TeacherUnreachable(TeacherError):
    """A teacher endpoint that does not answer; the message names the URL and the fix."""


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
