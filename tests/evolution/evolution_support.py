"""Helpers for the schema evolution tests: recipe trees on a chosen spec, the CLI, goldens."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden"
CRAFTC = [sys.executable, "-m", "craftc.cli"]
UPDATE = os.environ.get("CRAFT_UPDATE_GOLDEN") == "1"


def craftc(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    """Run the real CLI; text output, never raises on a non-zero exit."""
    return subprocess.run([*CRAFTC, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=300)


V2_SOLUTIONS = {"../examples/ads/solutions/budget_pacing.py": "../examples/ads_v2/solutions/budget_pacing.py"}


def recipe_tree(root: Path, spec: str, spec_name: str = "ads.craft", solutions: dict[str, str] | None = None) -> Path:
    """``root/recipes/ads_analytics.craft`` (the real ads recipe) on ``schema_specs/<spec>`` copied as ``spec_name``.

    The examples dir is linked, so solution paths resolve as in the repo; ``solutions``
    maps solution paths to the ones this tree uses instead. Deriving every version from
    the current ads recipe keeps its other settings out of the schema diffs.
    """
    (root / "recipes").mkdir(parents=True)
    (root / "schema_specs").mkdir()
    shutil.copy(REPO / "schema_specs" / spec, root / "schema_specs" / spec_name)
    (root / "examples").symlink_to(REPO / "examples", target_is_directory=True)
    text = (REPO / "recipes/ads_analytics.craft").read_text(encoding="utf-8")
    text = text.replace('uses schema "../schema_specs/ads.craft"', f'uses schema "../schema_specs/{spec_name}"')
    for old, new in (solutions or {}).items():
        assert f'"{old}"' in text, old
        text = text.replace(f'"{old}"', f'"{new}"')
    recipe = root / "recipes/ads_analytics.craft"
    recipe.write_text(text, encoding="utf-8")
    return recipe


def check_golden(name: str, text: str) -> None:
    """``text`` must equal ``tests/evolution/golden/<name>`` (rewritten under CRAFT_UPDATE_GOLDEN=1)."""
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text, encoding="utf-8")
        return
    hint = "if the change is intended, regenerate with `CRAFT_UPDATE_GOLDEN=1 pytest tests/evolution`"
    assert path.is_file(), f"tests/evolution/golden/{name} is missing; {hint}"
    assert text == path.read_text(encoding="utf-8"), f"tests/evolution/golden/{name} differs; {hint}"
