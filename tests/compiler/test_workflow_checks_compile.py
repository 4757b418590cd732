"""Workflows judged by checks: a workflow or turn with checks and no solution compiles,
its checks lower to typed expectations, and `craftc fmt` keeps the lines."""

from __future__ import annotations

from compiler_support import FIXTURES
from craftc.fmt import format_source
from craftc.frontend import load_recipe

RECIPE = '''recipe checked {
  uses schema "mini_schema.craft"
  seed 7
  teacher openai { model "m"  base_url "http://localhost:8000/v1" }
  workflow top {
    ask "Top {n} campaigns of {advertiser} in {days} days"
    param n in 3..10
    param advertiser from Advertiser.name
    param days one_of(7, 14, 30)
    uses Campaign, DailyStat, metric ctr
    check columns (campaign, advertiser, ctr, day)
    check max_rows {n}
    check sorted_by ctr desc
    check all ctr between 0 and 1
    check all advertiser == {advertiser}
    check all day within {days} days
  }
  conversation narrowing {
    param days one_of(7, 14)
    uses Campaign, DailyStat
    turn "Spend per campaign, last {days} days" check columns (campaign, spend) check all spend >= 0
    turn "Only the ones above 100" check subset_of previous on (campaign) check columns (campaign, spend)
  }
}
'''


def _load(tmp_path, text=RECIPE):
    (tmp_path / "mini_schema.craft").write_text((FIXTURES / "mini_schema.craft").read_text())
    path = tmp_path / "checked.craft"
    path.write_text(text)
    return load_recipe(path)


def test_a_workflow_with_checks_and_no_solution_compiles(tmp_path):
    result = _load(tmp_path)
    assert result.recipe is not None, result.render()
    top, narrowing = result.recipe.workflows
    assert top.turns[0].solution is None
    kinds = [(e.kind, e.op) for e in top.turns[0].expectations]
    assert kinds == [("columns", None), ("row_count", None), ("sorted_by", None), ("values", "between"),
                     ("values", "=="), ("values", "within_days")]
    assert top.turns[0].expectations[1].max_rows_param == "n"
    assert top.turns[0].expectations[4].operands[0].param == "advertiser"
    assert [e.kind for e in narrowing.turns[1].expectations] == ["subset_of_previous", "columns"]
    assert narrowing.turns[1].expectations[0].columns == ("campaign",)


def test_references_hidden_is_a_recipe_setting(tmp_path):
    result = _load(tmp_path, RECIPE.replace("  seed 7\n", "  seed 7\n  references hidden\n"))
    assert result.recipe.references == "hidden"


def test_fmt_keeps_check_lines_and_is_idempotent():
    messy = RECIPE.replace("check all ctr between 0 and 1", "check   all ctr  between 0   and 1")
    formatted = format_source(messy)
    assert "    check all ctr between 0 and 1\n" in formatted
    assert "check subset_of previous on (campaign)" in formatted
    assert format_source(formatted) == formatted
