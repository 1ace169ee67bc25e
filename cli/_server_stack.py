"""Which HTTP parser and event loop serve and run put the gateway on.

uvicorn's httptools protocol (llhttp, in C) and uvloop (libuv) take about 0.2 ms off the
gateway's CPU per relayed request (bench/gateway.py; uvicorn's own share falls from about
180 to 60 µs); each is used when it can be imported. ``COPILOT_HOST_PURE_PYTHON=1``
forces h11 and asyncio's own loop, the pure-Python pair, to rule the accelerations out
when something looks wrong.
"""

from __future__ import annotations

import asyncio
import importlib
import os
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

__all__ = ["PURE_PYTHON_ENV", "ServerStack", "run_on_loop", "server_stack"]

PURE_PYTHON_ENV = "COPILOT_HOST_PURE_PYTHON"

_T = TypeVar("_T")


@dataclass(frozen=True)
class ServerStack:
    """uvicorn's ``http`` protocol and ``loop`` for the gateway."""

    http: Literal["httptools", "h11"]
    loop: Literal["uvloop", "asyncio"]


PURE_PYTHON = ServerStack(http="h11", loop="asyncio")


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def server_stack(environ: Mapping[str, str] | None = None) -> ServerStack:
    """httptools and uvloop where importable, unless ``COPILOT_HOST_PURE_PYTHON`` is set
    to anything but empty or ``0``."""
    env = os.environ if environ is None else environ
    if env.get(PURE_PYTHON_ENV, "").strip() not in ("", "0"):
        return PURE_PYTHON
    return ServerStack(
        http="httptools" if _importable("httptools") else "h11",
        loop="uvloop" if _importable("uvloop") else "asyncio",
    )


def loop_factory(stack: ServerStack) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The event loop factory for ``stack`` (None: asyncio's default)."""
    if stack.loop == "uvloop":
        import uvloop

        return uvloop.new_event_loop
    return None


def run_on_loop(main: Coroutine[Any, Any, _T], stack: ServerStack | None = None) -> _T:
    """``asyncio.run(main)`` on the event loop of ``stack`` (the one in force by default):
    serve and run start the gateway's loop themselves, so uvicorn's ``loop`` setting,
    read only by its own ``run()``, would not."""
    chosen = server_stack() if stack is None else stack
    with asyncio.Runner(loop_factory=loop_factory(chosen)) as runner:
        return runner.run(main)
