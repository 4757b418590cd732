"""One token estimator for everything that budgets prompt length.

The compiler's token budget (``token_budget.json``) and the checker's context-budget
check must agree, or a prompt that the budget calls small could fail the check. Both
call :func:`estimate_tokens`. It needs no tokenizer (the base model's tokenizer may not
exist at compile time) and is deterministic and stable across versions.

The rule approximates a byte-level BPE on English prose, code and DDL: a run of word
characters costs one token per 4 characters (rounded up), and every other non-space
character costs one token on its own. On prose that lands near the usual
"characters / 4"; on code and SQL, where punctuation is dense, it counts more.
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
        7
    """
    total = 0
    for piece in _PIECES.findall(text):
        total += -(-len(piece) // 4) if piece[0].isalnum() or piece[0] == "_" else 1
    return total
