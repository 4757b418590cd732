"""Shared helpers for the compiler tests: fixture paths and loading by file kind."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

FIXTURES = HERE / "fixtures"
MALFORMED = HERE / "malformed"

ADS_TEACHER = "teacher synthetic { candidates 4  noise 50% }"


def ads_text_without_levers() -> str:
    """The ads recipe as text, with its default profile's training levers taken out.

    What remains is the recipe as it was before those settings existed (full stripped
    prompt, whole earlier turns with policy-history GRPO, training volume derived from
    eval, no discovery, one teacher line that tests can edit as ``ADS_TEACHER``), with its relative paths made absolute so that a copy
    compiles from any directory.
    """
    import re

    text = (ROOT / "recipes/ads_analytics.craft").read_text()
    text = re.sub(r"(?m)^  teacher synthetic \{[^}\n]*\}$", ADS_TEACHER, text, count=1)
    text = re.sub(r"(?m)^  stripped_prompt compact\n", "", text, count=1)
    text = re.sub(r"(?m)^  earlier_turns thinks\n", "", text, count=1)
    text = re.sub(r"(?m)^(  stage grpo \{ from sft [^\n]*rollout transformers)  history reference\b", r"\1", text, count=1)
    return text.replace('"../', f'"{ROOT}/')
