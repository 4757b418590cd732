"""A project started on a domain craft was not written for, run to its report.

The warehouse is built here (tests/e2e/payments_warehouse.py: 22 tables, string ids,
amounts in cents documented in its dbt project, `accepted_values` and `relationships`
tests, dangling foreign keys, id columns with no value); `craftc init --from` imports it
with the dbt docs and writes a recipe sized to it, and `craftc run` of the scaffold's
smoke profile finishes.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest
from e2e_support import ROOT, craftc

from craftc.frontend import load_schema
from craftc.importer import import_schema
from payments_warehouse import DBT_COLUMNS, TABLES, build_payments_dbt_project, build_payments_warehouse


@dataclass(frozen=True)
class Scaffold:
    work: Path
    project: Path
    ran_output: str
    ran_rc: int
    preflight: str          # what `craftc check --preflight` printed


GUIDE = ROOT / "docs" / "guides" / "your-own-warehouse.md"


def guide_commands() -> list[str]:
    """The lines of the guide's first `sh` block (the one marked as tried)."""
    text = GUIDE.read_text()
    block = text.split("<!-- tried: the test runs each line of this block -->", 1)[1]
    body = block.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in body.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def payments(tmp_path_factory) -> Scaffold:
    """The guide's commands, run in order on the payments warehouse."""
    work = tmp_path_factory.mktemp("payments")
    build_payments_warehouse(work / "warehouse.duckdb")
    build_payments_dbt_project(work / "dbt")
    cwd, last, preflight = work, None, ""
    for line in guide_commands():
        if line.startswith("cd "):
            cwd = cwd / line[3:]
            continue
        assert line.startswith("craftc "), line
        last = craftc(*shlex.split(line)[1:], cwd=cwd)
        if not line.startswith("craftc run"):
            assert last.returncode == 0, (line, last.stdout[-2000:], last.stderr[-2000:])
        if "--preflight" in line:
            preflight = last.stdout + last.stderr
    assert last is not None and line.startswith("craftc run")
    return Scaffold(work, work / "my_agent", last.stdout + last.stderr, last.returncode, preflight)


def test_the_warehouse_is_a_second_domain():
    assert len(TABLES) >= 20


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """The payments warehouse imported with its dbt docs, as `craftc init --from` imports it:
    the spec's text, its Schema IR, and the warehouse."""
    work = tmp_path_factory.mktemp("payments_import")
    warehouse = build_payments_warehouse(work / "warehouse.duckdb")
    text = import_schema(warehouse, name="warehouse", docs_from=build_payments_dbt_project(work / "dbt"))
    spec = work / "warehouse.craft"
    spec.write_text(text)
    load = load_schema(spec)
    assert load.schema is not None and load.ok, load.render()
    return text, {e.name: e for e in load.schema.entities}, warehouse


# Integer columns whose only sign of money is their dbt doc ("in cents", "smallest currency unit").
DOCUMENTED_CENTS = {("Charge", "amount"), ("Charge", "amount_refunded"), ("Refund", "amount"),
                    ("Dispute", "amount"), ("Invoice", "amount_due"), ("InvoiceLine", "amount"),
                    ("Payout", "amount"), ("BalanceTransaction", "amount"), ("BalanceTransaction", "fee"),
                    ("Fee", "amount")}


def test_import_reads_money_and_its_scale_from_the_dbt_docs(imported):
    text, entities, _ = imported
    money = {(name, f.name): f for name, e in entities.items() for f in e.fields if f.type.kind == "money"}
    assert DOCUMENTED_CENTS | {("Price", "unit_amount")} == set(money)
    assert all(f.scale == 0.01 for f in money.values())
    assert entities["Charge"].fields[[f.name for f in entities["Charge"].fields].index("amount")].column == "amount"
    assert 'the doc says "smallest currency unit" (cents)' in text
    # amounts of several currencies: the spec claims none, so the prompt names none
    assert not re.search(r"^  currency ", text, re.M)


def _enum(entities, entity: str, field: str) -> tuple[str, ...]:
    found = next(f for f in entities[entity].fields if f.name == field)
    assert found.type.kind == "enum", (entity, field, found.type)
    return found.type.values


def test_import_takes_enums_from_accepted_values_and_documented_lists(imported):
    _, entities, _ = imported
    for table, columns in DBT_COLUMNS.items():
        for column, spec in columns.items():
            for test in spec.get("data_tests", []):
                if isinstance(test, dict) and "accepted_values" in test:
                    entity = next(name for name, e in entities.items() if e.table == f"pay.{table}")
                    assert _enum(entities, entity, column) == tuple(test["accepted_values"]["values"])
    # a table of 10 rows closes no enum by its data: the test's list does, values unseen included
    assert _enum(entities, "Coupon", "duration") == ("once", "forever", "repeating")
    assert "incomplete" in _enum(entities, "Subscription", "status")
    assert _enum(entities, "Country", "region") == ("amer", "emea", "apac")       # listed in the doc
    # a payout's status shares `failed` with a charge's, and is not the same list
    assert _enum(entities, "Payout", "status") == ("failed", "paid", "pending")


def test_import_keeps_refs_with_their_containment_and_none_on_an_empty_column(imported):
    text, entities, warehouse = imported
    links = {(name, r.name): r.target for name, e in entities.items() for r in e.refs}
    for link, target in {("Charge", "customer"): "Customer", ("Refund", "charge"): "Charge",
                         ("Dispute", "charge"): "Charge", ("Invoice", "customer"): "Customer",
                         ("Invoice", "subscription"): "Subscription", ("Subscription", "customer"): "Customer",
                         ("Subscription", "plan"): "Plan", ("SubscriptionItem", "price"): "Price",
                         ("SubscriptionItem", "subscription"): "Subscription", ("Plan", "price"): "Price",
                         ("Price", "product"): "Product", ("Card", "customer"): "Customer",
                         ("BalanceTransaction", "source"): "Charge"}.items():
        assert links.get(link) == target, link
    # the dirty links, each with the share the data bears out
    assert re.search(r"ref: declared by the source, and 1\d\d of its 1\d\d distinct values \(9\d%\) are Charge "
                     r"keys; \d+ are not\n    ref   charge -> Charge", text)
    assert re.search(r"\(99%\) are Customer keys; 1 are not\n    ref   customer -> Customer \"The card holder", text)
    # a relationships test on a column that holds no value is no ref; nor is a name alone
    assert "not a ref: `balance_transaction_id` is declared to reference BalanceTransaction but is null in all" in text
    assert "not a ref: `payout_id` names Payout but is null in all 1500 rows" in text
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        for e in entities.values():
            for r in e.refs:
                held = con.execute(f'SELECT count("{r.column}") FROM {e.table}').fetchone()[0]
                assert held > 0, f"{e.name}.{r.name} is a ref on a column with no value"
    finally:
        con.close()
    # text ids: every key, and so every ref, is a string
    assert all(e.key.type == "string" for e in entities.values())


def test_the_guide_links_are_in_place():
    assert "docs/guides/your-own-warehouse.md" in (ROOT / "README.md").read_text()
    assert "your-own-warehouse.md" in (ROOT / "docs/guides/train-on-your-warehouse.md").read_text()


def test_the_scaffold_of_a_payments_warehouse_runs_to_its_report(payments):
    assert payments.ran_rc == 0, payments.ran_output[-4000:]
    assert "internal error" not in payments.ran_output
    run = payments.project / "runs" / "my_agent"
    assert (run / "report" / "report.md").is_file()
    sft = json.loads((run / "sft" / "manifest.json").read_text())["metrics"]
    recipe = (payments.project / "recipes" / "my_agent.craft").read_text()
    max_length = int(re.search(r"max_length (\d+)", recipe).group(1))
    # the sizes the scaffold chose hold every stripped example the run trained on
    assert sft["craft_longest_example_tokens"] <= max_length
    assert "Sized to this schema" in recipe and "measured with the tokenizer the sft step trains" in recipe


def test_the_scaffold_imports_what_the_dbt_project_says_and_prompts_without_a_first_domain(payments):
    spec = (payments.project / "schema_specs" / "warehouse.craft").read_text()
    # init --from --docs-from: money from the docs with its scale, accepted_values, refs with their share
    assert 'field amount money "Amount charged, in cents." -> column "amount" scale 0.01' in spec
    assert 'field duration enum(once, forever, repeating) "How long the discount applies"' in spec
    assert re.search(r"\(9\d%\) are Charge keys; \d+ are not\n    ref   charge -> Charge", spec)
    assert "not a ref: `payout_id` names Payout but is null in all 1500 rows" in spec
    stuffed = (payments.project / "build" / "my_agent" / "prompts" / "system_stuffed.md").read_text()
    assert "USD" not in stuffed and "Money is in" not in stuffed          # the spec names no currency
    assert "CREATE TABLE charge (\n  id VARCHAR PRIMARY KEY," in stuffed
    assert "customer_id VARCHAR REFERENCES customer(id)" in stuffed and "BIGINT REFERENCES" not in stuffed
    # the preflight measured the spec on the rows, every ref with its share
    assert "ok    ref `Refund.charge` -> Charge: 187 of 200 rows with a value (93.5%) are Charge keys" \
        in payments.preflight
    # the world's profile is this domain's: no ads section, money ranges, time spans
    profile = json.loads((payments.project / "runs" / "my_agent" / "world" / "profile.json").read_text())
    assert "domain" not in profile and profile["row_counts"]["charge"] == 1500
    assert profile["value_ranges"]["charge.amount"]["max"] <= 800.0              # cents read as units
    assert profile["time_spans"]["charge.created_at"]["days"] > 300


def test_the_scaffold_sets_a_gate_timeout_sized_to_the_warehouse(payments):
    recipe = (payments.project / "recipes" / "my_agent.craft").read_text()
    assert "gate execution { reject error, syntax, timeout 10s }" in recipe
    assert "profile smoke {" in recipe
    # its workflows ask no param: no value group is left for fresh GRPO rows, so GRPO plays SFT's
    assert "per_device_batch 4  rows sft }" in recipe and "the example workflows ask no param" in recipe


def _copy(payments: Scaffold, name: str) -> Path:
    dest = payments.work / name
    shutil.copytree(payments.project, dest, ignore=shutil.ignore_patterns("runs", "build"))
    return dest


def test_baseline_none_trains_no_stuffed_arm(payments):
    project = _copy(payments, "no_baseline")
    recipe = project / "recipes" / "my_agent.craft"
    text = recipe.read_text()
    edited = re.sub(r"(\n  eval \{[^}]*)\}", r"\1 baseline none }", text, count=1)
    assert "baseline none" in edited
    recipe.write_text(edited)
    assert craftc("compile", "recipes/my_agent.craft", "-o", "build/my_agent", "--profile", "smoke", cwd=project).returncode == 0
    ran = craftc("run", "build/my_agent", "--until", "sft", "--no-launch", cwd=project)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    sft = project / "runs" / "my_agent" / "sft"
    assert (sft / "craft_config.json").is_file() and not (sft / "stuffed_config.json").exists()
    assert json.loads((sft / "manifest.json").read_text())["metrics"]["arms"] == ["craft"]
    # The stage's `checkpoint_every` (its default here) reaches the launched trainer.
    assert json.loads((sft / "craft_config.json").read_text())["checkpoint_every_s"] == 600.0


def test_examples_that_overflow_the_context_fail_at_check_with_a_located_code(payments):
    project = _copy(payments, "overflow")
    recipe = project / "recipes" / "my_agent.craft"
    text = re.sub(r"max_length \d+", "max_length 256", recipe.read_text())
    recipe.write_text(text)
    line = next(n for n, row in enumerate(text.splitlines(), 1) if "max_length 256" in row)
    checked = craftc("check", "recipes/my_agent.craft", cwd=project)
    assert checked.returncode == 1
    assert "error[E528]: stage `sft`: the prompt of every stripped example" in checked.stderr
    assert f"--> recipes/my_agent.craft:{line}:" in checked.stderr
