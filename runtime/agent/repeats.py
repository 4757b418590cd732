"""Decoding a repair again when greedy decoding repeats code that already failed.

A model that does not read the error it was shown writes, greedily, the code it wrote
before, and that code fails the same way: the call is paid for and the turn learns
nothing from it (SmolLM2 on dev: 32 of 39 repairs). With ``eval { repeat_temperature T }``
the agent loop decodes such a call once more, sampled at ``T``, and runs the sample; the
call is marked ``ModelCall.resampled``. The first attempt of a turn and a repair that
writes new code stay greedy.

Sampling draws from a generator seeded by the run's seed and the number of resampled
batches so far, inside ``torch.random.fork_rng``: a rerun of the same plan decodes the
same samples, and nothing else that draws random numbers is moved.
"""

from __future__ import annotations

from runtime.agent.episode import UserTurn

__all__ = ["Resampler", "repeats_failed_code", "same_code"]


def same_code(a: str | None, b: str | None) -> bool:
    """Code that runs the same: equal up to whitespace.

    >>> same_code("SELECT 1\\nFROM t", "SELECT 1 FROM  t"), same_code("SELECT 1", "SELECT 2"), same_code(None, "x")
    (True, False, False)
    """
    return a is not None and b is not None and a.split() == b.split()


def repeats_failed_code(turn: UserTurn, code: str | None) -> bool:
    """``code`` is code an earlier call of ``turn`` already ran and failed with.

    Every call a turn holds before a new one failed or wrote no code (a turn ends at its
    first successful run), so any earlier call with the same code counts.
    """
    return bool(code) and any(same_code(call.code, code) for call in turn.calls)


class Resampler:
    """``generate`` (a sampling generator) seeded afresh for each batch it decodes.

    Args:
        generate: ``generate(conversations) -> list[Generation]`` that samples.
        seed: The run's seed; batch ``k`` draws from ``seed + k``.
    """

    def __init__(self, generate, seed: int):
        self.generate, self.seed, self.batches = generate, seed, 0

    def __call__(self, conversations: list[list[dict]]):
        import torch

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed + self.batches)
            self.batches += 1
            return self.generate(conversations)
