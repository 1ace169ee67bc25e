"""What the gateway's server does to its process, in the cases serve and run never meet on
this machine: an open-file limit that is already unlimited, exceptions on its event loop
that are not a failed accept(), and a server taking stop signals off the main thread (an
application serving the gateway from a thread of its own)."""

from __future__ import annotations

import asyncio
import http.client
import logging
import resource
import signal
import socket
import threading
from typing import Any

import pytest

from copilot_host.gateway import GatewayServer
from copilot_host.gateway._server import _process
from copilot_host.gateway._server._process import (
    STOP_SIGNALS,
    capture_stop_signals,
    quiet_accept_errors,
)

BOUND = 15.0


def test_an_unlimited_soft_open_file_limit_is_left_as_it_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the system allows an unlimited soft limit, there is nothing to raise (and
    nothing is set: a lower one would only narrow it)."""
    unlimited = (resource.RLIM_INFINITY, resource.RLIM_INFINITY)
    monkeypatch.setattr(resource, "getrlimit", lambda _which: unlimited)
    set_to: list[tuple[int, int]] = []
    monkeypatch.setattr(resource, "setrlimit", lambda _which, wanted: set_to.append(wanted))
    assert _process.raise_open_file_limit() == resource.RLIM_INFINITY
    assert set_to == []
    assert _process.connection_bound(resource.RLIM_INFINITY) > 1_000_000


def test_other_loop_exceptions_reach_the_handler_that_was_there(
    caplog: pytest.LogCaptureFixture,
) -> None:
    loop = asyncio.new_event_loop()
    try:
        seen: list[str] = []
        loop.set_exception_handler(lambda _loop, context: seen.append(context["message"]))
        quiet_accept_errors(loop)
        loop.call_exception_handler({"message": "Task exception was never retrieved"})
        assert seen == ["Task exception was never retrieved"]
        # Without one, asyncio's default handler logs it, as it would have.
        loop.set_exception_handler(None)
        quiet_accept_errors(loop)
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            loop.call_exception_handler({"message": "Unclosed connection"})
        assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == [
            "Unclosed connection"
        ]
    finally:
        loop.close()


def test_stop_signals_off_the_main_thread_are_left_to_the_process() -> None:
    """Python delivers signals to the main thread only: a server started elsewhere takes
    none, and leaves the process's handlers as they were."""
    before = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    inside: dict[int, Any] = {}

    def elsewhere() -> None:
        with capture_stop_signals(lambda *_args: None, [signal.SIGTERM]):
            inside.update({signum: signal.getsignal(signum) for signum in STOP_SIGNALS})

    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join(BOUND)
    # Unchanged inside, and the captured SIGTERM was not raised again afterwards.
    assert inside == before
    assert {signum: signal.getsignal(signum) for signum in STOP_SIGNALS} == before


async def _hello(scope: dict[str, Any], _receive: Any, send: Any) -> None:
    assert scope["type"] == "http"
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"hello"})


def test_a_server_asked_to_take_signals_serves_from_another_thread() -> None:
    """``GatewayServer(signals=True)`` in an application's own thread: it serves, stops
    when told, and the process's handlers are untouched throughout."""
    before = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    started = threading.Event()
    failed: list[BaseException] = []
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        server = GatewayServer(
            listener=listener, lifespan=False, signals=True, on_started=started.set
        )

        def serve() -> None:
            try:
                asyncio.run(server.serve(_hello))
            except BaseException as exc:  # the test reports it
                failed.append(exc)
                started.set()

        thread = threading.Thread(target=serve)
        thread.start()
        try:
            assert started.wait(BOUND) and not failed, failed
            assert {signum: signal.getsignal(signum) for signum in STOP_SIGNALS} == before
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=BOUND)
            connection.request("GET", "/")
            answer = connection.getresponse()
            assert (answer.status, answer.read()) == (200, b"hello")
            connection.close()
        finally:
            server.stop()
            thread.join(BOUND)
    assert not thread.is_alive() and not failed
    assert {signum: signal.getsignal(signum) for signum in STOP_SIGNALS} == before
