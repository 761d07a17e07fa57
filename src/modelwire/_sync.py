"""Running a coroutine from code that has no event loop of its own (scripts, notebooks)."""

from __future__ import annotations

import asyncio
from typing import Any, Coroutine, TypeVar

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T], what: str) -> T:
    """Run ``coro`` to its end; inside a running event loop, refuse with a clear error
    (``asyncio.run`` would say only that it cannot be called from a running loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        running = False
    else:
        running = True
    if not running:
        # Outside the except block: an error of the coroutine is raised as itself, not
        # "during handling of" the RuntimeError that said no loop was running.
        return asyncio.run(coro)
    coro.close()
    from .errors import AgentError

    raise AgentError(
        (
            f"{what}_sync() cannot run inside a running event loop (a notebook cell, an async "
            f"function): use `await {what}(...)` there"
        )
    )
