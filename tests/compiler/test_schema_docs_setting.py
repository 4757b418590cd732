"""`stage sft { schema_docs N }`: passes over the schema's own documentation before the rest of SFT.

The setting compiles to `stages/<stage>/schema_docs.json`: one example per entity, its view named
in the question and its commented DDL, the lines the stuffed prompt shows, as the answer, and one
for the metrics. At its default (0) the plan has no such file and plan.json no key, so plans written
before the setting keep their bytes. The trainer's side is tests/train/test_schema_docs.py.
"""

from __future__ import annotations

import json

from craftc.emit.compile import compile_recipe
from test_sampler_setting import SFT, mini_with


def test_schema_docs_compiles_to_one_example_per_entity_answered_as_the_stuffed_prompt_shows_it(tmp_path):
    compiled = compile_recipe(mini_with(tmp_path, SFT.replace(" }", "  schema_docs 3 }")))
    assert compiled.ok, compiled.load.render()
    docs = json.loads(compiled.files["stages/sft/schema_docs.json"])
    plan = json.loads(compiled.files["plan.json"])
    schema = plan["recipe"]["schema"]
    assert docs["passes"] == 3.0 and plan["recipe"]["stages"][0]["schema_docs"] == 3.0
    assert "stages/sft/schema_docs.json" in plan["artifacts"]
    views = [e["view"] for e in schema["entities"]]
    asked = [ex["messages"][0]["content"] for ex in docs["examples"]]
    assert asked[:len(views)] == [f"What does the `{view}` view hold?" for view in views]
    assert len(docs["examples"]) == len(views) + (1 if schema.get("metrics") else 0)
    stuffed = compiled.files["prompts/system_stuffed.md"].decode()
    for example, view in zip(docs["examples"], views):
        answer = example["messages"][1]["content"]
        assert f"CREATE TABLE {view} (" in answer and answer in stuffed       # the stuffed prompt's own lines


def test_no_schema_docs_writes_no_file_and_no_key(tmp_path):
    compiled = compile_recipe(mini_with(tmp_path, SFT))
    assert compiled.ok, compiled.load.render()
    assert not any(name.endswith("schema_docs.json") for name in compiled.files)
    assert "schema_docs" not in json.loads(compiled.files["plan.json"])["recipe"]["stages"][0]
