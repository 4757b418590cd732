"""README.md's and the docs' results tables are what `make docs-results` writes from docs/results/."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from runtime import results_tables
from runtime.results_tables import ROOT, digest, load_digests, render, rewrite, stale, targets


def test_readme_results_tables_equal_the_generated_ones():
    readme = (ROOT / "README.md").read_text()
    # The headline: each arm's mean over the default's training replicates.
    [name] = re.findall(r"<!-- results:([\w.-]+):replicates:begin -->", readme)
    assert f"<!-- results:{name}:replicates:end -->" in readme and (ROOT / "docs/results" / f"{name}.json").is_file()
    assert rewrite(readme, load_digests(), "README.md") == readme, "run `make docs-results`"


def test_no_doc_with_results_markers_is_stale():
    assert ROOT / "README.md" in targets()
    assert stale() == [], "run `make docs-results`"


def test_the_check_command_fails_on_an_edited_table(tmp_path):
    (tmp_path / "docs" / "results").mkdir(parents=True)
    for source in (ROOT / "docs" / "results").glob("*.json"):     # the README reads several digests
        (tmp_path / "docs" / "results" / source.name).write_text(source.read_text())
    readme = (ROOT / "README.md").read_text()
    (tmp_path / "README.md").write_text(readme.replace("| craft | ", "| craft | 99.9% ", 1))
    assert stale(tmp_path) == [tmp_path / "README.md"]
    done = subprocess.run([sys.executable, "-m", "runtime.results_tables", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_digest_says_where_its_figures_come_from():
    for name, d in load_digests().items():
        assert d["version"] == results_tables.DIGEST_VERSION and d["source"], name
        assert render(d)  # renders whole


def test_a_digest_made_from_a_report_renders_the_report_figures(tmp_path):
    """report.json (build_report's shape) -> digest -> the README's table cells."""
    cell = lambda v, lo, hi, n, **k: {"value": v, "ci": [lo, hi], "n": n, **k}  # noqa: E731
    rows = [{"metric": "agent_score", "label": "Agent score", "kind": "rate",
             "arms": {"craft": cell(0.34, 0.27, 0.417, 156, delta_pp=34.0), "stuffed": cell(0.0, 0.0, 0.024, 156)}},
            {"metric": "input_tokens", "label": "Input tokens / call", "kind": "cost", "published_ratio": 0.11,
             "arms": {"craft": cell(187.2, 164.9, 210.4, 92, ratio=0.037, ratio_ci=[0.033, 0.042]),
                      "stuffed": cell(5006.8, 4991.2, 5022.5, 92)}}]
    table = {"baseline": "stuffed", "split": "all", "arms": ["craft", "stuffed"], "rows": rows}
    split = {**table, "split": "eval_params", "rows": [{**rows[0], "arms": {
        "craft": cell(0.407, 0.287, 0.54, 54), "stuffed": cell(0.0, 0.0, 0.066, 54)}}]}
    report = {"instances": 92, "arms": ["craft", "stuffed"], "baseline": "stuffed",
              "tables": {"all": table, "eval_params": split},
              "failures": {a: {"failed_turns": n, "counts": {"exec_error": n, "other": 0}, "examples": {}}
                           for a, n in (("craft", 9), ("stuffed", 156))},
              "grpo": {"steps": 12, "measured_rows": 32, "before": {"total": 0.647, "exec_success": 1.0},
                       "after": {"total": 0.635, "exec_success": 1.0},
                       "curve": [{"step": 0, "total": 0.647}, {"step": 6, "total": 0.66, "outcome": 0.2},
                                 {"step": 12, "total": 0.635}]}}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    out = tmp_path / "results" / "run.json"
    subprocess.run([sys.executable, "-m", "runtime.results_tables", "digest", str(path), "-o", str(out)],
                   cwd=ROOT, check=True, capture_output=True, timeout=120)
    text = render(json.loads(out.read_text()))
    assert "| Agent score | 34.0% [27.0, 41.7] (+34.0 pp) | 0.0% [0.0, 2.4] |  |" in text
    assert "| Input tokens / call | 187.2 [164.9, 210.4] (0.037x [0.033, 0.042]) | 5006.8 [4991.2, 5022.5] | 0.11x |" in text
    assert "| held-out params, seen phrasings (54 turns) | 40.7% [28.7, 54.0] | 0.0% [0.0, 6.6] |" in text
    assert "| exec_error | 9 | 156 |" in text and "| other |" not in text
    assert "on 32 training rows greedy R_total went 0.647 -> 0.635" in text
    assert "greedy R_total over the steps 0.647 (step 0), 0.660 (step 6), 0.635 (step 12)" in text


def test_readme_points_at_the_regeneration_command():
    readme = (ROOT / "README.md").read_text()
    assert "make docs-results" in readme
    assert re.search(r"^docs-results:", (ROOT / "Makefile").read_text(), re.M)


def test_links_in_readme_and_docs_point_at_files_that_exist():
    broken = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text()):
            if "://" not in target and not (doc.parent / target).exists():
                broken.append(f"{doc.relative_to(ROOT)} -> {target}")
    assert broken == []
