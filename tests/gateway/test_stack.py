"""Which HTTP parser the gateway's server (so serve and run) uses: httptools when it can be imported, h11 when not or
when ``COPILOT_HOST_PURE_PYTHON`` says so; the event loop is asyncio's either way."""

from __future__ import annotations

import sys

import pytest
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from copilot_host.gateway import GatewayServer
from copilot_host.gateway._stack import PURE_PYTHON, PURE_PYTHON_ENV, ServerStack, server_stack

FAST = ServerStack(http="httptools")


async def _app(scope: object, receive: object, send: object) -> None:
    raise AssertionError("never called")


def test_the_default_is_httptools_since_it_is_a_dependency() -> None:
    assert server_stack({}) == FAST


@pytest.mark.parametrize("value", ["1", "yes", "true"])
def test_the_environment_variable_forces_h11(value: str) -> None:
    assert server_stack({PURE_PYTHON_ENV: value}) == PURE_PYTHON == ServerStack("h11")


@pytest.mark.parametrize("value", ["", "0", " "])
def test_an_empty_or_zero_variable_keeps_the_default(value: str) -> None:
    assert server_stack({PURE_PYTHON_ENV: value}) == FAST


def test_without_httptools_importable_h11_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "httptools", None)  # import fails
    assert server_stack({}) == PURE_PYTHON


def server_config(app: object) -> uvicorn.Config:
    """The configuration a default GatewayServer serves ``app`` with."""
    return GatewayServer()._config(app)[0]


def test_server_config_puts_the_hardened_protocol_on_the_stack_in_force(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(PURE_PYTHON_ENV, raising=False)
    fast = server_config(_app)
    assert isinstance(fast.http, type) and issubclass(fast.http, HttpToolsProtocol)
    assert hasattr(fast.http, "waiting_for_head")  # the hardened protocol
    assert fast.loop == "asyncio"
    monkeypatch.setenv(PURE_PYTHON_ENV, "1")
    pure = server_config(_app)
    assert isinstance(pure.http, type) and issubclass(pure.http, H11Protocol)
    assert hasattr(pure.http, "waiting_for_head")
    assert pure.loop == "asyncio"


@pytest.mark.parametrize("value", ["", "0", "1", " 1 ", "yes", " 0 ", "false"])
def test_the_server_and_the_core_read_the_pure_python_switch_alike(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The CLI may use only public names of the library, so it reads the variable itself;
    # the two readings must agree on every value.
    from copilot_host import _accel

    monkeypatch.setenv(_accel.PURE_PYTHON_ENV, value)
    assert _accel.PURE_PYTHON_ENV == PURE_PYTHON_ENV
    assert (server_stack({PURE_PYTHON_ENV: value}) == PURE_PYTHON) is _accel.pure_python()
