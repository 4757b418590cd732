"""What E309 sees in a reference solution: SQL columns by scope, api.table columns, frame subscripts."""

from __future__ import annotations

from compiler_support import ROOT  # noqa: F401  (puts the repo on sys.path)
from craftc.check.solution_sql import frame_column_misses, missing_reads

VIEWS = {"campaign": {"id", "name", "advertiser_id"},
         "daily_stat": {"id", "campaign_id", "day", "clicks"}}


def misses(text: str) -> list[tuple[str, str, int, int]]:
    return [(r.view, r.column, r.line, r.col) for r in missing_reads(text, VIEWS)]


def test_an_unqualified_column_of_an_in_subquery_belongs_to_the_subquery_table():
    text = ('result = api.query("SELECT s.day FROM daily_stat s WHERE s.campaign_id IN '
            '(SELECT id FROM campaign WHERE name = ?)", [1])\n')
    assert misses(text) == []


def test_a_correlated_column_resolves_against_the_enclosing_select():
    text = ('result = api.query("SELECT c.name FROM campaign c WHERE EXISTS '
            '(SELECT 1 FROM daily_stat s WHERE s.campaign_id = c.id AND clicks > 0)")\n')
    assert misses(text) == []


def test_a_column_no_table_of_the_subquery_or_outside_it_has_is_still_found():
    text = ('result = api.query("SELECT s.day FROM daily_stat s WHERE s.campaign_id IN '
            '(SELECT id FROM campaign WHERE nmae = ?)", [1])\n')
    assert misses(text) == [("campaign", "nmae", 1, 106)]


def test_api_table_columns_are_reads_of_the_view():
    text = 'df = api.table("campaign", ["id", "nmae"])\nother = api.table("campaign", columns=["naem"])\n'
    assert misses(text) == [("campaign", "nmae", 1, 36), ("campaign", "naem", 2, 41)]


def test_a_subscript_of_an_api_table_frame_is_a_read_of_the_view():
    text = ('stats = api.table("daily_stat")\nstats["ctr"] = stats["clicks"] / 2\n'
            'result = stats[["day", "ctr", "clickz"]]\n')
    assert misses(text) == [("daily_stat", "clickz", 3, 32)]


def test_rebinding_or_changing_a_frame_in_place_forgets_its_columns():
    text = ('df = api.table("campaign")\ndf = df.merge(other, on="id")\nx = df["spend"]\n'
            'q = api.table("campaign")\nq.rename(columns={"name": "n"}, inplace=True)\ny = q["n"]\n'
            'if flag:\n    r = api.table("daily_stat")\nz = r["anything"]\n')
    assert misses(text) == []


def test_a_subscript_of_a_query_frame_must_name_a_selected_column():
    text = ('frame = api.query("SELECT c.id, c.name AS campaign FROM campaign c").head(${n})\n'
            'result = frame[["campaign", "name"]]\n')
    [miss] = frame_column_misses(text, VIEWS)
    assert (miss.frame, miss.column, miss.line, miss.origin) == ("frame", "name", 2, "api.query at line 1")
    assert miss.columns == ("campaign", "id")


def test_a_query_with_a_star_or_an_unnamed_expression_has_unknown_columns():
    text = ('a = api.query("SELECT * FROM campaign")\nb = api.query("SELECT count(*) FROM campaign")\n'
            'result = a["x"], b["y"]\n')
    assert frame_column_misses(text, VIEWS) == []


def test_a_warm_check_reads_the_cache_and_never_imports_sqlglot(tmp_path):
    import os
    import subprocess
    import sys

    probe = ("import sys\nfrom craftc.frontend import load_recipe\n"
             "r = load_recipe(sys.argv[1])\n"
             "print(sorted((d.code, d.span.line, d.span.col) for d in r.diagnostics), 'sqlglot' in sys.modules)\n")
    recipe = ROOT / "tests/compiler/malformed/workflows_solution_subquery_scoping.craft"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CRAFTC_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", probe, str(recipe)], env=env, capture_output=True,
                           text=True, check=True).stdout for _ in range(2)]
    cold, warm = (run.rsplit(" ", 1) for run in runs)
    assert cold[0] == warm[0] and "('E309', 4, 31)" in cold[0]
    assert (cold[1].strip(), warm[1].strip()) == ("True", "False")
    assert list(tmp_path.rglob("*.json"))
