"""The multi-turn agent loop: the model writes three-block turns, the sandbox runs the code."""

from runtime.agent.episode import (DISCOVERY_CALLS, Episode, ExecRecord, ModelCall, UserTurn, count_discovery,
                                   answer_text, tool_output_text)
from runtime.agent.generate import Generation, HFGenerator, TrainerVLLMGenerator, VLLMGenerator, render_prompt_ids
from runtime.agent.loop import TurnWording, run_episode, run_episodes
from runtime.agent.task import AgentTask, TaskFormatError, TaskTurn, load_tasks

__all__ = [
    "AgentTask", "DISCOVERY_CALLS", "Episode", "ExecRecord", "Generation", "HFGenerator", "TrainerVLLMGenerator", "VLLMGenerator", "ModelCall",
    "TaskFormatError", "TaskTurn", "TurnWording", "UserTurn", "count_discovery", "load_tasks",
    "answer_text", "render_prompt_ids", "run_episode", "run_episodes", "tool_output_text",
]
