"""Every code is documented, explainable and listed in docs; did-you-mean helps."""

from __future__ import annotations

import re

import pytest

from compiler_support import MALFORMED, ROOT
from craftc.settings import BLOCK_KEYS
from craftc.codes import CODES, explain, render_diagnostics_doc
from craftc.diagnostics import did_you_mean
from craftc.settings import render_settings_reference as render_language_settings


@pytest.mark.parametrize("code", sorted(CODES))
def test_explain_prints_what_why_example_and_instead(code):
    text = explain(code)
    assert text.startswith(f"{code}: {CODES[code].title}")
    for part in ("What", "Why", "Example", "Instead"):
        assert f"\n{part}\n" in text


def test_explain_of_an_unknown_code_lists_the_known_ones():
    assert "known codes: E001" in explain("E999")


def test_codes_follow_the_numbering_scheme():
    for code in CODES:
        assert re.fullmatch(r"[EW][0-59]\d\d", code), code
    assert len({c[1:] for c in CODES}) == len(CODES)       # a number is never reused


def test_every_code_that_the_checker_can_emit_is_documented():
    source = "\n".join(p.read_text() for p in (ROOT / "craftc").rglob("*.py"))
    emitted = set(re.findall(r'"([EW]\d{3})"', source))
    assert emitted <= set(CODES), emitted - set(CODES)


def test_most_codes_have_a_malformed_example():
    covered = {p.read_text().split()[2] for p in MALFORMED.glob("*.craft")}
    missing = set(CODES) - covered
    # E002 and E107 are tested in test_frontend.py, W216 (no TRL installed) in
    # test_stage_kinds_and_trl.py; E9xx belong to `craftc import`; E315, E316 and W317 come
    # from `craftc check --preflight` (tests/distill/test_preflight.py), E320-W323 from its
    # measure of the data (tests/distill/test_preflight_data.py).
    assert {c for c in missing if not c.startswith("E9")} <= {"E002", "E107", "W216", "E315", "E316", "W317",
                                                             "E320", "W321", "W322", "W323"}, missing


def test_docs_diagnostics_md_is_generated_from_the_table():
    assert (ROOT / "docs/diagnostics.md").read_text() == render_diagnostics_doc()


def test_docs_language_md_carries_the_generated_settings_tables():
    doc = (ROOT / "docs/language.md").read_text()
    assert render_language_settings() in doc
    for kind, keys in BLOCK_KEYS.items():
        for key in keys:
            assert f"`{key}`" in doc, (kind, key)


def test_docs_training_md_points_to_the_generated_model_table_instead_of_restating_defaults():
    doc = (ROOT / "docs/training.md").read_text()
    assert "| spec key | default" not in doc
    assert "(language.md#model-name--)" in doc and "### `model NAME { ... }`" in (
        ROOT / "docs/language.md").read_text()


def test_did_you_mean_finds_close_names_and_only_those():
    assert did_you_mean("Campaing", ["Campaign", "Advertiser"]) == "Campaign"
    assert did_you_mean("dailystat", ["DailyStat", "Geo"]) == "DailyStat"
    assert did_you_mean("zzz", ["Campaign", "Advertiser"]) is None


@pytest.mark.parametrize("trl_name, craft_key", [
    ("learning_rate", "lr"), ("num_train_epochs", "epochs"), ("max_steps", "steps"),
    ("per_device_train_batch_size", "per_device_batch"), ("num_generations", "group"),
    ("max_completion_length", "max_new_tokens"), ("warmup_ratio", "warmup"),
])
def test_a_trl_setting_name_in_a_stage_suggests_the_craft_key(trl_name, craft_key):
    from craftc.settings import resolve_settings
    from craftc.diagnostics import DiagnosticSink
    from craftc.parser import parse_source

    stage = parse_source(f"recipe r {{ stage grpo {{ {trl_name} 2 }} }}", "r.craft").syntax.recipes[0]
    sink = DiagnosticSink()
    resolve_settings("stage", stage.blocks[0].settings, sink, "stage grpo")
    [d] = sink.items
    assert d.code == "E201" and d.help.startswith(f"did you mean `{craft_key}`?"), d
