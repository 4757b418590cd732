"""The intermediate representation: what a recipe means, with every default resolved.

The IR is the contract between the compiler and the runtime. The compiler builds it
from parse trees and checks it; ``emit`` serialises it into ``plan.json``; the
runtime re-validates ``plan.json`` with these same models, so the two sides can
never disagree about a field name or a default.

Every model is frozen and rejects unknown keys. Source spans travel with the nodes
for diagnostics but are excluded from serialisation: moving a line in a recipe must
not change the plan.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Span", "Node",
    "FieldType", "EntityField", "EntityRef", "EntityKey", "Entity", "Metric", "Schema",
    "Param", "Expectation", "Turn", "Workflow",
    "Tool", "BlockFormat", "Teacher", "Judge", "ExecutionGate", "OutputGate",
    "JudgeGate", "Gates", "Reward", "ModelSpec", "Stage", "EvalSpec", "Recipe", "Plan",
]


class Span(BaseModel):
    """Where a node came from: a path relative to the compile root, 1-based."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    file: str
    line: int
    col: int
    end_line: int
    end_col: int


class Node(BaseModel):
    """Base of every IR node: frozen, strict, and carrying an unserialised span."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    span: Span | None = Field(default=None, exclude=True, repr=False)


# ---------------------------------------------------------------- schema


ScalarKind = Literal[
    "int", "float", "money", "string", "bool", "date", "timestamp", "enum", "id"
]


class FieldType(Node):
    """A field's logical type; ``values`` only for ``enum``."""

    kind: ScalarKind
    values: tuple[str, ...] = ()


class EntityField(Node):
    name: str
    type: FieldType
    doc: str = ""
    column: str                      # physical column; defaults to the logical name
    scale: float | None = None       # logical = physical * scale (e.g. micros -> units)
    nullable: bool = False
    deprecated: str | None = None    # why, and what to use instead


class EntityKey(Node):
    name: str
    column: str


class EntityRef(Node):
    """A many-to-one link: this entity's ``name``_id points at ``target``'s key."""

    name: str
    target: str
    column: str                      # physical column holding the target key
    doc: str = ""
    nullable: bool = False


class Entity(Node):
    name: str
    doc: str = ""
    table: str                       # physical table, possibly schema-qualified
    view: str                        # logical view name the binding exposes (snake_case)
    key: EntityKey
    fields: tuple[EntityField, ...] = ()
    refs: tuple[EntityRef, ...] = ()
    deprecated: str | None = None


class Metric(Node):
    """A named business metric over entity fields, e.g. CTR."""

    name: str
    doc: str = ""
    expr: str                        # canonical text of the expression
    sql: str                         # the same expression over logical views
    entities: tuple[str, ...] = ()   # entities the expression reads


class Schema(Node):
    name: str
    version: int
    doc: str = ""
    source: str                      # path of the schema spec, relative to the recipe
    entities: tuple[Entity, ...] = ()
    metrics: tuple[Metric, ...] = ()


# ---------------------------------------------------------------- workflows


class Param(Node):
    """A slot of a question template and where its values are drawn from."""

    name: str
    kind: Literal["range", "choice", "column"]
    low: float | None = None         # range (inclusive)
    high: float | None = None
    integer: bool = True             # range draws integers unless a bound is fractional
    values: tuple[str | int | float, ...] = ()   # choice
    entity: str | None = None        # column: Entity.field
    field: str | None = None


class Expectation(Node):
    """How a result is judged against the reference solution's result."""

    kind: Literal["same_rows_as_solution", "columns", "row_count", "nonempty"]
    ordered: bool = False
    tolerance: float = 1e-6
    columns: tuple[str, ...] = ()
    min_rows: int | None = None
    max_rows: int | None = None


class Turn(Node):
    """One analyst question (with alternative phrasings) and its reference solution."""

    asks: tuple[str, ...]            # phrasings; the first is canonical
    solution: str                    # path inside the plan dir: solutions/<workflow>/<n>.py
    expectations: tuple[Expectation, ...] = ()


class Workflow(Node):
    """A single-turn workflow or a multi-turn conversation."""

    name: str
    kind: Literal["workflow", "conversation"]
    doc: str = ""
    params: tuple[Param, ...] = ()
    entities: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()
    turns: tuple[Turn, ...]


# ---------------------------------------------------------------- distillation


class Tool(Node):
    name: str
    kind: Literal["run_code", "list_entities", "describe_entity"]
    doc: str = ""


class BlockFormat(Node):
    """The three-block assistant turn and the final-answer block."""

    think: str = "THINK"
    plan: str = "PLAN"
    code: str = "CODE"
    answer: str = "ANSWER"


class Teacher(Node):
    kind: Literal["synthetic", "openai", "hf", "vllm"]
    candidates: int = 8
    model: str | None = None
    base_url: str | None = None          # literal URL, or resolved from base_url_env at run time
    base_url_env: str | None = None
    api_key_env: str | None = None
    concurrency: int = 4
    timeout_s: float = 60.0
    max_retries: int = 3
    temperature: float = 0.7
    max_new_tokens: int = 1024
    noise: float = 0.5                   # synthetic: share of candidates corrupted


class Judge(Node):
    name: str
    kind: Literal["plan_code", "prompt_params", "no_ddl_leak", "llm"]
    weight: float = 1.0
    backend: Teacher | None = None       # llm judges only
    rubric: str = ""


class ExecutionGate(Node):
    reject: tuple[Literal["error", "syntax", "timeout"], ...] = ("error", "syntax", "timeout")
    timeout_s: float = 10.0
    memory_mb: int = 1024
    jobs_per_process: int = 1   # sandbox process reuse: 1 = a fresh process per candidate


class OutputGate(Node):
    reject: tuple[Literal["empty", "incomplete", "mismatch"], ...] = (
        "empty", "incomplete", "mismatch",
    )


class JudgeGate(Node):
    judges: tuple[str, ...] = ("plan_code", "prompt_params", "no_ddl_leak")
    vote: Literal["majority", "unanimous", "weighted"] = "unanimous"
    threshold: float = 0.5               # weighted vote: share of weight needed to pass


class Gates(Node):
    order: tuple[str, ...] = ("execution", "output", "judge")
    execution: ExecutionGate = ExecutionGate()
    output: OutputGate = OutputGate()
    judge: JudgeGate = JudgeGate()


class Reward(Node):
    """R_total = sum_i w_i * R_i, each component in [0, 1]."""

    outcome: float = 0.5
    process: float = 0.2
    consistency: float = 0.2
    judge: float = 0.1
    aggregate: Literal["sum", "normalized"] = "normalized"
    penalties: tuple[tuple[str, float], ...] = (
        ("discovery_call", 0.05), ("redundant_join", 0.1), ("select_star", 0.05),
    )
    step_rewards: bool = True            # reward each tool turn, not only the last


# ---------------------------------------------------------------- training


class ModelSpec(Node):
    """A base model: the embedded tiny_moe, a local directory or a hub id."""

    name: str
    source: Literal["tiny_moe", "path", "hub"]
    path: str | None = None
    context: int = 2048
    hidden: int = 192
    layers: int = 4
    heads: int = 4
    kv_heads: int = 2
    experts: int = 4
    top_k: int = 2
    intermediate: int = 384
    vocab: int = 2048
    seed: int = 0


class Stage(Node):
    name: str
    kind: Literal["sft", "grpo"]
    after: str | None = None             # the stage whose checkpoint this one starts from
    base: str                            # a ModelSpec name
    input: Literal["stripped", "stuffed"] = "stripped"
    mask: tuple[Literal["tool_outputs", "system", "user"], ...] = (
        "tool_outputs", "system", "user",
    )
    epochs: float = 3.0
    steps: int | None = None             # overrides epochs when set
    lr: float = 3e-4
    warmup: float = 0.0                  # share of the optimiser steps warming the learning rate up
    batch: int = 8                       # global batch (examples per optimiser step)
    per_device_batch: int = 8
    max_length: int = 1024
    # grpo
    group: int = 4
    max_turns: int = 3
    max_new_tokens: int = 256
    temperature: float = 1.0
    beta: float = 0.0
    rollout: Literal["transformers", "vllm"] = "transformers"
    vllm_mode: Literal["colocate", "server"] = "colocate"
    # scale
    parallel: Literal["none", "ddp", "fsdp2", "zero3"] = "none"
    gpus: int = 0
    nodes: int = 1
    processes: int = 1                   # training processes per node on CPU (`gpus 0`)
    mixed_precision: Literal["no", "bf16", "fp16"] = "no"


class EvalSpec(Node):
    holdout: float = 0.2                 # share of instances held out per workflow
    holdout_workflows: tuple[str, ...] = ()
    holdout_phrasings: int = 1           # last N phrasings of each turn never trained on
    instances: int = 4                   # eval instances per workflow
    arms: tuple[Literal["craft", "sft_only", "stuffed"], ...] = ("craft", "sft_only", "stuffed")
    max_turns: int = 3
    # How the stuffed baseline's SFT budget matches the stripped arm's: `tokens` trains it
    # on the same accepted trajectories for the same number of training tokens (each
    # stuffed example is several times longer, so it sees fewer epochs); `steps` gives it
    # the same examples, epochs and optimiser steps (several times the compute).
    baseline_budget: Literal["tokens", "steps"] = "tokens"


class Recipe(Node):
    """A whole recipe with its schema, after profile overrides and defaults."""

    name: str
    profile: str = "default"
    profiles: tuple[str, ...] = ()       # every profile the recipe declares
    seed: int = 0
    scale: float = 1.0                   # warehouse size knob (1.0 = default small)
    # An existing warehouse to use instead of generating one: a DuckDB file, relative to
    # the recipe file like every other path (stored normalised, never absolute unless
    # written so), or the environment variable that names it. It is run-time data, not
    # part of the plan: the plan dir's `source.json` says where the recipe's directory
    # is, relative to the plan dir, so the world step finds the file from any cwd.
    warehouse: str | None = None
    warehouse_env: str | None = None
    # What a run does when a workflow loses its training data (a reference skipped by the
    # gate, a workflow with no accepted trajectory): `warn` (console and funnel.md) or
    # `error` (the gate or dataset step fails).
    on_loss: Literal["warn", "error"] = "warn"
    schema_: Schema = Field(alias="schema")
    workflows: tuple[Workflow, ...] = ()
    tools: tuple[Tool, ...] = ()
    format: BlockFormat = BlockFormat()
    teacher: Teacher = Teacher(kind="synthetic")
    judges: tuple[Judge, ...] = ()
    gates: Gates = Gates()
    reward: Reward = Reward()
    models: tuple[ModelSpec, ...] = ()
    stages: tuple[Stage, ...] = ()
    eval: EvalSpec = EvalSpec()

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class Plan(Node):
    """The content of ``plan.json``: the resolved recipe plus artifact hashes.

    ``content_hash`` is the sha256 of the canonical JSON of everything else, so a
    plan dir can be checked for tampering and a run dir can refuse a stale plan.
    """

    craftc_version: str
    content_hash: str = ""
    recipe: Recipe
    artifacts: dict[str, str] = {}      # relative path -> sha256 of the file
