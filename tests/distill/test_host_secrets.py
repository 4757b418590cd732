"""A secret exported in the host (the openai teacher's API key) reaches no file of the run.

Candidates that read the environment, print it, return it, raise it, or rebuild a
value they know go through the real gate and dataset steps; afterwards every file
under the run dir, binary ones included, is searched for the values.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from distill_support import FIXTURES, _run_step

REPO = Path(__file__).resolve().parents[2]
SECRETS = {"OPENAI_API_KEY": "sk-craft-e2e-7d1f0a9c3b5e2468", "CRAFT_TEST_DB_DSN": "postgres://craft:e2e-hunter2@db/prod"}
KEY, DSN = SECRETS.values()


def _spelled_out(value: str) -> str:
    """Python that rebuilds `value` without the value appearing in the code (nor in the run dir)."""
    return "(" + " + ".join(repr(value[i:i + 4]) for i in range(0, len(value), 4)) + ")"


def _compile_with_secret_env(tmp_path: Path):
    """The mini recipe with `gate execution { ... secret_env CRAFT_TEST_DB_DSN }`."""
    from craftc.emit.compile import compile_to_dir
    from craftc.ir import Plan

    text = (FIXTURES / "mini_ads.craft").read_text().replace('"../../../', f'"{REPO}/')
    line = "gate execution { reject error, syntax, timeout  timeout 1s  jobs_per_process 16 }"
    assert line in text
    recipe = tmp_path / "mini_ads_secrets.craft"
    recipe.write_text(text.replace(line, line[:-1] + " secret_env CRAFT_TEST_DB_DSN }"))
    compile_to_dir(recipe, tmp_path / "plan")
    return Plan.model_validate_json((tmp_path / "plan" / "plan.json").read_text()), tmp_path / "plan"


def _hostile(candidate: dict, n: int, code: str) -> dict:
    start, end = candidate["text"].index("<CODE>") + len("<CODE>"), candidate["text"].index("</CODE>")
    text = candidate["text"][:start] + "\n" + code + "\n" + candidate["text"][end:]
    return {**candidate, "candidate_id": f"{candidate['candidate_id']}-secret{n}", "text": text}


def test_a_host_secret_reaches_no_file_of_the_run(distilled, tmp_path, monkeypatch):
    source_run, _ = distilled
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    plan, plan_dir = _compile_with_secret_env(tmp_path)
    assert plan.recipe.gates.execution.secret_env == ("CRAFT_TEST_DB_DSN",)
    run_dir = tmp_path / "run"
    for step in ("world", "distill"):
        shutil.copytree(source_run / step, run_dir / step)
    candidates = [json.loads(line) for line in (run_dir / "distill" / "candidates.jsonl").read_text().splitlines()]
    # A candidate the gate accepted: its instance turn has a usable reference.
    accepted = json.loads((source_run / "gate" / "accepted.jsonl").read_text().splitlines()[0])["candidate_id"]
    clean = next(c for c in candidates if c["candidate_id"] == accepted)
    body = clean["text"][clean["text"].index("<CODE>") + 6:clean["text"].index("</CODE>")]
    attacks = [
        f"import os\nprint(os.environ.get('OPENAI_API_KEY'), os.getenv('CRAFT_TEST_DB_DSN'))\n{body}",
        "import os\nresult = {'key': [os.environ.get('OPENAI_API_KEY')], 'dsn': [os.environ.get('CRAFT_TEST_DB_DSN')]}",
        "import posix\nresult = repr(posix.environ)",
        "result = open('/proc/self/environ').read()",
        f"print('key', {_spelled_out(KEY)})\n{body}",                      # caught by the redaction
        f"result = {{'key': [{_spelled_out(KEY)}], 'dsn': [{_spelled_out(DSN)}]}}",
        f"raise ValueError({_spelled_out(DSN)})",
    ]
    same_turn = [c for c in candidates if (c["instance_id"], c["turn"]) == (clean["instance_id"], clean["turn"])]
    hostile = [_hostile(clean, n, code) for n, code in enumerate(attacks)]
    (run_dir / "distill" / "candidates.jsonl").write_text("".join(json.dumps(c) + "\n" for c in same_turn + hostile))

    gate = _run_step(plan, plan_dir, run_dir, "gate")
    _run_step(plan, plan_dir, run_dir, "dataset")

    leaks = [(str(path.relative_to(run_dir)), name) for path in sorted(run_dir.rglob("*")) if path.is_file()
             for name, value in SECRETS.items() if value.encode() in path.read_bytes()]
    assert leaks == []
    # The environment route found nothing; the rebuilt values were cut out and counted.
    assert gate.metrics["sandbox"]["redacted"] == {"CRAFT_TEST_DB_DSN": 2, "OPENAI_API_KEY": 2}
    assert json.loads((run_dir / "gate" / "manifest.json").read_text())["metrics"]["sandbox"]["redacted"]
    outcomes = {o["candidate_id"]: o for o in map(json.loads, (run_dir / "gate" / "outcomes.jsonl").read_text().splitlines())}
    assert outcomes[hostile[4]["candidate_id"]]["execution"]["redacted"] == ["OPENAI_API_KEY"]
    assert "[redacted:OPENAI_API_KEY]" in outcomes[hostile[4]["candidate_id"]]["execution"]["stdout_tail"]
    assert outcomes[hostile[0]["candidate_id"]]["execution"]["redacted"] == []
