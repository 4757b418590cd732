"""The rollouts: the craft agent loop as TRL's ``rollout_func``, and the tokens it trains.

Why a ``rollout_func`` and not TRL's ``tools=``: TRL's tool loop parses tool calls
as ``<tool_call>{json}</tool_call>`` through ``tokenizer.response_template`` and
calls a Python function with JSON arguments. The craft agent's tool call is the
``<CODE>`` block of a three-block turn, run in the sandbox with the instance's
params; the plan and the code must be scored together. So the rollout is the
agent loop itself (``runtime.agent.run_episodes``), sampling with the trainer's
model: the ``<CODE>`` of a completion runs in the sandbox, its output comes back as
a ``tool`` message, and the model continues, up to ``max_turns`` model calls. The
tool tokens are spliced into the completion with ``env_mask = 0`` so they are never
trained, exactly as TRL does for its own tool loop.
"""

from __future__ import annotations

from runtime.train.grpo.job import GRPOJob, GRPOSetupError
from runtime.train.grpo.rows import RolloutTask, prompt_key

__all__ = ["UNKNOWN_LOGPROB", "completion_tokens", "play", "DynamicSampling", "make_rollout_func",
           "rollout_copy_bias"]

# What TRL's GRPOTrainer takes for a log-prob the sampler did not report (it maps vLLM's
# `None` to it too, and zeroes the importance-sampling difference there).
UNKNOWN_LOGPROB = float("nan")


def completion_tokens(tokenizer, transcript: list[dict], n_prompt: int, generations: list) -> dict:
    """The completion of a multi-turn rollout as TRL trains it: the policy's turns trained, the rest masked.

    The whole ``transcript`` (prompt messages first; each later assistant message is one
    generation) is rendered with the chat template, exactly as each later generation saw
    its history: the tool messages and later user turns between two generations get
    ``env_mask`` 0, and each assistant turn the template's generation span. A turn cut
    off at ``max_new_tokens`` never wrote the end-of-turn token the template closes it
    with, so that token is masked too. Log-probs are the sampled ones where the rendered
    turn is the sampled ids (a byte-level tokenizer can re-tokenize decoded text
    differently), else NaN: TRL's name for "unknown". With vLLM rollouts TRL corrects
    for the sampler's drift by the ratio of its own log-probs to these; it reads NaN as
    "no correction" (ratio 1), but 0.0 as a token sampled with certainty.
    """
    prompt_ids = generations[0].prompt_ids
    last = max(i for i, m in enumerate(transcript) if m["role"] == "assistant")
    rendered = tokenizer.apply_chat_template(transcript[: last + 1], return_dict=True,
                                             return_assistant_tokens_mask=True)
    ids, trained = list(rendered["input_ids"]), list(rendered["assistant_masks"])
    if ids[: len(prompt_ids)] != prompt_ids:
        raise GRPOSetupError("the chat template is not prefix-preserving; multi-turn rollouts need one")
    end = max(i for i, flag in enumerate(trained) if flag) + 1
    ids, trained = ids[len(prompt_ids):end], trained[len(prompt_ids):end]
    runs, start = [], None                      # [start, stop) of each assistant turn's trained span
    for i, flag in enumerate(trained + [0]):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            runs.append((start, i))
            start = None
    if len(runs) != len(generations):
        raise GRPOSetupError(f"the chat template marks {len(runs)} assistant spans for {len(generations)} "
                             "generations; it needs {% generation %} around each assistant turn")
    mask, logps = [int(flag) for flag in trained], [UNKNOWN_LOGPROB] * len(ids)
    eos_id = tokenizer.eos_token_id
    for (first, stop), gen in zip(runs, generations):
        sampled = gen.completion_ids
        if not sampled or sampled[-1] != eos_id:     # cut off: the closing token is the template's
            mask[stop - 1] = 0
            stop -= 1
        if ids[first:stop] == sampled[: stop - first] and stop - first == len(sampled):
            logps[first:stop] = list(gen.logprobs)
    return {"completion_ids": ids, "logprobs": logps, "env_mask": mask}


def play(job: GRPOJob, generate, sandbox, plays: list[RolloutTask], prompts: list[list[dict]],
         overlap: bool = False) -> tuple:
    """Run each rollout task's turns with ``generate``: episodes, transcripts and generations.

    ``overlap`` generates for half the tasks while the other half's code runs in the
    sandbox (training rollouts; ``benchmarks/rollout.py`` measures the difference).
    """
    from craftc.ir import BlockFormat
    from runtime.agent import TurnWording, run_episodes

    generations: dict[int, list] = {i: [] for i in range(len(plays))}
    transcripts: list[list[dict]] = []
    episodes = run_episodes(generate, [p.task for p in plays], "", sandbox, BlockFormat(**job.fmt),
                            job.stage["max_turns"], TurnWording(**job.wording),
                            on_generation=lambda i, _t, gen: generations[i].append(gen), prefixes=prompts,
                            transcripts=transcripts, overlap=overlap, earlier_turns=job.earlier_turns)
    return episodes, transcripts, [generations[i] for i in range(len(plays))]


class DynamicSampling:
    """DAPO's dynamic sampling: groups whose rollouts all score the same R_outcome are replaced.

    Such a group (every rollout passes, or every one fails) has zero advantage and gives no
    gradient. For up to ``rounds`` rounds, each such group of a step is dropped and a group
    of another row, taken from a seeded cycle over the rows not in the step, is rolled out
    in its place. ``per_step`` keeps, for each rollout call, the groups it had, how many
    were dropped and how many were still flat when the rounds ran out; the trainer logs the
    same figures (``dynamic_sampling/...``). With 0 rounds nothing is replaced and each
    step's flat groups are only counted.
    """

    def __init__(self, rounds: int, group: int, keys: list[str], seed: int):
        import random

        self.rounds, self.group = rounds, group
        self._order = list(keys)
        random.Random(seed).shuffle(self._order)
        self._next = 0
        self.per_step: list[dict] = []

    def _draw(self, busy: set[str]) -> str | None:
        for _ in range(len(self._order)):
            key = self._order[self._next % len(self._order)]
            self._next += 1
            if key not in busy:
                return key
        return None

    def flat_groups(self, outcomes: list[float]) -> list[int]:
        """Indices of the groups whose outcomes are all equal."""
        g = self.group
        return [i for i in range(len(outcomes) // g)
                if max(outcomes[i * g:(i + 1) * g]) - min(outcomes[i * g:(i + 1) * g]) < 1e-9]

    def refill(self, keys: list[str], results: list[tuple], outcome_of, play_keys) -> tuple[list, list]:
        """Replace flat groups in place; ``results[i]`` is rollout i's (episode, transcript, generations).

        ``outcome_of(key, episode)`` scores a rollout's R_outcome; ``play_keys(keys)``
        rolls out the given row keys (one rollout each) and returns their results.
        """
        g = self.group
        record = {"groups": len(keys) // g, "dropped": 0, "replaced": 0, "flat_after": 0}
        # TRL hands each process whole groups of one prompt; anything else is left as it is.
        if len(keys) % g or any(len(set(keys[i:i + g])) != 1 for i in range(0, len(keys), g)):
            record["unaligned"] = True
            self.per_step.append(record)
            return keys, results
        outcomes = [outcome_of(k, r[0]) for k, r in zip(keys, results)]
        for _ in range(self.rounds):
            flat = self.flat_groups(outcomes)
            if not flat:
                break
            busy = set(keys)
            swaps = []
            for index in flat:
                key = self._draw(busy)
                if key is None:
                    break
                busy.add(key)
                swaps.append((index, key))
            record["dropped"] += len(flat)
            if not swaps:
                break
            fresh = play_keys([key for _, key in swaps for _ in range(g)])
            for n, (index, key) in enumerate(swaps):
                for j in range(g):
                    at = index * g + j
                    keys[at], results[at] = key, fresh[n * g + j]
                    outcomes[at] = outcome_of(key, results[at][0])
            record["replaced"] += len(swaps)
        record["flat_after"] = len(self.flat_groups(outcomes))
        self.per_step.append(record)
        return keys, results


def rollout_copy_bias(job: GRPOJob) -> float:
    """``stage grpo { copy_bias }``: what rollouts and the measurement add to the asked words' logits.

    A plan carries it only where a recipe sets it; absent, the job holds the IR's default (no bias).
    """
    return float(job.stage["copy_bias"])


def make_rollout_func(job: GRPOJob, tokenizer, sandbox, plays: dict[str, RolloutTask], dynamic=None,
                      outcome_of=None):
    """TRL ``rollout_func``: each prompt's turns played by the policy, tool and user tokens masked out.

    With ``dynamic`` (a :class:`DynamicSampling`) and ``outcome_of(key, episode)``, flat
    groups are replaced before the completions are handed back: the returned prompt ids,
    completions and ``row_key`` are the replacements', so the rewards score what was played.
    """
    from runtime.agent import HFGenerator, TrainerVLLMGenerator

    by_prompt: dict[str, str] = {}
    for key, task in plays.items():
        by_prompt.setdefault(prompt_key(task.prompt), key)

    def rollout(prompts, trainer):
        # The engine the plan chose (`rollout transformers | vllm`); the loop is the same.
        if getattr(trainer, "use_vllm", False):
            generate = TrainerVLLMGenerator(trainer, tokenizer)
        else:
            generate = HFGenerator(trainer.accelerator.unwrap_model(trainer.model), tokenizer,
                                   max_new_tokens=job.stage["max_new_tokens"], do_sample=True,
                                   temperature=job.stage["temperature"], batch_size=len(prompts),
                                   copy_bias=rollout_copy_bias(job))

        def play_keys(keys: list[str]) -> list[tuple]:
            episodes, transcripts, generations = play(job, generate, sandbox, [plays[k] for k in keys],
                                                      [plays[k].prompt for k in keys], overlap=True)
            return list(zip(episodes, transcripts, generations))

        keys = [by_prompt[prompt_key(p)] for p in prompts]
        results = play_keys(keys)
        if dynamic is not None and outcome_of is not None:
            keys, results = dynamic.refill(keys, results, outcome_of, play_keys)
            record = dynamic.per_step[-1]
            metrics = getattr(trainer, "_metrics", {}).get("train")
            if metrics is not None:
                for name in ("dropped", "replaced", "flat_after"):
                    metrics[f"dynamic_sampling/{name}"].append(float(record[name]))
        # With several processes vLLM calls go in lockstep: keep answering the others' calls
        # until every process's episodes have ended (TrainerVLLMGenerator).
        getattr(generate, "finish", lambda: None)()
        out = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_mask": [], "episode": [],
               "row_key": keys}
        for key, (episode, transcript, gens) in zip(keys, results):
            tokens = completion_tokens(tokenizer, transcript, len(plays[key].prompt), gens)
            out["prompt_ids"].append(gens[0].prompt_ids)
            for name, values in tokens.items():
                out[name].append(values)
            out["episode"].append(episode)
        return out

    return rollout
