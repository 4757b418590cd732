"""Workflow instances: params drawn from the warehouse, questions and solutions rendered.

An *instance* is one concrete analyst conversation: a workflow with param values,
each turn's question in one of its phrasings, and the reference PLAN and CODE for
those values. Everything is a pure function of the recipe, the warehouse and a seed:
each instance draws from its own ``random.Random("<seed>:<workflow>:<index>:<attempt>")``, so
adding a workflow never changes another workflow's instances.

Phrasings rotate across instances. With ``EvalSpec.holdout_phrasings = N`` the last
``N`` phrasings of each turn are eval-only; an instance uses either only trainable
phrasings or only held-out ones in every turn, so a held-out conversation is held out
as a whole.

Splits are ``train``, ``dev`` and ``test``, disjoint at the level of a turn: an
instance's *value group* is the values of the params its first turn's reference reads
(``InstanceTurn.reads``), and every group is either trained on or reserved for one of
dev and test, so no held-out turn has the values of a training turn (a conversation's
later turns read the first turn's params too). Each held-out instance has a *kind*:
``new_values`` (trained phrasings, a reserved value group), ``new_phrasing`` (a
phrasing never trained, asked with a reserved value group) or ``new_workflow`` (a
workflow never trained on). The dataset step audits the result turn by turn
(``runtime.distill.leakage``).

Example:
    >>> import duckdb, random
    >>> from craftc.ir import Param, Turn, Workflow
    >>> wf = Workflow(name="w", kind="workflow", turns=(Turn(asks=("q",), solution="s.py"),),
    ...               params=(Param(name="n", kind="range", low=3, high=10),))
    >>> sample_params(wf, random.Random(1), duckdb.connect())
    {'n': 5}
"""

from __future__ import annotations

import datetime as _dt
import decimal
import hashlib
import json
import random
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

from craftc.ir import REFERENCE_KINDS, EvalSpec, Expectation, Param, Recipe, Schema, Workflow
from runtime.workflows.solutions import format_value, load_solution_text, render_solution

__all__ = [
    "InstanceError",
    "Instance",
    "InstanceTurn",
    "sample_params",
    "render_ask",
    "ask_slots",
    "make_instances",
    "split_instances",
    "draw_instances",
    "draw_fresh_instances",
    "held_out_kind",
    "first_turn_reads",
    "SPLITS",
    "HELD_OUT_KINDS",
]

SPLITS = ("train", "dev", "test")
# What a held-out instance is new in, as the report names its tables.
HELD_OUT_KINDS = ("new_values", "new_phrasing", "new_workflow")
_DISTINCT_DRAWS = 20  # attempts at a param set not yet used by the workflow


class InstanceError(ValueError):
    """A workflow that cannot be instantiated; the message names it and the fix."""


@dataclass(frozen=True)
class InstanceTurn:
    """One rendered turn: the question as asked, and the reference PLAN and CODE."""

    ask: str
    phrasing_index: int
    phrasings: int                    # how many phrasings the turn has
    plan: str                         # "" when the turn has no reference solution
    code: str
    expectations: tuple[Expectation, ...] = ()
    # False when the recipe hides references (or the turn has none): the gate, the
    # rewards and eval then judge by checks, and the expectations hold no comparison
    # with the reference.
    reference_visible: bool = True
    # The params this turn's reference reads (its solution's `${name}` slots; the question
    # slots asked so far where the turn has no solution): what makes two turns the same.
    reads: tuple[str, ...] = ()
    # The params the questions up to this one ask for: all the agent's code may see.
    asked: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "ask": self.ask,
            "phrasing_index": self.phrasing_index,
            "phrasings": self.phrasings,
            "plan": self.plan,
            "code": self.code,
            "expectations": [e.model_dump(mode="json") for e in self.expectations],
            "reference_visible": self.reference_visible,
            "reads": list(self.reads),
            "asked": list(self.asked),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> InstanceTurn:
        return cls(
            ask=data["ask"],
            phrasing_index=data["phrasing_index"],
            phrasings=data["phrasings"],
            plan=data["plan"],
            code=data["code"],
            expectations=tuple(Expectation.model_validate(e) for e in data["expectations"]),
            reference_visible=data.get("reference_visible", True),
            reads=tuple(data.get("reads", ())),
            asked=tuple(data.get("asked", ())),
        )


@dataclass(frozen=True)
class Instance:
    """One concrete conversation of a workflow (a single-turn workflow has one turn)."""

    workflow: str
    instance_id: str
    params: dict[str, Any]
    turns: tuple[InstanceTurn, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (keys in a fixed order) for datasets and manifests."""
        return {
            "workflow": self.workflow,
            "instance_id": self.instance_id,
            "params": dict(self.params),
            "turns": [turn.to_dict() for turn in self.turns],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Instance:
        return cls(
            workflow=data["workflow"],
            instance_id=data["instance_id"],
            params=dict(data["params"]),
            turns=tuple(InstanceTurn.from_dict(t) for t in data["turns"]),
        )

    def params_key(self) -> str:
        """Canonical text of the params: equal keys mean the same question values."""
        return json.dumps(self.params, sort_keys=True, default=str)


def _group_key(params: Mapping[str, Any], reads: Sequence[str]) -> str:
    """Canonical text of the values a first turn reads: the instance's value group.

    Instances of one group share their first turn's reference code; a split keeps a
    group on one side. A first turn that reads no param groups by every param.
    """
    chosen = {name: params[name] for name in reads if name in params} if reads else dict(params)
    return json.dumps(chosen, sort_keys=True, default=str)


# ---------------------------------------------------------------- params


def _snake_case(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _view_of(entity: str, schema: Schema | None) -> str:
    if schema is not None:
        for candidate in schema.entities:
            if candidate.name == entity:
                return candidate.view
    return _snake_case(entity)


def _plain(value: Any) -> Any:
    """A warehouse value as a plain Python literal that ``repr`` can put in code."""
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return value


def _column_values(con: Any, view: str, field: str, cache: dict | None) -> list[Any]:
    key = (view, field)
    if cache is not None and key in cache:
        return cache[key]
    sql = f'SELECT DISTINCT "{field}" FROM "{view}" WHERE "{field}" IS NOT NULL ORDER BY 1'
    try:
        values = [_plain(row[0]) for row in con.execute(sql).fetchall()]
    except Exception as err:  # duckdb raises several error classes; all mean the same here
        raise InstanceError(
            f"cannot draw values for `{view}.{field}` from the warehouse ({err}); "
            "check the param's `from Entity.field` and that the world step bound the views"
        ) from None
    if cache is not None:
        cache[key] = values
    return values


def _draw(param: Param, rng: random.Random, con: Any, schema: Schema | None, cache: dict | None) -> Any:
    if param.kind == "range":
        if param.integer:
            return rng.randint(int(param.low), int(param.high))
        return round(rng.uniform(param.low, param.high), 2)
    if param.kind == "choice":
        return _plain(rng.choice(param.values))
    view = _view_of(param.entity, schema)
    values = _column_values(con, view, param.field, cache)
    if not values:
        raise InstanceError(
            f"param `{param.name}`: `{param.entity}.{param.field}` has no non-null values in "
            "the warehouse; generate data first or draw the param from another field"
        )
    return values[rng.randrange(len(values))]


def sample_params(
    workflow: Workflow,
    rng: random.Random,
    con: Any,
    schema: Schema | None = None,
    cache: dict | None = None,
) -> dict[str, Any]:
    """Draw one value for each of a workflow's params, in declaration order.

    Args:
        workflow: The workflow or conversation.
        rng: The random source; the same state gives the same values.
        con: A DuckDB connection whose logical views are bound (column params read it).
        schema: Maps entity names to view names; without it ``AdGroup`` reads ``ad_group``.
        cache: Optional dict reused across calls to query each column only once.

    Returns:
        ``{param name: value}`` with plain Python values (dates as ISO strings).
    """
    return {param.name: _draw(param, rng, con, schema, cache) for param in workflow.params}


def render_ask(ask: str, params: Mapping[str, Any], workflow: str = "workflow") -> str:
    """Fill a question's ``{name}`` slots with the param values as text."""
    try:
        return ask.format(**{name: format_value(value) for name, value in params.items()})
    except KeyError as err:
        raise InstanceError(
            f"workflow `{workflow}`: the question {ask!r} has slot `{{{err.args[0]}}}` but no "
            f"param of that name; declare `param {err.args[0]} ...` or fix the slot"
        ) from None
    except (IndexError, ValueError) as err:
        raise InstanceError(
            f"workflow `{workflow}`: the question {ask!r} is not a valid template ({err}); "
            "write slots as `{name}` and literal braces as `{{` `}}`"
        ) from None


def ask_slots(ask: str) -> set[str]:
    """The param names a question template's ``{name}`` slots fill.

    Example:
        >>> sorted(ask_slots("Top {n} campaigns of {advertiser}, {{literal}} braces"))
        ['advertiser', 'n']
    """
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(ask) if field]
    except ValueError:
        return set()     # render_ask reports a malformed template
    return {re.split(r"[.\[]", field, maxsplit=1)[0] for field in fields}


# ---------------------------------------------------------------- instances


def _held_out(eval_spec: EvalSpec, phrasings: int) -> int:
    """How many of a turn's phrasings are eval-only (at least one stays trainable)."""
    return max(0, min(eval_spec.holdout_phrasings, phrasings - 1))


def _phrasing_for(index: int, workflow: Workflow, turn_phrasings: int, eval_spec: EvalSpec) -> int:
    # One rotation over "slots": the first slots use trainable phrasings of every turn,
    # the last `holdout_phrasings` slots use held-out ones, so an instance is held out
    # (or not) as a whole conversation.
    widest = max(len(turn.asks) for turn in workflow.turns)
    held_slots = _held_out(eval_spec, widest)
    slot = index % widest
    held = _held_out(eval_spec, turn_phrasings)
    trainable = turn_phrasings - held
    if slot < widest - held_slots or held == 0:
        return slot % trainable
    return trainable + (slot - (widest - held_slots)) % held


def _seeded_rng(seed: int, workflow: str, index: int, attempt: int) -> random.Random:
    return random.Random(f"{seed}:{workflow}:{index}:{attempt}")


def make_instances(
    recipe: Recipe,
    con: Any,
    seed: int,
    per_workflow: int,
    solution_root: str | Path = ".",
    solution_sources: Mapping[str, str | Path] | None = None,
) -> list[Instance]:
    """Instantiate every workflow of a recipe ``per_workflow`` times.

    Args:
        recipe: The resolved recipe (its ``eval`` decides which phrasings are held out).
        con: A DuckDB connection with the logical views bound.
        seed: Instances are a pure function of this seed, the recipe and the warehouse.
        per_workflow: How many instances per workflow.
        solution_root: Directory the turns' ``solution`` paths are relative to (the plan
            dir in a run).
        solution_sources: Plan-dir solution path -> source file, as the front end's
            ``LoadResult.solution_sources`` gives it; takes precedence over the root.

    Returns:
        Instances ordered by workflow (recipe order) then index; ids are ``<workflow>-<index>``.
        With ``references hidden`` (or a turn without a solution) a turn's
        ``reference_visible`` is False and its expectations hold only checks; the plan
        and code are still rendered where a solution exists (the synthetic teacher
        builds candidates from them).
    """
    root = Path(solution_root)
    sources = {key: Path(value) for key, value in (solution_sources or {}).items()}
    texts: dict[str, str] = {}
    cache: dict = {}
    instances = []
    for workflow in recipe.workflows:
        used: set[str] = set()
        for index in range(per_workflow):
            params = _distinct_params(workflow, seed, index, con, recipe.schema_, cache, used)
            instances.append(_instance(recipe, workflow, index, params, root, sources, texts))
    return instances


def _instance(recipe: Recipe, workflow: Workflow, index: int, params: dict[str, Any], root: Path, sources,
              texts) -> Instance:
    turns, asked = [], set()
    for turn_index in range(len(workflow.turns)):
        turn = _render_turn(workflow, turn_index, index, params, recipe.eval, root, sources, texts,
                            hidden=recipe.references == "hidden")
        asked |= ask_slots(workflow.turns[turn_index].asks[turn.phrasing_index]) & set(params)
        reads = turn.reads or tuple(sorted(asked))
        turns.append(InstanceTurn(**{**turn.__dict__, "reads": reads, "asked": tuple(sorted(asked))}))
    return Instance(workflow.name, f"{workflow.name}-{index:04d}", params, tuple(turns))


def _reads_of(workflow: Workflow, root: Path, sources, texts) -> tuple[str, ...]:
    """The params the first turn's reference reads (its template's slots); without a
    reference, the params any phrasing of the first question asks for."""
    turn = workflow.turns[0]
    names = {p.name for p in workflow.params}
    if turn.solution is None:
        return tuple(sorted(set().union(*(ask_slots(ask) for ask in turn.asks)) & names))
    path = sources.get(turn.solution) or root / turn.solution
    key = str(path)
    if key not in texts:
        texts[key] = load_solution_text(path)
    return tuple(sorted(set(Template(texts[key]).get_identifiers()) & names))


def _distinct_params(workflow, seed, index, con, schema, cache, used: set[str],
                     forbidden: frozenset[str] = frozenset(), group_of=None) -> dict[str, Any] | None:
    # Redraw a few times so a workflow's instances differ; a tiny param space may still
    # repeat (the last allowed draw is kept), and split_instances keeps a value group on
    # one side of the split. A draw whose group (``group_of``) is in ``forbidden`` is never
    # kept: None when every one was.
    chosen = None
    for attempt in range(_DISTINCT_DRAWS):
        params = sample_params(workflow, _seeded_rng(seed, workflow.name, index, attempt), con, schema, cache)
        key = json.dumps(params, sort_keys=True, default=str)
        if group_of is not None and group_of(params) in forbidden:
            continue
        chosen = params
        if key not in used:
            break
    if chosen is not None:
        used.add(json.dumps(chosen, sort_keys=True, default=str))
    return chosen


def _render_turn(workflow, turn_index, index, params, eval_spec, root: Path, sources, texts,
                 hidden: bool = False) -> InstanceTurn:
    turn = workflow.turns[turn_index]
    phrasing = _phrasing_for(index, workflow, len(turn.asks), eval_spec)
    plan, code = "", ""
    if turn.solution is not None:
        path = sources.get(turn.solution) or root / turn.solution
        key = str(path)
        if key not in texts:
            texts[key] = load_solution_text(path)
        plan, code = render_solution(texts[key], params, name=turn.solution)
    visible = turn.solution is not None and not hidden
    reads = () if turn.solution is None else tuple(sorted(
        set(Template(texts[str(sources.get(turn.solution) or root / turn.solution)]).get_identifiers())
        & set(params)))
    return InstanceTurn(
        reads=reads,
        ask=render_ask(turn.asks[phrasing], params, workflow.name),
        phrasing_index=phrasing,
        phrasings=len(turn.asks),
        plan=plan,
        code=code,
        expectations=tuple(e for e in turn.expectations if visible or e.kind not in REFERENCE_KINDS),
        reference_visible=visible,
    )


# ---------------------------------------------------------------- splits


def _uses_held_out_phrasing(instance: Instance, eval_spec: EvalSpec) -> bool:
    return any(
        turn.phrasing_index >= turn.phrasings - _held_out(eval_spec, turn.phrasings)
        for turn in instance.turns
    )


def _stable_rank(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def held_out_kind(instance: Instance, eval_spec: EvalSpec) -> str:
    """What a held-out instance is new in: one of ``HELD_OUT_KINDS``."""
    if instance.workflow in eval_spec.holdout_workflows:
        return "new_workflow"
    return "new_phrasing" if _uses_held_out_phrasing(instance, eval_spec) else "new_values"


def _reserved_groups(keys: Sequence[str], share: float, seed: int, workflow: str) -> dict[str, str]:
    """Value groups reserved for evaluation: group key -> ``test`` or ``dev``.

    A ``share`` of the workflow's distinct groups, chosen by a hash of the seed, the
    workflow and the group (so the choice is stable and a new seed draws anew), at least
    one and never all: one group always stays trainable. Reserved groups go to test and
    dev in turn, test first, so a workflow with one reserved group is tested, not tuned on.
    """
    distinct = sorted(set(keys), key=lambda k: _stable_rank(f"{seed}:{workflow}:{k}"))
    if share <= 0 or len(distinct) < 2:
        return {}
    count = min(len(distinct) - 1, max(1, round(share * len(distinct))))
    return {key: ("test", "dev")[rank % 2] for rank, key in enumerate(distinct[:count])}


def split_instances(instances: Sequence[Instance], eval_spec: EvalSpec, seed: int = 0,
                    first_reads: Mapping[str, Sequence[str]] | None = None) -> dict[str, list[Instance]]:
    """Split instances into ``train``, ``dev`` and ``test``, disjoint turn by turn.

    Per workflow: every instance of ``holdout_workflows`` goes to test or dev (in turn,
    by a hash of its id). Otherwise a ``holdout`` share of the workflow's value groups
    (the values its first turn's reference reads, ``first_reads``; every param without
    it) is reserved, each group for test or dev (:func:`_reserved_groups`). An instance
    of a reserved group takes its group's split; an instance asked in a held-out
    phrasing whose group is not reserved is left out (its values are trained, so it
    would test a phrasing on a trained question); the rest train.

    Returns:
        A dict with exactly the keys of ``SPLITS``, each list in input order; left-out
        instances are in none.
    """
    held_workflows = set(eval_spec.holdout_workflows)
    reads = first_reads or {}
    by_workflow: dict[str, list[Instance]] = {}
    for instance in instances:
        by_workflow.setdefault(instance.workflow, []).append(instance)
    split_of: dict[str, str] = {}
    for workflow, group in by_workflow.items():
        if workflow in held_workflows:
            ranked = sorted(group, key=lambda i: _stable_rank(f"{seed}:{i.instance_id}"))
            split_of.update({i.instance_id: ("test", "dev")[rank % 2] for rank, i in enumerate(ranked)})
            continue
        keys = {i.instance_id: _group_key(i.params, reads.get(workflow, ())) for i in group}
        reserved = _reserved_groups(list(keys.values()), eval_spec.holdout, seed, workflow)
        for instance in group:
            key = keys[instance.instance_id]
            if key in reserved:
                split_of[instance.instance_id] = reserved[key]
            elif not _uses_held_out_phrasing(instance, eval_spec):
                split_of[instance.instance_id] = "train"
    splits: dict[str, list[Instance]] = {name: [] for name in SPLITS}
    for instance in instances:
        if instance.instance_id in split_of:
            splits[split_of[instance.instance_id]].append(instance)
    return splits


def first_turn_reads(recipe: Recipe, solution_root: str | Path = ".",
                     solution_sources: Mapping[str, str | Path] | None = None) -> dict[str, tuple[str, ...]]:
    """Each workflow's first-turn reads (:func:`_reads_of`): what its value groups are made of."""
    root = Path(solution_root)
    sources = {key: Path(value) for key, value in (solution_sources or {}).items()}
    texts: dict[str, str] = {}
    return {w.name: _reads_of(w, root, sources, texts) for w in recipe.workflows}


def draw_instances(
    recipe: Recipe,
    con: Any,
    seed: int,
    per_workflow: int,
    train_per_workflow: int | None = None,
    solution_root: str | Path = ".",
    solution_sources: Mapping[str, str | Path] | None = None,
) -> tuple[list[Instance], dict[str, str]]:
    """A run's instances and their splits, with ``train_per_workflow`` training instances each.

    The held-out instances never depend on the training volume: the first
    ``per_workflow`` instances of each workflow are drawn and split exactly as
    :func:`make_instances` and :func:`split_instances` do, and that split's dev and test
    parts are kept whole. Only its ``train`` part is then resized per workflow: cut to
    its first ``train_per_workflow`` instances, or topped up with instances drawn after
    them (indices from ``per_workflow`` on) that ask in a trainable phrasing and never
    take a reserved value group. An instance's draw depends on its index and the ones
    before, not on the volume, so a smaller volume's training set is part of a larger
    one's. Workflows of ``holdout_workflows`` get no training instances at any volume. A
    param space too small to give enough instances leaves a workflow with fewer.

    Args:
        recipe: The resolved recipe (``eval`` decides the held-out instances).
        con: A DuckDB connection with the logical views bound.
        seed: The run's seed.
        per_workflow: Instances drawn per workflow before the split (the held-out ones
            come from these).
        train_per_workflow: Training instances per workflow; None keeps the train split
            as it falls, exactly what :func:`split_instances` gives.
        solution_root: As for :func:`make_instances`.
        solution_sources: As for :func:`make_instances`.

    Returns:
        (instances ordered by workflow, then index; instance id -> split name). Instances
        left out by the split are not returned.
    """
    base = make_instances(recipe, con, seed, per_workflow, solution_root, solution_sources)
    reads = first_turn_reads(recipe, solution_root, solution_sources)
    split_of = {i.instance_id: name for name, group in split_instances(base, recipe.eval, seed, reads).items()
                for i in group}
    base = [i for i in base if i.instance_id in split_of]
    if train_per_workflow is None:
        return base, split_of
    root = Path(solution_root)
    sources = {key: Path(value) for key, value in (solution_sources or {}).items()}
    texts: dict[str, str] = {}
    cache: dict = {}
    held_workflows = set(recipe.eval.holdout_workflows)
    out: list[Instance] = []
    for workflow in recipe.workflows:
        drawn = [i for i in base if i.workflow == workflow.name]
        train = [i for i in drawn if split_of[i.instance_id] == "train"]
        for dropped in train[train_per_workflow:]:
            del split_of[dropped.instance_id]
        out += [i for i in drawn if i.instance_id in split_of]
        if workflow.name in held_workflows or len(train) >= train_per_workflow:
            continue
        first = reads[workflow.name]
        used = {i.params_key() for i in drawn}
        reserved = frozenset(_group_key(i.params, first) for i in drawn if split_of[i.instance_id] != "train")
        missing = train_per_workflow - len(train)
        # Bounded: a trainable phrasing comes at least once every `widest` indices, and an
        # index is skipped only when every draw hits a reserved value group.
        widest = max(len(turn.asks) for turn in workflow.turns)
        for index in range(per_workflow, per_workflow + 4 * widest * (missing + _DISTINCT_DRAWS)):
            if missing == 0:
                break
            if _held_out_slot(index, workflow, recipe.eval):
                continue
            params = _distinct_params(workflow, seed, index, con, recipe.schema_, cache, used, reserved,
                                      group_of=lambda p: _group_key(p, first))
            if params is None:
                continue
            instance = _instance(recipe, workflow, index, params, root, sources, texts)
            out.append(instance)
            split_of[instance.instance_id] = "train"
            missing -= 1
    return out, split_of


# Fresh instances are drawn from this index on: far past any index the train split's top-up
# reaches, so their seeded draws and ids never coincide with a split's.
FRESH_INDEX_BASE = 1_000_000


def draw_fresh_instances(
    recipe: Recipe,
    con: Any,
    seed: int,
    per_workflow: int,
    taken: Sequence[Mapping[str, Any]],
    solution_root: str | Path = ".",
    solution_sources: Mapping[str, str | Path] | None = None,
) -> list[Instance]:
    """Instances no split holds: ``per_workflow`` per trained workflow, for Stage II to play.

    Each asks in a trainable phrasing (a held-out phrasing stays new to every stage) with a
    value group (the values its first turn's reference reads) that no instance in
    ``taken`` has, and no turn whose questions so far a taken turn (or an earlier fresh
    one) asks: not trained by SFT, not held by dev or test. Held-out workflows get
    none. A param space with fewer free groups gives a workflow fewer instances; the
    caller counts them. Ids are ``<workflow>-rl<n>``.

    Args:
        recipe: The resolved recipe.
        con: A DuckDB connection with the logical views bound.
        seed: The run's seed (the draws are a pure function of it).
        per_workflow: Fresh instances wanted per workflow.
        taken: The run's instances as records (``Instance.to_dict`` form), every split.
        solution_root: As for :func:`make_instances`.
        solution_sources: As for :func:`make_instances`.
    """
    root = Path(solution_root)
    sources = {key: Path(value) for key, value in (solution_sources or {}).items()}
    texts: dict[str, str] = {}
    cache: dict = {}
    reads = first_turn_reads(recipe, solution_root, solution_sources)
    held_workflows = set(recipe.eval.holdout_workflows)
    out: list[Instance] = []
    for workflow in recipe.workflows:
        if workflow.name in held_workflows or per_workflow <= 0:
            continue
        first = reads[workflow.name]
        mine = [i for i in taken if i["workflow"] == workflow.name]
        used = {json.dumps(i["params"], sort_keys=True, default=str) for i in mine}
        forbidden = frozenset(_group_key(i["params"], first) for i in mine)
        # A first question may not ask every value its reference reads: the same words can
        # then come with other values. A fresh row never repeats a taken turn's questions.
        asked = {tuple(t["ask"] for t in i["turns"][: n + 1]) for i in mine for n in range(len(i["turns"]))}
        found = 0
        widest = max(len(turn.asks) for turn in workflow.turns)
        for index in range(FRESH_INDEX_BASE, FRESH_INDEX_BASE + 4 * widest * (per_workflow + _DISTINCT_DRAWS)):
            if found == per_workflow:
                break
            if _held_out_slot(index, workflow, recipe.eval):
                continue
            params = _distinct_params(workflow, seed, index, con, recipe.schema_, cache, used, forbidden,
                                      group_of=lambda p: _group_key(p, first))
            # A repeat of an earlier fresh group would train one question twice: skip it.
            if params is None or _group_key(params, first) in forbidden:
                continue
            forbidden |= {_group_key(params, first)}
            instance = _instance(recipe, workflow, index, params, root, sources, texts)
            questions = [tuple(t.ask for t in instance.turns[: n + 1]) for n in range(len(instance.turns))]
            if asked & set(questions):
                continue
            asked |= set(questions)
            out.append(Instance(instance.workflow, f"{workflow.name}-rl{found:04d}", instance.params,
                                instance.turns))
            found += 1
    return out


def _held_out_slot(index: int, workflow: Workflow, eval_spec: EvalSpec) -> bool:
    """Whether the instance at ``index`` asks some turn in a held-out phrasing."""
    return any(_phrasing_for(index, workflow, len(turn.asks), eval_spec)
               >= len(turn.asks) - _held_out(eval_spec, len(turn.asks)) for turn in workflow.turns)
