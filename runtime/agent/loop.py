"""The multi-turn agent loop: model turn -> sandbox -> tool message -> repair.

For each user turn of a task the model writes a three-block turn; its ``<CODE>``
runs in the sandbox and the output comes back as a ``tool`` message. A successful
execution or an ``<ANSWER>`` ends the user turn; an error lets the model repair,
up to ``max_turns`` model calls per user turn. After a successful run, when another
user turn follows, the model first writes its ``<ANSWER>`` (one more call, kept as
``UserTurn.answer_call``, outside ``calls``), because every training conversation
closes each turn that way. Then the next user turn is asked, with the history in
context: the whole transcript, or under ``earlier_turns compact`` (``thinks``) each
earlier turn as its question, last CODE (THINK) and answer (``runtime.agent.history``).

Episodes advance in lockstep so that every step is one batched ``generate`` call
(greedy decoding is then deterministic and fast enough for evaluation).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from craftc.ir import BlockFormat
from runtime.distill.blocks import parse_turn
from runtime.agent.episode import Episode, ExecRecord, ModelCall, UserTurn, count_discovery, tool_output_text
from runtime.agent.generate import Generation, HFGenerator
from runtime.agent.history import DEFAULT_EARLIER_TURNS, EARLIER_TURNS, compact_before_last_question
from runtime.agent.repeats import repeats_failed_code
from runtime.agent.task import AgentTask

__all__ = ["TurnWording", "run_episode", "run_episodes"]


@dataclass(frozen=True)
class TurnWording:
    """How a user turn and a tool turn are worded (``prompts/turn.md``)."""

    user: str = "{ask}"
    tool: str = "{output}"

    @classmethod
    def from_file(cls, path: str | Path) -> "TurnWording":
        """Read ``prompts/turn.md``: the section holding ``{ask}`` and the one holding ``{output}``.

        Sections are separated by Markdown headings (``#``) or blank-line runs; a
        file that is one template with both placeholders is used for both.
        """
        text = Path(path).read_text()
        sections, current = [], []
        for line in text.splitlines():
            if line.startswith("#"):
                if current:
                    sections.append("\n".join(current).strip("\n"))
                current = []
                continue
            current.append(line)
        if current:
            sections.append("\n".join(current).strip("\n"))
        user = next((s for s in sections if "{ask}" in s and "{output}" not in s), None)
        tool = next((s for s in sections if "{output}" in s and "{ask}" not in s), None)
        return cls(user=user or cls.user, tool=tool or cls.tool)

    def render_user(self, ask: str) -> str:
        return self.user.replace("{ask}", ask)

    def render_tool(self, output: str) -> str:
        return self.tool.replace("{output}", output)


@dataclass
class _Run:
    """Loop state of one episode."""

    task: AgentTask
    episode: Episode
    messages: list[dict]
    turn_no: int = 0
    done: bool = False
    answering: bool = False      # the turn's code ran: the next call writes its answer
    earlier_turns: str = DEFAULT_EARLIER_TURNS   # what a new question keeps of the turn before it
    fmt: BlockFormat = BlockFormat()             # how to find the blocks a shortening rule keeps


def _start_turn(run: _Run, wording: TurnWording) -> None:
    ask = run.task.turns[run.turn_no].ask
    run.messages.append({"role": "user", "content": wording.render_user(ask)})
    if run.earlier_turns != "full":
        run.messages = compact_before_last_question(run.messages, run.fmt, run.earlier_turns)
    run.episode.turns.append(UserTurn(index=run.turn_no, ask=ask))


def _advance(run: _Run, wording: TurnWording) -> None:
    run.turn_no += 1
    if run.turn_no >= len(run.task.turns):
        run.done = True
    else:
        _start_turn(run, wording)


def _execute(sandbox, jobs: list[tuple[str, dict]]) -> list:
    if not jobs:
        return []
    if hasattr(sandbox, "run_many"):            # all workers at once
        return sandbox.run_many(jobs)
    return [sandbox.run(code, params) for code, params in jobs]


def run_episodes(generate, tasks: list[AgentTask], system_prompt: str, sandbox, fmt=None,
                 max_turns: int = 3, wording: TurnWording | None = None, arm: str = "",
                 on_generation=None, prefixes: list[list[dict]] | None = None,
                 transcripts: list | None = None, overlap: bool = False, on_episode=None,
                 earlier_turns: str = DEFAULT_EARLIER_TURNS, resample=None) -> list[Episode]:
    """Run every task's conversation to the end, one batched model call per step.

    Args:
        generate: ``generate(conversations) -> list[Generation]`` (see ``HFGenerator``).
        tasks: The instances to work on.
        system_prompt: The stripped or stuffed system prompt.
        sandbox: Anything with ``run(code, params) -> ExecResult`` (a ``SandboxPool``).
        fmt: Block tag names (``craftc.ir.BlockFormat``, dict or None).
        max_turns: Model calls allowed per user turn (first try plus repairs).
        wording: User and tool message templates.
        arm: Label stored on each episode.
        on_generation: Optional ``callback(task_index, turn_no, Generation)`` (GRPO uses it
            to collect token ids and log-probs).
        prefixes: Optional per-task conversation so far, ending with the first turn's user
            message already rendered (GRPO rollouts of a follow-up turn); replaces
            ``system_prompt`` and the first user message.
        transcripts: Optional list, extended with each task's final message list (what
            the model saw and wrote, tool and later user messages included).
        overlap: Split the tasks into two cohorts and generate for one while the other's
            code runs in the sandbox (GRPO rollouts; ``benchmarks/rollout.py`` measures it).
            Each task sees the same steps either way; only the batching differs.
        on_episode: Optional ``callback(task_index, Episode)``, called once per task as soon
            as its conversation ends (evaluation scores it there and shows progress).
            Episodes end in the order the batched steps finish them, not in task order.
        earlier_turns: ``full``, ``compact`` or ``thinks``: what later questions see of the turns before
            them (``runtime.agent.history``; the plan's ``specs/input_builder.json``).
        resample: Optional sampling ``generate`` (``runtime.agent.repeats.Resampler``): a
            repair whose code repeats code that already failed in its turn is decoded again
            with it, and the sample is run (``eval { repeat_temperature }``).

    Returns:
        One ``Episode`` per task, in order.
    """
    if max_turns < 1:
        raise ValueError(f"max_turns must be at least 1, got {max_turns}")
    if earlier_turns not in EARLIER_TURNS:
        raise ValueError(f"earlier_turns must be one of {', '.join(EARLIER_TURNS)}, got {earlier_turns!r}")
    wording = wording or TurnWording()
    fmt = _block_format(fmt)
    runs = []
    for n, task in enumerate(tasks):
        run = _Run(task, Episode(task.id, task.workflow, task.split, arm),
                   [{"role": "system", "content": system_prompt}],
                   earlier_turns=earlier_turns, fmt=fmt)
        if prefixes is not None:
            run.messages = [dict(m) for m in prefixes[n]]
            run.episode.turns.append(UserTurn(index=0, ask=task.turns[0].ask))
        else:
            _start_turn(run, wording)
        runs.append(run)
    ended = _Ended(runs, on_episode)
    if resample is not None and (overlap or on_generation is not None):
        raise ValueError("resample decodes eval's repeated repairs again; rollouts (overlap, on_generation) "
                         "sample already")
    if overlap:
        _run_overlapped(runs, generate, sandbox, fmt, max_turns, wording, on_generation, ended)
    else:
        while True:
            active = [i for i, run in enumerate(runs) if not run.done]
            if not active:
                break
            waiting, jobs = _generate_step(runs, active, generate, fmt, max_turns, wording, on_generation,
                                           resample)
            for (i, call), result in zip(waiting, _execute(sandbox, jobs)):
                _finish_with_exec(runs[i], call, result, max_turns, wording)
            ended.report(active)
    ended.report(range(len(runs)))
    if transcripts is not None:
        transcripts.extend(run.messages for run in runs)
    return [run.episode for run in runs]


class _Ended:
    """Calls ``on_episode`` once for each run that has ended since the last report."""

    def __init__(self, runs: list[_Run], on_episode):
        self.runs, self.on_episode, self.seen = runs, on_episode, set()

    def report(self, indices) -> None:
        if self.on_episode is None:
            return
        for i in indices:
            if self.runs[i].done and i not in self.seen:
                self.seen.add(i)
                self.on_episode(i, self.runs[i].episode)


def _generate_step(runs, active, generate, fmt, max_turns, wording, on_generation, resample=None):
    """One batched model call for the ``active`` runs; returns the code jobs it produced.

    With ``resample``, a repair whose code repeats failed code is decoded again by it."""
    conversations = [runs[i].messages for i in active]
    generations: list[Generation] = generate(conversations)
    resampled: set[int] = set()
    if resample is not None:
        repeats = [n for n, (i, gen) in enumerate(zip(active, generations))
                   if not runs[i].answering
                   and repeats_failed_code(runs[i].episode.turns[-1], parse_turn(gen.text, fmt).code)]
        if repeats:
            for n, gen in zip(repeats, resample([conversations[n] for n in repeats])):
                generations[n] = gen
            resampled = {active[n] for n in repeats}
    jobs, waiting = [], []
    for i, gen in zip(active, generations):
        run = runs[i]
        if on_generation is not None:
            on_generation(i, run.turn_no, gen)
        parsed = parse_turn(gen.text, fmt)
        call = ModelCall(gen.input_tokens, gen.text, parsed.think, parsed.plan, parsed.code,
                         parsed.answer, parsed.complete, resampled=i in resampled, cut_off=gen.cut_off)
        run.messages.append({"role": "assistant", "content": gen.text})
        if run.answering:
            _finish_answer(run, call, wording)
            continue
        run.episode.turns[-1].calls.append(call)
        if parsed.code:
            jobs.append((parsed.code, run.task.params_asked(run.turn_no)))
            waiting.append((i, call))
        else:
            _finish_without_code(run, call, parsed.answer, max_turns, wording)
    return waiting, jobs


def _run_overlapped(runs, generate, sandbox, fmt, max_turns, wording, on_generation, ended: _Ended) -> None:
    """A two-stage pipeline: one cohort generates while the other's code runs."""
    from concurrent.futures import ThreadPoolExecutor

    cohorts = [list(range(0, len(runs), 2)), list(range(1, len(runs), 2))]
    pending: dict[int, tuple] = {}              # cohort -> (waiting calls, future of their results)
    with ThreadPoolExecutor(max_workers=1) as executor:
        while True:
            progressed = False
            for c, members in enumerate(cohorts):
                if c in pending:               # this cohort's code must finish before it generates again
                    waiting, future = pending.pop(c)
                    for (i, call), result in zip(waiting, future.result()):
                        _finish_with_exec(runs[i], call, result, max_turns, wording)
                ended.report(members)
                active = [i for i in members if not runs[i].done]
                if not active:
                    continue
                progressed = True
                waiting, jobs = _generate_step(runs, active, generate, fmt, max_turns, wording, on_generation)
                pending[c] = (waiting, executor.submit(_execute, sandbox, jobs))
            if not progressed and not pending:
                break


def _block_format(fmt) -> BlockFormat:
    if fmt is None:
        return BlockFormat()
    if isinstance(fmt, dict):
        return BlockFormat(**fmt)
    return fmt


def _finish_without_code(run: _Run, call: ModelCall, answer: str | None, max_turns: int,
                         wording: TurnWording) -> None:
    turn = run.episode.turns[-1]
    if answer is not None:
        turn.answer = answer
        _advance(run, wording)
        return
    # Neither code nor answer: tell the model, let it try again within its budget.
    call.tool_message = wording.render_tool("FormatError: no <CODE> block and no <ANSWER> block")
    if len(turn.calls) >= max_turns:
        _advance(run, wording)
    else:
        run.messages.append({"role": "tool", "content": call.tool_message})


def _finish_answer(run: _Run, call: ModelCall, wording: TurnWording) -> None:
    """The call after a successful run: whatever it writes closes the turn (code is not run)."""
    turn = run.episode.turns[-1]
    turn.answer_call, turn.answer = call, call.answer
    run.answering = False
    _advance(run, wording)


def _finish_with_exec(run: _Run, call: ModelCall, result, max_turns: int, wording: TurnWording) -> None:
    record = ExecRecord.from_result(result)
    call.exec = record
    call.discovery_calls = count_discovery(record.api_calls)
    call.tool_message = wording.render_tool(tool_output_text(record))
    run.messages.append({"role": "tool", "content": call.tool_message})
    turn = run.episode.turns[-1]
    if record.ok:
        turn.final_ok, turn.final_code, turn.final_plan = True, call.code, call.plan
        turn.final_frame = result.result_frame
        if run.turn_no + 1 < len(run.task.turns):
            # As in training, a turn closes with the agent's ANSWER before the next question;
            # the next call writes it. The last turn's answer is not asked: nothing reads it.
            run.answering = True
        else:
            _advance(run, wording)
    elif len(turn.calls) >= max_turns:
        _advance(run, wording)


def run_episode(model_or_generate_fn, tokenizer, instance: AgentTask, system_prompt: str, sandbox,
                fmt=None, max_turns: int = 3, wording: TurnWording | None = None,
                max_new_tokens: int = 256) -> Episode:
    """Run one task's conversation (greedy when given a model).

    Args:
        model_or_generate_fn: A ``transformers`` model, or a ``generate`` function.
        tokenizer: The model's tokenizer (unused with a ``generate`` function).
        instance: The task.
        system_prompt: The system prompt for the arm.
        sandbox: ``run(code, params) -> ExecResult``.
        fmt: Block tag names.
        max_turns: Model calls per user turn.
        wording: User/tool message templates.
        max_new_tokens: Per model call, with a model.

    Returns:
        The episode.
    """
    generate = model_or_generate_fn
    if hasattr(model_or_generate_fn, "generate") and hasattr(model_or_generate_fn, "config"):
        generate = HFGenerator(model_or_generate_fn, tokenizer, max_new_tokens=max_new_tokens)
    return run_episodes(generate, [instance], system_prompt, sandbox, fmt, max_turns, wording)[0]
