"""E412: a teacher setting that the teacher's kind never reads is an error, not a no-op.

The synthetic teacher reads `noise`, `discovery` and `scratchpad`; model backends read
`model`, `temperature` and `max_new_tokens`, and the openai client also `base_url`,
`api_key`, `concurrency`, `timeout` and `max_retries`. Which kinds read a setting is
declared once, on its IR field, and the check derives from it; so does plan.json, which
carries only the settings the teacher's kind reads.
"""

from __future__ import annotations

import pytest
from compiler_support import ADS_TEACHER, ads_text_without_levers

from craftc.codes import CODES
from craftc.frontend import load_recipe
from craftc.ir import TEACHER_KINDS, TEACHER_ONLY, Teacher
from craftc.setting_keys import BLOCK_KEYS


def _load(tmp_path, teacher: str, extra: str = ""):
    text = ads_text_without_levers()
    assert ADS_TEACHER in text
    path = tmp_path / "r.craft"
    path.write_text(text.replace(ADS_TEACHER, teacher + extra))
    return load_recipe(path)


def _errors(result) -> list:
    return [d for d in result.diagnostics if d.severity == "error"]


@pytest.mark.parametrize("teacher, key", [
    ('teacher vllm { model "org/t"  scratchpad task }', "scratchpad"),
    ('teacher openai { model "m"  base_url "http://localhost:8000/v1"  noise 30% }', "noise"),
    ('teacher hf { model "org/t"  discovery 20% }', "discovery"),
    ('teacher vllm { model "org/t"  concurrency 64 }', "concurrency"),
    ("teacher synthetic { candidates 4  temperature 0.8 }", "temperature"),
    ('teacher synthetic { candidates 4  model "org/t" }', "model"),
    ("teacher synthetic { candidates 4  budget 100000 }", "budget"),
    ('teacher hf { model "org/t"  max_failed 1% }', "max_failed"),
])
def test_a_setting_of_another_teacher_kind_is_an_error_at_its_line(tmp_path, teacher, key):
    result = _load(tmp_path, teacher)
    errors = _errors(result)
    assert [d.code for d in errors] == ["E412"], result.render()
    assert f"`{key}` is read only by" in errors[0].message
    line = ads_text_without_levers().splitlines().index(ADS_TEACHER) + 1
    assert errors[0].span.line == line
    assert f"remove `{key}`" in errors[0].help


def test_settings_every_kind_reads_or_its_own_kind_reads_compile(tmp_path):
    for teacher in ("teacher synthetic { candidates 4  noise 50%  discovery 20%  scratchpad both  feedback 1 }",
                    'teacher openai { model "m"  base_url "http://h/v1"  concurrency 8  timeout 30s  max_retries 2 '
                    " temperature 0.2  max_new_tokens 512  candidates 4  max_failed 1%  budget 2000000 }",
                    'teacher vllm { model "org/t"  temperature 0.7  candidates 16 }'):
        result = _load(tmp_path, teacher)
        assert not [d for d in _errors(result) if d.code == "E412"], result.render()


@pytest.mark.parametrize("setting, fix", [("max_failed 150%", "<= 1"), ("budget 0", ">= 1"),
                                          ("max_failed -1", ">= 0")])
def test_a_bad_failure_share_or_budget_is_an_error_at_its_line(tmp_path, setting, fix):
    result = _load(tmp_path, f'teacher openai {{ model "m"  base_url "http://h/v1"  {setting} }}')
    errors = _errors(result)
    assert errors and errors[0].code in ("E203", "E202"), result.render()
    assert errors[0].span.line == ads_text_without_levers().splitlines().index(ADS_TEACHER) + 1
    assert setting.split()[0] in errors[0].message


def test_failure_share_and_budget_reach_the_plan_only_when_set(tmp_path):
    plain = _load(tmp_path, 'teacher openai { model "m"  base_url "http://h/v1" }').recipe
    assert {"max_failed", "budget"}.isdisjoint(plain.model_dump(mode="json")["teacher"])
    set_ = _load(tmp_path, 'teacher openai { model "m"  base_url "http://h/v1"  max_failed 1%  budget 5000 }').recipe
    written = set_.model_dump(mode="json")["teacher"]
    assert written["max_failed"] == 0.01 and written["budget"] == 5000


@pytest.mark.parametrize("kind", TEACHER_KINDS)
def test_the_plan_holds_only_the_settings_the_teachers_kind_reads(kind):
    written = Teacher(kind=kind).model_dump(mode="json")
    for field, kinds in TEACHER_ONLY.items():
        if kind not in kinds:
            assert field not in written, field
        else:       # present, unless omitted at its default (`_omitted_at`: discovery, scratchpad)
            assert field in written or Teacher.model_fields[field].exclude_if is not None, field
    assert {"kind", "candidates", "feedback", "failed_attempts"} <= set(written)
    # Read back, an absent setting is its default: what the runtime sees is unchanged.
    assert Teacher.model_validate(written) == Teacher(kind=kind)


def test_a_synthetic_teachers_plan_shows_no_sampling_settings(tmp_path):
    recipe = _load(tmp_path, "teacher synthetic { candidates 4 }").recipe
    written = recipe.model_dump(mode="json")["teacher"]
    assert sorted(written) == ["candidates", "failed_attempts", "feedback", "kind", "noise"]


def test_a_judge_backend_is_checked_against_its_own_kind(tmp_path):
    result = _load(tmp_path, ADS_TEACHER, '\n  judge biz { kind llm  backend { kind openai  model "m"  noise 10% } }')
    errors = _errors(result)
    assert [d.code for d in errors] == ["E412"], result.render()
    assert errors[0].message.startswith("judge `biz` backend: `noise`")


def test_every_restricted_setting_names_kinds_that_exist():
    assert {"noise", "discovery", "scratchpad", "model", "temperature", "concurrency"} <= set(TEACHER_ONLY)
    for kinds in TEACHER_ONLY.values():
        assert kinds and set(kinds) < set(TEACHER_KINDS)


@pytest.mark.parametrize("key", ["candidates 4", "instances 10", "feedback 1"])
def test_a_judge_backend_writes_no_candidates_so_their_settings_are_unknown_there(tmp_path, key):
    result = _load(tmp_path, ADS_TEACHER, f'\n  judge biz {{ kind llm  backend {{ kind openai  model "m"  {key} }} }}')
    errors = _errors(result)
    assert [d.code for d in errors] == ["E201"], result.render()
    assert f"unknown setting `{key.split()[0]}` in `judge biz backend`" in errors[0].message


def test_the_explanation_of_e412_lists_every_restricted_setting_with_its_kinds():
    text = CODES["E412"].what
    for field, kinds in TEACHER_ONLY.items():
        key = next(k for k, info in BLOCK_KEYS["teacher"].items() if (info.field or k) == field)
        assert f"`{key}`" in text and ", ".join(kinds) in text
