"""The agent loop against the real sandbox, driven by a scripted model or a tiny real one."""

import json

import pytest

from runtime.agent import (
    AgentTask, Episode, Generation, HFGenerator, TurnWording, load_tasks, run_episode, run_episodes,
)
from tests.agent.warehouse import TOP_CODE, TRAVEL_CODE, assistant, task_dict

SYSTEM = "You are an analyst agent. Answer with THINK, PLAN and CODE blocks."


class Script:
    """A stand-in model: replies from a list, recording what it was shown."""

    def __init__(self, replies):
        self.replies, self.seen = list(replies), []

    def __call__(self, conversations):
        out = []
        for messages in conversations:
            self.seen.append([dict(m) for m in messages])
            out.append(Generation(self.replies.pop(0), input_tokens=sum(len(m["content"]) for m in messages)))
        return out


def test_a_correct_conversation_takes_one_call_per_user_turn_and_an_answer_between_turns(sandbox):
    task = AgentTask.from_dict(task_dict(n=2))
    model = Script([assistant("Rank campaigns by budget.", TOP_CODE.format(n=2)),
                    "<ANSWER>\nWinter Fly leads.\n</ANSWER>",
                    assistant("Keep travel campaigns.", TRAVEL_CODE.format(n=2))])
    episode = run_episode(model, None, task, SYSTEM, sandbox, max_turns=3)
    assert [len(t.calls) for t in episode.turns] == [1, 1]
    assert all(t.final_ok for t in episode.turns)
    assert list(episode.turns[0].final_frame["name"]) == ["Winter Fly", "Summer Trip"]
    # As in every training conversation, the first turn closes with the agent's answer,
    # kept apart from the code calls; the last turn's answer is not asked.
    assert episode.turns[0].answer == "Winter Fly leads."
    assert episode.turns[0].answer_call.input_tokens > 0
    assert episode.turns[1].answer_call is None and len(model.seen) == 3
    # The second question is asked with the whole first exchange in context.
    roles = [m["role"] for m in model.seen[2]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert "Winter Fly" in model.seen[2][3]["content"]


def test_an_execution_error_comes_back_as_a_tool_message_and_the_model_repairs(sandbox):
    task = AgentTask.from_dict(task_dict(n=2))
    broken = "result = api.query('SELECT nme FROM campaign')"
    model = Script([assistant("List campaigns.", broken), assistant("List campaigns.", TOP_CODE.format(n=2)),
                    "<ANSWER>\nTwo campaigns.\n</ANSWER>", "<ANSWER>\nDone.\n</ANSWER>"])
    episode = run_episode(model, None, task, SYSTEM, sandbox, max_turns=3)
    first = episode.turns[0]
    assert [c.exec.ok for c in first.calls] == [False, True]
    assert "did you mean `name`" in first.calls[0].tool_message
    assert model.seen[1][-1] == {"role": "tool", "content": first.calls[0].tool_message}
    assert first.final_ok and first.final_code == TOP_CODE.format(n=2)
    # An answer without code ends the second user turn.
    assert episode.turns[1].answer == "Done." and not episode.turns[1].final_ok


def test_the_repair_budget_ends_a_user_turn(sandbox):
    task = AgentTask.from_dict(task_dict(n=2))
    model = Script(["no blocks at all", "still nothing", assistant("p", "x = 1 / 0"),
                    assistant("p", "result = 1")])
    episode = run_episode(model, None, task, SYSTEM, sandbox, max_turns=2)
    assert len(episode.turns[0].calls) == 2 and not episode.turns[0].final_ok
    assert "no <CODE> block" in episode.turns[0].calls[0].tool_message
    assert episode.turns[1].calls[0].exec.error_type == "ZeroDivisionError"
    assert episode.turns[1].final_ok


def test_discovery_calls_are_counted_per_model_call(sandbox):
    task = AgentTask.from_dict(task_dict(n=2))
    code = "api.list_entities()\napi.describe('campaign')\n" + TOP_CODE.format(n=2)
    model = Script([assistant("p", code), "<ANSWER>ok</ANSWER>", "<ANSWER>ok</ANSWER>"])
    episode = run_episode(model, None, task, SYSTEM, sandbox)
    assert episode.turns[0].calls[0].discovery_calls == 2
    assert episode.turns[0].calls[0].exec.api_calls == ("list_entities", "describe", "query")


def test_turn_wording_reads_both_templates(tmp_path):
    path = tmp_path / "turn.md"
    path.write_text("# user turn\nQuestion: {ask}\n\n# tool turn\nOutput:\n{output}\n")
    wording = TurnWording.from_file(path)
    assert wording.render_user("why?") == "Question: why?"
    assert wording.render_tool("3 rows") == "Output:\n3 rows"


def test_episodes_round_trip_through_json(sandbox):
    task = AgentTask.from_dict(task_dict(n=3))
    model = Script([assistant("p", TOP_CODE.format(n=3)), "<ANSWER>three</ANSWER>",
                    assistant("p", TRAVEL_CODE.format(n=3))])
    episode = run_episode(model, None, task, SYSTEM, sandbox)
    data = json.loads(json.dumps(episode.to_dict()))
    again = Episode.from_dict(data)
    assert again.to_dict() == episode.to_dict()
    assert again.turns[0].calls[0].exec.rows == 3
    assert again.turns[0].answer_call.answer == "three"


def test_load_tasks_reads_a_split_map_and_names_bad_files(tmp_path):
    path = tmp_path / "eval_instances.json"
    path.write_text(json.dumps({"new_values": [task_dict(2, "a")], "new_workflow": [task_dict(3, "b")]}))
    tasks = load_tasks(path)
    assert [(t.id, t.split) for t in tasks] == [("a", "new_values"), ("b", "new_workflow")]
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_tasks(path)


def test_a_real_tiny_model_runs_batched_greedy_and_deterministically(sandbox, tiny_model):
    model, tok = tiny_model
    tasks = [AgentTask.from_dict(task_dict(n, f"t{n}")) for n in (2, 3, 4)]
    gen = HFGenerator(model, tok, max_new_tokens=24, batch_size=3)
    first = run_episodes(gen, tasks, SYSTEM, sandbox, max_turns=2)
    second = run_episodes(gen, tasks, SYSTEM, sandbox, max_turns=2)
    assert [e.to_dict() for e in first] == [e.to_dict() for e in second]
    call = first[0].turns[0].calls[0]
    expected = len(tok.apply_chat_template([{"role": "system", "content": SYSTEM},
                                            {"role": "user", "content": tasks[0].turns[0].ask}],
                                           add_generation_prompt=True, tokenize=True, return_dict=False))
    assert call.input_tokens == expected
    # Batched decoding gives the same text as decoding one conversation alone.
    alone = run_episodes(HFGenerator(model, tok, max_new_tokens=24, batch_size=1), tasks[1:2], SYSTEM,
                         sandbox, max_turns=2)
    assert alone[0].turns[0].calls[0].text == first[1].turns[0].calls[0].text


@pytest.mark.parametrize("overlap", [False, True])
def test_each_episode_is_reported_once_as_soon_as_its_conversation_ends(sandbox, overlap):
    def by_question(conversations):       # answers each question right, whatever the batch order
        asks = [next(m["content"] for m in reversed(c) if m["role"] == "user") for c in conversations]
        return [Generation(assistant("p", TRAVEL_CODE.format(n=2) if "travel" in ask else TOP_CODE.format(n=2)), 1)
                for ask in asks]

    one_turn = {**task_dict(2, "short"), "turns": task_dict(2)["turns"][:1]}
    tasks = [AgentTask.from_dict(task_dict(2, "long")), AgentTask.from_dict(one_turn)]
    ended = []
    episodes = run_episodes(by_question, tasks, SYSTEM, sandbox, overlap=overlap,
                            on_episode=lambda i, e: ended.append((i, e.instance_id, len(e.turns))))
    # The one-turn conversation ends a step earlier; each episode is complete when reported.
    assert ended == [(1, "short", 1), (0, "long", 2)]
    assert [e.instance_id for e in episodes] == ["long", "short"]


def test_a_repair_that_repeats_failed_code_is_decoded_again_by_the_resampler_and_the_sample_runs(sandbox):
    # `eval { repeat_temperature }`: greedy decoding wrote the failed query again; the sampled
    # decoding is asked for that call alone, and what it wrote is what runs.
    task = AgentTask.from_dict(task_dict(n=2))
    broken = "result = api.query('SELECT nme FROM campaign')"
    greedy = Script([assistant("List campaigns.", broken), assistant("List campaigns.", broken),
                     "<ANSWER>\nTwo campaigns.\n</ANSWER>", "<ANSWER>\nDone.\n</ANSWER>"])
    sampled = Script([assistant("List campaigns.", TOP_CODE.format(n=2))])
    episode = run_episodes(greedy, [task], SYSTEM, sandbox, max_turns=3, resample=sampled)[0]
    first = episode.turns[0]
    assert [c.resampled for c in first.calls] == [False, True]
    assert [c.exec.ok for c in first.calls] == [False, True] and first.final_code == TOP_CODE.format(n=2)
    # The sampler saw the conversation the greedy call saw: up to the failed attempt's error.
    assert sampled.seen == [greedy.seen[1]] and sampled.seen[0][-1]["role"] == "tool"
    assert Episode.from_dict(episode.to_dict()).turns[0].calls[1].resampled
    # A first attempt, and a repair with new code, are never decoded again.
    plain = Script([assistant("p", broken), assistant("p", TOP_CODE.format(n=2)), "<ANSWER>\nx\n</ANSWER>",
                    "<ANSWER>\nDone.\n</ANSWER>"])
    unused = Script([])
    run_episodes(plain, [task], SYSTEM, sandbox, max_turns=3, resample=unused)
    assert unused.seen == []


def test_the_resampler_draws_the_same_samples_for_the_same_seed_and_leaves_torch_s_own_generator(sandbox):
    import torch

    from runtime.agent.repeats import Resampler

    draw = lambda conversations: [float(torch.rand(1)) for _ in conversations]   # noqa: E731
    torch.manual_seed(5)
    expected_next = float(torch.rand(1))
    torch.manual_seed(5)
    a, b, other = Resampler(draw, 7), Resampler(draw, 7), Resampler(draw, 8)
    first = [a([[]]), a([[], []])]
    assert first == [b([[]]), b([[], []])] and first[0] != other([[]])
    assert first[0] != first[1][:1]            # each batch draws from a seed of its own
    assert float(torch.rand(1)) == expected_next
