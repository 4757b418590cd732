"""Reference solutions: the docstring is the PLAN, the rest the CODE, both templates."""

import pytest

from runtime.workflows import SolutionError, execute_code, render_solution, split_solution, warmup_jobs

SOLUTION = '''# a leading comment is allowed
"""
Rank the advertiser's campaigns by click-through rate over the last ${days} days
and keep the top ${n}.
"""
frame = api.query("SELECT name FROM campaign WHERE advertiser = " + repr(${advertiser}))
result = frame.head(${n})
'''


def test_split_separates_plan_docstring_from_code():
    plan, code = split_solution(SOLUTION)
    assert plan.startswith("Rank the advertiser's campaigns") and plan.endswith("top ${n}.")
    assert code.startswith("frame = api.query(")


def test_plan_gets_text_and_code_gets_python_literals():
    plan, code = render_solution(SOLUTION, {"n": 5, "days": 14, "advertiser": "O'Brien Travel"})
    assert "last 14 days" in plan and "top 5." in plan
    assert 'repr("O\'Brien Travel")' in code and "head(5)" in code
    compile(code, "<test>", "exec")


def test_float_values_read_naturally_in_the_plan():
    plan, code = render_solution('"""Above ${x} and ${y}."""\nresult = ${x} + ${y}\n', {"x": 2.0, "y": 0.25})
    assert plan == "Above 2 and 0.25."
    assert code == "result = 2.0 + 0.25\n"


def test_unknown_placeholder_names_the_param_and_the_fix():
    with pytest.raises(SolutionError, match=r"placeholder `\$\{limit\}` but the workflow has no param `limit`"):
        render_solution('"""Top ${limit}."""\nresult = 1\n', {"n": 3}, name="top.py")


def test_dollar_dollar_is_a_literal_dollar():
    _, code = render_solution('"""Costs."""\nresult = "$$5 and ${n}"\n', {"n": 1})
    assert code == 'result = "$5 and 1"\n'


def test_a_file_without_a_docstring_is_refused():
    with pytest.raises(SolutionError, match="must start with a module docstring"):
        split_solution("result = 1\n", name="bare.py")


def test_a_docstring_without_code_is_refused():
    with pytest.raises(SolutionError, match="no CODE after the PLAN"):
        split_solution('"""Only a plan."""\n')


def test_execute_code_binds_the_agent_globals_and_returns_result():
    _, code = render_solution(
        '"""Double the values."""\nresult = pd.DataFrame({"n": [params["n"], ${n}]}) * 2\n', {"n": 2}
    )
    result = execute_code(code, api=None, params={"n": 2})
    assert list(result["n"]) == [4, 4]


def test_execute_code_without_result_returns_none():
    assert execute_code("x = 1\n", api=None, params={}) is None


def test_warmup_jobs_take_one_reference_per_workflow_turn():
    instances = [
        {"workflow": "spend", "params": {"days": 7}, "turns": [{"code": "a"}, {"code": "b"}]},
        {"workflow": "spend", "params": {"days": 30}, "turns": [{"code": "a2"}, {"code": "b2"}]},
        {"workflow": "ctr", "params": {}, "turns": [{"code": "c"}]},
    ]
    assert warmup_jobs(instances) == [("a", {"days": 7}), ("b", {"days": 7}), ("c", {})]
    assert warmup_jobs(instances, limit=1) == [("a", {"days": 7})]
    # The agent's tasks (eval, GRPO) give the same jobs as the instance dicts they came from.
    from runtime.agent import AgentTask
    tasks = [AgentTask.from_dict({**i, "turns": [{"ask": "q", **t} for t in i["turns"]]}) for i in instances]
    assert warmup_jobs(tasks) == warmup_jobs(instances)
