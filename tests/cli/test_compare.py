"""`craftc compare`: an arm of one run against an arm of another, paired turn by turn."""

import json

from craftc.cli import main
from runtime.agent import Episode, UserTurn


def _write_run(root, arm, passed, split="new_values"):
    episodes = root / "eval" / "episodes"
    episodes.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(Episode(f"i{k // 2}", split=split, arm=arm,
                                turns=[UserTurn(k % 2, "q", final_ok=True, passed=p)]).to_dict())
             for k, p in enumerate(passed)]
    (episodes / f"{arm}.jsonl").write_text("\n".join(lines) + "\n")
    return root


def test_two_runs_are_compared_over_the_turns_both_scored(tmp_path, capsys):
    a = _write_run(tmp_path / "on", "craft", [True, True, True, False])
    b = _write_run(tmp_path / "off", "craft", [True, False, False, False])
    assert main(["compare", str(a), str(b), "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    score = next(r for r in result["all"] if r["metric"] == "agent_score")
    assert (score["a"], score["b"]) == ("on:craft", "off:craft")
    assert score["value"] == 0.5 and score["n"] == 4 and score["clusters"] == 2   # clustered by instance
    assert list(result) == ["all", "new_values"]


def test_another_arm_of_the_same_run(tmp_path, capsys, monkeypatch):
    run = _write_run(tmp_path / "run", "craft", [True, True])
    _write_run(run, "sft_only", [True, False])
    assert main(["compare", str(run), str(run), "--arm-b", "sft_only"]) == 0
    assert "| run:craft - run:sft_only, agent score | +50.0 pp" in capsys.readouterr().out
    monkeypatch.chdir(run)          # `craftc compare . .` names the run dir too
    assert main(["compare", ".", ".", "--arm-b", "sft_only"]) == 0
    assert "| run:craft - run:sft_only, agent score | +50.0 pp" in capsys.readouterr().out


def test_a_missing_arm_or_no_common_turn_is_a_clear_error(tmp_path, capsys):
    run = _write_run(tmp_path / "run", "craft", [True])
    assert main(["compare", str(run), str(run), "--arm", "stuffed"]) == 1
    message = capsys.readouterr().err
    assert "no eval of arm `stuffed`" in message and "its arms are craft" in message
    other = tmp_path / "other"
    episodes = other / "eval" / "episodes"
    episodes.mkdir(parents=True)
    (episodes / "craft.jsonl").write_text(json.dumps(Episode("elsewhere", split="new_values", arm="craft",
                                                             turns=[UserTurn(0, "q", passed=True)]).to_dict()) + "\n")
    assert main(["compare", str(run), str(other)]) == 1
    assert "scored no turn in common" in capsys.readouterr().err


def test_replicates_are_paired_replicate_by_replicate_and_their_spread_widens_the_interval(tmp_path, capsys):
    # Replicate k of each run (`craftc run --replicates 3`: the run dir, then replicates/r1, r2).
    on, off = tmp_path / "on", tmp_path / "off"
    wins = {0: [True, True, True, False], 1: [True, True, False, False], 2: [True, True, True, True]}
    for k, passed in wins.items():
        where = "" if k == 0 else f"replicates/r{k}"
        _write_run(on / where, "craft", passed)
        _write_run(off / where, "craft", [True, False, False, False])
    assert main(["compare", str(on), str(off), "--replicates", "3", "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    score = result["replicates"]
    assert score == result["replicates_by_metric"]["agent_score"] and score["replicates"] == 3
    [difference] = score["differences"]
    assert (difference["a"], difference["b"]) == ("on:craft", "off:craft")
    assert difference["per_replicate"] == [0.5, 0.25, 0.75] and difference["mean"] == 0.5
    # The same mean from one replicate has a narrower interval: the replicates' spread counts.
    assert main(["compare", str(on), str(off), "--format", "json"]) == 0
    one = next(r for r in json.loads(capsys.readouterr().out)["all"] if r["metric"] == "agent_score")
    assert one["value"] == 0.5 and one["ci"][1] - one["ci"][0] < difference["ci"][1] - difference["ci"][0]
    assert main(["compare", str(on), str(off), "--replicates", "3"]) == 0
    text = capsys.readouterr().out
    assert "| on:craft - off:craft | +50.0 pp [" in text and "| +50.0, +25.0, +75.0 |" in text


def test_a_missing_replicate_names_its_dir(tmp_path, capsys):
    run = _write_run(tmp_path / "run", "craft", [True])
    assert main(["compare", str(run), str(run), "--arm-b", "craft", "--replicates", "2"]) == 1
    assert "replicates/r1/eval/episodes/craft.jsonl is missing" in capsys.readouterr().err
