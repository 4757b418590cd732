"""The schema-documentation pass a stage's `schema_docs` asks for (the plan's
`stages/<stage>/schema_docs.json`).

Before the warm-up and the whole conversations, the trainer makes `schema_docs` passes over
the schema's own documentation: one example per entity, a question naming its view answered
with the commented DDL the stuffed prompt shows of it, and one for the metrics. A model that
never saw the warehouse otherwise learns its names only from the code it is trained to
write; the schema is in no trained token of a conversation (`api.describe` answers in a tool
turn, which is masked). The examples are the compiler's (craftc.emit.stages.schema_docs_json),
so the pass is what the plan says, and both arms train on the same ones.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["SCHEMA_DOCS_DIR", "SCHEMA_DOCS_FILE", "SchemaDocsError", "read_schema_docs"]

SCHEMA_DOCS_FILE = "schema_docs.json"
# The pass's checkpoints, inside the arm's out dir, so an interrupted pass resumes there.
SCHEMA_DOCS_DIR = "schema_docs"


class SchemaDocsError(ValueError):
    """The plan's schema_docs.json is unreadable; the message names the file and the fix."""


def read_schema_docs(plan_dir: str | Path, stage: str) -> dict | None:
    """``{"passes": float, "examples": [{"messages": [...]}, ...]}`` from the plan, or None without the file.

    >>> import tempfile
    >>> plan = Path(tempfile.mkdtemp())
    >>> read_schema_docs(plan, "sft") is None
    True
    >>> (plan / "stages" / "sft").mkdir(parents=True)
    >>> _ = (plan / "stages" / "sft" / SCHEMA_DOCS_FILE).write_text('{"passes": 2, "examples": []}')
    >>> read_schema_docs(plan, "sft")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    runtime.train.schema_docs.SchemaDocsError: `...schema_docs.json` is not a schema-docs file craftc wrote (it holds no example); recompile the recipe with `craftc compile`
    """
    path = Path(plan_dir) / "stages" / stage / SCHEMA_DOCS_FILE
    if not path.exists():
        return None
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
        passes, examples = float(spec["passes"]), list(spec["examples"])
        if not examples:
            raise ValueError("it holds no example")
        for example in examples:
            roles = [m["role"] for m in example["messages"]]
            if roles != ["user", "assistant"]:
                raise ValueError(f"an example's roles are {roles}, not a question and its answer")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SchemaDocsError(f"`{path}` is not a schema-docs file craftc wrote ({exc}); recompile the recipe "
                              "with `craftc compile`") from None
    return {"passes": passes, "examples": examples}
