"""Teacher backends behind one interface, and `make_teacher` to pick one from the IR."""

from runtime.distill.teachers.base import (
    Candidate,
    RequestFailed,
    Teacher,
    TeacherError,
    TeacherRequest,
    TeacherUnreachable,
)
from runtime.distill.teachers.factory import make_teacher

__all__ = [
    "Candidate",
    "RequestFailed",
    "Teacher",
    "TeacherError",
    "TeacherRequest",
    "TeacherUnreachable",
    "make_teacher",
]
