"""Pick the teacher backend a recipe's `teacher` block names."""

from __future__ import annotations

from craftc.ir import BlockFormat, Schema
from craftc.ir import Teacher as TeacherSpec
from runtime.distill.teachers.base import Teacher

__all__ = ["make_teacher"]


def make_teacher(spec: TeacherSpec, schema: Schema, fmt: BlockFormat) -> Teacher:
    """The backend for ``spec.kind``; model backends are imported only when used."""
    if spec.kind == "synthetic":
        from runtime.distill.teachers.synthetic import SyntheticTeacher
        return SyntheticTeacher(schema, fmt, noise=spec.noise, kinds=spec.noise_kinds,
                                discovery=spec.discovery,
                                scratchpad=spec.scratchpad)
    if spec.kind == "openai":
        from runtime.distill.teachers.openai import OpenAITeacher
        return OpenAITeacher(spec)
    if spec.kind == "hf":
        from runtime.distill.teachers.hf import HFTeacher
        return HFTeacher(spec)
    from runtime.distill.teachers.vllm import VllmTeacher
    return VllmTeacher(spec)
