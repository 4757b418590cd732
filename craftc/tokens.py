"""One token estimator for everything that budgets prompt length.

The compiler's token budget (``token_budget.json``) and the checker's context-budget
check must agree, or a prompt that the budget calls small could fail the check. Both
count with :func:`estimate_tokens`. It needs no tokenizer (the base model's tokenizer
may not exist at compile time) and is deterministic and stable across versions.

The rule counts words and punctuation marks (``\\w+|[^\\w\\s]``); the budget check
(``craftc.check.budget``) and ``token_budget.json`` both count with it. Byte-level BPE
tokenizers split long identifiers further, so real counts run higher; ratios between
two prompts are what the estimate is for.
"""

from __future__ import annotations

import re

__all__ = ["estimate_tokens"]

_PIECES = re.compile(r"\w+|[^\w\s]")


def estimate_tokens(text: str) -> int:
    """Estimate how many tokens a model would read for ``text``.

    Args:
        text: Any prompt text.

    Returns:
        The estimated token count (0 for empty or blank text).

    Example:
        >>> estimate_tokens("SELECT name FROM campaign;")
        5
    """
    return len(_PIECES.findall(text))
