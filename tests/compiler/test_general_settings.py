"""`eval { general ... }` has two settings of its own, `general_include` and
`general_limit`: read only when `general` names a benchmark. Set without one they are
E522 (tests/compiler/malformed/eval_general_limit_without_general.craft), and plan.json
leaves them out, so no reviewer reads a limit for benchmarks that never run."""

from craftc.ir import GENERAL_ONLY, EvalSpec


def test_the_general_only_settings_are_the_ones_their_fields_mark():
    assert GENERAL_ONLY == ("general_include", "general_limit")


def test_without_a_benchmark_the_plan_leaves_out_its_settings():
    written = EvalSpec().model_dump(mode="json")
    assert written["general"] == [] and not set(GENERAL_ONLY) & set(written)
    # Read back, they are their defaults: what the runtime sees is unchanged.
    assert EvalSpec.model_validate(written) == EvalSpec()


def test_with_a_benchmark_the_plan_holds_them():
    written = EvalSpec(general=("ifeval",), general_limit=50).model_dump(mode="json")
    assert written["general_limit"] == 50 and written["general_include"] is None
