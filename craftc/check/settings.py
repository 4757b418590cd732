"""Known settings per block kind, with types and ranges, and their resolution.

Block bodies are generic ``key value, value`` lists in the grammar; this table says
which keys each block kind knows, what type each takes and which IR field it fills.
Resolving a block yields a dict of IR field values plus diagnostics (E201-E212) for
unknown keys, wrong types, out-of-range values and unknown enum names. The language
reference's settings tables are generated from :data:`BLOCK_KEYS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from craftc.diagnostics import DiagnosticSink, did_you_mean
from craftc.syntax import Setting, Value

__all__ = [
    "Key", "BLOCK_KEYS", "resolve_settings", "merge_settings", "settings_table_markdown",
    "render_settings_reference",
]


@dataclass(frozen=True)
class Key:
    """One known setting: its type, the IR field it fills, range and documentation."""

    type: str                 # int float duration fraction enum enum_list name name_list
                              # string string_or_env env bool model_ref rollout reject block
    doc: str
    default: str = ""
    field: str | None = None  # IR field; defaults to the key itself
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    low_open: bool = False    # True: low itself is not allowed

    def describe_type(self) -> str:
        if self.choices:
            sep = ", " if self.type.endswith("list") or self.type == "reject" else " / "
            inner = sep.join(self.choices)
            return f"list of {inner}" if sep == ", " else inner
        return {
            "int": "integer", "float": "number", "duration": "duration (`10s`, `500ms`, `2m`)",
            "fraction": "percent or fraction (`20%`, `0.2`)", "name": "name",
            "name_list": "list of names", "string": "string", "env": 'env("VAR")',
            "string_or_env": 'string or env("VAR")', "bool": "true | false",
            "model_ref": 'model name or "org/name" / "path"', "block": "{ ... }",
        }.get(self.type, self.type)

    def describe_range(self) -> str:
        if self.low is None and self.high is None:
            return ""
        low = "" if self.low is None else f"{'>' if self.low_open else '>='} {self.low:g}"
        high = "" if self.high is None else f"<= {self.high:g}"
        return ", ".join(x for x in (low, high) if x)


_TEACHER_KEYS: dict[str, Key] = {
    "candidates": Key("int", "candidate trajectories per workflow instance", "8", low=1),
    "model": Key("string", "model id the backend serves (openai, hf, vllm)", "none"),
    "base_url": Key("string_or_env", "endpoint URL (openai), or env(\"VAR\") holding it", "none"),
    "api_key": Key("env", "environment variable holding the API key", "none",
                   field="api_key_env"),
    "concurrency": Key("int", "requests in flight", "4", low=1, high=256),
    "timeout": Key("duration", "per-request timeout", "60s", field="timeout_s", low=0,
                   low_open=True),
    "max_retries": Key("int", "retries per request", "3", low=0, high=20),
    "temperature": Key("float", "sampling temperature", "0.7", low=0, high=5),
    "max_new_tokens": Key("int", "tokens generated per candidate", "1024", low=1),
    "noise": Key("fraction", "synthetic: share of candidates corrupted", "0.5", low=0, high=1),
}

BLOCK_KEYS: dict[str, dict[str, Key]] = {
    "recipe": {
        "seed": Key("int", "seed of every random choice in the pipeline", "0", low=0),
        "scale": Key("float", "warehouse size knob (1.0 = default small)", "1.0", low=0,
                     low_open=True, high=1000),
        "warehouse": Key("string_or_env", "an existing DuckDB warehouse to bind instead of generating one "
                         "(a path relative to the recipe file, or env(\"VAR\"))", "none"),
        "on_loss": Key("enum", "when a workflow loses training data in a run (a skipped reference, "
                       "no accepted trajectory): `warn`, or `error` to fail the step", "warn",
                       choices=("warn", "error")),
    },
    "teacher": _TEACHER_KEYS,
    "backend": {"kind": Key("enum", "backend kind", "synthetic",
                            choices=("synthetic", "openai", "hf", "vllm")), **_TEACHER_KEYS},
    "judge": {
        "kind": Key("enum", "judge kind (defaults to the judge's name when that is a kind)",
                    "the name", choices=("plan_code", "prompt_params", "no_ddl_leak", "llm")),
        "weight": Key("float", "weight in a `vote weighted` ensemble", "1.0", low=0),
        "rubric": Key("string", "llm judges: what to judge", '""'),
        "backend": Key("block", "llm judges: the model to ask (teacher settings + kind)", "none"),
    },
    "gate.execution": {
        "reject": Key("reject", "failure kinds rejected; `timeout 10s` also sets the timeout",
                      "error, syntax, timeout", choices=("error", "syntax", "timeout")),
        "timeout": Key("duration", "wall-clock limit per execution", "10s", field="timeout_s",
                       low=0, low_open=True),
        "memory": Key("int", "memory limit per execution, in MB", "1024", field="memory_mb",
                      low=16),
        "jobs_per_process": Key("int", "candidates one sandbox process may run in turn (1: a fresh "
                                "process each; more is faster, and a candidate's changes to modules "
                                "can reach later ones)", "1", low=1, high=1000),
    },
    "gate.output": {
        "reject": Key("enum_list", "output problems rejected", "empty, incomplete, mismatch",
                      choices=("empty", "incomplete", "mismatch")),
    },
    "gate.judge": {
        "judges": Key("name_list", "the judge ensemble (built-in or declared judges)",
                      "plan_code, prompt_params, no_ddl_leak"),
        # The built-in judges each check a different property, so by default all must pass.
        "vote": Key("enum", "how the ensemble decides", "unanimous",
                    choices=("majority", "unanimous", "weighted")),
        "threshold": Key("fraction", "weighted vote: share of weight needed to pass", "0.5",
                         low=0, high=1),
    },
    "reward": {
        "outcome": Key("float", "weight of R_outcome (execution success, unit tests)", "0.5"),
        "process": Key("float", "weight of R_process (tool-call structure, anti-patterns)", "0.2"),
        "consistency": Key("float", "weight of R_consistency (plan/code agreement)", "0.2"),
        "judge": Key("float", "weight of R_judge (business alignment)", "0.1"),
        "aggregate": Key("name", "`sum` or `normalized` (weights divided by their sum)",
                         "normalized"),
        "penalties": Key("block", "`name weight` pairs subtracted per occurrence",
                         "discovery_call 0.05, redundant_join 0.1, select_star 0.05"),
        "step_rewards": Key("bool", "reward each tool turn, not only the last", "true"),
    },
    "model": {
        "source": Key("enum", "where the model comes from (default: tiny_moe, or hub/path "
                      "when `path` is set)", "tiny_moe", choices=("tiny_moe", "path", "hub")),
        "path": Key("string", "hub id (`org/name`) or a directory relative to the recipe", "none"),
        "context": Key("int", "context length in tokens", "2048", low=16),
        "hidden": Key("int", "tiny_moe: hidden size", "192", low=8),
        "layers": Key("int", "tiny_moe: layers", "4", low=1),
        "heads": Key("int", "tiny_moe: attention heads", "4", low=1),
        "kv_heads": Key("int", "tiny_moe: key/value heads", "2", low=1),
        "experts": Key("int", "tiny_moe: experts per MoE layer", "4", low=1),
        "top_k": Key("int", "tiny_moe: experts routed per token", "2", low=1),
        "intermediate": Key("int", "tiny_moe: expert MLP size", "384", low=8),
        "vocab": Key("int", "tiny_moe: BPE vocabulary size", "2048", low=64),
        "seed": Key("int", "tiny_moe: weight init seed", "0", low=0),
    },
    "stage": {
        "kind": Key("enum", "trainer (defaults to the stage name when it is sft or grpo)",
                    "the name", choices=("sft", "grpo")),
        "from": Key("name", "the stage whose checkpoint this one starts from", "none",
                    field="after"),
        "base": Key("model_ref", "base model: a `model` block, `tiny_moe`, or \"org/name\"",
                    "tiny_moe"),
        "input": Key("enum", "model input mode", "stripped", choices=("stripped", "stuffed")),
        "mask": Key("enum_list", "roles masked from the loss (must include tool_outputs)",
                    "tool_outputs, system, user", choices=("tool_outputs", "system", "user")),
        "epochs": Key("float", "passes over the data", "3", low=0, low_open=True),
        "steps": Key("int", "optimiser steps (overrides epochs)", "none", low=1),
        "lr": Key("float", "learning rate", "3e-4", low=0, low_open=True, high=1),
        "warmup": Key("fraction", "share of the optimiser steps with a linear learning-rate warm-up",
                      "0%", low=0, high=0.5),
        "batch": Key("int", "global batch (examples per optimiser step)", "8", low=1),
        "per_device_batch": Key("int", "examples per device per forward pass", "8", low=1),
        "max_length": Key("int", "max tokens per training example", "1024", low=16),
        "group": Key("int", "grpo: generations per prompt", "4", low=2),
        "max_turns": Key("int", "grpo: agent turns per rollout", "3", low=1, high=64),
        "max_new_tokens": Key("int", "grpo: tokens per generated turn", "256", low=1),
        "temperature": Key("float", "grpo: sampling temperature", "1.0", low=0, low_open=True,
                           high=5),
        "beta": Key("float", "grpo: KL coefficient", "0.0", low=0),
        "rollout": Key("rollout", "grpo: generation engine, optionally with the vllm mode "
                       "(`rollout vllm, server`)", "transformers",
                       choices=("transformers", "vllm")),
        "vllm_mode": Key("enum", "grpo: how vLLM runs", "colocate",
                         choices=("colocate", "server")),
        "parallel": Key("enum", "distributed strategy", "none",
                        choices=("none", "ddp", "fsdp2", "zero3")),
        "gpus": Key("int", "GPUs per node (0 = CPU)", "0", low=0, high=1024),
        "nodes": Key("int", "machines", "1", low=1, high=4096),
        "processes": Key("int", "training processes per node on CPU (`gpus 0`); above 1 needs "
                         "`parallel ddp`", "1", low=1, high=256),
        "mixed_precision": Key("enum", "mixed precision", "no", choices=("no", "bf16", "fp16")),
    },
    "eval": {
        "holdout": Key("fraction", "share of instances held out per workflow (0 < x < 1)",
                       "20%"),
        "holdout_workflows": Key("name_list", "whole workflows never trained on", "none"),
        "holdout_phrasings": Key("int", "last N phrasings of each turn never trained on", "1",
                                 low=0),
        "instances": Key("int", "eval instances per workflow", "4", low=1),
        "arms": Key("enum_list", "what is compared", "craft, sft_only, stuffed",
                    choices=("craft", "sft_only", "stuffed")),
        "baseline": Key("enum", "`stuffed` keeps the stuffed arm, `none` drops it", "stuffed",
                        choices=("stuffed", "none")),
        "max_turns": Key("int", "agent turns per eval conversation", "3", low=1, high=64),
        "baseline_budget": Key("enum", "the stuffed baseline's SFT gets the same training `tokens` as "
                               "the stripped arm, or the same `steps` (same epochs, more compute)",
                               "tokens", choices=("tokens", "steps")),
    },
    "tool": {
        "kind": Key("enum", "what the tool does (defaults to the tool's name when it is a kind)",
                    "the name", choices=("run_code", "list_entities", "describe_entity")),
        "doc": Key("string", "description shown in the system prompt", '""'),
    },
    "format": {
        "think": Key("string", "tag of the reasoning block", '"THINK"'),
        "plan": Key("string", "tag of the business-level plan block", '"PLAN"'),
        "code": Key("string", "tag of the executable code block", '"CODE"'),
        "answer": Key("string", "tag of the final-answer block", '"ANSWER"'),
    },
}

_LIST_TYPES = {"enum_list", "name_list", "reject", "rollout"}
_BOOL_NAMES = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}


def merge_settings(base: tuple[Setting, ...], override: tuple[Setting, ...]) -> tuple[Setting, ...]:
    """Profile merge: override's keys replace base's (nested blocks merge key by key)."""
    merged: dict[str, Setting] = {s.key: s for s in base}
    for s in override:
        old = merged.get(s.key)
        if old is not None and old.block is not None and s.block is not None:
            block = s.block.__class__(s.block.kind, s.block.name, s.block.name_span,
                                      merge_settings(old.block.settings, s.block.settings),
                                      s.block.span)
            s = Setting(s.key, s.key_span, (), block, s.span)
        merged[s.key] = s
    return tuple(merged.values())


def resolve_settings(kind: str, settings: tuple[Setting, ...], sink: DiagnosticSink,
                     what: str) -> dict[str, Any]:
    """IR field values of a block's settings; problems go to ``sink``.

    ``what`` names the block in messages (``stage sft``). Unknown and bad settings are
    left out of the result so the IR default applies while the error is reported.
    """
    table = BLOCK_KEYS[kind]
    out: dict[str, Any] = {}
    seen: dict[str, Setting] = {}
    for s in settings:
        if s.key in seen:
            first = seen[s.key].key_span
            sink.error("E209", f"`{s.key}` is set twice in `{what}`", s.key_span,
                       "keep one; use a profile to override a setting",
                       (f"first set at {first.file}:{first.line}:{first.col}",))
            continue
        seen[s.key] = s
        key = table.get(s.key)
        if key is None:
            _unknown_key(kind, s, table, sink, what)
            continue
        value = _coerce(key, s, sink, what)
        if isinstance(value, dict):      # one setting filling several fields (env, reject, rollout)
            out.update(value)
        elif value is not _BAD:
            out[key.field or s.key] = value
    return out


# Names other trainers (TRL, Axolotl) give to craft's settings: `learning_rate` -> `lr`.
KEY_ALIASES = {
    "learning_rate": "lr", "num_train_epochs": "epochs", "num_epochs": "epochs",
    "max_steps": "steps", "per_device_train_batch_size": "per_device_batch",
    "micro_batch_size": "per_device_batch", "train_batch_size": "batch",
    "global_batch_size": "batch", "num_generations": "group",
    "max_completion_length": "max_new_tokens", "warmup_ratio": "warmup",
    "max_seq_length": "max_length", "sequence_len": "max_length", "base_model": "base",
    "model_name_or_path": "base", "kl_coef": "beta", "bf16": "mixed_precision",
    "fp16": "mixed_precision", "num_candidates": "candidates", "n": "candidates",
}


def _unknown_key(kind: str, s: Setting, table: dict[str, Key], sink: DiagnosticSink,
                 what: str) -> None:
    alias = KEY_ALIASES.get(s.key)
    guess = alias if alias in table else did_you_mean(s.key, table)
    if alias in table:
        value = f" {s.key}" if s.key in ("bf16", "fp16") else \
            " " + (", ".join(v.text for v in s.values) or "...")
        help_text = (f"did you mean `{alias}`? (`{s.key}` is what TRL or Axolotl call it; "
                     f"write `{alias}{value}`)")
    elif guess:
        help_text = f"did you mean `{guess}`?"
    else:
        owner = next((k for k, spec in table.items() if s.key in spec.choices), None)
        help_text = (f"`{s.key}` is a value of `{owner}`: write `{owner} {s.key}`" if owner
                     else f"known settings of `{what}`: {', '.join(sorted(table))}")
    sink.error("E201", f"unknown setting `{s.key}` in `{what}`", s.key_span, help_text)


class _Bad:
    pass


_BAD = _Bad()


def _coerce(key: Key, s: Setting, sink: DiagnosticSink, what: str) -> Any:
    if key.type == "block":
        if s.block is None:
            sink.error("E212", f"`{s.key}` in `{what}` takes a block", s.key_span,
                       f"write `{s.key} {{ ... }}`")
            return _BAD
        return s.block
    if s.block is not None:
        sink.error("E212", f"`{s.key}` in `{what}` takes a value, not a block", s.key_span,
                   f"write `{s.key} <value>`")
        return _BAD
    if key.type not in _LIST_TYPES and len(s.values) != 1:
        sink.error("E208", f"`{s.key}` takes one value, got {len(s.values)}", s.values[1].span,
                   f"write a single value: `{s.key} {s.values[0].text}`")
        return _BAD
    if key.type in _LIST_TYPES:
        return _coerce_list(key, s, sink, what)
    for v in s.values:
        if v.qualifier is not None:
            sink.error("E208", f"unexpected `{v.qualifier.text}` after `{v.text}`",
                       v.qualifier.span, "a number after a value is only allowed in "
                       "`reject ..., timeout 10s`")
            return _BAD
    return _coerce_one(key, s.key, s.values[0], sink)


def _coerce_list(key: Key, s: Setting, sink: DiagnosticSink, what: str) -> Any:
    if key.type == "rollout":
        return _coerce_rollout(key, s, sink)
    items = []
    for v in s.values:
        if v.qualifier is not None and not (key.type == "reject" and v.text == "timeout"):
            sink.error("E208", f"unexpected `{v.qualifier.text}` after `{v.text}`",
                       v.qualifier.span, "only `timeout` takes a duration here")
            return _BAD
        if v.kind != "name":
            sink.error("E202", f"`{s.key}` takes names, got {_kind_words(v)} `{v.text}`",
                       v.span, f"write names: `{s.key} {', '.join(key.choices[:2]) or 'a, b'}`")
            return _BAD
        if key.choices and v.text not in key.choices:
            _unknown_choice(key, s.key, v, sink)
            return _BAD
        items.append(v.text)
    if key.type == "reject":
        timeout = next((v.qualifier for v in s.values if v.qualifier is not None), None)
        result: dict[str, Any] = {"reject": tuple(items)}
        if timeout is not None:
            seconds = _coerce_one(BLOCK_KEYS["gate.execution"]["timeout"], "timeout", timeout, sink)
            if seconds is not _BAD:
                result["timeout_s"] = seconds
        return result
    return tuple(items)


def _coerce_rollout(key: Key, s: Setting, sink: DiagnosticSink) -> Any:
    engine = s.values[0]
    if engine.kind != "name" or engine.text not in key.choices:
        _unknown_choice(key, s.key, engine, sink)
        return _BAD
    result: dict[str, Any] = {"rollout": engine.text}
    if len(s.values) > 2:
        sink.error("E208", "`rollout` takes an engine and optionally a vllm mode",
                   s.values[2].span, "write `rollout vllm, colocate`")
        return _BAD
    if len(s.values) == 2:
        mode = s.values[1]
        mode_key = BLOCK_KEYS["stage"]["vllm_mode"]
        if mode.kind != "name" or mode.text not in mode_key.choices:
            _unknown_choice(mode_key, "vllm_mode", mode, sink)
            return _BAD
        result["vllm_mode"] = mode.text
    return result


def _kind_words(v: Value) -> str:
    return {"string": "the string", "number": "the number", "duration": "the duration",
            "percent": "the percentage", "name": "the name", "env": "env"}[v.kind]


def _unknown_choice(key: Key, name: str, v: Value, sink: DiagnosticSink) -> None:
    guess = did_you_mean(v.text, key.choices) if v.kind == "name" else None
    options = ", ".join(f"`{c}`" for c in key.choices)
    help_text = f"did you mean `{guess}`? (one of {options})" if guess else f"one of {options}"
    sink.error("E204", f"unknown value `{v.text}` for `{name}`", v.span, help_text)


def _coerce_one(key: Key, name: str, v: Value, sink: DiagnosticSink) -> Any:
    t = key.type
    if t == "enum":
        if v.kind != "name" or v.text not in key.choices:
            _unknown_choice(key, name, v, sink)
            return _BAD
        return v.text
    if t in ("name", "model_ref"):
        if v.kind == "name" or (t == "model_ref" and v.kind == "string"):
            return v if t == "model_ref" else v.text
        sink.error("E202", f"`{name}` takes a name, got {_kind_words(v)} `{v.text}`", v.span,
                   f"write `{name} <name>`")
        return _BAD
    if t == "string":
        if v.kind != "string":
            sink.error("E202", f"`{name}` takes a string, got {_kind_words(v)} `{v.text}`",
                       v.span, f'write `{name} "{v.text}"`')
            return _BAD
        return v.python
    if t in ("string_or_env", "env"):
        return _coerce_env(key, name, v, sink)
    if t == "bool":
        if v.kind == "name" and v.text in _BOOL_NAMES:
            return _BOOL_NAMES[v.text]
        sink.error("E202", f"`{name}` takes true or false, got `{v.text}`", v.span,
                   f"write `{name} true` or `{name} false`")
        return _BAD
    return _coerce_number(key, name, v, sink)


def _coerce_env(key: Key, name: str, v: Value, sink: DiagnosticSink) -> Any:
    field = key.field or name
    if v.kind == "env":
        env_field = field if field.endswith("_env") else f"{field}_env"
        return {env_field: v.python}
    if key.type == "string_or_env" and v.kind == "string":
        return {field: v.python}
    wanted = 'env("VAR")' if key.type == "env" else 'a string or env("VAR")'
    sink.error("E202", f"`{name}` takes {wanted}, got {_kind_words(v)} `{v.text}`", v.span,
               f'write `{name} env("{name.upper()}")`')
    return _BAD


def _coerce_number(key: Key, name: str, v: Value, sink: DiagnosticSink) -> Any:
    t = key.type
    allowed = {"int": ("number",), "float": ("number",), "duration": ("duration", "number"),
               "fraction": ("percent", "number")}[t]
    if v.kind not in allowed:
        example = {"int": "8", "float": "0.5", "duration": "10s", "fraction": "20%"}[t]
        sink.error("E202", f"`{name}` takes {key.describe_type()}, got {_kind_words(v)} "
                   f"`{v.text}`", v.span, f"write e.g. `{name} {example}`")
        return _BAD
    value = v.python
    if t == "int":
        if isinstance(value, float):
            if not value.is_integer():
                sink.error("E202", f"`{name}` takes a whole number, got `{v.text}`", v.span,
                           f"write e.g. `{name} {round(value)}`")
                return _BAD
            value = int(value)
    else:
        value = float(value)
    if not _in_range(key, value):
        sink.error("E203", f"`{name}` is {v.text}, out of range ({key.describe_range()})",
                   v.span, f"use a value {key.describe_range()}")
        return _BAD
    return value


def _in_range(key: Key, value: float) -> bool:
    if key.low is not None and (value < key.low or (key.low_open and value == key.low)):
        return False
    return key.high is None or value <= key.high


def settings_table_markdown(kind: str) -> str:
    """A Markdown table of one block kind's settings (for docs/language.md)."""
    rows = ["| setting | type | default | range | meaning |", "| --- | --- | --- | --- | --- |"]
    for name, key in BLOCK_KEYS[kind].items():
        rows.append(f"| `{name}` | {key.describe_type()} | {key.default} | "
                    f"{key.describe_range()} | {key.doc} |")
    return "\n".join(rows)


_BLOCK_TITLES = {
    "recipe": "Recipe-level settings (`seed 7`)", "teacher": "`teacher KIND { ... }`",
    "backend": "`backend { ... }` inside an llm judge", "judge": "`judge NAME { ... }`",
    "gate.execution": "`gate execution { ... }`", "gate.output": "`gate output { ... }`",
    "gate.judge": "`gate judge { ... }`", "reward": "`reward { ... }`",
    "model": "`model NAME { ... }`", "stage": "`stage NAME { ... }`", "eval": "`eval { ... }`",
    "tool": "`tool NAME { ... }`", "format": "`format { ... }`",
}


def render_settings_reference() -> str:
    """The settings section of docs/language.md, generated from :data:`BLOCK_KEYS`."""
    parts = []
    for kind in BLOCK_KEYS:
        parts.append(f"### {_BLOCK_TITLES[kind]}\n\n{settings_table_markdown(kind)}\n")
    return "\n".join(parts)
