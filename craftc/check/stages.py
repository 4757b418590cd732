"""Stage and model checks: the stage graph, batch arithmetic, masking, context budget."""

from __future__ import annotations

from craftc.adapters import TINY_MOE_EXPERT_PARAMS, known_targets
from craftc.check.budget import example_tokens
from craftc.check.engines import check_engine
from craftc.check.names import report_duplicates, unknown_name
from craftc.diagnostics import DiagnosticSink, did_you_mean
from craftc.emit.stages import model_classes
from craftc.ir import GRPOStage, ModelSpec, Recipe, SFTStage, Stage
from craftc.lower import find_setting, head_span, setting_span
from craftc.syntax import Block, RecipeDecl

__all__ = ["check_stages"]


def check_stages(decl: RecipeDecl, recipe: Recipe, sink: DiagnosticSink,
                 solutions: dict[str, str] | None = None) -> None:
    """Every stage- and model-level problem, reported to ``sink``."""
    blocks = {b.name: b for b in decl.blocks if b.kind == "stage"}
    report_duplicates(((b.name, b.name_span) for b in decl.blocks if b.kind == "stage"),
                      "stage", sink)
    report_duplicates(((b.name, b.name_span) for b in decl.blocks if b.kind == "model"),
                      "model", sink)
    stages = {s.name: s for s in recipe.stages}
    models = {m.name: m for m in recipe.models}
    for b in decl.blocks:
        if b.kind == "model" and b.name in models:
            _check_model_shape(models[b.name], b, sink)
    for s in recipe.stages:
        block = blocks.get(s.name)
        _check_from(s, block, stages, sink)
        _check_processes(s, block, sink)
        _check_precision(s, block, sink)
        _check_arms(s, block, sink)
        _check_batch(s, block, sink)
        _check_mask(s, block, sink)
        check_engine(s, block, sink)
        _check_lora_targets(recipe, s, block, sink)
        _check_earlier_turns(recipe, s, block, sink)
        _check_warm_up(s, block, sink)
        _check_sampler(recipe, s, block, sink)
        _check_shared_prompts(recipe, s, block, sink)
        _check_rollout_copy_bias(s, block, sink)
        _check_measure_every(s, block, sink)
    _check_cycles(recipe.stages, blocks, sink)
    _check_budget(decl, recipe, blocks, models, sink, solutions or {})


def _check_from(s: Stage, block: Block | None, stages: dict[str, Stage], sink) -> None:
    if s.after is not None and s.after not in stages:
        known = {n: st.span for n, st in stages.items() if n != s.name}
        unknown_name("E501", "stage", s.after, setting_span(block, "from"), known, sink)
    if s.kind == "grpo" and not _reaches_sft(s, stages):
        sink.warning("W503", f"grpo stage `{s.name}` does not start from an sft stage",
                     block.name_span if block else s.span,
                     f"add `from sft` to `stage {s.name}` so RL starts from a model that "
                     "learnt the schema")


def _reaches_sft(s: Stage, stages: dict[str, Stage]) -> bool:
    seen: set[str] = set()
    cur = stages.get(s.after) if s.after else None
    while cur is not None and cur.name not in seen:
        if cur.kind == "sft":
            return True
        seen.add(cur.name)
        cur = stages.get(cur.after) if cur.after else None
    return False


def _check_cycles(stages, blocks: dict[str, Block], sink) -> None:
    by_name = {s.name: s for s in stages}
    reported: set[str] = set()
    for start in by_name:
        path, cur = [], by_name.get(start)
        while cur is not None and cur.name not in path:
            path.append(cur.name)
            cur = by_name.get(cur.after) if cur.after else None
        if cur is not None and cur.name == start and start not in reported:
            reported.update(path)
            cycle = " -> ".join(f"`{n}`" for n in [*path, start])
            sink.error("E502", f"cycle in the stage graph: {cycle}",
                       setting_span(blocks.get(start), "from"),
                       "remove one `from` so that the stages form a sequence")


def _check_processes(s: Stage, block: Block | None, sink) -> None:
    if s.processes > 1 and not (s.gpus == 0 and s.parallel == "ddp"):
        where = f"`gpus {s.gpus}`" if s.gpus else f"`parallel {s.parallel}`"
        fix = ("CPU processes run only with `gpus 0`: drop `processes` (on GPUs `gpus` is the "
               "process count per node)" if s.gpus else
               f"use `parallel ddp` to run {s.processes} CPU processes, or drop `processes`")
        sink.error("E512", f"stage `{s.name}`: `processes {s.processes}` needs `gpus 0` and "
                   f"`parallel ddp`, not {where}",
                   setting_span(block, "processes") or (block.name_span if block else None), fix)


def _check_precision(s: Stage, block: Block | None, sink) -> None:
    # A CPU stage computes under bf16 autocast when asked (faster than float32 on a CPU with
    # AMX or AVX512-BF16); Trainer has no fp16 on CPU, so that setting would be dropped
    # without a word.
    if s.gpus == 0 and s.mixed_precision == "fp16":
        sink.error("E524", f"stage `{s.name}`: `mixed_precision fp16` needs GPUs, and `gpus` "
                   "is 0: CPU stages train in float32 or under bf16 autocast",
                   setting_span(block, "mixed_precision") or (block.name_span if block else None),
                   "write `mixed_precision bf16` to train on CPU in half precision, or set `gpus` to the "
                   "GPUs per node")


def _check_arms(s: Stage, block: Block | None, sink) -> None:
    # The step divides CPU threads between the arms; it has no way to divide GPUs.
    if isinstance(s, SFTStage) and s.arms == "concurrent" and s.gpus:
        sink.error("E527", f"stage `{s.name}`: `arms concurrent` shares CPU cores between the two arms, and the "
                   f"stage trains on {s.gpus} GPU(s) per node",
                   setting_span(block, "arms") or (block.name_span if block else None),
                   "remove `arms concurrent` (the arms then train one after the other), or set `gpus 0`")


def _per_node(s: Stage) -> tuple[int, str]:
    """Training processes per node and what they are, for the batch arithmetic."""
    if s.gpus == 0:
        return s.processes, "CPU process(es)"
    return s.gpus, "GPU(s)"


def _check_batch(s: Stage, block: Block | None, sink) -> None:
    per_node, what = _per_node(s)
    devices = s.per_device_batch * per_node * s.nodes
    # verl splits a step over its data-parallel ranks its own way (craftc.check.engines, E514).
    verl = isinstance(s, GRPOStage) and s.engine == "verl"
    if s.batch % devices and not verl:
        sink.error("E504", f"stage `{s.name}`: batch {s.batch} is not a multiple of "
                   f"per_device_batch {s.per_device_batch} x {per_node} {what} x "
                   f"{s.nodes} node(s) = {devices}",
                   setting_span(block, "batch") or (block.name_span if block else None),
                   f"use a batch of {devices * max(1, round(s.batch / devices))}, or change "
                   "per_device_batch")
    if isinstance(s, GRPOStage) and s.batch % s.group:
        sink.error("E505", f"stage `{s.name}`: generation batch {s.batch} is not a multiple "
                   f"of group {s.group}",
                   setting_span(block, "group") or (block.name_span if block else None),
                   f"use a batch of {s.group * max(1, round(s.batch / s.group))}, or a group "
                   f"that divides {s.batch}")


def _check_mask(s: Stage, block: Block | None, sink) -> None:
    if "tool_outputs" not in s.mask:
        # A warning, not an error: the plan (and its diff) shows the masking spec, and the
        # sft step's mask report proves the consequence and refuses to train.
        sink.warning("W507", f"stage `{s.name}` would train on tool outputs; the sft step will refuse to train",
                     setting_span(block, "mask"),
                     f"add tool_outputs: `mask {', '.join(('tool_outputs', *s.mask))}`")


def _check_lora_targets(recipe: Recipe, s: Stage, block: Block | None, sink) -> None:
    known = known_targets(recipe, s) if s.lora is not None else None
    if known is None:
        return
    lora = find_setting(block.settings, "lora") if block else None
    written = find_setting(lora.block.settings, "targets") if lora and lora.block else None
    spans = {v.text: v.span for v in written.values} if written else {}
    for target in s.lora.targets:
        if target not in known:
            guess = did_you_mean(target, known)
            sink.error("E517", f"stage `{s.name}`: LoRA target `{target}` is not a module of `{s.base}`",
                       spans.get(target) or (lora.key_span if lora else s.span),
                       (f"did you mean `{guess}`? " if guess else "") + f"`{s.base}` has {', '.join(known)}")
    experts = [t for t in s.lora.targets if t in TINY_MOE_EXPERT_PARAMS]
    if experts and s.lora.dropout > 0:
        dropout = find_setting(lora.block.settings, "dropout") if lora and lora.block else None
        sink.error("E518", f"stage `{s.name}`: LoRA on the fused expert weights ({', '.join(experts)}) "
                   f"takes no dropout, and `dropout` is {s.lora.dropout:g}",
                   (dropout.values[0].span if dropout and dropout.values else None)
                   or (spans.get(experts[0]) or (lora.key_span if lora else s.span)),
                   "add `dropout 0` to the `lora` block, or target only linear modules")


def _check_earlier_turns(recipe: Recipe, s: Stage, block: Block | None, sink) -> None:
    # TRL's rollout trains a policy-history conversation as one token sequence, which a
    # context compacted between its turns is not; reference rows are one turn each.
    if (recipe.earlier_turns != "full" and isinstance(s, GRPOStage) and s.engine == "trl"
            and s.history == "policy"):
        span = (setting_span(block, "history") or block.name_span) if block else s.span
        sink.error("E519", f"stage `{s.name}`: `earlier_turns {recipe.earlier_turns}` needs `history reference` "
                   "(a policy-history rollout is trained as one sequence, which a compacted context is not)",
                   span, f"add `history reference` to `stage {s.name}`, or set `earlier_turns full`")


# TRL settings that pack a batch into one row themselves (SFTConfig's).
_TRL_PACKING = ("packing", "padding_free")


def _check_sampler(recipe: Recipe, s: Stage, block: Block | None, sink) -> None:
    # `sampler by_prefix` packs each batch itself (runtime.train.prefix_groups).
    if not isinstance(s, SFTStage) or s.sampler != "by_prefix":
        return
    span = (setting_span(block, "sampler") or block.name_span) if block else s.span
    packing = [key for key, value in s.trl if key in _TRL_PACKING and value not in (False, "false")]
    if packing:
        sink.error("E529", f"stage `{s.name}`: `sampler by_prefix` packs each batch into one row, and its `trl` "
                   f"block sets `{packing[0]}`, which packs them already", span,
                   f"remove `{packing[0]}` from the `trl` block, or remove `sampler by_prefix`")
        return
    _check_prefix_sharing(recipe, s, span, sink, "sampler by_prefix", ("E529", "W530"),
                          ("batch's shared prefix", "a prefix between the examples"),
                          "raise `per_device_batch` (and `batch`) to 8")


def _check_shared_prompts(recipe: Recipe, s: Stage, block: Block | None, sink) -> None:
    # `shared_prefix on` packs each log-prob forward's groups itself (runtime.train.grpo.prompt_groups);
    # under `engine verl` it is E516's (a TRL-only setting).
    if not isinstance(s, GRPOStage) or s.shared_prefix != "on" or s.engine != "trl":
        return
    span = (setting_span(block, "shared_prefix") or block.name_span) if block else s.span
    _check_prefix_sharing(recipe, s, span, sink, "shared_prefix on", ("E531", "W532"),
                          ("group's prompt", "a prompt between the completions"),
                          f"raise `per_device_batch` to a multiple of `group` ({s.group})")


def _check_prefix_sharing(recipe: Recipe, s: Stage, span, sink, setting: str, codes: tuple[str, str],
                          shared: tuple[str, str], fix: str) -> None:
    # What SFT's and GRPO's shared-prefix paths (runtime.train.prefix_groups) both need: plain
    # causal attention, which gpt-oss's sliding windows and sinks are not (an error), and more
    # than one example a forward pass to share with (a warning).
    error, warning = codes
    once, between = shared
    if model_classes(recipe, s)[0] == "GptOssDecoderLayer":
        sink.error(error, f"stage `{s.name}`: `{setting}` runs each {once} once, and base `{s.base}` (gpt-oss) "
                   "attends through sliding windows and sinks, which that path does not compute", span,
                   f"remove `{setting}` for this base")
    elif s.per_device_batch == 1:
        sink.warning(warning, f"stage `{s.name}`: `{setting}` shares {between} of a forward pass, and "
                     "`per_device_batch` is 1, so there is nothing to share", span,
                     f"{fix} in `stage {s.name}`, or remove `{setting}`")


def _check_rollout_copy_bias(s: Stage, block: Block | None, sink) -> None:
    # The bias is a logits processor of craft's transformers generator; TRL's vLLM rollout
    # samples in vLLM, which craft hands no per-conversation bias. Under `engine verl` the
    # setting is E516's.
    if not isinstance(s, GRPOStage) or not s.copy_bias or s.engine != "trl" or s.rollout == "transformers":
        return
    sink.error("E533", f"stage `{s.name}`: `copy_bias {s.copy_bias:g}` biases the rollouts craft's transformers "
               f"generator samples, and `rollout {s.rollout}` samples them in vLLM, which is given no bias",
               (setting_span(block, "copy_bias") or block.name_span) if block else s.span,
               f"write `rollout transformers` in `stage {s.name}`, or remove `copy_bias`")


def _check_measure_every(s: Stage, block: Block | None, sink) -> None:
    # `measure 0` measures nothing, before, after or between: a curve every few steps would be empty.
    if not isinstance(s, GRPOStage) or s.measure or not s.measure_every:
        return
    sink.error("E535", f"stage `{s.name}`: `measure_every {s.measure_every}` plays the measured rows every few "
               "steps, and `measure 0` measures none", (setting_span(block, "measure_every") or block.name_span)
               if block else s.span, f"remove `measure_every` from `stage {s.name}`, or measure some rows "
               "(`measure 32`)")


def _check_warm_up(s: Stage, block: Block | None, sink) -> None:
    # The warm-up's settings shape examples that only `prefix_epochs` trains on.
    if not isinstance(s, SFTStage):
        return
    if not s.prefix_epochs:
        for key, value in (("prefix_history", s.prefix_history), ("prefix_renames", s.prefix_renames),
                           ("prefix_renames_through", s.prefix_renames_through)):
            if value != SFTStage.model_fields[key].default:
                span = (setting_span(block, key) or block.name_span) if block else s.span
                sink.error("E520", f"stage `{s.name}`: `{key} {value}` shapes the warm-up, and `prefix_epochs` "
                           "is 0, so there is none", span,
                           f"add `prefix_epochs 3` to `stage {s.name}`, or remove `{key}`")
    elif not s.prefix_renames and s.prefix_renames_through != SFTStage.model_fields["prefix_renames_through"].default:
        span = (setting_span(block, "prefix_renames_through") or block.name_span) if block else s.span
        sink.error("E521", f"stage `{s.name}`: `prefix_renames_through {s.prefix_renames_through}` says where "
                   "renamed first turns end, and `prefix_renames` is 0, so there are none", span,
                   f"add `prefix_renames 1` to `stage {s.name}`, or remove `prefix_renames_through`")


def _check_model_shape(m: ModelSpec, block: Block, sink) -> None:
    if m.source != "tiny_moe":
        return
    problems = []
    if m.heads % m.kv_heads:
        problems.append(("kv_heads", f"heads {m.heads} is not a multiple of kv_heads {m.kv_heads}"))
    if m.hidden % m.heads:
        problems.append(("hidden", f"hidden {m.hidden} is not a multiple of heads {m.heads}"))
    if m.top_k > m.experts:
        problems.append(("top_k", f"top_k {m.top_k} is more than experts {m.experts}"))
    for key, text in problems:
        sink.error("E510", f"model `{m.name}`: {text}", setting_span(block, key) or block.name_span,
                   "choose sizes that divide: e.g. hidden 192, heads 4, kv_heads 2, "
                   "experts 4, top_k 2")


def _eval_span(decl: RecipeDecl):
    block = next((b for b in reversed(decl.blocks) if b.kind == "eval"), None)
    if block is None:
        return None
    return setting_span(block, "arms") or setting_span(block, "baseline") or head_span(block)


def _check_budget(decl: RecipeDecl, recipe: Recipe, blocks: dict[str, Block], models: dict[str, ModelSpec],
                  sink, solutions: dict[str, str]) -> None:
    sft = [s for s in recipe.stages if s.kind == "sft"]
    needs_stuffed = [s for s in recipe.stages if s.input == "stuffed"]
    trains_stuffed = "stuffed" in recipe.eval.arms and bool(sft)
    if not sft and not needs_stuffed:
        return
    counted = example_tokens(recipe, solutions)
    how = counted.how
    for s in needs_stuffed:
        model = models.get(s.base)
        if model is not None and counted.head["stuffed"] >= model.context:
            block = blocks.get(s.name)
            sink.error("E506", f"stage `{s.name}`: the stuffed prompt (about {counted.head['stuffed']} tokens, "
                       f"{how}) exceeds the context of model `{model.name}` ({model.context} tokens)",
                       setting_span(block, "input"),
                       f"use `input stripped`, or give model `{model.name}` a `context` of at "
                       f"least {counted.longest['stuffed']}")
    for s in sft:
        model = models.get(s.base)
        if model is None:
            continue
        block = blocks.get(s.name)
        # The trainer keeps the start of a longer example (TRL truncation): when the prompt
        # head alone fills `max_length`, no assistant token is left to train, every example
        # is dropped and the launch fails. The stuffed arm gets the stripped arm's room plus
        # its longer prompt, capped by the model's context (runtime/train/step.py).
        room = {"stripped": min(s.max_length, model.context)}
        room["stuffed"] = min(s.max_length + max(counted.longest["stuffed"] - counted.longest["stripped"], 0),
                              model.context)
        modes = ["stripped"] + (["stuffed"] if trains_stuffed and s.input != "stuffed" else [])
        for mode in modes:
            if counted.head[mode] < room[mode]:
                continue
            if mode == "stripped":
                span = setting_span(block, "max_length") or (block.name_span if block else s.span)
                need = counted.longest["stripped"]
                fix = (f"set `max_length {_round_up(need)}` in `stage {s.name}`"
                       + (f" and `context {_round_up(need)}` in `model {model.name}`" if need > model.context else ""))
                sink.error("E528", f"stage `{s.name}`: the prompt of every stripped example (system prompt and "
                           f"first question: {counted.head['stripped']} tokens, {how}) fills `max_length "
                           f"{room['stripped']}`; truncation would leave no reply to train", span, fix)
            elif not counted.measured:
                # An estimate within about 40% of the real count cannot prove the overflow:
                # the launch measures it with the real tokenizer (runtime/train/step.py).
                span = _eval_span(decl) or (block.name_span if block else s.span)
                sink.warning("W511", f"stage `{s.name}`: the stuffed baseline's prompt (the whole schema and the "
                             f"first question: about {counted.head['stuffed']} tokens, {how}) may fill the "
                             f"{room['stuffed']} tokens its arm trains on (model `{model.name}`, context "
                             f"{model.context})", span,
                             f"give model `{model.name}` a `context` of at least {_round_up(counted.longest['stuffed'])}, "
                             "or write `eval { baseline none }` to train and evaluate no stuffed arm")
            else:
                span = _eval_span(decl) or (block.name_span if block else s.span)
                need = counted.longest["stuffed"]
                sink.error("E528", f"stage `{s.name}`: the stuffed baseline's prompt (the whole schema and the "
                           f"first question: {counted.head['stuffed']} tokens, {how}) fills the "
                           f"{room['stuffed']} tokens its arm trains on (model `{model.name}`, context "
                           f"{model.context}); truncation would leave no reply to train", span,
                           f"give model `{model.name}` a `context` of at least {_round_up(need)}, or write "
                           "`eval { baseline none }` to train and evaluate no stuffed arm")
    first = sft[0] if sft else None
    model = models.get(first.base) if first else None
    if trains_stuffed and model is not None and counted.head["stuffed"] < model.context < counted.longest["stuffed"]:
        sink.warning("W511", f"the stuffed baseline's longest example (about {counted.longest['stuffed']} tokens, "
                     f"{how}) exceeds the context of model `{model.name}` ({model.context} tokens)",
                     _eval_span(decl),
                     f"give model `{model.name}` a `context` of at least {_round_up(counted.longest['stuffed'])}, "
                     "or drop the `stuffed` arm")


def _round_up(tokens: int, step: int = 256) -> int:
    """``tokens`` rounded up to a multiple of ``step``, with a tenth for margin."""
    return -(-int(tokens * 1.1) // step) * step
