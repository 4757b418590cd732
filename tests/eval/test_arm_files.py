"""An eval arm's episodes file: written whole or not at all, and read back only when it
holds the episodes of the instances eval runs, in order (runtime/eval/arm_files.py)."""

from runtime.agent import Episode
from runtime.agent.episode import ExecRecord, ModelCall, UserTurn
from runtime.eval.arm_files import arm_file, finished_arm, write_arm


def _episode(instance_id: str) -> Episode:
    call = ModelCall(input_tokens=12, text="<CODE>x</CODE>", code="x", well_formed=True,
                     exec=ExecRecord(ok=True, rows=2, columns=("a", "b"), api_calls=("sql",)))
    return Episode(instance_id, "wf", "new_values", "craft",
                   [UserTurn(0, "how many?", [call], final_ok=True, final_code="x", passed=True, consistency=0.5)])


def test_a_written_arm_reads_back_as_the_same_episodes(tmp_path):
    episodes = [_episode("a"), _episode("b")]
    path = write_arm(tmp_path, "craft", episodes)
    assert path == arm_file(tmp_path, "craft") and list(tmp_path.iterdir()) == [path]      # no temporary left
    done, why_not = finished_arm(tmp_path, "craft", ["a", "b"])
    assert why_not == "" and [e.to_dict() for e in done] == [e.to_dict() for e in episodes]


def test_no_file_is_no_finished_arm_and_no_complaint(tmp_path):
    assert finished_arm(tmp_path, "craft", ["a"]) == (None, "")


def test_episodes_of_other_instances_are_not_taken_for_the_arm(tmp_path):
    write_arm(tmp_path, "craft", [_episode("a"), _episode("b")])
    done, why_not = finished_arm(tmp_path, "craft", ["b", "a"])
    assert done is None and "not this eval's 2 instances" in why_not


def test_a_damaged_file_is_named_and_not_read_as_episodes(tmp_path):
    arm_file(tmp_path, "craft").write_text('{"instance_id": "a", "turns": [{"index": 0}]}\n{"instan')
    done, why_not = finished_arm(tmp_path, "craft", ["a"])
    assert done is None and why_not.startswith("craft.jsonl does not read as episodes")
