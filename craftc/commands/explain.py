"""``craftc explain``: document a diagnostic code (``E309``) or a setting (``stage.lr``, ``warmup``)."""

from __future__ import annotations

import sys

from craftc.codes import CODES, explain
from craftc.setting_keys import explain_setting

__all__ = ["run"]


def run(args) -> int:
    code = args.code.strip()
    if code.upper() not in CODES:
        setting = explain_setting(code)
        if setting is not None:
            sys.stdout.write(setting)
            return 0
    known = code.upper() in CODES
    (sys.stdout if known else sys.stderr).write(explain(args.code))
    return 0 if known else 1
