"""verl's ``run_code`` tool: a ``<CODE>`` block run in craft's sandbox against the warehouse.

Named by ``stages/<stage>/tool_config.yaml``. In verl 0.9.1 ``create``, ``execute`` and
``release`` wrap every single call, so the instance's params travel in the create kwargs
(``extra_info.tools_kwargs.run_code.create_kwargs.params``, JSON text) and live only for
that call. The sandbox pool is one per worker process, started on first use, on the
warehouse named by ``CRAFT_WAREHOUSE`` (launch.sh passes it to every Ray actor).
"""

from __future__ import annotations

import json
import os
from typing import Any
from uuid import uuid4

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import ToolResponse

__all__ = ["CraftCodeTool", "WAREHOUSE_ENV"]

WAREHOUSE_ENV = "CRAFT_WAREHOUSE"
_POOLS: dict[tuple, Any] = {}


def _pool(config: dict):
    from runtime.sandbox import SandboxLimits, SandboxPool

    warehouse = os.environ.get(WAREHOUSE_ENV)
    if not warehouse:
        raise RuntimeError(f"{WAREHOUSE_ENV} is not set: launch the stage with its launch.sh, which passes the "
                           "run's warehouse to every Ray actor")
    key = (warehouse, config.get("workers", 2))
    if key not in _POOLS:
        limits = SandboxLimits(wall_timeout_s=float(config.get("timeout_s", 10.0)),
                               memory_mb=int(config.get("memory_mb", 1024)),
                               secret_env=tuple(config.get("secret_env", ())))
        _POOLS[key] = SandboxPool(int(config.get("workers", 2)), warehouse, limits)
    return _POOLS[key]


class CraftCodeTool(BaseTool):
    """Runs the code of a ``run_code`` call in the sandbox and answers with craft's tool message."""

    def __init__(self, config: dict, tool_schema):
        super().__init__(config, tool_schema)
        self._params: dict[str, dict] = {}
        self.sandbox = None            # a test may hand one in; otherwise _pool(config) on first use

    async def create(self, instance_id: str | None = None, **kwargs) -> tuple[str, ToolResponse]:
        instance_id = instance_id or str(uuid4())
        params = (kwargs.get("create_kwargs") or {}).get("params") or "{}"
        self._params[instance_id] = json.loads(params) if isinstance(params, str) else dict(params)
        return instance_id, ToolResponse()

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs) -> tuple[ToolResponse, float, dict]:
        import asyncio

        from runtime.agent import ExecRecord, tool_output_text

        code = str(parameters.get("code", ""))
        sandbox = self.sandbox or _pool(self.config)
        params = self._params.get(instance_id, {})
        result = await asyncio.get_running_loop().run_in_executor(None, sandbox.run, code, params)
        record = ExecRecord.from_result(result)
        return ToolResponse(text=tool_output_text(record)), 0.0, {"ok": record.ok, "rows": record.rows}

    async def release(self, instance_id: str, **kwargs) -> None:
        self._params.pop(instance_id, None)
