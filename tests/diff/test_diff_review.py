"""The review a diff gives: nothing lost under `--full`, the rerun cost from a previous run dir.

`tests/diff/legacy/ads_v1_v2.txt` is `craftc diff recipes/ads_analytics.craft
recipes/ads_analytics_v2.craft` as it printed before the output led with the decision:
every attribute and every file diff, 1,068 lines. `--full` must still hold each of
those changes.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from craftc.diff import load_side
from craftc.diff.craft_lines import subject

REPO = Path(__file__).resolve().parents[2]
LEGACY = Path(__file__).parent / "legacy" / "ads_v1_v2.txt"
V1, V2 = "recipes/ads_analytics.craft", "recipes/ads_analytics_v2.craft"
_SCHEMA_CHANGE = re.compile(r"^  (binding-only|doc-only|additive|breaking)\s+(\S+): (.*)$")


def craftc(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "craftc.cli", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)


def _legacy_changes() -> tuple[list[str], list[str]]:
    """(lines of the resource and file sections, "class subject: change" of each schema change)."""
    listed, classified, section = [], [], None
    for line in LEGACY.read_text(encoding="utf-8").splitlines():
        if line in ("craft will make these changes:", "Changed files:", "Impact (each schema change and its class):",
                    "Impact of the schema changes:"):
            section = line
        elif section == "craft will make these changes:" and line.strip():
            listed.append(line)
        elif section == "Changed files:" and re.match(r"^  [~+-] ", line):   # file headers, not hunk text
            listed.append(line)
        elif section == "Impact (each schema change and its class):" and (match := _SCHEMA_CHANGE.match(line)):
            category, address, change = match.groups()
            classified.append(f"{category:<13} {subject(address)}: {change}")
    return listed, classified


# Lines of the frozen listing that later plan-format changes made stale: hidden-attribute
# counts (stages gained settings), text inside file hunks (launch.sh and config contents),
# the token budget's move to review/, the default profile's grpo max_turns (1 -> 2), and
# its training levers (teacher candidates 4 -> 2, sft epochs 4 -> 1), its execution timeout
# (3 s -> 1 s), its GRPO steps (32 -> 12) and its GRPO learning rate (3e-5 -> 1e-4).
_STALE = re.compile(r"^\s*# \(\d+ unchanged attributes hidden\)$|token_budget\.json|~ max_turns: 1 -> 3"
                    r"|~ candidates: 4 -> 8|~ epochs: 4\.0 -> 3\.0|~ execution\.timeout_s: 3\.0 -> 10\.0"
                    r"|~ steps: 32 -> 60|~ instances: 2 -> 4|~ lr: 3e-05 -> 1e-05")


def test_full_holds_every_change_the_exhaustive_listing_held():
    result = craftc("diff", V1, V2, "--full")
    assert result.returncode == 2, result.stderr
    full = set(result.stdout.splitlines())
    listed, classified = _legacy_changes()
    assert len(listed) > 150 and len(classified) == 29
    current = [line for line in listed if not _STALE.search(line)]
    assert len(current) > 150
    assert [line for line in current if line not in full] == []
    assert "      ~ max_turns: 2 -> 3" in full and "  ~ review/token_budget.json" in full
    assert "      ~ candidates: 2 -> 8" in full and "      ~ epochs: 1.0 -> 3.0" in full
    assert "      ~ execution.timeout_s: 0.5 -> 10.0" in full and "      ~ steps: 12 -> 60" in full
    assert "      ~ instances: 3 -> 4" in full          # the v1 recipe's eval moved from 2 to 3
    assert "      ~ lr: 0.0001 -> 1e-05" in full
    assert [c for c in classified if f"  {c}" not in full] == []


def test_default_output_is_short_and_points_at_full():
    result = craftc("diff", V1, V2)
    assert result.returncode == 2
    assert len(result.stdout.splitlines()) <= 150 < len(LEGACY.read_text().splitlines())
    assert "`--full` shows" in result.stdout


def _fabricated_run(run_dir: Path, plan_hash: str, walls: dict[str, float]) -> None:
    """Manifests as `craftc run` writes them, with known wall times (no training needed)."""
    for step, wall in walls.items():
        (run_dir / step).mkdir(parents=True)
        manifest = {"step": step, "status": "complete", "wall_s": wall, "plan_hash": plan_hash,
                    "inputs_hash": "x", "outputs_hash": "y", "outputs": [], "metrics": {}}
        (run_dir / step / "manifest.json").write_text(json.dumps(manifest))


WALLS = {"world": 1.5, "distill": 120.0, "gate": 30.0, "dataset": 4.0, "sft": 900.0, "grpo": 1800.0,
         "eval": 240.25, "report": 2.0}


@pytest.fixture()
def v1_1_tree(tmp_path):
    sys.path.insert(0, str(REPO / "tests" / "evolution"))
    from evolution_support import recipe_tree

    before = recipe_tree(tmp_path / "v1", "ads.craft")
    after = recipe_tree(tmp_path / "v1_1", "ads_v1_1.craft")
    return before, after


def test_run_dir_prices_the_change_with_the_recorded_wall_times(tmp_path, v1_1_tree):
    before, after = v1_1_tree
    _fabricated_run(tmp_path / "run", load_side(str(before)).plan["content_hash"], WALLS)
    result = craftc("diff", before, after, "--run-dir", tmp_path / "run", "--format", "json")
    data = json.loads(result.stdout)
    assert {r["step"]: r["wall_s"] for r in data["reruns"]} == WALLS
    # world and eval rerun: 1.5 s + 240.25 s of the run's 3,097.75 s.
    assert (data["cost"]["wall_s"], data["cost"]["total_s"]) == (241.75, 3097.75)
    assert data["cost"]["other_plan"] is False and data["cost"]["missing"] == []
    text = craftc("diff", before, after, "--run-dir", tmp_path / "run").stdout
    assert "Cost: 2 of 8 steps rerun: 4m 01s of recorded wall time (the whole run took 51m 37s;" in text
    assert "  rerun   eval       4m 00s  reads the rebuilt warehouse file" in text


def test_run_dir_of_another_plan_or_with_missing_steps_says_so(tmp_path, v1_1_tree):
    before, after = v1_1_tree
    _fabricated_run(tmp_path / "run", "another-plan", {"world": 2.0})
    text = craftc("diff", before, after, "--run-dir", tmp_path / "run").stdout
    assert "Cost: 2 of 8 steps rerun: 2.0s of recorded wall time" in text
    assert "not in the run dir: eval" in text and "that run was made with another plan" in text


def test_a_run_dir_without_manifests_is_refused_with_the_fix(tmp_path, v1_1_tree):
    before, after = v1_1_tree
    result = craftc("diff", before, after, "--run-dir", tmp_path)
    assert result.returncode == 1
    assert f"error: `{tmp_path}` holds no step manifests, so it is not a run dir" in result.stderr
