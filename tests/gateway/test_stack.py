"""Which stack the gateway's server (so serve and run) uses: httptools and the aiohttp
transport when [fast] is installed, h11 and httpx2's own when not, or when
``COPILOT_HOST_PURE_PYTHON`` says so (a proxy variable keeps httpx2's transport, which
applies it); the event loop is asyncio's either way. The environment is read by one core
function (``copilot_host._accel.accelerations``)."""

from __future__ import annotations

import sys

import pytest
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from copilot_host._accel import accelerations
from copilot_host.gateway import GatewayServer
from copilot_host.gateway._server._stack import (
    PURE_PYTHON,
    PURE_PYTHON_ENV,
    ServerStack,
    server_stack,
)
from tests._extras import installed, require

FAST = ServerStack(http="httptools", transport="aiohttp")


async def _app(scope: object, receive: object, send: object) -> None:
    raise AssertionError("never called")


def test_on_fast_the_default_is_httptools_and_aiohttp() -> None:
    require("httptools")
    require("aiohttp")
    assert server_stack({}) == FAST


@pytest.mark.parametrize("value", ["1", "yes", "true"])
def test_the_environment_variable_forces_the_pure_stack(value: str) -> None:
    assert server_stack({PURE_PYTHON_ENV: value}) == PURE_PYTHON == ServerStack("h11", "httpx2")
    assert accelerations({PURE_PYTHON_ENV: value}).orjson is False


@pytest.mark.parametrize("value", ["", "0", " "])
def test_an_empty_or_zero_variable_keeps_the_default(value: str) -> None:
    assert server_stack({PURE_PYTHON_ENV: value}) == server_stack({})


@pytest.mark.parametrize("variable", ["HTTPS_PROXY", "all_proxy", "http_proxy"])
def test_a_proxy_variable_keeps_httpx2s_transport_only(variable: str) -> None:
    stack = server_stack({variable: "http://127.0.0.1:9"})
    assert stack.transport == "httpx2"
    assert stack.http == server_stack({}).http
    assert server_stack({variable: ""}) == server_stack({})


def test_without_the_extras_importable_the_pure_stack_is_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "httptools", None)  # import fails
    monkeypatch.setitem(sys.modules, "aiohttp", None)
    monkeypatch.setitem(sys.modules, "orjson", None)
    assert server_stack({}) == PURE_PYTHON
    assert not accelerations({}).orjson


def test_the_extras_found_are_the_ones_installed() -> None:
    found = accelerations({})
    assert (found.httptools, found.aiohttp, found.orjson) == (
        installed("httptools"),
        installed("aiohttp"),
        installed("orjson"),
    )


def server_config(app: object) -> uvicorn.Config:
    """The configuration a default GatewayServer serves ``app`` with."""
    return GatewayServer()._config(app)[0]


def test_server_config_puts_the_hardened_protocol_on_the_stack_in_force(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(PURE_PYTHON_ENV, raising=False)
    if installed("httptools"):
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        fast = server_config(_app)
        assert isinstance(fast.http, type) and issubclass(fast.http, HttpToolsProtocol)
        assert hasattr(fast.http, "waiting_for_head")  # the hardened protocol
        assert fast.loop == "asyncio"
    monkeypatch.setenv(PURE_PYTHON_ENV, "1")
    pure = server_config(_app)
    assert isinstance(pure.http, type) and issubclass(pure.http, H11Protocol)
    assert hasattr(pure.http, "waiting_for_head")
    assert pure.loop == "asyncio"


def test_a_server_reads_the_environment_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PURE_PYTHON_ENV, raising=False)
    server = GatewayServer()
    first = server.stack
    monkeypatch.setenv(PURE_PYTHON_ENV, "1")
    assert server.stack is first
    assert GatewayServer().stack == PURE_PYTHON
