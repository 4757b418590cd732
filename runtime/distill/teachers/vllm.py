"""A teacher that runs vLLM offline batches (`vllm.LLM`) on GPUs.

vLLM pins its own torch and transformers, so it is never part of the CPU install:
it lives in a separate environment with the `vllm` extra. The import is lazy and a
missing vLLM is a clear error, not a traceback.
"""

from __future__ import annotations

from craftc.ir import Teacher as TeacherSpec
from runtime.distill.teachers.base import Candidate, TeacherError, TeacherRequest

__all__ = ["VllmTeacher", "VLLM_MISSING"]

VLLM_MISSING = ("vllm teacher: the `vllm` package is not installed in this environment; vLLM pins its own "
                "torch and transformers, so install it in a separate environment with "
                "`pip install 'craft[vllm]'` and run the distill step there, or use `teacher openai` "
                "against a `vllm serve` endpoint")


class VllmTeacher:
    """Candidates from ``vllm.LLM.chat`` with ``SamplingParams(n=...)``."""

    name = "vllm teacher"
    kind = "vllm"

    def __init__(self, spec: TeacherSpec):
        if not spec.model:
            raise TeacherError("vllm teacher: no `model`; set `model \"PATH_OR_HUB_ID\"` in the teacher block")
        try:
            import vllm  # noqa: F401
        except ImportError:
            raise TeacherError(VLLM_MISSING) from None
        self.spec = spec
        self._llm = None

    def generate(self, requests: list[TeacherRequest]) -> list[Candidate]:
        from vllm import LLM, SamplingParams

        if self._llm is None:
            self._llm = LLM(model=self.spec.model)
        conversations = [[{"role": "system", "content": r.system}, *r.messages] for r in requests]
        params = [SamplingParams(n=r.n, seed=r.seed, temperature=self.spec.temperature,
                                 max_tokens=self.spec.max_new_tokens) for r in requests]
        outputs = self._llm.chat(conversations, params)
        # The prompt is read once per request: its tokens are counted on the first candidate.
        return [Candidate(choice.text, r, i, {"teacher": "vllm", "model": self.spec.model,
                                              "finish_reason": choice.finish_reason,
                                              "usage": {"prompt_tokens": len(output.prompt_token_ids or ()) if i == 0
                                                        else 0, "completion_tokens": len(choice.token_ids or ())}})
                for r, output in enumerate(outputs) for i, choice in enumerate(output.outputs)]
