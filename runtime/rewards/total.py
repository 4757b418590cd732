"""Aggregating components into R_total, exactly as the recipe's reward spec says."""

from __future__ import annotations

__all__ = ["total"]


def total(components: dict[str, float], weights: dict[str, float], aggregate: str = "normalized") -> float:
    """``sum_i w_i * R_i``, divided by ``sum_i w_i`` when ``aggregate`` is ``normalized``.

    Args:
        components: Component name -> value in [0, 1].
        weights: Component name -> weight; every weighted component must be present.
        aggregate: ``sum`` or ``normalized``.

    Example:
        >>> round(total({"outcome": 1.0, "process": 0.5}, {"outcome": 0.6, "process": 0.2}, "sum"), 4)
        0.7
        >>> round(total({"outcome": 1.0, "process": 0.5}, {"outcome": 0.6, "process": 0.2}), 4)
        0.875
    """
    missing = [name for name in weights if name not in components]
    if missing:
        raise ValueError(f"reward components missing: {', '.join(missing)}")
    value = sum(weights[name] * components[name] for name in weights)
    if aggregate == "normalized":
        return value / sum(weights.values())
    if aggregate != "sum":
        raise ValueError(f"aggregate must be `sum` or `normalized`, got `{aggregate}`")
    return value
