"""The ads analytics world: warehouse generator, logical binding, the Ads API, the world step.

The API module is imported by every sandbox job, so this package imports nothing
heavier than it on import; the generator and step load on first use.
"""

from runtime.world.api import (
    ApiError,
    ForbiddenQueryError,
    QueryError,
    UnknownEntityError,
    UnknownFieldError,
    WarehouseApi,
    connect,
)

__all__ = [
    "WarehouseApi", "connect", "ApiError", "UnknownEntityError", "UnknownFieldError", "ForbiddenQueryError",
    "QueryError", "generate_warehouse", "logical_data_hash", "data_profile", "run_world",
]


def __getattr__(name: str):
    # Lazy: importing the API (every sandbox job does) must not import the generator.
    if name == "generate_warehouse":
        from runtime.world.generate import generate_warehouse
        return generate_warehouse
    if name == "logical_data_hash":
        from runtime.world.binding import logical_data_hash
        return logical_data_hash
    if name == "data_profile":
        from runtime.world.profile import data_profile
        return data_profile
    if name == "run_world":
        from runtime.world.step import run_world
        return run_world
    raise AttributeError(name)
