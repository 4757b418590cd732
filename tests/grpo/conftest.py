"""Fixtures shared with tests/agent, tests/eval and tests/grpo."""

from tests.agent.shared_fixtures import sandbox, tiny_model, warehouse  # noqa: F401
