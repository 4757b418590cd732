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

from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_serializer

__all__ = [
    "Span", "Node",
    "FieldType", "EntityField", "EntityRef", "EntityKey", "KEY_KINDS", "EntityHistory", "Entity", "Metric", "Schema",
    "Param", "CheckValue", "Expectation", "Turn", "Workflow", "CheckOp", "CHECK_OPS", "REFERENCE_KINDS",
    "Tool", "BlockFormat", "Teacher", "Judge", "ExecutionGate", "OutputGate",
    "JudgeGate", "Gates", "Reward", "ModelSpec", "LoraAdapter", "StageBase", "SFTStage", "GRPOStage", "Stage",
    "STAGE_MODELS", "EvalSpec", "EVAL_DECODING", "EVAL_SCOPE", "Recipe", "Plan",
    "TeacherKind", "BuiltinJudgeKind", "JudgeKind", "JudgementKind", "JUDGEMENTS", "ToolKind", "GateName", "RewardComponent",
    "StageKind", "Arm", "InputMode", "MaskRole", "ExecutionReject", "OutputReject", "ModelSource",
    "TrlValue", "Tracker", "TRACKERS", "Engine", "AdvantageEstimator", "ToolFormat", "ENGINES", "VERL_ONLY", "TRL_ONLY", "GRPO_VERL_ONLY", "TEACHER_ONLY", "TEACHER_KINDS", "GENERAL_ONLY", "BUILTIN_JUDGES", "JUDGE_KINDS", "TOOL_KINDS", "GATE_ORDER",
    "REWARD_COMPONENTS", "STAGE_KINDS", "ARMS", "INPUT_MODES", "ARM_INPUT",
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


def _omitted_at(default: object):
    """``exclude_if`` of a setting whose default is what craft did before the setting existed.

    ``plan.json`` carries such a setting only when a recipe sets it, so a recipe that does
    not use it compiles to the same plan, byte for byte, as before the setting was added
    (and a run dir's finished steps stay reusable). The runtime re-validates ``plan.json``
    with the same models, so an absent key reads as this default: it must never change.
    """
    return lambda value: value == default


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
    # The currency of a money field when it differs from the schema's (`currency "EUR"`).
    currency: str | None = Field(None, exclude_if=_omitted_at(None))


KeyKind = Literal["int", "string"]
KEY_KINDS: tuple[str, ...] = get_args(KeyKind)


class EntityKey(Node):
    name: str
    column: str
    # The warehouse's id type: refs to this entity hold the same type.
    type: KeyKind = Field("int", exclude_if=_omitted_at("int"))


class EntityRef(Node):
    """A many-to-one link: this entity's ``name``_id points at ``target``'s key."""

    name: str
    target: str
    column: str                      # physical column holding the target key
    doc: str = ""
    nullable: bool = False


class EntityHistory(Node):
    """A history table: one physical row per version of each key, ordered by ``version``.

    The entity's view holds each key's latest version (so a ref to it matches one row);
    ``view`` holds every version.
    """

    version: str                     # the field whose largest value marks a key's current row
    view: str                        # the view with every version: `<entity view>_history`


class Entity(Node):
    name: str
    doc: str = ""
    table: str                       # physical table, possibly schema-qualified
    view: str                        # logical view name the binding exposes (snake_case)
    key: EntityKey | None = None     # None: the entity has a grain instead
    fields: tuple[EntityField, ...] = ()
    refs: tuple[EntityRef, ...] = ()
    deprecated: str | None = None
    # A table no single column identifies (a daily report) declares its grain: the view
    # columns (fields, `<ref>_id`) that together identify a row. Nothing may ref it.
    grain: tuple[str, ...] = ()
    history: EntityHistory | None = None

    @property
    def row_identity(self) -> tuple[str, ...]:
        """The view columns that identify one row of the entity's view: its key, or its grain."""
        return (self.key.name,) if self.key is not None else self.grain

    # Plans of schemas that declare neither keep the bytes they had before grain and history
    # existed: an absent key is None, an absent grain (), an absent history None.
    @model_serializer(mode="wrap")
    def _grain_and_history_only_when_declared(self, handler):
        unset = [name for name, empty in (("key", None), ("grain", ()), ("history", None))
                 if getattr(self, name) == empty]
        return _without(handler(self), unset)


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
    # The currency money fields are in (`currency "USD"`); None: the spec does not say.
    currency: str | None = Field(None, exclude_if=_omitted_at(None))


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


CheckOp = Literal["==", "!=", "<", "<=", ">", ">=", "between", "within_days"]
CHECK_OPS: tuple[str, ...] = get_args(CheckOp)


class CheckValue(Node):
    """A check's operand: a literal, or the value of one of the workflow's params."""

    literal: str | float | None = None
    param: str | None = None


class Expectation(Node):
    """How a result is judged: against the reference result, or on its own (a check).

    ``same_rows_as_solution`` compares with the reference solution's result; every
    other kind is a property the result must have by itself (``check`` lines and the
    shape ``expect`` lines), so it needs no reference: ``columns``; ``row_count``
    (bounds, literal or a param); ``nonempty``; ``sorted_by`` (``columns`` in order,
    ``descending``); ``values`` (every value of ``column`` satisfies ``op`` with
    ``operands``); ``subset_of_previous`` (every row, on ``columns`` or the shared
    columns, is a row of the previous turn's result).
    """

    kind: Literal["same_rows_as_solution", "columns", "row_count", "nonempty", "sorted_by", "values",
                  "subset_of_previous"]
    ordered: bool = False
    tolerance: float = 1e-6
    columns: tuple[str, ...] = ()
    min_rows: int | None = None
    max_rows: int | None = None
    min_rows_param: str | None = None
    max_rows_param: str | None = None
    descending: bool = False
    column: str | None = None
    op: CheckOp | None = None
    operands: tuple[CheckValue, ...] = ()


REFERENCE_KINDS: tuple[str, ...] = ("same_rows_as_solution",)


class Turn(Node):
    """One analyst question (with alternative phrasings), its reference solution and checks.

    ``solution`` is None when the turn is judged by its checks alone (no reference).
    """

    asks: tuple[str, ...]            # phrasings; the first is canonical
    solution: str | None = None      # path inside the plan dir: solutions/<workflow>/<n>.py
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


# ---------------------------------------------------------------- settings vocabulary

# Every list of names the language knows is declared here once; checks, emit, docs and
# the runtime read these aliases (``get_args`` gives the tuple).
TeacherKind = Literal["synthetic", "openai", "hf", "vllm"]
# How the synthetic teacher's THINK opens on a first turn (Teacher.scratchpad).
Scratchpad = Literal["question", "task", "both"]
# The synthetic teacher's corruptions (runtime.distill.noise, where each is described).
NoiseKind = Literal["wrong_column", "misplaced_field", "runtime_error", "syntax_error", "endless_loop", "wrong_filter",
                    "missing_filter", "wrong_metric", "empty_result", "truncated_block", "plan_metric_mismatch",
                    "ddl_leak", "params_ignored"]
# Every kind but misplaced_field, which came later: a recipe that does not set `noise_kinds`
# keeps the corruptions it had (which candidate is corrupted, and how), and its plan bytes.
DEFAULT_NOISE_KINDS: tuple[NoiseKind, ...] = tuple(k for k in get_args(NoiseKind) if k != "misplaced_field")
BuiltinJudgeKind = Literal["plan_code", "prompt_params", "no_ddl_leak"]
JudgeKind = Literal["plan_code", "prompt_params", "no_ddl_leak", "llm"]
# What an llm judge's prompt (prompts/judges/<name>.md) asks about.
JudgementKind = Literal["prompt_plan", "plan_code", "business"]
ToolKind = Literal["run_code", "list_entities", "describe_entity"]
GateName = Literal["execution", "output", "judge"]
RewardComponent = Literal["outcome", "process", "consistency", "judge"]
StageKind = Literal["sft", "grpo"]
Arm = Literal["craft", "sft_only", "stuffed"]
InputMode = Literal["stripped", "stuffed"]
MaskRole = Literal["tool_outputs", "system", "user"]
ExecutionReject = Literal["error", "syntax", "timeout"]
OutputReject = Literal["empty", "incomplete", "mismatch"]
ModelSource = Literal["tiny_moe", "path", "hub", "gguf"]
Engine = Literal["trl", "verl"]
# verl 0.9.1's advantage estimators (verl.trainer.ppo.core_algos.AdvantageEstimator) that
# need no critic, and its tool-call parsers (verl.experimental.agent_loop.tool_parser)
# plus `craft`: the recipe's own <CODE> block (runtime.train.verl.tool_parser).
# tests/verl checks both lists against the installed verl.
AdvantageEstimator = Literal["grpo", "gdpo", "rloo", "reinforce_plus_plus", "reinforce_plus_plus_baseline",
                             "remax", "opo", "grpo_passk", "gpg"]
ToolFormat = Literal["craft", "hermes", "gpt-oss", "qwen3_coder", "glm", "seed", "minimax", "kimi"]
# TRL's `report_to` names of the experiment trackers craft can log to.
Tracker = Literal["tensorboard", "trackio", "wandb", "mlflow", "none"]
TrlValue = str | int | float | bool

TEACHER_KINDS: tuple[str, ...] = get_args(TeacherKind)
BUILTIN_JUDGES: tuple[str, ...] = get_args(BuiltinJudgeKind)
JUDGE_KINDS: tuple[str, ...] = get_args(JudgeKind)
JUDGEMENTS: tuple[str, ...] = get_args(JudgementKind)
TOOL_KINDS: tuple[str, ...] = get_args(ToolKind)
GATE_ORDER: tuple[str, ...] = get_args(GateName)
REWARD_COMPONENTS: tuple[str, ...] = get_args(RewardComponent)   # also TRL's reward_weights order
STAGE_KINDS: tuple[str, ...] = get_args(StageKind)
TRACKERS: tuple[str, ...] = get_args(Tracker)
ARMS: tuple[str, ...] = get_args(Arm)
INPUT_MODES: tuple[str, ...] = get_args(InputMode)
# The model input each eval arm sees: both trained arms get the stripped prompt.
ARM_INPUT: dict[str, str] = {"craft": "stripped", "sft_only": "stripped", "stuffed": "stuffed"}


def _surface(key: str | None = None, type: str | None = None, shown: str | None = None,
             engine: str | None = None, teachers: tuple[str, ...] | None = None,
             needs: str | None = None) -> dict:
    """How a field is written in a recipe, when that differs from the field itself.

    ``key`` is the recipe key (``timeout`` for ``timeout_s``), ``type`` the surface type
    when the Python type does not say it (``duration``, ``fraction``, ``env``,
    ``string_or_env``, ``model_ref``, ``rollout``, ``reject``, ``block``, ``name``) and
    ``shown`` the default as the docs state it when the field has none of its own.
    ``engine`` marks a stage setting only that training engine reads (E516 under the other;
    sft stages always train with TRL), and
    ``teachers`` a teacher setting only those teacher kinds read (E412 elsewhere), and
    ``needs`` a setting read only when its block sets that other setting (E522 for eval's
    general-skill settings without ``general``).
    Fields with a ``description`` are recipe settings; ``craftc.setting_keys``
    builds the settings table from them.
    """
    return {k: v for k, v in (("key", key), ("type", type), ("shown", shown), ("engine", engine),
                              ("teachers", teachers), ("needs", needs)) if v is not None}


def _without(data: dict, keys) -> dict:
    """A node's serialised `data` less `keys`: settings its model serializer leaves out of
    plan.json because nothing reads them there (the runtime reads them back as defaults)."""
    return {key: value for key, value in data.items() if key not in keys}


# ---------------------------------------------------------------- distillation


class Tool(Node):
    name: str
    kind: ToolKind = Field(description="what the tool does (defaults to the tool's name when "
                           "it is a kind)", json_schema_extra=_surface(shown="the name"))
    doc: str = Field("", description="description shown in the system prompt, after the call the code "
                     "writes (default: the kind's own, e.g. `api.describe(entity)`: one entity's fields)")


class BlockFormat(Node):
    """The three-block assistant turn and the final-answer block."""

    think: str = Field("THINK", description="tag of the reasoning block")
    plan: str = Field("PLAN", description="tag of the business-level plan block")
    code: str = Field("CODE", description="tag of the executable code block")
    answer: str = Field("ANSWER", description="tag of the final-answer block")


# The teacher kinds that read a setting (Teacher fields whose `_surface(teachers=...)` says
# so); every kind reads the others (candidates, instances, feedback, failed_attempts).
_SYNTHETIC = ("synthetic",)
_MODEL_BACKENDS = ("openai", "hf", "vllm")
_OPENAI = ("openai",)


class Teacher(Node):
    kind: TeacherKind = Field("synthetic", description="backend kind")
    candidates: int = Field(8, ge=1, description="candidate trajectories per workflow instance")
    # Drawn after, and apart from, the held-out instances (runtime.workflows.draw_instances),
    # so runs at different volumes are evaluated on the very same questions.
    instances: int | None = Field(
        None, ge=1, le=100_000, exclude_if=_omitted_at(None),
        description="training instances per workflow the teacher writes candidates for; the held-out "
        "instances stay the same whatever the number (default: what is left of the instances `eval` "
        "draws once its held-out share is taken)", json_schema_extra=_surface(shown="from `eval`"))
    model: str | None = Field(None, description="model id the backend serves (openai, hf, vllm)",
                              json_schema_extra=_surface(teachers=_MODEL_BACKENDS))
    # A literal URL, or resolved from base_url_env at run time.
    base_url: str | None = Field(None, description='endpoint URL (openai), or env("VAR") holding it',
                                 json_schema_extra=_surface(type="string_or_env", teachers=_OPENAI))
    base_url_env: str | None = None
    api_key_env: str | None = Field(None, description="openai: environment variable holding the API key",
                                    json_schema_extra=_surface(key="api_key", type="env", teachers=_OPENAI))
    concurrency: int = Field(4, ge=1, le=256, description="openai: requests in flight",
                             json_schema_extra=_surface(teachers=_OPENAI))
    timeout_s: float = Field(60.0, gt=0, description="openai: per-request timeout",
                             json_schema_extra=_surface(key="timeout", type="duration", teachers=_OPENAI))
    max_retries: int = Field(3, ge=0, le=20, description="openai: retries per request",
                             json_schema_extra=_surface(teachers=_OPENAI))
    temperature: float = Field(0.7, ge=0, le=5, description="sampling temperature (openai, hf, vllm)",
                               json_schema_extra=_surface(teachers=_MODEL_BACKENDS))
    max_new_tokens: int = Field(1024, ge=1, description="tokens generated per candidate (openai, hf, vllm)",
                                json_schema_extra=_surface(teachers=_MODEL_BACKENDS))
    # 0: any request that fails after its retries stops the step, as before the setting
    # existed (its answers so far stay in the teacher cache either way).
    max_failed: float = Field(
        0.0, ge=0, le=1, exclude_if=_omitted_at(0.0),
        description="openai: share of the distill step's requests that may fail after every retry (each is "
        "recorded and counted, and the rest go on); past it the step stops, its answers kept in the teacher "
        "cache (0: the first such failure stops it)", json_schema_extra=_surface(type="fraction", teachers=_OPENAI))
    budget: int | None = Field(
        None, ge=1, exclude_if=_omitted_at(None),
        description="most prompt + completion tokens the distill step's teacher answers may use, those "
        "reused from the teacher cache included; reached, the step stops with every answer kept, and a rerun "
        "with a higher budget resumes (openai, hf, vllm)",
        json_schema_extra=_surface(teachers=_MODEL_BACKENDS))
    noise: float = Field(0.5, ge=0, le=1, description="synthetic: share of candidates corrupted",
                         json_schema_extra=_surface(type="fraction", teachers=_SYNTHETIC))
    noise_kinds: tuple[NoiseKind, ...] = Field(
        DEFAULT_NOISE_KINDS, min_length=1, exclude_if=_omitted_at(DEFAULT_NOISE_KINDS),
        description="synthetic: the corruptions a corrupted candidate draws from (docs/distill.md); "
        "`misplaced_field`, a field read through another joined view's alias, is left out unless named",
        json_schema_extra=_surface(shown="every kind but `misplaced_field`", teachers=_SYNTHETIC))
    # 0 writes what the synthetic teacher wrote before the setting existed, so plans,
    # candidates and datasets of recipes that do not set it stay byte-identical.
    discovery: float = Field(
        0.0, ge=0, le=1, exclude_if=_omitted_at(0.0),
        description="synthetic: share of first-turn candidates whose CODE begins with `api.describe` of "
        "the entity its query reads first; above 0, a repair after an unknown field or entity error also "
        "begins with `api.describe` of the entity the failed code misused (docs/distill.md)",
        json_schema_extra=_surface(type="fraction", teachers=_SYNTHETIC))
    # `question` writes what the synthetic teacher wrote before the setting existed.
    scratchpad: Scratchpad = Field(
        "question", exclude_if=_omitted_at("question"),
        description="synthetic: how a THINK block opens on a conversation's first turn: the question "
        "restated word for word (`question`), the workflow's `doc` as the task (`task`), so that every "
        "phrasing of a workflow leads to the same words, or the task and then the question (`both`); later "
        "turns restate their question in every case", json_schema_extra=_surface(teachers=_SYNTHETIC))
    feedback: int = Field(0, ge=0, le=8, description="repairs the teacher may make after seeing its code's "
                          "output or error (0: one shot per turn; synthetic: regenerate from the reference)")
    failed_attempts: Literal["drop", "masked"] = Field(
        "drop", description="with `feedback`: a repaired trajectory drops its failed attempts, or keeps "
        "them (and their tool output) as earlier turns masked from the loss")

    # A setting another kind reads would be decorative in plan.json: a synthetic teacher's
    # plan showing `temperature 0.7` reads as if something sampled at 0.7. The runtime
    # re-validates plan.json, so an absent key is its default, which this kind never reads.
    @model_serializer(mode="wrap")
    def _only_what_its_kind_reads(self, handler):
        unread = {field for field in Teacher.model_fields
                  if self.kind not in TEACHER_ONLY.get(_SETTING_OF.get(field, field), (self.kind,))}
        return _without(handler(self), unread)


# Teacher fields only some teacher kinds read, and those kinds (their json_schema_extra says so).
TEACHER_ONLY: dict[str, tuple[str, ...]] = {
    name: info.json_schema_extra["teachers"] for name, info in Teacher.model_fields.items()
    if "teachers" in (info.json_schema_extra or {})}
# Fields that are half of a recipe setting: `base_url env("VAR")` fills base_url_env.
_SETTING_OF = {"base_url_env": "base_url"}


class Judge(Node):
    name: str
    kind: JudgeKind = Field(description="judge kind (defaults to the judge's name when that is a kind)",
                            json_schema_extra=_surface(shown="the name"))
    # Read only under `vote weighted` (E525 otherwise); Recipe's serializer leaves it out of
    # plan.json under another vote, which a judge's own serializer cannot see.
    weight: float = Field(1.0, ge=0, description="weight in a `vote weighted` ensemble")
    judgement: JudgementKind = Field(
        "business", description="llm judges: which judgement its prompt asks for: the PLAN against the "
        "question (`prompt_plan`), the CODE against the PLAN (`plan_code`), or business alignment (`business`)")
    rubric: str = Field("", description="llm judges: what to judge, added to the judgement's prompt")
    backend: Teacher | None = Field(None, description="llm judges: the model to ask (teacher "
                                    "settings + kind)", json_schema_extra=_surface(type="block"))


class ExecutionGate(Node):
    reject: tuple[ExecutionReject, ...] = Field(
        get_args(ExecutionReject),
        description="failure kinds rejected; `timeout 10s` also sets the timeout",
        json_schema_extra=_surface(type="reject"))
    timeout_s: float = Field(10.0, gt=0, description="wall-clock limit per execution of a teacher's candidate "
                             "or a reference solution (GRPO's rows' references too)",
                             json_schema_extra=_surface(key="timeout", type="duration"))
    memory_mb: int = Field(1024, ge=16, description="memory limit per execution, in MB",
                           json_schema_extra=_surface(key="memory"))
    # Sandbox process reuse: 1 = a fresh process per candidate.
    jobs_per_process: int = Field(
        1, ge=1, le=1000,
        description="candidates or reference solutions one sandbox process may run in turn (1: a fresh "
                    "process each; more is faster, and a candidate's changes to modules can reach later ones); "
                    "GRPO rollouts and eval always get a fresh process")
    workers: int = Field(
        2, ge=1, le=256,
        description="sandbox processes running agent code at once, in the gate, GRPO rollouts and eval "
                    "(a warning when above the machine's CPUs)")
    secret_env: tuple[str, ...] = Field(
        (), description="host environment variables whose values are redacted from what sandboxed code "
                        "returns, beyond names with KEY, TOKEN, SECRET or PASSWORD (docs/sandbox.md)",
        json_schema_extra=_surface(type="name_list", shown="none"))


class OutputGate(Node):
    reject: tuple[OutputReject, ...] = Field(get_args(OutputReject),
                                             description="output problems rejected")
    # Only where no reference is visible: candidates of one instance turn are grouped by
    # result and only a cluster holding this share of the voters is accepted. Read only when
    # the recipe's `reads_agreement` (E526 otherwise, and out of plan.json).
    agree: float = Field(0.6, ge=0, le=1, description="without a visible reference: share of an "
                         "instance turn's candidates (those that ran and passed every check) whose "
                         "results must agree for that result to be accepted", json_schema_extra=_surface(type="fraction"))


class JudgeGate(Node):
    judges: tuple[str, ...] = Field(BUILTIN_JUDGES, description="the judge ensemble (built-in or "
                                    "declared judges)")
    # The built-in judges each check a different property, so by default all must pass.
    vote: Literal["majority", "unanimous", "weighted"] = Field(
        "unanimous", description="how the ensemble decides")
    threshold: float = Field(0.5, ge=0, le=1, description="weighted vote: share of weight needed "
                             "to pass", json_schema_extra=_surface(type="fraction"))
    cache: str = Field("judge_cache", description="llm judges: directory of the verdict cache, relative to "
                       "the run dir (or absolute); a rerun asks the model only about what is not cached")

    # Only a weighted vote reads the threshold (E525 when a recipe sets it under another):
    # plan.json leaves it out rather than show a share nothing compares against.
    @model_serializer(mode="wrap")
    def _threshold_with_a_weighted_vote_only(self, handler):
        return _without(handler(self), () if self.vote == "weighted" else ("threshold",))


class Gates(Node):
    order: tuple[GateName, ...] = GATE_ORDER
    execution: ExecutionGate = ExecutionGate()
    output: OutputGate = OutputGate()
    judge: JudgeGate = JudgeGate()


class Reward(Node):
    """R_total = sum_i w_i * R_i, each component in [0, 1]."""

    # Negative weights are the reward checker's (E403), so the weights carry no range.
    outcome: float = Field(0.5, description="weight of R_outcome (execution success, unit tests)")
    process: float = Field(0.2, description="weight of R_process (tool-call structure, anti-patterns)")
    consistency: float = Field(0.2, description="weight of R_consistency (plan/code agreement)")
    judge: float = Field(0.1, description="weight of R_judge (business alignment)")
    # An unknown mode is the reward checker's E405, so the surface type is a plain name.
    aggregate: Literal["sum", "normalized"] = Field(
        "normalized", description="`sum` adds the weighted components; `normalized` first divides "
        "the weights by their sum",
        json_schema_extra=_surface(type="name"))
    penalties: tuple[tuple[str, float], ...] = Field(
        (("discovery_call", 0.05), ("redundant_join", 0.1), ("select_star", 0.05)),
        description="`name weight` pairs subtracted per occurrence",
        json_schema_extra=_surface(type="block"))
    step_rewards: bool = Field(True, description="reward each tool turn, not only the last")
    judge_llm: str | None = Field(None, description="R_judge: a declared llm judge whose verdict joins the "
                                  "deterministic checks in GRPO", json_schema_extra=_surface(type="name"))
    judge_every: int = Field(1, ge=1, le=1000, description="R_judge: ask the llm judge about one question in N "
                             "(sampled by question, so every rollout of a group is judged alike)")


# ---------------------------------------------------------------- training


class ModelSpec(Node):
    """A base model: the embedded tiny_moe, a local directory or a hub id.

    The tiny_moe shape fields are the embedded model's only defaults: the runtime
    builds it from these.
    """

    name: str
    source: ModelSource = Field("tiny_moe", description="where the model comes from (default: "
                                "tiny_moe, or hub/path/gguf when `path` is set)")
    path: str | None = Field(None, description="hub id (`org/name`), a directory relative to the "
                             "recipe, or a `.gguf` file (`package:file.gguf` for one an installed Python "
                             "package ships), converted once into a model directory")
    context: int = Field(2048, ge=16, description="context length in tokens")
    hidden: int = Field(192, ge=8, description="tiny_moe: hidden size")
    layers: int = Field(4, ge=1, description="tiny_moe: layers")
    heads: int = Field(4, ge=1, description="tiny_moe: attention heads")
    kv_heads: int = Field(2, ge=1, description="tiny_moe: key/value heads")
    experts: int = Field(4, ge=1, description="tiny_moe: experts per MoE layer")
    top_k: int = Field(2, ge=1, description="tiny_moe: experts routed per token")
    intermediate: int = Field(384, ge=8, description="tiny_moe: expert MLP size")
    vocab: int = Field(2048, ge=64, description="tiny_moe: BPE vocabulary size")
    seed: int = Field(0, ge=0, description="tiny_moe: weight init seed")
    # One token per digit lets the model copy a number it never saw from the question into
    # its code; merged digits give each number whatever BPE pieces the corpus happened to make.
    digits: Literal["merged", "split"] = Field(
        "merged", exclude_if=_omitted_at("merged"),
        description="tiny_moe: `split` makes the tokenizer give every digit its own token; `merged` lets "
        "BPE merge digits into longer pieces like any other text")
    # Byte-level BPE glues a word to the space before it, so `Maple` after a space (the
    # question) and after a quote (`'Maple Home'` in the code) are two unrelated tokens: to
    # copy a name it never saw into its code, a small model must learn a mapping per word.
    spaces: Literal["merged", "split"] = Field(
        "merged", exclude_if=_omitted_at("merged"),
        description="tiny_moe: `split` makes the tokenizer give every run of spaces its own token, so a word "
        "is the same token after a space, a quote or a bracket (about a third more tokens per text); "
        "`merged` lets a word carry the space before it, as GPT-2's byte-level BPE does")


class LoraAdapter(Node):
    """A LoRA adapter a stage trains instead of every weight (PEFT's ``LoraConfig``)."""

    r: int = Field(16, ge=1, le=4096, description="rank of the low-rank update")
    alpha: float = Field(32.0, gt=0, description="scale of the update (multiplied by alpha / r)")
    dropout: float = Field(0.05, ge=0, le=0.9, description="dropout on the adapter's input",
                           json_schema_extra=_surface(type="fraction"))
    targets: tuple[str, ...] = Field(
        ("q_proj", "k_proj", "v_proj", "o_proj"),
        description="module names the adapter wraps; on tiny_moe also the fused expert weights "
                    "`gate_up_proj`, `down_proj` (checked against the model when it is tiny_moe)")


class StageBase(Node):
    """What every stage has; :class:`SFTStage` and :class:`GRPOStage` add their kind."""

    name: str
    kind: StageKind = Field(description="trainer (defaults to the stage name when it is sft or grpo)",
                            json_schema_extra=_surface(shown="the name"))
    after: str | None = Field(None, description="the stage whose checkpoint this one starts from",
                              json_schema_extra=_surface(key="from", type="name"))
    base: str = Field("tiny_moe", description='base model: a `model` block, `tiny_moe`, or "org/name"',
                      json_schema_extra=_surface(type="model_ref"))
    input: InputMode = Field("stripped", description="model input mode")
    mask: tuple[MaskRole, ...] = Field(get_args(MaskRole), description="roles masked from the loss "
                                       "(must include tool_outputs)")
    epochs: float = Field(3.0, gt=0, description="passes over the data")
    steps: int | None = Field(None, ge=1, description="optimiser steps (overrides epochs)")
    lr: float = Field(3e-4, gt=0, le=1, description="learning rate")
    warmup: float = Field(0.0, ge=0, le=0.5, description="share of the optimiser steps with a "
                          "linear learning-rate warm-up", json_schema_extra=_surface(type="fraction"))
    batch: int = Field(8, ge=1, description="global batch (examples per optimiser step)")
    per_device_batch: int = Field(8, ge=1, description="examples per device per forward pass")
    max_length: int = Field(1024, ge=16, description="max tokens per training example")
    # scale
    parallel: Literal["none", "ddp", "fsdp2", "zero3", "megatron"] = Field(
        "none", description="distributed strategy (`megatron`: grpo stages with `engine verl` only)")
    gpus: int = Field(0, ge=0, le=1024, description="GPUs per node (0 = CPU)")
    nodes: int = Field(1, ge=1, le=4096, description="machines")
    processes: int = Field(1, ge=1, le=256, description="training processes per node on CPU "
                           "(`gpus 0`); above 1 needs `parallel ddp`", json_schema_extra=_surface(engine="trl"))
    mixed_precision: Literal["no", "bf16", "fp16"] = Field(
        "no", description="half-precision compute: `bf16` on GPUs or a CPU (on a CPU fast only with AMX or "
        "AVX512-BF16), `fp16` on GPUs only; `no`: float32")
    # Keeping every layer's activations for the backward pass is most of a long example's
    # training memory: two of the pretrained profile's stuffed examples (~6,500 tokens of
    # SmolLM2) peaked at 17.2 GB on CPU, 7.1 GB recomputing them (docs/training.md, "Memory").
    checkpointing: Literal["auto", "on", "off"] = Field(
        "auto", exclude_if=_omitted_at("auto"),
        description="activation checkpointing: recompute each layer's activations in the backward pass "
        "instead of keeping them (less memory, more compute); `auto`: on with GPUs, off on CPU (under `engine "
        "verl`, verl's own default: on)")
    # TRL saves every `save_steps` (500) optimiser steps: a pretrained model's 256 steps of 15 s
    # each would never be saved before the end, and a kill would lose an hour of training.
    checkpoint_every_s: float = Field(
        600.0, ge=0, exclude_if=_omitted_at(600.0),
        description="also save a checkpoint once this much training time has passed since the last one, "
        "so a killed run resumes losing at most that much (`0`: every 500 steps only)",
        json_schema_extra=_surface(key="checkpoint_every", type="duration", engine="trl"))
    lora: LoraAdapter | None = Field(
        None, description="train a LoRA adapter instead of every weight (`lora { r 16  alpha 32 }`); "
                          "the stage saves the adapter and the merged model later steps read",
        json_schema_extra=_surface(type="block", shown="none", engine="trl"))
    # Sorted by key, so the plan does not depend on the order they were written in.
    trl: tuple[tuple[str, TrlValue], ...] = Field(
        (), description="TRL config keys passed through as written (`trl { save_total_limit 3 }`); "
                        "checked against the installed TRL",
        json_schema_extra=_surface(type="block", shown="none", engine="trl"))


class SFTStage(StageBase):
    """Stage I: supervised fine-tuning on the accepted trajectories."""

    kind: Literal["sft"] = "sft"
    # A model trained from scratch learns the long, repetitive code first and writes it for
    # whatever question it is asked. A warm-up on the short reasoning block alone, which
    # restates the question and its parameters, teaches it to read the question first
    # (docs/training.md, "Levers"). A pretrained model already reads its prompt.
    prefix_epochs: float = Field(
        0.0, ge=0, le=100, exclude_if=_omitted_at(0.0),
        description="sft: warm-up passes, before `epochs`, over every assistant turn cut after its reasoning "
        "block (the question restated with its parameters); 0: none")
    # The whole conversation before a reasoning block is mostly code, tool output and failed
    # attempts the warm-up does not train; carrying it made the warm-up most of the SFT time.
    prefix_history: Literal["conversation", "thinks"] = Field(
        "conversation", exclude_if=_omitted_at("conversation"),
        description="sft: what a warm-up example holds: `conversation`, one example per assistant turn with "
        "the whole conversation before it; `thinks`, one example per conversation with only its questions "
        "and their reasoning blocks")
    # Trained from scratch on a few dozen questions per workflow, a model recalls the names
    # of training questions instead of copying the asked one; made-up names cannot be recalled.
    prefix_renames: int = Field(
        0, ge=0, le=16, exclude_if=_omitted_at(0),
        description="sft: more warm-up examples per conversation: copies of its first turn (question and "
        "reasoning block) with every name and category it asks about made up, so that a name can only be "
        "copied from the question (runtime.train.renames); 0: none")
    # Renamed first turns cut after the THINK taught the THINK to copy a name, not the code
    # (docs/training.md, "Made-up names in the warm-up"): the code can run on through it.
    prefix_renames_through: Literal["think", "code"] = Field(
        "think", exclude_if=_omitted_at("think"),
        description="sft: where a renamed first turn ends: `think`, after its reasoning block; `code`, after "
        "the first question's last code block (plan and code renamed too; no tool output after it)")
    # Trained from scratch on two or three phrasings per workflow, a model learns each
    # phrasing whole and recalls a training question for words it never saw; the same
    # question in many shapes leaves the words that carry it (docs/training.md).
    question_dropout: float = Field(
        0.0, ge=0, le=0.9, exclude_if=_omitted_at(0.0),
        description="sft: share of a training question's words (not its parameter values) left out, drawn "
        "anew in every pass of the warm-up and the whole conversations, for two thirds of the questions; "
        "the reasoning block restates the rewritten question (runtime.train.question_dropout); 0: none",
        json_schema_extra=_surface(type="fraction"))
    # A model that never saw this warehouse learns its names only from the code of the training
    # conversations: no trained token states the schema (`api.describe` answers in a tool turn,
    # masked). A pass over the schema's own documentation, each entity's commented DDL as the
    # answer to a question about it, trains every name and its doc before anything else.
    schema_docs: float = Field(
        0.0, ge=0, le=100, exclude_if=_omitted_at(0.0),
        description="sft: passes, before the warm-up and the conversations, over the schema's documentation: "
        "one example per entity, a question naming its view answered with its commented DDL (the stuffed "
        "prompt's), and one for the metrics (runtime.train.schema_docs); 0: none")
    # The craft arm and the stuffed baseline train on their own data from the same base: two
    # independent runs. A model as small as tiny_moe keeps 2 CPU cores only partly busy (in the
    # README run one thread trained at 0.6-0.75x the speed of two), so on CPU two one-thread runs
    # at once finish sooner than two two-thread runs one after the other (docs/training.md,
    # "Both arms at once").
    arms: Literal["sequential", "concurrent"] = Field(
        "sequential", exclude_if=_omitted_at("sequential"),
        description="sft: how the two arms train: `sequential`, one after the other, each with every CPU "
        "core; `concurrent`, at the same time, each with half the cores and its output lines prefixed "
        "with its name (CPU only: `gpus 0`)")
    # A stuffed example is the ~4,700-token schema prompt and a few hundred tokens of its own,
    # and a plain batch runs that prompt once per example. A batch of examples that begin
    # alike runs it once and each example's own tokens attend to it (Prefix Grouper;
    # runtime.train.prefix_groups): the same loss and gradients, several times the tokens/s.
    sampler: Literal["random", "by_prefix"] = Field(
        "random", exclude_if=_omitted_at("random"),
        description="sft: how examples are drawn into each `per_device_batch`: `random`, TRL's shuffle; "
        "`by_prefix`, examples that begin with the same tokens (the system prompt, the stuffed arm's schema) "
        "together, each batch running that prefix once, forward and backward, with the plain batch's loss and "
        "gradients")


class GRPOStage(StageBase):
    """Stage II: GRPO with multi-turn rollouts; the generation settings exist only here."""

    kind: Literal["grpo"] = "grpo"
    group: int = Field(4, ge=2, description="grpo: generations per prompt")
    max_turns: int = Field(3, ge=1, le=64, description="grpo: agent turns per rollout")
    max_new_tokens: int = Field(256, ge=1, description="grpo: tokens per model call, in rollouts and in eval; both warn when answers the model trained on are longer (runtime.agent.answer_room)")
    temperature: float = Field(1.0, gt=0, le=5, description="grpo: sampling temperature")
    beta: float = Field(0.0, ge=0, description="grpo: KL coefficient")
    clip: float = Field(0.2, gt=0, le=1, description="grpo: clipping range of the policy ratio (TRL's "
                        "`epsilon`)", json_schema_extra=_surface(engine="trl"))
    # SFT's own rows are solved already (execution success about 1.0 on them): a group whose
    # rollouts all pass has zero advantage and teaches nothing, and a measurement on them is
    # in-sample. Fresh rows ask trained phrasings with values no split holds
    # (runtime.train.rl_rows; the grpo step audits them against SFT's data, dev and test).
    rows: Literal["fresh", "sft"] = Field(
        "fresh", description="grpo: the rows GRPO plays: `fresh`, instances drawn for it with value groups "
        "that SFT's data, dev and test do not hold, in trained phrasings; `sft`, the train split SFT learned")
    fresh_instances: int = Field(4, ge=1, le=10000, description="grpo: fresh instances drawn per trained "
                                 "workflow (`rows fresh`)")
    # DAPO's dynamic sampling: a group whose rollouts all score the same R_outcome (all pass or
    # all fail) is dropped and replaced by a group of another row, so every step's groups teach.
    dynamic_sampling: int = Field(
        0, ge=0, le=16, description="grpo: rounds in which each group whose rollouts all score the same "
        "R_outcome is replaced by a group of another row (the dropped groups are counted per step); 0: off",
        json_schema_extra=_surface(engine="trl"))
    # TRL scores each completion with a forward over its prompt and itself, so a group's prompt
    # runs `group` times in the policy's forward and backward (and the reference's, with `beta`).
    # Packed as SFT's `sampler by_prefix` packs a batch (runtime.train.grpo.prompt_groups), it
    # runs once and every row's completion attends to it: the same log-probs and gradients.
    shared_prefix: Literal["off", "on"] = Field(
        "off", exclude_if=_omitted_at("off"),
        description="grpo: `on` runs each group's prompt once in the policy's, the reference's and the old "
        "policy's log-prob forwards (and the backward), each completion attending to it, with the plain "
        "forwards' log-probs and gradients; `off`: once per completion, as TRL does",
        json_schema_extra=_surface(engine="trl"))
    rollout: Literal["transformers", "vllm", "sglang"] = Field(
        "transformers", description="grpo: generation engine, optionally with the vllm mode "
        "(`rollout vllm, server`); `engine verl` takes vllm or sglang",
        json_schema_extra=_surface(type="rollout"))
    vllm_mode: Literal["colocate", "server"] = Field("colocate", description="grpo: how vLLM runs "
                                                     "(`rollout vllm, MODE`; E523 with another rollout)")
    measure: int = Field(32, ge=0, le=100000, description="grpo: rows measured before and after "
                         "training (dev rows, or training rows where no dev split is held out), greedily and "
                         "with `group` samples each (a seeded sample), decoded `per_device_batch` at a time; "
                         "0: none measured, nothing played before or after",
                         json_schema_extra=_surface(engine="trl"))
    # Before and after alone hide a peak in between, and say nothing of how many steps a
    # gain needs: the measured rows played greedily every few steps give the curve.
    measure_every: int = Field(0, ge=0, le=100000, exclude_if=_omitted_at(0),
                               description="grpo: every this many steps the `measure` rows are also played "
                               "greedily, their rewards logged and plotted over the steps (`measured_score.png`); "
                               "0: before and after only",
                               json_schema_extra=_surface(engine="trl"))
    # Eval decodes with `eval { copy_bias }`. Rollouts sampled without it fail mostly where
    # eval's decoding would have copied an asked name, so GRPO's advantages point at mistakes
    # eval does not make; with the same bias the rollouts and the measurement decode as eval.
    # TRL scores the sampled tokens under the unbiased policy (no importance correction on the
    # transformers rollout), so the bias only chooses which completions are sampled.
    copy_bias: float = Field(0.0, ge=0, le=20, exclude_if=_omitted_at(0.0),
                             description="grpo: added to the logit of every token that writes a word of the "
                             "questions asked so far, as rollouts and the measurement decode (as `eval { "
                             "copy_bias }` does in eval); 0: plain sampling. `rollout transformers` only",
                             json_schema_extra=_surface(engine="trl"))
    # A conversation's later turns continue from what the policy itself wrote earlier
    # (what it meets at inference); `reference` conditions them on the reference turns.
    # verl's rows are always one user turn each on the reference turns (E516 refuses `policy`).
    history: Literal["policy", "reference"] = Field(
        "policy", description="grpo: the history a conversation's later turns are generated on: the "
        "policy's own earlier turns (`engine trl`), or the reference turns, one row per user turn (what "
        "`engine verl` always does)")
    engine: Engine = Field("trl", description="grpo: training engine: `trl` (GRPOTrainer under accelerate) "
                           "or `verl` (verl's main_ppo on a Ray cluster; docs/training.md)")
    # verl only: Megatron model parallelism, the rollout replicas and verl's own choices.
    tensor_parallel: int = Field(1, ge=1, le=64, description="grpo, verl: Megatron tensor-parallel size",
                                 json_schema_extra=_surface(engine="verl"))
    pipeline_parallel: int = Field(1, ge=1, le=64, description="grpo, verl: Megatron pipeline-parallel size",
                                   json_schema_extra=_surface(engine="verl"))
    context_parallel: int = Field(1, ge=1, le=64, description="grpo, verl: Megatron context-parallel size",
                                  json_schema_extra=_surface(engine="verl"))
    expert_parallel: int = Field(1, ge=1, le=256, description="grpo, verl: Megatron expert-parallel size "
                                 "(MoE)", json_schema_extra=_surface(engine="verl"))
    rollout_tensor_parallel: int = Field(1, ge=1, le=64, description="grpo, verl: tensor-parallel size of "
                                         "each vLLM/SGLang rollout replica",
                                         json_schema_extra=_surface(engine="verl"))
    advantage: AdvantageEstimator = Field(
        "grpo", description="grpo, verl: advantage estimator (`gdpo` normalises each reward component "
        "within its group)", json_schema_extra=_surface(engine="verl"))
    tool_format: ToolFormat = Field(
        "craft", description="grpo, verl: how tool calls are parsed (`craft`: the recipe's <CODE> block; "
        "or a verl parser such as hermes, gpt-oss)", json_schema_extra=_surface(engine="verl"))
    max_tool_response: int = Field(2048, ge=16, le=1_000_000, description="grpo, verl: characters of a tool "
                                   "response the model sees", json_schema_extra=_surface(engine="verl"))

    # As with a teacher's kind (Teacher._only_what_its_kind_reads): under `engine trl`
    # plan.json carries no Megatron sizes or verl parser that nothing reads, under `engine
    # verl` no TRL-only setting, and the vLLM mode only where TRL rolls out with vLLM
    # (verl always colocates it: E516).
    @model_serializer(mode="wrap")
    def _only_what_its_engine_reads(self, handler):
        unread = TRL_ONLY if self.engine == "verl" else (*VERL_ONLY, *GRPO_VERL_ONLY)
        if not (self.engine == "trl" and self.rollout == "vllm"):
            unread = (*unread, "vllm_mode")
        return _without(handler(self), unread)


Stage = Annotated[SFTStage | GRPOStage, Field(discriminator="kind")]
STAGE_MODELS: dict[str, type[StageBase]] = {"sft": SFTStage, "grpo": GRPOStage}
ENGINES: tuple[str, ...] = get_args(Engine)
# GRPO fields only `engine verl` reads, and those only `engine trl` reads (their
# json_schema_extra says so; E516 under the other engine).
VERL_ONLY: tuple[str, ...] = tuple(name for name, info in GRPOStage.model_fields.items()
                                   if (info.json_schema_extra or {}).get("engine") == "verl")
TRL_ONLY: tuple[str, ...] = tuple(name for name, info in GRPOStage.model_fields.items()
                                  if (info.json_schema_extra or {}).get("engine") == "trl")
# Settings every stage has that a grpo stage reads only under `engine verl`: `max_length`
# is verl's prompt length, and TRL 1.16's GRPOConfig has no prompt length to cut to.
GRPO_VERL_ONLY: tuple[str, ...] = ("max_length",)


class EvalSpec(Node):
    # 0 < holdout < 1 is the eval checker's E508, so the field carries no range.
    holdout: float = Field(0.2, description="share of instances held out per workflow (0 < x < 1)",
                           json_schema_extra=_surface(type="fraction"))
    holdout_workflows: tuple[str, ...] = Field((), description="whole workflows never trained on")
    holdout_phrasings: int = Field(1, ge=0, description="last N phrasings of each turn never "
                                   "trained on")
    instances: int = Field(4, ge=1, description="held-out instances per workflow, split and kind (new values, "
                           "new phrasing, new workflow) that eval scores")
    # Every setting is chosen on dev; the report's figures are test's, which nothing tunes on.
    split: Literal["dev", "test"] = Field(
        "test", exclude_if=_omitted_at("test"),
        description="which held-out split eval scores: `dev` while choosing settings, `test` for the figures "
        "a report states (train, dev and test are disjoint turn by turn)")
    # A cap for a model whose generation is slow where it runs (a real model on CPU): the
    # held-out instances kept are spread evenly over each split, so every split and most
    # workflows stay represented; the report says how many instances each arm was asked.
    limit: int | None = Field(
        None, ge=1, le=100_000, exclude_if=_omitted_at(None),
        description="at most N held-out instances per split, spread evenly over its workflows "
        "(default: every instance `instances` keeps)")
    arms: tuple[Arm, ...] = Field(ARMS, description="what is compared; without `craft` no arm decodes GRPO's model, "
                                  "and the grpo step is skipped")
    max_turns: int = Field(3, ge=1, le=64, description="agent turns per eval conversation")
    # A decoding aid for a small model that recalls training questions instead of copying
    # the asked one (runtime/agent/copy_bias.py); every arm decodes with it, so the
    # stuffed control too. GRPO samples without it unless `stage grpo { copy_bias }` says.
    copy_bias: float = Field(
        0.0, ge=0, le=20, exclude_if=_omitted_at(0.0),
        description="added to the logit of every token that writes a word of the questions asked so "
        "far, at every generated token, in every arm (0: plain greedy decoding)")
    # A repair that writes the failed code again cannot run: greedy decoding of a model that
    # does not read the error repeats itself (SmolLM2 on dev: 32 of 39 repairs). With a
    # temperature, such a call is decoded once more, sampled (seeded by the run's seed), and
    # the sample is what runs (runtime/agent/repeats.py). Every arm decodes with it.
    repeat_temperature: float = Field(
        0.0, ge=0, le=2, exclude_if=_omitted_at(0.0),
        description="when a repair's greedy code is code that already failed in the turn, decode that "
        "call again sampled at this temperature and run the sample, in every arm (0: run the repeat)")
    # How many conversations one `generate` call decodes together. Greedy decoding gives the
    # same tokens at any size up to float rounding, so this is a speed setting: larger batches
    # pay the per-token cost of a decoding step once for more rows (docs/evaluation.md,
    # "Decoding appends to the cache in place"). vLLM schedules its own batches.
    batch: int = Field(
        8, ge=1, le=1024, exclude_if=_omitted_at(8),
        description="conversations each arm decodes in one batch with transformers (a speed setting; "
        "vLLM schedules its own)")
    # The dtype the arms' weights decode in with transformers. Decoding reads every weight each
    # step; on a CPU that computes bf16 natively (AMX, AVX512-BF16) bf16 weights decode SmolLM2
    # faster (benchmarks/cpu_bf16.py; docs/evaluation.md, "Decoding precision"), elsewhere
    # slower. Greedy outputs move by bf16's rounding, so it is a setting of the measurement,
    # and every arm decodes with it.
    precision: Literal["float32", "bf16"] = Field(
        "float32", exclude_if=_omitted_at("float32"),
        description="the dtype every arm's weights decode in with transformers: `float32`, or `bf16` "
        "(faster on a CPU with AMX or AVX512-BF16, slower on one without)")
    # `tokens` trains the stuffed baseline on the same accepted trajectories for the same
    # number of training tokens (each stuffed example is several times longer, so it sees
    # fewer epochs); `steps` gives it the same examples, epochs and optimiser steps.
    general: tuple[str, ...] = Field(
        (), description="general-skill benchmarks (lm-eval task names) run on the base and each trained "
        "model; the report shows each change with a 95% interval", json_schema_extra=_surface(shown="none"))
    general_include: str | None = Field(
        None, description="a directory of local lm-eval task YAML (for `general`), relative to where "
        "`craftc run` runs", json_schema_extra=_surface(needs="general"))
    general_limit: int = Field(200, ge=1, description="examples per general benchmark",
                               json_schema_extra=_surface(needs="general"))
    # The arms are independent models. Where a decoding step's matrix products are small (the
    # default's tiny_moe) they use a second thread poorly, and N processes that divide the cores
    # finish the arms sooner than one with every core; SmolLM2's use it well, and gain nothing
    # (docs/evaluation.md, "Arms side by side"). Each process decodes its share of arms and
    # writes their episode files; the step reads them back.
    processes: int = Field(
        1, ge=1, le=64, exclude_if=_omitted_at(1),
        description="processes that decode the arms at the same time, the CPU cores divided between them "
        "(1: the arms one after another, each with every core; `rollout transformers` only)")
    baseline_budget: Literal["tokens", "steps"] = Field(
        "tokens", description="the stuffed baseline's SFT gets the same training `tokens` as the "
        "stripped arm, or the same `steps` (same epochs, more compute)")

    # Without benchmarks nothing reads the two settings that shape them (E522 when a
    # recipe sets them): plan.json leaves them out rather than show them as if they ran.
    @model_serializer(mode="wrap")
    def _general_settings_with_benchmarks_only(self, handler):
        return _without(handler(self), () if self.general else GENERAL_ONLY)


# EvalSpec fields that only shape the `general` benchmarks (E522 without any; their
# json_schema_extra says so).
GENERAL_ONLY: tuple[str, ...] = tuple(name for name, info in EvalSpec.model_fields.items()
                                      if (info.json_schema_extra or {}).get("needs") == "general")


# Eval settings that change how every arm decodes: eval.json (and so report.md) names each one
# a plan moves from its default (runtime.eval.step), and changing one reruns eval alone.
EVAL_DECODING: tuple[str, ...] = ("copy_bias", "precision", "repeat_temperature")
# Eval settings that choose which of the drawn instances eval scores, or only how fast it
# decodes them: never which instances are drawn, held out or trained on, so changing one
# reruns eval alone too (runtime.runner; a better-powered dev measurement keeps its models).
EVAL_SCOPE: tuple[str, ...] = ("split", "limit", "batch", "processes")


class Recipe(Node):
    """A whole recipe with its schema, after profile overrides and defaults."""

    name: str
    profile: str = "default"
    profiles: tuple[str, ...] = ()       # every profile the recipe declares
    seed: int = Field(0, ge=0, description="seed of every random choice in the pipeline")
    scale: float = Field(1.0, gt=0, le=1000, description="warehouse size knob (1.0 = default small)")
    # An existing warehouse to use instead of generating one: a DuckDB file, relative to
    # the recipe file like every other path (stored normalised, never absolute unless
    # written so), or the environment variable that names it. It is run-time data, not
    # part of the plan: the plan dir's `source.json` says where the recipe's directory
    # is, relative to the plan dir, so the world step finds the file from any cwd.
    warehouse: str | None = Field(
        None, description="an existing DuckDB warehouse to bind instead of generating one (a path "
        'relative to the recipe file, or env("VAR"))',
        json_schema_extra=_surface(type="string_or_env"))
    warehouse_env: str | None = None
    references: Literal["visible", "hidden"] = Field(
        "visible", description="`hidden` runs the recipe as if no workflow had a reference solution: "
        "the gate, rewards and eval judge by checks and agreement (the synthetic teacher still reads "
        "the solutions)")
    # What a run does when a workflow loses its training data (a reference skipped by the
    # gate, a workflow with no accepted trajectory).
    on_loss: Literal["warn", "error"] = Field(
        "warn", description="when a workflow loses training data in a run (a skipped reference, no "
        "accepted trajectory): `warn`, or `error` to fail the step")
    # Both trained arms (craft, sft_only) read the stripped prompt in SFT, GRPO and eval; the
    # stuffed baseline's prompt is the control and never changes with this setting.
    stripped_prompt: Literal["full", "compact"] = Field(
        "full", exclude_if=_omitted_at("full"),
        description="the stripped arms' system prompt: `full` explains the task, the block format and "
        "the tools; `compact` is three lines (the warehouse, the block tags, the tool calls) and leaves "
        "the rest to training")
    # What the agent keeps of a conversation's earlier turns, for every arm (the stuffed
    # control too), in the training data, GRPO's rows and eval (runtime/agent/history.py).
    earlier_turns: Literal["full", "compact", "thinks"] = Field(
        "full", exclude_if=_omitted_at("full"),
        description="what the agent's context keeps of a conversation's earlier turns: `full`, every "
        "call, tool output and answer; `compact`, each earlier turn's question, the last CODE it wrote "
        "and its ANSWER; `thinks`, each earlier turn's question, the last THINK it wrote (the question "
        "restated with its parameters) and its ANSWER. Both shortened rules drop failed attempts and tool "
        "output and train one example per turn")
    track: Tracker = Field(
        "tensorboard", description="experiment tracker the trainers (TRL's `report_to`) and the steps' "
        "metrics log to; tensorboard and trackio write into the run dir")
    schema_: Schema = Field(alias="schema")
    workflows: tuple[Workflow, ...] = ()
    tools: tuple[Tool, ...] = ()
    format: BlockFormat = BlockFormat()
    teacher: Teacher = Teacher()
    judges: tuple[Judge, ...] = ()
    gates: Gates = Gates()
    reward: Reward = Reward()
    models: tuple[ModelSpec, ...] = ()
    stages: tuple[Stage, ...] = ()
    eval: EvalSpec = EvalSpec()

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    @property
    def reads_agreement(self) -> bool:
        """Whether the gate votes by agreement, and so reads the output gate's `agree`: only
        for an instance turn without a visible reference (`references hidden`, or a turn
        without a `solution`), and only when the output gate rejects `mismatch`."""
        unseen = self.references == "hidden" or any(turn.solution is None for workflow in self.workflows
                                                   for turn in workflow.turns)
        return unseen and "mismatch" in self.gates.output.reject

    @model_serializer(mode="wrap")
    def _settings_something_reads(self, handler):
        # A judge's weight is read only by a weighted vote (E525), the output gate's `agree`
        # only by an agreement vote (E526); plan.json leaves out what nothing reads.
        data = handler(self)
        if self.gates.judge.vote != "weighted" and "judges" in data:
            data["judges"] = [_without(judge, ("weight",)) for judge in data["judges"]]
        if not self.reads_agreement and "gates" in data:
            output = data["gates"]["output"]
            data["gates"] = {**data["gates"], "output": _without(output, ("agree",))}
        return data


class Plan(Node):
    """The content of ``plan.json``: the resolved recipe plus artifact hashes.

    ``content_hash`` is the sha256 of the canonical JSON of everything else, so a
    plan dir can be checked for tampering and a run dir can refuse a stale plan.
    """

    craftc_version: str
    content_hash: str = ""
    recipe: Recipe
    artifacts: dict[str, str] = {}      # relative path -> sha256 of the file
