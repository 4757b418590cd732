"""Evaluation metrics on hand-made trajectories, scored against real reference results."""

import io

import pytest
from rich.console import Console

from runtime.agent import AgentTask, Episode, ExecRecord, ModelCall, UserTurn, run_episodes
from runtime.eval import discovery_loops, keeps_constraints, per_workflow, required_constraints, summarise, wilson
from runtime.eval import FAILURE_CLASSES
from runtime.eval.progress import ArmProgress
from runtime.eval.step import evaluate_arm, reference_frames, split_summaries
from runtime.rewards import SchemaTerms
from tests.agent.test_loop import Script
from tests.agent.warehouse import TOP_CODE, TRAVEL_CODE, assistant, task_dict

from craftc.ir import Entity, EntityKey, Schema

TERMS = SchemaTerms.from_schema(Schema(name="s", version=1, source="s", entities=(
    Entity(name="Campaign", table="adw.cmp", view="campaign", key=EntityKey(name="id", column="cid")),
    Entity(name="Advertiser", table="adw.adv", view="advertiser", key=EntityKey(name="id", column="aid")))))


ANSWER = "<ANSWER>done</ANSWER>"     # the agent closes a turn before the next question


def _run(sandbox, replies, n=2, keep_travel=None):
    data = task_dict(n)
    if keep_travel is not None:     # a third question whose reference keeps turn 2's `travel` filter
        data["turns"].append({**data["turns"][1], "ask": f"Only the top {keep_travel} of those",
                              "code": TRAVEL_CODE.format(n=keep_travel)})
    task = AgentTask.from_dict(data)
    refs = reference_frames([task], sandbox)
    episode = run_episodes(Script(replies), [task], "sys", sandbox, max_turns=3)[0]
    from runtime.eval import score_episode
    return score_episode(episode, task, refs[task.id], TERMS), task


def test_a_coherent_conversation_keeps_the_earlier_constraint(sandbox):
    episode, task = _run(sandbox, [assistant("Rank campaigns.", TOP_CODE.format(n=2)), ANSWER,
                                   assistant("Keep travel advertisers' campaigns.", TRAVEL_CODE.format(n=2)), ANSWER,
                                   assistant("Keep the top 3 of them.", TRAVEL_CODE.format(n=3))], keep_travel=3)
    assert required_constraints(task, 1) == set()      # turn 1 has no filter; `travel` is new in turn 2
    assert required_constraints(task, 2) == {"travel"}  # turn 3's reference keeps it
    assert [t.passed for t in episode.turns] == [True, True, True]
    assert [t.constraints_required for t in episode.turns] == [None, 0, 1]
    # Turn 2 requires nothing, so it is not a coherence unit; turn 3 is, and keeps `travel`.
    assert summarise([episode])["multi_turn_coherence"]["value"] == 1.0
    assert summarise([episode])["multi_turn_coherence"]["n"] == 1


def test_an_incoherent_follow_up_fails_coherence(sandbox):
    # The third answer drops the travel filter: the unfiltered top 4 includes a retail campaign.
    episode, _ = _run(sandbox, [assistant("Rank campaigns.", TOP_CODE.format(n=4)), ANSWER,
                                assistant("Keep travel advertisers' campaigns.", TRAVEL_CODE.format(n=4)), ANSWER,
                                assistant("Rank campaigns.", TOP_CODE.format(n=4))], n=4, keep_travel=4)
    assert episode.turns[2].passed is False and episode.turns[2].kept_constraints is False
    assert summarise([episode])["multi_turn_coherence"] == {"value": 0.0, "n": 1, "ci": [0.0, 0.0], "se": 0.0,
                                                            "clusters": 1, "successes": 0}


def test_a_follow_up_that_requires_no_constraint_is_not_a_coherence_unit(sandbox):
    # Turn 2 drops nothing it was asked to keep: before, it counted as keeping its (no) constraints.
    episode, _ = _run(sandbox, [assistant("Rank campaigns.", TOP_CODE.format(n=4)), ANSWER,
                                assistant("Rank campaigns.", TOP_CODE.format(n=4))], n=4)
    assert episode.turns[1].passed is False and episode.turns[1].constraints_required == 0
    assert summarise([episode])["multi_turn_coherence"]["n"] == 0
    assert summarise([episode])["multi_turn_coherence"]["value"] is None


def test_constraint_retention_requires_earlier_filters_the_reference_keeps():
    task = AgentTask.from_dict({"instance_id": "c", "workflow": "w", "turns": [
        {"ask": "travel only", "code": "result = api.query(\"SELECT * FROM a WHERE industry = 'travel'\")"},
        {"ask": "by week", "code": "result = api.query(\"SELECT week FROM a WHERE industry = 'travel' "
                                   "AND spend > 10\")"}]})
    assert required_constraints(task, 1) == {"travel"}
    assert keeps_constraints("df = api.query(\"SELECT week FROM a WHERE industry = 'travel'\")", {"travel"})
    assert not keeps_constraints("df = api.query('SELECT week FROM a')", {"travel"})


def test_a_plan_code_mismatch_lowers_consistency(sandbox):
    matched, _ = _run(sandbox, [assistant("Rank campaigns.", TOP_CODE.format(n=2)), ANSWER, "<ANSWER>x</ANSWER>"])
    mismatched, _ = _run(sandbox, [assistant("Rank advertisers.", TOP_CODE.format(n=2)), ANSWER, "<ANSWER>x</ANSWER>"])
    assert matched.turns[0].consistency == 1.0
    assert mismatched.turns[0].consistency == 0.0


def test_discovery_loops_count_calls_before_the_first_success(sandbox):
    explore = "api.list_entities()\napi.describe('campaign')\nresult = api.query('SELECT nme FROM campaign')"
    episode, _ = _run(sandbox, [assistant("p", explore),
                                assistant("p", "api.describe('campaign')\n" + TOP_CODE.format(n=2)), ANSWER,
                                assistant("p", "api.list_entities()\n" + TRAVEL_CODE.format(n=2))])
    assert [discovery_loops(t) for t in episode.turns] == [3, 1]
    assert summarise([episode])["discovery_loops"]["value"] == 2.0


def test_a_run_that_recovers_from_an_error_passes_with_two_calls(sandbox):
    episode, _ = _run(sandbox, [assistant("p", "result = 1/0"),
                                assistant("Rank campaigns.", TOP_CODE.format(n=2)), ANSWER,
                                assistant("Travel only.", TRAVEL_CODE.format(n=2))])
    first = episode.turns[0]
    assert [c.exec.ok for c in first.calls] == [False, True] and first.passed
    summary = summarise([episode])
    assert summary["agent_score"]["value"] == 1.0
    assert summary["model_calls"]["value"] == 1.5
    assert summary["execution_success"]["value"] == 1.0


def test_input_tokens_are_the_mean_per_model_call():
    turn = UserTurn(0, "q", [ModelCall(100, ""), ModelCall(300, "")])
    episode = Episode("e", turns=[turn])
    assert summarise([episode])["input_tokens"]["value"] == 200.0


def test_wilson_interval_matches_the_textbook_value():
    low, high = wilson(8, 10)
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)


def test_summaries_are_deterministic():
    episodes = [Episode(str(i), turns=[UserTurn(0, "q", [ModelCall(10 * i, "")])]) for i in range(1, 9)]
    assert summarise(episodes, seed=3) == summarise(episodes, seed=3)
    low, high = summarise(episodes, seed=3)["input_tokens"]["ci"]
    assert low < 45.0 < high


def test_splits_are_summarised_separately():
    a = Episode("a", split="new_values", turns=[UserTurn(0, "q", [ModelCall(10, "")], final_ok=True, passed=True)])
    b = Episode("b", split="new_workflow", turns=[UserTurn(0, "q", [ModelCall(30, "")])])
    out = split_summaries([a, b])
    assert set(out) == {"all", "new_values", "new_workflow"}
    assert out["new_values"]["agent_score"]["value"] == 1.0
    assert out["new_workflow"]["agent_score"]["value"] == 0.0


def test_evaluate_arm_with_a_real_tiny_model(sandbox, tiny_model, tmp_path):
    model, tok = tiny_model
    model.save_pretrained(tmp_path / "m")
    tok.save_pretrained(tmp_path / "m")
    tasks = [AgentTask.from_dict(task_dict(n, f"t{n}")) for n in (2, 3)]
    refs = reference_frames(tasks, sandbox)
    with ArmProgress(Console(file=io.StringIO()), "sft_only", len(tasks)) as progress:
        episodes = evaluate_arm("sft_only", tmp_path / "m", tasks, refs, "sys", sandbox, max_turns=1,
                                terms=TERMS, max_new_tokens=8, progress=progress)
    summary = summarise(episodes)
    assert summary["agent_score"]["n"] == 4 and summary["input_tokens"]["value"] > 0
    assert all(e.arm == "sft_only" for e in episodes)
    # Scored and classified while the frames were in memory: every failed turn has a class.
    turns = [t for e in episodes for t in e.turns]
    assert all((t.failure is None) == bool(t.final_ok and t.passed) for t in turns)
    assert all(t.failure in FAILURE_CLASSES for t in turns if t.failure)
    assert (progress.done, progress.model_calls) == (2, sum(len(e.calls) for e in episodes))


def test_evaluate_arm_decodes_with_the_plans_copy_bias(sandbox, tiny_model, tmp_path):
    # At a bias far above a random tiny model's logit spread, every reply is written in the
    # asked question's tokens: the plan's `eval { copy_bias }` reaches the generator.
    model, tok = tiny_model
    model.save_pretrained(tmp_path / "m")
    tok.save_pretrained(tmp_path / "m")
    tasks = [AgentTask.from_dict(task_dict(2, "t2"))]
    refs = reference_frames(tasks, sandbox)
    [episode] = evaluate_arm("sft_only", tmp_path / "m", tasks, refs, "sys", sandbox, max_turns=1,
                             terms=TERMS, max_new_tokens=6, copy_bias=20.0)
    first = episode.calls[0]
    # Its tokens are the question's, written alone or after a space: its letters are too.
    assert first.text.strip() and set(first.text) <= set("Top 2 campaigns by budget")


def test_eval_decodes_in_the_plans_precision(sandbox, tiny_model, tmp_path, monkeypatch):
    # `eval { precision bf16 }`: the arm's weights are loaded in bf16 and its episodes decode.
    import torch

    from runtime.eval import step

    model, tok = tiny_model
    model.save_pretrained(tmp_path / "m")
    tok.save_pretrained(tmp_path / "m")
    assert step.eval_generator(tmp_path / "m", tok, 4, 2).model.dtype == torch.float32
    made, real = [], step.eval_generator

    def recorded(*args, **kwargs):
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(step, "eval_generator", recorded)
    tasks = [AgentTask.from_dict(task_dict(2, "t2"))]
    [episode] = evaluate_arm("sft_only", tmp_path / "m", tasks, reference_frames(tasks, sandbox), "sys", sandbox,
                             max_turns=1, terms=TERMS, max_new_tokens=4, precision="bf16")
    assert made[0].model.dtype == torch.bfloat16 and episode.calls


def test_eval_resamples_repeated_repairs_with_the_arms_own_weights_sampled(sandbox, tiny_model, tmp_path, monkeypatch):
    # `eval { repeat_temperature 0.7 }`: the loop gets a seeded sampler over the same model;
    # without the setting it gets none.
    from runtime.agent.repeats import Resampler
    from runtime.eval import step

    model, tok = tiny_model
    model.save_pretrained(tmp_path / "m")
    tok.save_pretrained(tmp_path / "m")
    seen = []
    monkeypatch.setattr(step, "run_episodes", lambda generate, *a, **kw: seen.append((generate, kw)) or [])
    tasks = [AgentTask.from_dict(task_dict(2, "t2"))]
    refs = reference_frames(tasks, sandbox)
    for temperature in (0.7, 0.0):
        evaluate_arm("craft", tmp_path / "m", tasks, refs, "sys", sandbox, max_turns=2, terms=TERMS,
                     max_new_tokens=4, repeat_temperature=temperature, seed=11)
    (greedy, kw), (_, plain) = seen
    sampler = kw["resample"]
    assert isinstance(sampler, Resampler) and sampler.seed == 11 and plain["resample"] is None
    assert sampler.generate.do_sample and sampler.generate.temperature == 0.7 and not greedy.do_sample
    assert sampler.generate.model is greedy.model


def test_evaluate_arm_decodes_the_plans_batch_of_conversations_per_call(sandbox, tiny_model, tmp_path):
    # `eval { batch N }`: the first questions of three instances go to the model two at a time.
    model, tok = tiny_model
    model.save_pretrained(tmp_path / "m")
    tok.save_pretrained(tmp_path / "m")
    tasks = [AgentTask.from_dict(task_dict(n, f"t{n}")) for n in (1, 2, 3)]

    class Calls:
        def __init__(self):
            self.batches = []

        def calls(self, n):
            self.batches.append(n)

        def episode(self, episode):
            pass

    seen = Calls()
    evaluate_arm("sft_only", tmp_path / "m", tasks, reference_frames(tasks, sandbox), "sys", sandbox, max_turns=1,
                 terms=TERMS, max_new_tokens=4, batch_size=2, progress=seen)
    assert seen.batches[:2] == [2, 1]


def test_agent_score_per_workflow_keeps_each_split_apart():
    def episode(workflow, split, *passed):
        return Episode(f"{workflow}-{split}", workflow, split,
                       turns=[UserTurn(i, "q", final_ok=True, passed=p) for i, p in enumerate(passed)])

    rows = per_workflow([episode("top", "new_phrasing", True, False), episode("top", "new_values", True),
                         episode("top", "new_values", False), episode("churn", "new_workflow", False)])
    assert rows == [
        {"workflow": "top", "split": "new_phrasing", "passed": 1, "n": 2, "value": 0.5},
        {"workflow": "top", "split": "new_values", "passed": 1, "n": 2, "value": 0.5},
        {"workflow": "churn", "split": "new_workflow", "passed": 0, "n": 1, "value": 0.0},
    ]
