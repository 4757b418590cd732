"""Known settings per block kind, with types and ranges, and their resolution.

Block bodies are generic ``key value, value`` lists in the grammar;
:data:`~craftc.setting_keys.BLOCK_KEYS` (derived from the IR's field
declarations) says which keys each block kind knows, what type each takes and which
IR field it fills.
Resolving a block yields a dict of IR field values plus diagnostics (E201-E212) for
unknown keys, wrong types, out-of-range values and unknown enum names. The language
reference's settings tables are generated from :data:`BLOCK_KEYS`.
"""

from __future__ import annotations

from typing import Any

from craftc.setting_keys import BLOCK_KEYS, Key
from craftc.diagnostics import DiagnosticSink, did_you_mean
from craftc.syntax import Setting, Value

__all__ = [
    "Key", "BLOCK_KEYS", "resolve_settings", "merge_settings", "settings_table_markdown",
    "render_settings_reference",
]


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
        if value is _NO_BLOCK:           # `lora none`: the IR default, no block
            continue
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
_NO_BLOCK = _Bad()


def _no_block(key: Key, s: Setting) -> bool:
    """`lora none`: a block whose default is none, turned off (a profile can drop a block
    that the recipe or its base profile sets)."""
    return key.default == "none" and s.block is None and len(s.values) == 1 and s.values[0].text == "none"


def _coerce(key: Key, s: Setting, sink: DiagnosticSink, what: str) -> Any:
    if key.type == "block":
        if _no_block(key, s):
            return _NO_BLOCK
        if s.block is None:
            sink.error("E212", f"`{s.key}` in `{what}` takes a block", s.key_span,
                       f"write `{s.key} {{ ... }}`" + (f", or `{s.key} none` for none" if key.default == "none" else ""))
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
        if engine.text != "vllm":
            # Only a vLLM rollout has a mode: the setting would reach nothing.
            sink.error("E523", f"`rollout {engine.text}` takes no vllm mode: only `rollout vllm` reads "
                       f"`{mode.text}`", mode.span, f"write `rollout vllm, {mode.text}`, or `rollout {engine.text}`")
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
        sink.error("E202", f"`{name}` takes {key.describe_type()}, got {_kind_words(v)} "
                   f"`{v.text}`", v.span, f"write e.g. `{key.example(name)}`")
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
    "lora": "`lora { ... }` inside a stage",
}


def render_settings_reference() -> str:
    """The settings section of docs/language.md, generated from :data:`BLOCK_KEYS`."""
    parts = []
    for kind in BLOCK_KEYS:
        parts.append(f"### {_BLOCK_TITLES[kind]}\n\n{settings_table_markdown(kind)}\n")
    return "\n".join(parts)
