"""The ``trl { key value ... }`` passthrough block of a stage.

Each key goes to TRL's config class for the stage's kind as written, so the block is
checked against the installed TRL (:func:`craftc.trl_keys.trl_config_keys`): an
unknown key is E214 with a did-you-mean, a key craft sets itself from a recipe
setting is E215 naming that setting, and without TRL the keys are unchecked (W216).
"""

from __future__ import annotations

from craftc.diagnostics import DiagnosticSink, did_you_mean
from craftc.ir import TrlValue
from craftc.syntax import Block, Setting, Value
from craftc.trl_keys import TRL_CONFIG_CLASSES, TRL_KEY_SETTING, TrlUnavailable, trl_config_keys

__all__ = ["lower_trl_block"]

_BOOLS = {"true": True, "false": False}


def lower_trl_block(kind: str, block: Block, sink: DiagnosticSink,
                    what: str) -> tuple[tuple[str, TrlValue], ...]:
    """The block's ``(key, value)`` pairs sorted by key; problems go to ``sink``.

    ``kind`` is the stage kind (``sft`` or ``grpo``), ``what`` names the stage in messages.
    """
    config = TRL_CONFIG_CLASSES[kind]
    try:
        known = trl_config_keys(kind)
    except TrlUnavailable as why:
        known = None
        sink.warning("W216", f"`trl` keys of `{what}` are not checked: {why}", block.span,
                     f"install TRL (`pip install trl`) so `craftc` can check them against `{config}`")
    pairs: dict[str, TrlValue] = {}
    for s in block.settings:
        if s.key in pairs:
            sink.error("E209", f"`{s.key}` is set twice in `{what}`'s `trl` block", s.key_span,
                       "keep one")
            continue
        if s.key in TRL_KEY_SETTING:
            setting = TRL_KEY_SETTING[s.key]
            sink.error("E215", f"`{s.key}` in `{what}`'s `trl` block is set by craft", s.key_span,
                       f"use the craft setting `{setting}`" if setting != "craftc run" else
                       "`craftc run` puts the trainer's output in the run dir")
            continue
        if known is not None and s.key not in known:
            guess = did_you_mean(s.key, known)
            sink.error("E214", f"`{s.key}` is not a `{config}` key of the installed TRL", s.key_span,
                       f"did you mean `{guess}`?" if guess else
                       f"see the fields of `trl.{config}` (a {kind} stage's config)")
            continue
        value = _trl_value(s, sink)
        if value is not None:
            pairs[s.key] = value
    return tuple(sorted(pairs.items()))


def _trl_value(s: Setting, sink: DiagnosticSink) -> TrlValue | None:
    if s.block is not None or len(s.values) != 1:
        where = s.values[1].span if len(s.values) > 1 else s.key_span
        sink.error("E208", f"TRL key `{s.key}` takes one value", where,
                   f"write `{s.key} <number | string | true | false | name>`")
        return None
    v: Value = s.values[0]
    if v.kind == "name":
        return _BOOLS.get(v.text, v.text)
    if v.kind in ("number", "string") and v.qualifier is None:
        return v.python
    sink.error("E202", f"TRL key `{s.key}` takes a number, string, true/false or name, "
               f"got `{v.text}`", v.span, f'write e.g. `{s.key} 3` or `{s.key} "text"`')
    return None
