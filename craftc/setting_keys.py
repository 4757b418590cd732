"""The settings each block kind knows, derived from the IR's field declarations.

Every recipe setting is declared once, as a field of an IR model in :mod:`craftc.ir`:
its Python type (``Literal`` choices), default, ``ge``/``gt``/``le`` range and
``description``. This module reads those declarations into :data:`BLOCK_KEYS`, the
table that :func:`craftc.settings.resolve_settings` resolves blocks with and
that the language reference's settings tables are rendered from. A field is a
setting when it has a ``description``; its ``json_schema_extra`` names the recipe key
when it differs from the field (``timeout`` -> ``timeout_s``), the surface type when
the Python type does not say it (``duration``, ``fraction``, ...) and the default as
the docs show it when the field has none (``the name``).
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from craftc.ir import (
    BlockFormat, EvalSpec, ExecutionGate, GRPOStage, Judge, JudgeGate, LoraAdapter, ModelSpec, OutputGate,
    Recipe, Reward, SFTStage, StageBase, Teacher, Tool,
)

__all__ = ["Key", "BLOCK_KEYS", "BLOCK_MODELS", "keys_of", "shown_default", "explain_setting"]


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

    def example(self, name: str) -> str:
        """How `name` is written with a value of this key's type (``noise_kinds wrong_column, ...``)."""
        if self.type == "block":
            return f"{name} {{ ... }}"
        if self.choices:
            listed = self.type.endswith("list") or self.type == "reject"
            return f"{name} {self.choices[0]}, ..." if listed and len(self.choices) > 1 \
                else f"{name} {self.choices[0]}"
        value = {"int": "8", "float": "0.5", "duration": "10s", "fraction": "20%", "name": "NAME",
                 "name_list": "NAME, ...", "string": '"..."', "env": 'env("VAR")',
                 "string_or_env": '"..."', "bool": "true", "model_ref": "NAME"}.get(self.type, "VALUE")
        return f"{name} {value}"

    def describe_range(self) -> str:
        if self.low is None and self.high is None:
            return ""
        low = "" if self.low is None else f"{'>' if self.low_open else '>='} {self.low:g}"
        high = "" if self.high is None else f"<= {self.high:g}"
        return ", ".join(x for x in (low, high) if x)


def _python_type(annotation: Any) -> tuple[str, tuple[str, ...]]:
    """(surface type, choices) of a field's Python annotation."""
    if get_origin(annotation) in (Union, types.UnionType):
        inner = [a for a in get_args(annotation) if a is not type(None)]
        if len(inner) == 1:
            return _python_type(inner[0])
    if get_origin(annotation) is Literal:
        return "enum", tuple(get_args(annotation))
    if get_origin(annotation) is tuple:
        item = get_args(annotation)[0]
        if get_origin(item) is Literal:
            return "enum_list", tuple(get_args(item))
        if item is str:
            return "name_list", ()
    simple = {bool: "bool", int: "int", float: "float", str: "string"}
    if annotation in simple:
        return simple[annotation], ()
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "block", ()
    return "", ()     # the field's json_schema_extra names the surface type


def shown_default(info: FieldInfo, surface: str) -> str:
    """A field's default as the settings tables show it (``60s``, ``20%``, ``none``)."""
    extra = info.json_schema_extra or {}
    if "shown" in extra:
        return extra["shown"]
    value = info.default
    if value is PydanticUndefined or value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if surface == "duration":
        return f"{value:g}s"
    if surface == "fraction":
        return f"{value * 100:g}%"
    if isinstance(value, tuple):
        if not value:
            return "none"
        return ", ".join(" ".join(map(str, v)) if isinstance(v, tuple) else str(v) for v in value)
    if isinstance(value, str) and surface == "string":
        return f'"{value}"'
    return str(value)


def _range(info: FieldInfo) -> dict[str, Any]:
    bounds: dict[str, Any] = {}
    for m in info.metadata:
        if isinstance(m, annotated_types.Ge):
            bounds["low"] = m.ge
        elif isinstance(m, annotated_types.Gt):
            bounds.update(low=m.gt, low_open=True)
        elif isinstance(m, annotated_types.Le):
            bounds["high"] = m.le
    return bounds


def key_of(name: str, info: FieldInfo) -> tuple[str, Key]:
    """(recipe key, :class:`Key`) of one IR field that is a setting."""
    extra = info.json_schema_extra or {}
    python_type, choices = _python_type(info.annotation)
    surface = extra.get("type", python_type)
    if not surface:
        raise TypeError(f"IR setting `{name}` of type {info.annotation!r} needs a surface type "
                        "in its json_schema_extra")
    key = extra.get("key", name)
    return key, Key(surface, info.description or "", shown_default(info, surface),
                    field=name if key != name else None, choices=choices, **_range(info))


def keys_of(model: type[BaseModel], exclude: tuple[str, ...] = ()) -> dict[str, Key]:
    """The settings of one IR model: its fields with a description, in declaration order."""
    return dict(key_of(name, info) for name, info in model.model_fields.items()
                if info.description and name not in exclude)


def _eval_keys() -> dict[str, Key]:
    keys = keys_of(EvalSpec)
    arms = EvalSpec.model_fields["arms"].default
    # `baseline` is not a field: it adds or drops the stuffed arm of `arms`.
    baseline = Key("enum", "`stuffed` keeps the stuffed arm, `none` drops it",
                   "stuffed" if "stuffed" in arms else "none", choices=("stuffed", "none"))
    at = list(keys).index("arms") + 1
    items = list(keys.items())
    return dict([*items[:at], ("baseline", baseline), *items[at:]])


# The IR model behind each block kind (a stage block knows every stage kind's settings;
# lowering reports the ones its kind does not have).
BLOCK_MODELS: dict[str, type[BaseModel]] = {
    "recipe": Recipe, "teacher": Teacher, "backend": Teacher, "judge": Judge,
    "gate.execution": ExecutionGate, "gate.output": OutputGate, "gate.judge": JudgeGate,
    "reward": Reward, "model": ModelSpec, "stage": GRPOStage, "eval": EvalSpec, "tool": Tool,
    "format": BlockFormat, "lora": LoraAdapter,
}

BLOCK_KEYS: dict[str, dict[str, Key]] = {
    "recipe": keys_of(Recipe),
    "teacher": keys_of(Teacher, exclude=("kind",)),     # the kind is the block's name
    # A judge's backend is asked for verdicts: it writes no candidates, repairs nothing and
    # draws no training instances.
    "backend": keys_of(Teacher, exclude=("candidates", "instances", "discovery", "scratchpad", "feedback",
                                         "failed_attempts", "max_failed", "budget")),
    "judge": keys_of(Judge),
    "gate.execution": keys_of(ExecutionGate),
    "gate.output": keys_of(OutputGate),
    "gate.judge": keys_of(JudgeGate),
    "reward": keys_of(Reward),
    "model": keys_of(ModelSpec),
    "stage": {**keys_of(StageBase), **keys_of(SFTStage, exclude=tuple(StageBase.model_fields)),
              **keys_of(GRPOStage, exclude=tuple(StageBase.model_fields))},
    "eval": _eval_keys(),
    "tool": keys_of(Tool),
    "format": keys_of(BlockFormat),
    "lora": keys_of(LoraAdapter),
}


def explain_setting(name: str) -> str | None:
    """``craftc explain stage.warmup`` (or ``warmup``: every block that has it); None if unknown.

    Example:
        >>> explain_setting("stage.lr").splitlines()[0]
        'stage.lr: learning rate'
    """
    block, _, key = name.rpartition(".")
    found = [(kind, keys[key]) for kind, keys in BLOCK_KEYS.items()
             if key in keys and block in ("", kind)]
    if not found:
        return None
    parts = []
    for kind, k in found:
        field_name = k.field or key
        model = BLOCK_MODELS[kind]
        if kind == "stage":
            model = next((m for m in (StageBase, SFTStage, GRPOStage) if field_name in m.model_fields), model)
        field = (f"{model.__name__}.{field_name} in craftc/ir.py" if field_name in model.model_fields
                 else "not a field: lowering turns it into others")
        lines = [f"{kind}.{key}: {k.doc}", f"  type: {k.describe_type()}", f"  default: {k.default}"]
        if k.describe_range():
            lines.append(f"  range: {k.describe_range()}")
        lines.append(f"  declared: {field}")
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)
