"""The results table, its deltas and ratios against the stuffed baseline, and the report step."""

import json

from rich.console import Console

from craftc.ir import Plan, Recipe, Schema
from runtime.report import build_table, markdown_table, run_report
from runtime.step_context import StepContext


def _metric(value, ci, n=10):
    return {"value": value, "ci": ci, "n": n}


def _arm(score, tokens, loops):
    return {"all": {"agent_score": _metric(score, [score - 0.1, score + 0.1]),
                    "input_tokens": _metric(tokens, [tokens - 5, tokens + 5]),
                    "discovery_loops": _metric(loops, [0.0, loops + 1])},
            "new_values": {"agent_score": _metric(score, [0.0, 1.0])}}


EVAL = {"arms": ["craft", "sft_only", "stuffed"], "instances": 10,
        "results": {"craft": _arm(0.6, 110.0, 0.5), "sft_only": _arm(0.5, 110.0, 1.0),
                    "stuffed": _arm(0.45, 1000.0, 2.5)}}


def test_rates_get_pp_deltas_and_costs_get_ratios_against_stuffed():
    table = build_table(EVAL["results"])
    rows = {r["metric"]: r for r in table["rows"]}
    assert rows["agent_score"]["arms"]["craft"]["delta_pp"] == 15.0
    assert rows["input_tokens"]["arms"]["craft"]["ratio"] == 0.11
    assert rows["input_tokens"]["published_ratio"] == 0.11
    assert rows["discovery_loops"]["arms"]["craft"]["ratio"] == 0.2
    assert "delta_pp" not in rows["agent_score"]["arms"]["stuffed"]


def test_markdown_table_reads_like_a_results_table():
    text = markdown_table(build_table(EVAL["results"]))
    assert text.splitlines()[0] == "| Metric | craft | sft_only | stuffed | Published |"
    assert "| Agent score | 60.0% [50.0, 70.0] (+15.0 pp) |" in text
    assert "| Input tokens / call | 110.0 [105.0, 115.0] (0.11x) |" in text
    assert "n/a" in text          # metrics the eval did not produce are shown, not dropped


def test_the_terminal_table_names_the_baseline_only_when_it_was_an_arm():
    from runtime.report.step import rich_table

    def title(results):
        console = Console(width=120, record=True)
        console.print(rich_table(build_table(results)))
        return console.export_text().splitlines()[0].strip()

    assert title(EVAL["results"]) == "craft results (all) vs stuffed"
    # `eval { baseline none }` (the dev profiles): craft and sft_only only, nothing to be "vs".
    assert title({arm: EVAL["results"][arm] for arm in ("craft", "sft_only")}) == "craft results (all)"


def test_a_run_without_the_stuffed_arm_records_no_baseline_and_its_digest_names_none():
    from runtime.report.step import build_report
    from runtime.results_tables import digest, render

    with_baseline = build_report(EVAL)
    assert with_baseline["baseline"] == with_baseline["tables"]["all"]["baseline"] == "stuffed"
    assert "deltas against `stuffed`" in render(digest(with_baseline, "a run"))
    # `eval { baseline none }`: report.json, its tables and its digest say there was no baseline.
    report = build_report({"arms": ["craft", "sft_only"], "instances": 10,
                           "results": {arm: EVAL["results"][arm] for arm in ("craft", "sft_only")}})
    assert report["baseline"] is None and report["tables"]["all"]["baseline"] is None
    assert "delta_pp" not in report["tables"]["all"]["rows"][0]["arms"]["craft"]
    text = render(digest(report, "a dev run"))
    assert "against" not in text.split("\n")[0]
    # A digest written before the report said so still names `stuffed`; rendering checks the arms.
    old = {**digest(report, "a dev run"), "baseline": "stuffed"}
    assert render(old) == text


def test_report_step_writes_markdown_json_and_plots(tmp_path):
    run = tmp_path / "run"
    (run / "eval").mkdir(parents=True)
    (run / "eval" / "manifest.json").write_text("{}")
    (run / "eval" / "eval.json").write_text(json.dumps(EVAL))
    (run / "grpo").mkdir()
    (run / "grpo" / "metrics.jsonl").write_text(
        "".join(json.dumps({"step": s, "reward": 0.1 * s, "rewards/outcome/mean": 0.05 * s}) + "\n" for s in (1, 2)))
    (run / "grpo" / "grpo_summary.json").write_text(json.dumps(
        {"steps": 2, "measured_rows": 4, "before": {"total": 0.1, "exec_success": 0.0},
         "after": {"total": 0.2, "exec_success": 0.5}, "sampled_per_row": 2,
         "before_sampled": {"total": 0.15, "exec_success": 0.25}, "after_sampled": {"total": 0.3, "exec_success": 0.75}}))
    plan = Plan(craftc_version="0", recipe=Recipe(name="r", schema=Schema(name="s", version=1, source="s")))
    outputs = []
    for n in (1, 2):
        out = tmp_path / f"out{n}"
        out.mkdir()
        ctx = StepContext(plan, tmp_path, run, out, Console(file=open(tmp_path / "log", "w"), width=200), 0)
        result = run_report(ctx)
        outputs.append({p: (out / p).read_bytes() for p in result.outputs})
    assert result.metrics["input_tokens_ratio_craft"] == 0.11
    assert {"report.md", "report.json", "metric_agent_score.png", "training_grpo_reward.png"} <= set(outputs[0])
    assert outputs[0] == outputs[1]                      # same inputs, same bytes (plots included)
    md = outputs[0]["report.md"].decode()
    assert "## New values: value combinations no training turn has" in md
    assert "## GRPO measured on 4 training prompts (2 steps)" in md
    assert "| after, greedy | 0.200 | 0.500 |" in md and "| after, 2 samples per prompt | 0.300 | 0.750 |" in md
    assert json.loads(outputs[0]["report.json"])["grpo"]["steps"] == 2


def _rows(*cells):
    return [{"workflow": w, "split": s, "passed": k, "n": n, "value": k / n} for w, s, k, n in cells]


def test_the_per_workflow_table_has_workflows_as_rows_and_arms_as_columns():
    from runtime.report.breakdown import build_workflow_table, markdown_workflow_table

    table = build_workflow_table({
        "craft": _rows(("top", "new_phrasing", 2, 4), ("churn", "new_workflow", 1, 2), ("top", "new_values", 1, 1)),
        "stuffed": _rows(("top", "new_values", 0, 1), ("top", "new_phrasing", 1, 4))})
    # Held-out params, phrasings and workflows stay separate rows, in that order.
    assert [(r["split"], r["workflow"]) for r in table["rows"]] == [
        ("new_values", "top"), ("new_phrasing", "top"), ("new_workflow", "churn")]
    assert markdown_workflow_table(table).splitlines() == [
        "| Workflow | Split | craft | stuffed |",
        "| --- | --- | --- | --- |",
        "| top | new_values | 100.0% (1/1) | 0.0% (0/1) |",
        "| top | new_phrasing | 50.0% (2/4) | 25.0% (1/4) |",
        "| churn | new_workflow | 50.0% (1/2) | n/a |",
    ]


def test_the_report_shows_per_workflow_scores_and_failure_classes_from_eval_json(tmp_path):
    from runtime.eval import FAILURE_CLASSES
    from runtime.report import render_markdown
    from runtime.report.step import build_report

    counts = dict.fromkeys(FAILURE_CLASSES, 0)
    example = {"instance_id": "top-3", "workflow": "top", "split": "new_values", "turn": 1,
               "question": "Top 5 campaigns by clicks", "plan": "Rank campaigns.", "code": "result = api.query(`x`)"}
    failures = {arm: {"failed_turns": 1, "counts": {**counts, "wrong_parameter": 1},
                      "examples": {"wrong_parameter": example}} for arm in EVAL["arms"]}
    per_workflow = {arm: _rows(("top", "new_values", 1, 2)) for arm in EVAL["arms"]}
    report = build_report({**EVAL, "per_workflow": per_workflow, "failures": failures})
    assert report["per_workflow"]["rows"][0]["arms"]["craft"] == {"passed": 1, "n": 2, "value": 0.5}
    assert report["failures"]["craft"]["counts"]["wrong_parameter"] == 1
    md = render_markdown(report)
    assert "## Agent score per workflow" in md and "| top | new_values | 50.0% (1/2) |" in md
    assert "| wrong_parameter | 1 | 1 | 1 |" in md and "| failed user turns | 1 | 1 | 1 |" in md
    assert ("- **wrong_parameter**: `top-3` (top, new_values) turn 1: \"Top 5 campaigns by clicks\"; "
            "plan: \"Rank campaigns.\"; code: `result = api.query('x')`") in md
    # Without the new eval.json keys (an older eval) the report is what it was.
    assert render_markdown(build_report(EVAL)) == md.split("\n## Agent score per workflow")[0]
    assert "Answered with another workflow's code" not in md     # no arm answered another workflow
    failures["craft"]["answered_instead"] = [{"asked": "top", "answered": "spend", "turns": 1}]
    md = render_markdown(build_report({**EVAL, "per_workflow": per_workflow, "failures": failures}))
    assert "by the workflow the code resembles (the asked workflows in brackets):\n\n- craft: spend 1 (top 1)\n" in md


def _episode(arm, instance, tokens, discovery):
    from runtime.agent import Episode, ModelCall, UserTurn

    call = ModelCall(text="", input_tokens=tokens, discovery_calls=discovery)
    return Episode(arm=arm, instance_id=instance, workflow="w", split="new_values",
                   turns=[UserTurn(index=0, ask="q", calls=[call])])


def test_cost_ratios_pair_the_arms_instance_by_instance(tmp_path):
    """The ratio is sum(arm) / sum(stuffed) over the instances both arms ran, with a
    paired bootstrap interval: an instance that only one arm ran does not count."""
    from runtime.report.step import cost_ratios, read_episodes

    episodes = {"craft": [_episode("craft", f"i{k}", 50 + k, 1) for k in range(8)],
                "stuffed": [_episode("stuffed", f"i{k}", 1000, 2 + k % 2) for k in range(8)]
                + [_episode("stuffed", "only-here", 10, 100)]}
    (tmp_path / "episodes").mkdir()
    for arm, eps in episodes.items():
        (tmp_path / "episodes" / f"{arm}.jsonl").write_text(
            "".join(json.dumps(e.to_dict()) + "\n" for e in eps))
    ratios = cost_ratios(read_episodes(tmp_path / "episodes", ["craft", "stuffed"]))
    tokens = ratios["all"]["input_tokens"]["craft"]
    assert tokens["n"] == 8 and tokens["value"] == round(sum(50 + k for k in range(8)) / 8000, 6)
    assert tokens["ci"][0] <= tokens["value"] <= tokens["ci"][1]
    loops = ratios["new_values"]["discovery_loops"]["craft"]
    assert loops["value"] == 0.4 and loops["ci"][0] < 0.4 < loops["ci"][1]
    cell = build_table(EVAL["results"], ratios=ratios["all"])["rows"][5]["arms"]["craft"]
    assert cell["ratio_ci"] == tokens["ci"]
    assert "x [" in markdown_table(build_table(EVAL["results"], ratios=ratios["all"]))


def test_repairs_count_what_the_agent_did_after_its_code_failed(tmp_path):
    """A repair follows a failed attempt in the same turn; the answer call after a run that
    worked is not one. The report counts repairs that repeat the failed code and those
    that then ran, per arm, from the episodes the eval step wrote."""
    from runtime.agent import Episode, ExecRecord, ModelCall, UserTurn
    from runtime.report.step import build_report, render_markdown

    def call(code, ok):
        return ModelCall(9, "", code=code, exec=ExecRecord(ok=ok, error_type=None if ok else "UnknownFieldError"),
                         tool_message="[3 rows]" if ok else "UnknownFieldError: unknown field `x`")

    answer = ModelCall(9, "", answer="The result has 3 rows.")
    no_block = ModelCall(9, "CREATE TABLE ...", tool_message="FormatError: no <CODE> block and no <ANSWER> block")
    turns = {"craft": [call("a", False), call("b", True), answer],         # one repair, and it ran
             "sft_only": [call("a", False), call("a", False), call("a", False)],   # two, both the same code
             # a retry after a reply with no code block is a repair too, with no code to repeat
             "stuffed": [no_block, call("a", False)]}
    (tmp_path / "eval/episodes").mkdir(parents=True)
    for arm, calls in turns.items():
        episode = Episode("i0", "w", "new_values", arm, [UserTurn(0, "q", calls)])
        (tmp_path / f"eval/episodes/{arm}.jsonl").write_text(json.dumps(episode.to_dict()) + "\n")
    report = build_report({**EVAL, "results": {a: EVAL["results"][a] for a in turns}}, tmp_path)
    assert report["repairs"] == {"craft": {"repairs": 1, "same_code": 0, "ran": 1},
                                 "sft_only": {"repairs": 2, "same_code": 2, "ran": 0},
                                 "stuffed": {"repairs": 1, "same_code": 0, "ran": 0}}
    md = render_markdown(report)
    assert "| wrote the failed code again | 0 (0%) | 2 (100%) | 0 (0%) |" in md
    assert "| ran | 1 (100%) | 0 (0%) | 0 (0%) |" in md
    assert "decoded again sampled" not in md and "repeat_temperature" not in md
    # Without episodes (an eval.json alone) there is no repairs section.
    assert "repairs" not in build_report(EVAL) and "## Repairs" not in render_markdown(build_report(EVAL))
    # `eval { repeat_temperature 0.7 }`: a repeat decoded again is counted as its sample, and said.
    resampled = call("b", True)
    resampled.resampled = True
    episode = Episode("i0", "w", "new_values", "craft", [UserTurn(0, "q", [call("a", False), resampled, answer])])
    (tmp_path / "eval/episodes/craft.jsonl").write_text(json.dumps(episode.to_dict()) + "\n")
    report = build_report({**EVAL, "results": {a: EVAL["results"][a] for a in turns}, "repeat_temperature": 0.7},
                          tmp_path)
    assert report["repairs"]["craft"] == {"repairs": 1, "same_code": 0, "ran": 1, "resampled": 1}
    md = render_markdown(report)
    assert "| repeated failed code, decoded again sampled | 1 (100%) | 0 (0%) | 0 (0%) |" in md
    assert "sampled at temperature 0.7, and the sample ran (`eval { repeat_temperature 0.7 }`" in md


def test_calls_cut_at_max_new_tokens_are_read_with_care(tmp_path):
    """A call that stopped at max_new_tokens wrote code cut mid-block: the report counts them per
    arm and says so above its tables, naming the limit eval decoded with."""
    from runtime.agent import Episode, ExecRecord, ModelCall, UserTurn
    from runtime.report.step import build_report, render_markdown

    def call(cut):
        return ModelCall(9, "", code="q(", exec=ExecRecord(ok=False, error_type="SyntaxError"),
                         tool_message="SyntaxError", cut_off=cut)

    (tmp_path / "eval/episodes").mkdir(parents=True)
    for arm, calls in {"craft": [call(True), call(True), call(False)], "stuffed": [call(False)]}.items():
        episode = Episode("i0", "w", "new_values", arm, [UserTurn(0, "q", calls)])
        (tmp_path / f"eval/episodes/{arm}.jsonl").write_text(json.dumps(episode.to_dict()) + "\n")
    evaluated = {**EVAL, "arms": ["craft", "stuffed"], "max_new_tokens": 384,
                 "results": {a: EVAL["results"][a] for a in ("craft", "stuffed")}}
    report = build_report(evaluated, tmp_path)
    assert report["cut_off"] == {"max_new_tokens": 384, "arms": {"craft": {"calls": 3, "cut_off": 2},
                                                                  "stuffed": {"calls": 1, "cut_off": 0}}}
    [warning] = report["read_with_care"]
    assert warning.startswith("in craft, 2 of its 3 model calls (67%) stopped at max_new_tokens 384")
    assert "**Read with care:** in craft, 2 of its 3 model calls" in render_markdown(report)
    # No call cut: nothing said.
    (tmp_path / "eval/episodes/craft.jsonl").write_text(
        json.dumps(Episode("i0", "w", "new_values", "craft", [UserTurn(0, "q", [call(False)])]).to_dict()) + "\n")
    report = build_report(evaluated, tmp_path)
    assert "cut_off" not in report and report["read_with_care"] == []


def test_a_report_where_no_arm_passed_says_it_cannot_compare_them():
    """Every arm at 0% shows that the pipeline runs, not which arm is better: report.md says
    so above its tables (and the step's console, through the same function)."""
    from runtime.report.step import build_report, render_markdown

    zero = {"arms": ["craft", "stuffed"], "instances": 4,
            "results": {"craft": _arm(0.0, 110.0, 0.0), "stuffed": _arm(0.0, 1000.0, 0.0)}}
    md = render_markdown(build_report(zero))
    assert ("**Read with care:** no arm answered any of its held-out turns (agent score 0.0% in craft, stuffed): "
            "the arms cannot be compared on this run") in md
    assert md.index("Read with care") < md.index("## All scored turns")
    assert "Read with care" not in render_markdown(build_report(EVAL))


def test_a_ratio_against_a_baseline_of_zero_is_not_shown():
    from runtime.eval.stats import paired_ratio

    assert paired_ratio([(1.0, 0.0), (2.0, 0.0)])["value"] is None


def test_a_baseline_that_never_looks_anything_up_gets_the_paired_difference_and_a_warning(tmp_path):
    """A stuffed arm with no discovery calls leaves the loop ratio without a denominator:
    the table says so and shows craft minus stuffed per turn with its paired interval,
    and the report step's console names the missing ratio instead of leaving a blank."""
    from runtime.report.step import cost_ratios, missing_ratios, read_episodes
    from runtime.report.table import build_table, markdown_table

    episodes = {"craft": [_episode("craft", f"i{k}", 100, k % 2) for k in range(10)],
                "stuffed": [_episode("stuffed", f"i{k}", 1000, 0) for k in range(10)]}
    (tmp_path / "episodes").mkdir()
    for arm, eps in episodes.items():
        (tmp_path / "episodes" / f"{arm}.jsonl").write_text("".join(json.dumps(e.to_dict()) + "\n" for e in eps))
    ratios = cost_ratios(read_episodes(tmp_path / "episodes", ["craft", "stuffed"]))
    loops = ratios["all"]["discovery_loops"]["craft"]
    assert loops["value"] is None
    assert loops["difference"]["value"] == 0.5 and loops["difference"]["ci"][0] < 0.5 < loops["difference"]["ci"][1]
    results = {"craft": {"all": {"input_tokens": _metric(100.0, [100.0, 100.0]),
                                 "discovery_loops": _metric(0.5, [0.2, 0.8])}},
               "stuffed": {"all": {"input_tokens": _metric(1000.0, [1000.0, 1000.0]),
                                   "discovery_loops": _metric(0.0, [0.0, 0.0])}}}
    table = build_table(results, ratios=ratios["all"])
    cell = next(r for r in table["rows"] if r["metric"] == "discovery_loops")["arms"]["craft"]
    assert cell["no_ratio"] == "stuffed is 0" and cell["difference"] == 0.5
    low, high = loops["difference"]["ci"]
    assert f"0.5 [0.2, 0.8] (+0.50 [{low:+.2f}, {high:+.2f}]; no ratio: stuffed is 0)" in markdown_table(table)
    assert missing_ratios(table) == [f"Discovery loops / turn: no ratio for craft (stuffed is 0); the report gives "
                                     f"the paired difference, +0.50 [{low:+.2f}, {high:+.2f}]"]
    tokens = next(r for r in table["rows"] if r["metric"] == "input_tokens")["arms"]["craft"]
    assert tokens["ratio"] == 0.1 and "no_ratio" not in tokens


def test_a_limited_eval_says_how_many_held_out_instances_it_kept():
    from runtime.report.step import build_report, render_markdown

    limited = {**EVAL, "limit": {"per_split": 8, "held_out": 58}}
    assert build_report(limited)["limit"] == {"per_split": 8, "held_out": 58}
    assert render_markdown(build_report(limited)).splitlines()[2].startswith(
        "10 held-out instances (`eval { limit 8 }` kept them of 58, spread over each kind). Baseline")
    assert "limit" not in build_report(EVAL)


def test_the_report_says_when_follow_ups_saw_shortened_earlier_turns():
    from runtime.report.step import build_report, render_markdown

    compact = build_report({**EVAL, "earlier_turns": "compact"})
    assert compact["earlier_turns"] == "compact"
    assert ("each earlier turn shortened to its question, the last `<CODE>` block it wrote and its `<ANSWER>` "
            "(`earlier_turns compact`)") in render_markdown(compact)
    thinks = render_markdown(build_report({**EVAL, "earlier_turns": "thinks"}))
    assert "the last `<THINK>` block it wrote and its `<ANSWER>` (`earlier_turns thinks`)" in thinks
    assert "earlier_turns" not in build_report(EVAL) and "shortened" not in render_markdown(build_report(EVAL))


def test_the_report_says_how_every_arm_decoded_with_a_copy_bias():
    from runtime.report.step import build_report, render_markdown

    biased = build_report({**EVAL, "copy_bias": 3.0})
    assert biased["copy_bias"] == 3.0
    assert "Every arm decoded greedily with `eval { copy_bias 3 }`" in render_markdown(biased)
    assert "copy_bias" not in build_report(EVAL) and "copy_bias" not in render_markdown(build_report(EVAL))


def test_the_report_says_how_every_arm_decoded_in_bf16():
    from runtime.report.step import build_report, render_markdown

    half = build_report({**EVAL, "precision": "bf16"})
    assert half["precision"] == "bf16"
    assert "Every arm decoded with bf16 weights (`eval { precision bf16 }`" in render_markdown(half)
    assert "precision" not in build_report(EVAL) and "bf16" not in render_markdown(build_report(EVAL))


def test_a_report_without_the_stuffed_arm_names_no_baseline():
    from runtime.report.step import build_report, render_markdown

    alone = {"arms": ["craft"], "instances": 10, "results": {"craft": EVAL["results"]["craft"]}}
    header = render_markdown(build_report(alone)).splitlines()[2]
    assert "No baseline arm was evaluated" in header and "stuffed" not in header
    assert "Baseline: `stuffed`" in render_markdown(build_report(EVAL)).splitlines()[2]


def _sft_step(run, budget, stuffed_steps):
    """An sft step dir as the step leaves it: its manifest's per-arm summaries and each arm's loss log."""
    def summary(steps, tokens):
        return {"steps": steps, "num_tokens": tokens, "prefix_warm_up": {"steps": 2 * steps, "num_tokens": tokens}}

    (run / "sft").mkdir(parents=True)
    (run / "sft" / "manifest.json").write_text(json.dumps({"status": "complete", "metrics": {
        "baseline_budget": budget, "craft": summary(100, 5000), "stuffed": summary(stuffed_steps, 5100)}}))
    for arm, losses in (("craft", [3.0] * 90 + [0.5] * 10), ("stuffed", [4.0] * 9 + [2.0])):
        (run / "sft" / arm).mkdir()
        (run / "sft" / arm / "metrics.jsonl").write_text(
            "".join(json.dumps({"step": i + 1, "loss": x, "mean_token_accuracy": 1 / x}) + "\n"
                    for i, x in enumerate(losses)))


def test_the_report_says_how_each_arm_was_trained_and_warns_of_a_baseline_whose_code_never_ran(tmp_path):
    from runtime.report import build_report, render_markdown

    results = {arm: {"all": {"execution_success": _metric(value, [0.0, 1.0], n=12),
                             "agent_score": _metric(value / 2, [0.0, 1.0], n=12)}}
               for arm, value in (("craft", 0.9), ("sft_only", 0.8), ("stuffed", 0.0))}
    evaluated = {"arms": ["craft", "sft_only", "stuffed"], "instances": 6, "results": results}
    run = tmp_path / "tokens"
    _sft_step(run, "tokens", stuffed_steps=10)
    report = build_report(evaluated, run)
    # sft_only is craft's SFT model; the closing loss is the mean over the last tenth of the logged steps.
    assert report["training"]["arms"]["sft_only"] == {
        "sft_arm": "craft", "warm_up_steps": 200, "steps": 100, "tokens": 10000, "closing_loss": 0.5,
        "closing_token_accuracy": 2.0, "grpo_steps": 0}
    assert report["training"]["arms"]["stuffed"]["closing_loss"] == 2.0          # one step: its last
    [warning] = report["read_with_care"]                                           # report.json keeps it too
    assert warning.startswith("stuffed's code ran in none of its 12 user turns")
    md = render_markdown(report)
    assert "| SFT steps on conversations | 100 | 100 | 10 |" in md
    assert ("**Read with care:** stuffed's code ran in none of its 12 user turns after 30 SFT steps, "
            "against craft's 300") in md

    # Trained for as many steps, a baseline whose code never ran is a finding, not a budget to question.
    run = tmp_path / "steps"
    _sft_step(run, "steps", stuffed_steps=100)
    md = render_markdown(build_report(evaluated, run))
    assert "`eval { baseline_budget steps }` (as many steps as the stripped arm" in md
    assert "Read with care" not in md


def test_the_report_gives_each_steps_wall_time_from_its_manifest_and_the_docs_render_it(tmp_path):
    """The timing the README shows is read from a run's manifests, never typed."""
    from runtime.report import build_report, render_markdown
    from runtime.results_tables import digest, render

    run = tmp_path / "run"
    for step, wall, status in (("world", 1.1, "complete"), ("distill", 78.7, "complete"), ("sft", 1052.5, "complete"),
                               ("grpo", 321.2, "complete"), ("eval", 361.7, "staging")):
        (run / step).mkdir(parents=True)
        (run / step / "manifest.json").write_text(json.dumps({"status": status, "wall_s": wall}))
    (run / "replicates" / "r1" / "sft").mkdir(parents=True)
    (run / "replicates" / "r1" / "sft" / "manifest.json").write_text(json.dumps({"status": "complete", "wall_s": 600.0}))
    report = build_report(EVAL, run, replicates=2)
    # A step that did not finish (eval, still staging) has no time yet; replicate r1 counts apart.
    assert report["wall_time"] == {"steps": {"world": 1.1, "distill": 78.7, "sft": 1052.5, "grpo": 321.2},
                                   "total_s": 1453.5, "replicates_s": 600.0}
    line = ("The steps took 24 min 14 s: the data steps (world, distill) 1 min 20 s, sft 17 min 32 s, "
            "grpo 5 min 21 s; the extra replicates' training 10 min 0 s more.")
    assert line in render_markdown(report)
    assert render(digest(report, "a run"), "timing") == line + "\n"
    assert "wall_time" not in build_report(EVAL, tmp_path / "no-run")


def test_the_training_table_shows_the_schema_docs_pass_and_counts_its_tokens(tmp_path):
    from runtime.report import build_report, render_markdown

    run = tmp_path / "docs"
    _sft_step(run, "tokens", stuffed_steps=10)
    manifest = json.loads((run / "sft" / "manifest.json").read_text())
    for arm in ("craft", "stuffed"):
        manifest["metrics"][arm]["schema_docs"] = {"steps": 104, "num_tokens": 900}
    (run / "sft" / "manifest.json").write_text(json.dumps(manifest))
    evaluated = {"arms": ["craft", "stuffed"], "instances": 6,
                 "results": {arm: {"all": {"agent_score": _metric(0.5, [0.0, 1.0])}} for arm in ("craft", "stuffed")}}
    report = build_report(evaluated, run)
    assert report["training"]["arms"]["craft"]["tokens"] == 5000 + 5000 + 900     # conversations, warm-up, docs
    assert "| SFT steps on the schema's documentation | 104 | 104 |" in render_markdown(report)
    plain = tmp_path / "plain"
    _sft_step(plain, "tokens", stuffed_steps=10)
    assert "schema's documentation" not in render_markdown(build_report(evaluated, plain))


def test_a_grpo_step_that_measured_nothing_says_so():
    # `stage grpo { measure 0 }`: the summary's before, after and change are null.
    from runtime.report.step import build_report, render_markdown
    from runtime.results_tables import grpo_line

    grpo = {"steps": 2, "measured_rows": 0, "before": None, "after": None, "before_sampled": None,
            "after_sampled": None, "change": None, "curve": [], "rows_drawn": "fresh", "rows": 79}
    md = render_markdown({**build_report(EVAL), "grpo": grpo})
    assert "## GRPO (2 steps, nothing measured: `measure 0`)" in md and "| before, greedy |" not in md
    assert grpo_line({"grpo": grpo}) == "GRPO trained 2 steps and measured no rows before or after (`measure 0`).\n"


def test_flat_groups_left_in_place_are_said_counted_not_replaced():
    # `dynamic_sampling 0`: each step's flat groups are counted, none is dropped or replaced.
    from runtime.report.step import build_report, render_markdown
    from runtime.results_tables import grpo_line

    grpo = {"steps": 12, "measured_rows": 0, "before": None, "after": None, "before_sampled": None,
            "after_sampled": None, "change": None, "curve": [], "rows_drawn": "fresh", "rows": 60,
            "dynamic_sampling": {"rounds": 0, "groups": 48, "dropped": 0, "replaced": 0, "flat_after": 30}}
    md = render_markdown({**build_report(EVAL), "grpo": grpo})
    assert ("Of them, 30 of 48 groups trained had rollouts that all scored one R_outcome and gave no gradient "
            "(none replaced: `dynamic_sampling 0`).") in md
    assert "were replaced" not in md
    line = grpo_line({"grpo": grpo})
    assert "on fresh rows, 30 of 48 groups trained had rollouts that all scored one R_outcome" in line
    assert "were replaced" not in line
