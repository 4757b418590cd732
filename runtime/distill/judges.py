"""Judges: does the PLAN match the CODE, the CODE the question, the PLAN the rules?

Deterministic judges read the code with ``ast`` and its SQL with sqlglot (see
`code_facts`), never running it:

- ``plan_code``: every metric the PLAN names in business words is computed by the
  code (the fields of its expression are read), and every entity it names is
  touched (its view, or a column that refers to it).
- ``prompt_params``: every param value of the instance reaches the code, as a
  literal (Python or SQL) or as ``params["name"]``.
- ``no_ddl_leak``: the PLAN contains no physical table or column name and no SQL
  keyword such as ``SELECT`` or ``CREATE``.

LLM judges (``kind llm``, see `llm_judge`) ask an OpenAI-compatible model with the
prompt the plan holds for them and parse a strict JSON verdict; a malformed reply
is an abstention. An ensemble votes ``majority``, ``unanimous`` or ``weighted``
(passing weight share >= threshold) over the judges that did not abstain; when
every judge abstains the candidate is rejected (nothing vouches for it). Every
verdict carries a reason.

Example:
    >>> from craftc.ir import Schema
    >>> judge = NoDdlLeakJudge(SchemaVocabulary.from_schema(Schema(name="s", version=1, source="x")))
    >>> judge.judge(JudgeCase("q", "Run SELECT * FROM t.", "result = 1", {})).passed
    False
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from craftc.ir import BUILTIN_JUDGES, BlockFormat, Judge, Recipe
from runtime.distill.code_facts import code_facts
from runtime.distill.teachers.base import TeacherError
from runtime.distill.vocabulary import SchemaVocabulary, split_camel

__all__ = [
    "JudgeCase", "Verdict", "EnsembleVerdict", "JudgeError",
    "PlanCodeJudge", "PromptParamsJudge", "NoDdlLeakJudge",
    "JudgeEnsemble", "vote",
]

_SQL_KEYWORDS = re.compile(r"\b(SELECT|CREATE|DROP|ALTER|INSERT|UPDATE|DELETE|TRUNCATE)\b")
BUILTIN_KINDS = BUILTIN_JUDGES      # declared once, in the IR


class JudgeError(ValueError):
    """A judge configuration that cannot work; the message names the judge and the fix."""


@dataclass(frozen=True)
class JudgeCase:
    """What a judge sees: the question, the candidate's PLAN and CODE, the params."""

    ask: str
    plan: str
    code: str
    params: dict[str, Any]


@dataclass(frozen=True)
class Verdict:
    """One judge's answer; ``passed`` None is an abstention (an llm judge's malformed reply)."""

    judge: str
    passed: bool | None
    reason: str
    weight: float = 1.0
    cost: dict[str, Any] | None = None     # llm judges: requests, tokens, cached


@dataclass(frozen=True)
class EnsembleVerdict:
    passed: bool
    reason: str
    verdicts: tuple[Verdict, ...]


class _Judge(Protocol):
    name: str
    weight: float

    def judge_many(self, cases: list[JudgeCase]) -> list[Verdict]: ...


class _DeterministicJudge:
    def __init__(self, vocab: SchemaVocabulary, name: str | None = None, weight: float = 1.0):
        self.vocab, self.weight = vocab, weight
        self.name = name or self.kind

    def judge_many(self, cases: list[JudgeCase]) -> list[Verdict]:
        return [self.judge(case) for case in cases]

    def verdict(self, problems: list[str], ok: str) -> Verdict:
        return Verdict(self.name, not problems, "; ".join(problems) if problems else ok, self.weight)


class PlanCodeJudge(_DeterministicJudge):
    """The metrics and entities the PLAN names are the ones the CODE reads."""

    kind = "plan_code"

    def judge(self, case: JudgeCase) -> Verdict:
        facts = code_facts(case.code)
        if not facts.parsed:
            return self.verdict(facts.problems, "")
        touched = facts.columns | facts.identifiers | facts.tables
        problems = []
        for name in self.vocab.metrics_named(case.plan):
            metric = self.vocab.metrics[name]
            missing = [f for f in metric.fields if f not in touched]
            if missing and name.lower() not in {lit.lower() for lit in facts.literals}:
                problems.append(f"the plan names the metric `{name}` but the code never reads "
                                f"{', '.join(f'`{f}`' for f in missing)}")
        for name in self.vocab.entities_named(case.plan):
            names = self.vocab.entity_names[name]
            # "conversions" in a plan is also satisfied by a field such as
            # `daily_stat.conversions` or `conversion_value`: the same business word.
            if not touched & set(names) and not any(n in t for n in names for t in touched):
                problems.append(f"the plan names {split_camel(name)}s but the code never reads "
                                f"`{self.vocab.entity_names[name][0]}`")
        named = len(self.vocab.metrics_named(case.plan)) + len(self.vocab.entities_named(case.plan))
        return self.verdict(problems, f"the code reads all {named} metrics and entities the plan names")


class PromptParamsJudge(_DeterministicJudge):
    """Every param value of the question reaches the code."""

    kind = "prompt_params"

    @staticmethod
    def _spellings(value: Any) -> set[str]:
        if isinstance(value, bool):
            return {str(value), str(value).lower()}
        if isinstance(value, float) and value.is_integer():
            return {str(int(value)), repr(value)}
        return {str(value)}

    def judge(self, case: JudgeCase) -> Verdict:
        facts = code_facts(case.code)
        if not facts.parsed:
            return self.verdict(facts.problems, "")
        sql_text = "\n".join(facts.sql)
        problems = []
        for name, value in case.params.items():
            if name in facts.param_reads:
                continue
            spellings = self._spellings(value)
            if spellings & facts.literals:
                continue
            if any(re.search(rf"(?<![\w.]){re.escape(s)}(?![\w])", sql_text) for s in spellings):
                continue
            problems.append(f"the question asks for {name} = {value!r} but the code never uses that value")
        return self.verdict(problems, f"all {len(case.params)} params reach the code")


class NoDdlLeakJudge(_DeterministicJudge):
    """The PLAN speaks business words: no physical names, no SQL."""

    kind = "no_ddl_leak"

    def judge(self, case: JudgeCase) -> Verdict:
        problems = [f"the plan names the physical `{name}`" for name in self.vocab.physical_named(case.plan)]
        keywords = sorted(set(_SQL_KEYWORDS.findall(case.plan)))
        if keywords:
            problems.append(f"the plan contains SQL ({', '.join(keywords)})")
        return self.verdict(problems, "the plan uses business words only")


def vote(verdicts: list[Verdict], mode: str, threshold: float = 0.5) -> EnsembleVerdict:
    """Combine judges' verdicts; the reason lists the failing judges' reasons."""
    if not verdicts:
        return EnsembleVerdict(True, "no judges configured", ())
    voting = [v for v in verdicts if v.passed is not None]
    abstained = len(verdicts) - len(voting)
    failing = [v for v in voting if not v.passed]
    if mode == "unanimous":
        passed = not failing
    elif mode == "majority":
        passed = len(failing) * 2 < len(voting)
    elif mode == "weighted":
        total = sum(v.weight for v in voting)
        passed = total > 0 and sum(v.weight for v in voting if v.passed) / total >= threshold
    else:
        raise JudgeError(f"unknown vote `{mode}`; use majority, unanimous or weighted")
    summary = f"{len(voting) - len(failing)}/{len(voting)} judges pass ({mode})"
    if abstained:
        summary += f", {abstained} abstained"
    if not voting:
        passed, summary = False, f"every judge abstained ({mode})"
    details = "; ".join(f"{v.judge}: {v.reason}" for v in failing)
    return EnsembleVerdict(passed, f"{summary}: {details}" if details else summary, tuple(verdicts))


class JudgeEnsemble:
    """The judges a recipe's judge gate names, and its vote."""

    def __init__(self, judges: list[_Judge], mode: str, threshold: float):
        self.judges, self.mode, self.threshold = judges, mode, threshold

    @classmethod
    def from_recipe(cls, recipe: Recipe, backends: dict | None = None, prompts: dict[str, str] | None = None,
                    cache_dir: Path | None = None) -> JudgeEnsemble:
        """The gate's judges; llm judges need their prompt text (by judge name) and a cache dir."""
        vocab = SchemaVocabulary.from_schema(recipe.schema_)
        declared = {judge.name: judge for judge in recipe.judges}
        gate = recipe.gates.judge
        judges: list[_Judge] = []
        for name in gate.judges:
            spec = declared.get(name)
            kind = spec.kind if spec else name
            weight = spec.weight if spec else 1.0
            if kind == "llm":
                judges.append(_llm_judge(spec, recipe, backends, prompts or {}, cache_dir))
            elif kind in BUILTIN_KINDS:
                judge_class = {"plan_code": PlanCodeJudge, "prompt_params": PromptParamsJudge,
                               "no_ddl_leak": NoDdlLeakJudge}[kind]
                judges.append(judge_class(vocab, name, weight))
            else:
                raise JudgeError(f"judge gate names `{name}`, which is neither a built-in judge "
                                 f"({', '.join(BUILTIN_KINDS)}) nor a `judge {name} {{ kind llm ... }}` block")
        return cls(judges, gate.vote, gate.threshold)

    def judge_many(self, cases: list[JudgeCase]) -> list[EnsembleVerdict]:
        per_judge = [judge.judge_many(cases, Verdict) if judge.kind == "llm" else judge.judge_many(cases)
                     for judge in self.judges]
        return [vote([verdicts[i] for verdicts in per_judge], self.mode, self.threshold)
                for i in range(len(cases))]


def _llm_judge(spec: Judge, recipe: Recipe, backends: dict | None, prompts: dict[str, str],
               cache_dir: Path | None):
    from runtime.distill.llm_judge import JudgePrompt, LlmJudge, VerdictCache

    if spec.name not in prompts:
        raise JudgeError(f"llm judge `{spec.name}` has no prompt (prompts/judges/{spec.name}.md); "
                         "recompile the plan with `craftc compile`")
    if cache_dir is None:
        raise JudgeError(f"llm judge `{spec.name}` needs a verdict cache directory")
    backend = _llm_backend(spec, recipe, backends)
    concurrency = spec.backend.concurrency if spec.backend else 4
    return LlmJudge(spec.name, spec.weight, JudgePrompt.parse(prompts[spec.name], f"prompts/judges/{spec.name}.md"),
                    backend, VerdictCache(Path(cache_dir)), recipe.seed, concurrency)


def _llm_backend(spec: Judge, recipe: Recipe, backends: dict | None):
    if backends and spec.name in backends:
        return backends[spec.name]
    if spec.backend is None or spec.backend.kind == "synthetic":
        raise TeacherError(f"llm judge `{spec.name}` needs a model backend; set "
                           "`backend { kind openai model \"...\" base_url \"...\" }` in its judge block")
    from runtime.distill.teachers.factory import make_teacher
    return make_teacher(spec.backend, recipe.schema_, BlockFormat())
