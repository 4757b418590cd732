"""The leak audit: no dev or test turn may appear in anything the model is trained with.

The dataset step runs :func:`audit` over every training artifact a run builds before
any model sees it, and fails with a message naming the artifact and the turn when a
held-out turn shows up in one. What counts as a held-out turn appearing, per leak kind:

- ``question_text``: the turn's questions so far (the conversation's user messages up
  to and including it, as the agent reads them) are a training conversation's questions
  so far. A follow-up such as "Make it weekly" is the same words in every conversation;
  it is held out by the questions before it.
- ``reference_code``: the turn's reference code (whitespace collapsed) is a training
  turn's code or a code block a training example writes. Code that writes none of its
  instance's values (it reads them from ``params`` as it runs) is the same for every
  instance of its turn and answers nothing by itself: only code with values counts.
- ``value_combination``: a training turn of the same workflow and position reads the
  same values (``InstanceTurn.reads``): the same question, asked in other words.
- ``tokenizer_corpus``: the turn's reference code, or a conversation's first question
  (the one that states its values), is a paragraph of the corpus the tokenizer is
  trained on.
- ``teacher_alternatives``: a value that only held-out instances of the workflow use is
  among the values the teacher was offered to swap in for a wrong answer.
- ``decoding_vocabulary``: a word that only held-out text uses (not the training
  questions, plans, code, prompts or schema) is a word of the corpus the tokenizer
  learns its vocabulary from.

Each held-out turn is also labelled with what it is new in (``turn_kinds``): a
workflow never trained on, a phrasing never trained (with values never trained), or
values never trained (in a trained phrasing).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["LEAK_KINDS", "TrainingArtifacts", "LeakError", "audit", "leak_message", "rows_overlap"]

LEAK_KINDS = ("question_text", "reference_code", "value_combination", "tokenizer_corpus", "teacher_alternatives",
              "decoding_vocabulary")
HELD_OUT_SPLITS = ("dev", "test")
_WORD = re.compile(r"[A-Za-z0-9_]+")
_CODE_BLOCK = re.compile(r"<(?P<tag>[A-Za-z_]+)>\s*(?P<body>.*?)\s*</(?P=tag)>", re.DOTALL)
_SHOWN = 20     # overlaps kept in leakage.json; the count is always whole


class LeakError(ValueError):
    """A held-out turn appears in a training artifact; the message names both."""


@dataclass
class TrainingArtifacts:
    """Everything a run trains with, as the audit reads it.

    ``examples``: SFT examples (both modes) with their ``messages``; the THINK warm-up
    is cut from these. ``grpo_instances``: the instances Stage II plays. ``corpus``: the
    tokenizer's training text. ``alternatives``: workflow -> param -> values offered to
    the teacher. ``sources``: the texts the corpus may legitimately hold besides the
    training instances (prompts, turn templates, the schema's DDL).
    """

    examples: Iterable[Mapping[str, Any]] = ()
    grpo_instances: list[Mapping[str, Any]] = field(default_factory=list)
    corpus: str = ""
    alternatives: Mapping[str, Mapping[str, list]] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    user_template: str = "{ask}"


def _collapse(text: str) -> str:
    return " ".join((text or "").split())


def _value_key(instance: Mapping[str, Any], index: int) -> str:
    turn = instance["turns"][index]
    reads = turn.get("reads") or sorted(instance["params"])
    values = {name: instance["params"].get(name) for name in reads}
    return json.dumps([instance["workflow"], index, values], sort_keys=True, default=str)


def _questions(instance: Mapping[str, Any], index: int, template: str) -> tuple[str, ...]:
    return tuple(_collapse(template.format(ask=t["ask"])) for t in instance["turns"][: index + 1])


def _example_questions(example: Mapping[str, Any]) -> set[tuple[str, ...]]:
    """Every 'questions so far' an example holds: the prefixes of its user messages."""
    asks = [_collapse(m["content"]) for m in example["messages"] if m.get("role") == "user"]
    return {tuple(asks[: n + 1]) for n in range(len(asks))}


def _example_codes(example: Mapping[str, Any], code_tag: str) -> set[str]:
    codes = set()
    for message in example["messages"]:
        if message.get("role") != "assistant":
            continue
        for match in _CODE_BLOCK.finditer(message["content"]):
            if match.group("tag") == code_tag:
                codes.add(_collapse(match.group("body")))
    return codes


def _writes_values(instance: Mapping[str, Any], code: str) -> bool:
    """Whether reference code writes any of its instance's param values into its text."""
    return any(repr(v) in code or (str(v) and str(v) in code) for v in instance["params"].values())


def _words(texts: Iterable[str]) -> set[str]:
    return {w.lower() for text in texts for w in _WORD.findall(text or "")}


def _instance_texts(instance: Mapping[str, Any]) -> list[str]:
    return [part for turn in instance["turns"] for part in (turn["ask"], turn.get("plan", ""), turn.get("code", ""))]


def audit(instances: list[Mapping[str, Any]], artifacts: TrainingArtifacts, code_tag: str = "CODE") -> dict:
    """Audit every dev and test turn against the training artifacts.

    Args:
        instances: The run's instances, each with its ``split`` (train, dev, test).
        artifacts: What the run trains with.
        code_tag: The block tag code is written in (``format.code``).

    Returns:
        The ``leakage.json`` record: per split its instances, turns and ``turn_kinds``;
        per artifact and leak kind the number of overlapping turns; ``overlaps`` (the
        first few, each naming split, turn, artifact and kind); ``overlapping_turns``
        per split (0 is the only passing value).
    """
    train = [i for i in instances if i.get("split", "train") == "train"]
    held = [i for i in instances if i.get("split") in HELD_OUT_SPLITS]
    template = artifacts.user_template

    # What each artifact holds, in the audit's terms.
    example_questions: set[tuple[str, ...]] = set()
    example_codes: set[str] = set()
    example_ids: set[str] = set()
    for example in artifacts.examples:
        example_questions |= _example_questions(example)
        example_codes |= _example_codes(example, code_tag)
        example_ids.add(example.get("instance_id", ""))
    by_id = {i["instance_id"]: i for i in train}
    trained_in_sft = [by_id[i] for i in sorted(example_ids) if i in by_id]
    held_ids = {i["instance_id"] for i in held}
    foreign = sorted(example_ids & held_ids)             # an example built from a held-out instance
    grpo = list(artifacts.grpo_instances)

    def turn_sets(group: list[Mapping[str, Any]]):
        questions, codes, values, phrasings = set(), set(), set(), set()
        for instance in group:
            for index, turn in enumerate(instance["turns"]):
                questions.add(_questions(instance, index, template))
                if turn.get("code"):
                    codes.add(_collapse(turn["code"]))
                values.add(_value_key(instance, index))
                phrasings.add((instance["workflow"], index, turn.get("phrasing_index")))
        return questions, codes, values, phrasings

    sft_q, sft_c, sft_v, sft_p = turn_sets(trained_in_sft)
    grpo_q, grpo_c, grpo_v, grpo_p = turn_sets(grpo)
    _, _, _, train_p = turn_sets(train)
    trained_workflows = {i["workflow"] for i in train}
    paragraphs = {_collapse(p) for p in artifacts.corpus.split("\n\n") if p.strip()}
    legit_words = _words([*artifacts.sources, *(t for i in train for t in _instance_texts(i))])
    held_words = _words(t for i in held for t in _instance_texts(i))
    corpus_only_held = (held_words - legit_words) & _words([artifacts.corpus])
    train_values: dict[str, dict[str, set[str]]] = {}
    for instance in train:
        for name, value in instance["params"].items():
            train_values.setdefault(instance["workflow"], {}).setdefault(name, set()).add(json.dumps(value, default=str))

    overlaps: list[dict] = []
    counts: dict[str, Counter] = {}
    leaking: dict[str, set[tuple[str, int]]] = {s: set() for s in HELD_OUT_SPLITS}
    kinds: dict[str, Counter] = {s: Counter() for s in HELD_OUT_SPLITS}
    per_split = {s: {"instances": 0, "turns": 0} for s in HELD_OUT_SPLITS}

    def found(instance, index, artifact: str, kind: str, what: str) -> None:
        counts.setdefault(artifact, Counter())[kind] += 1
        leaking[instance["split"]].add((instance["instance_id"], index))
        if len(overlaps) < _SHOWN:
            overlaps.append({"split": instance["split"], "instance_id": instance["instance_id"], "turn": index + 1,
                             "artifact": artifact, "kind": kind, "what": what[:200]})

    for instance in held:
        split = instance["split"]
        per_split[split]["instances"] += 1
        if instance["instance_id"] in foreign:
            found(instance, 0, "sft_examples", "question_text", "an SFT example is built from this instance")
        for index, turn in enumerate(instance["turns"]):
            per_split[split]["turns"] += 1
            questions = _questions(instance, index, template)
            code = _collapse(turn.get("code", ""))
            code = code if _writes_values(instance, code) else ""
            value = _value_key(instance, index)
            for artifact, (q, c, v) in (("sft_examples", (sft_q | example_questions, sft_c | example_codes, sft_v)),
                                        ("grpo_rows", (grpo_q, grpo_c, grpo_v))):
                if questions in q:
                    found(instance, index, artifact, "question_text", questions[-1])
                if code and code in c:
                    found(instance, index, artifact, "reference_code", code)
                if value in v:
                    found(instance, index, artifact, "value_combination", value)
            if code and code in paragraphs:
                found(instance, index, "tokenizer_corpus", "reference_code", code)
            elif index == 0 and _collapse(turn["ask"]) in paragraphs:
                found(instance, index, "tokenizer_corpus", "question_text", turn["ask"])
            if instance["workflow"] not in trained_workflows:
                kinds[split]["new_workflow"] += 1
            elif (instance["workflow"], index, turn.get("phrasing_index")) not in train_p | sft_p | grpo_p:
                kinds[split]["new_phrasing"] += 1
            else:
                kinds[split]["new_values"] += 1
        offered = artifacts.alternatives.get(instance["workflow"], {})
        seen = train_values.get(instance["workflow"], {})
        for name, value in instance["params"].items():
            text = json.dumps(value, default=str)
            if text not in seen.get(name, set()) and text in {json.dumps(v, default=str) for v in offered.get(name, [])}:
                found(instance, 0, "teacher_alternatives", "teacher_alternatives", f"{name} = {value}")
        if corpus_only_held:
            words = corpus_only_held & _words(_instance_texts(instance))
            if words:
                found(instance, 0, "tokenizer_corpus", "decoding_vocabulary", ", ".join(sorted(words)[:5]))
    return {
        "splits": {s: {**per_split[s], "turn_kinds": dict(sorted(kinds[s].items()))} for s in HELD_OUT_SPLITS},
        "artifacts": {a: dict(sorted(c.items())) for a, c in sorted(counts.items())},
        "overlapping_turns": {s: len(leaking[s]) for s in HELD_OUT_SPLITS},
        "overlaps": overlaps,
        "checked": list(LEAK_KINDS),
    }


def leak_message(record: dict) -> str | None:
    """The located error for an audit with overlaps, None when it is clean."""
    total = sum(record["overlapping_turns"].values())
    if not total:
        return None
    first = record["overlaps"][0]
    by = ", ".join(f"{artifact} ({', '.join(f'{k} {n}' for k, n in kinds.items())})"
                   for artifact, kinds in record["artifacts"].items())
    return (f"leak audit: {total} dev/test turn(s) appear in training artifacts: {by}. First: {first['split']} turn "
            f"`{first['instance_id']}/t{first['turn']}` in {first['artifact']} ({first['kind']}): {first['what']!r}. "
            "A held-out turn must not be trained on; rebuild the instances with `craftc run PLAN --from distill` "
            "and check what put it there")


def rows_overlap(rows: list[Mapping[str, Any]], against: list[Mapping[str, Any]], user_template: str = "{ask}",
                 code_tag: str = "CODE") -> dict:
    """How many turns of ``rows`` another set of instances already holds, per kind.

    The check of Stage II's fresh rows against SFT's train split, dev and test: a turn
    counts when its questions so far, its reference code (when it writes values) or its
    value combination is one of ``against``'s turns (the kinds of :func:`audit`).

    Returns:
        ``{"turns": N, "overlapping_turns": M, "kinds": {kind: count}, "first": [...]}``.
    """
    questions, codes, values = set(), set(), set()
    for instance in against:
        for index, turn in enumerate(instance["turns"]):
            questions.add(_questions(instance, index, user_template))
            if turn.get("code"):
                codes.add(_collapse(turn["code"]))
            values.add(_value_key(instance, index))
    kinds: Counter = Counter()
    overlapping, first, turns = set(), [], 0
    for instance in rows:
        for index, turn in enumerate(instance["turns"]):
            turns += 1
            code = _collapse(turn.get("code", ""))
            hits = [kind for kind, hit in (
                ("question_text", _questions(instance, index, user_template) in questions),
                ("reference_code", bool(code) and _writes_values(instance, code) and code in codes),
                ("value_combination", _value_key(instance, index) in values)) if hit]
            kinds.update(hits)
            if hits:
                overlapping.add((instance["instance_id"], index))
                if len(first) < _SHOWN:
                    first.append({"instance_id": instance["instance_id"], "turn": index + 1, "kinds": hits})
    return {"turns": turns, "overlapping_turns": len(overlapping), "kinds": dict(sorted(kinds.items())),
            "first": first}
