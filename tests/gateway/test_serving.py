"""The library's serving entry point (``copilot_host.gateway.serve`` / ``GatewayServer``) as
an application uses it: binding, the handle (started, stop, grace), what it leaves to the
application (signals off by default, no logging handler), cancellation, and a failure in
``on_started``. The bounds themselves: test_connection_bounds.py."""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx2
import pytest

import copilot_host as ch
from copilot_host.gateway import GatewayServer, serve
from copilot_host.gateway._server import bind

BOUND = 10.0


async def _app(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            kind = message["type"].rsplit(".", 1)[-1]
            await send({"type": f"{message['type']}.complete"})
            if kind == "shutdown":
                return
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


@contextmanager
def _serving(app: Any = _app, **options: Any) -> Iterator[GatewayServer]:
    """``app`` served in a thread by a GatewayServer of ``options``, until the block ends."""
    ready = threading.Event()
    failed: list[BaseException] = []
    server = GatewayServer(on_started=ready.set, **options)

    def run() -> None:
        try:
            asyncio.run(server.serve(app))
        except BaseException as exc:
            failed.append(exc)
        finally:
            ready.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        assert ready.wait(BOUND)
        assert not failed, failed
        yield server
    finally:
        server.stop()
        thread.join(BOUND)
    assert not thread.is_alive()
    assert not failed, failed


def test_bind_takes_a_free_port_and_says_it_is_tcp() -> None:
    with bind("127.0.0.1", 0) as listener:
        assert listener.proto == socket.IPPROTO_TCP
        assert listener.getsockname()[1] > 0


def test_bind_names_a_port_in_use_as_a_typed_error() -> None:
    with bind("127.0.0.1", 0) as first:
        port = first.getsockname()[1]
        with pytest.raises(ch.CopilotHostError) as caught:
            bind("127.0.0.1", port)
    assert caught.value.code == "port_in_use"
    assert caught.value.message == f"127.0.0.1:{port} is already in use"


def test_bind_names_an_address_this_machine_lacks() -> None:
    # TEST-NET-1 (RFC 5737): on no interface of this machine.
    with pytest.raises(ch.CopilotHostError) as caught:
        bind("192.0.2.1", 0)
    assert caught.value.code == "address_unavailable"
    assert "192.0.2.1:0" in caught.value.message


def test_a_server_given_host_and_port_binds_them_and_closes_its_socket() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert not GatewayServer().started
    with _serving(host="127.0.0.1", port=port) as server:
        assert server.started and server.grace == 5
        answer = httpx2.get(f"http://127.0.0.1:{port}/", trust_env=False, timeout=BOUND)
        assert answer.text == "ok"
    with socket.socket() as again:
        again.bind(("127.0.0.1", port))  # free again: the server closed what it bound


def test_stop_before_serving_ends_serve_once_it_has_started() -> None:
    with bind("127.0.0.1", 0) as listener:
        server = GatewayServer(listener=listener)
        server.stop()
        asyncio.run(asyncio.wait_for(server.serve(_app), BOUND))
        assert server.started  # it did start, then stopped the orderly way


def test_what_on_started_raises_stops_the_server_and_is_raised_after() -> None:
    class Told(Exception):
        pass

    def fails() -> None:
        raise Told

    with bind("127.0.0.1", 0) as listener:
        server = GatewayServer(listener=listener, on_started=fails)
        with pytest.raises(Told):
            asyncio.run(asyncio.wait_for(server.serve(_app), BOUND))


def test_cancelling_serve_stops_it_the_orderly_way() -> None:
    async def main(listener: socket.socket) -> None:
        started = asyncio.Event()
        task = asyncio.create_task(serve(_app, listener=listener, on_started=started.set))
        await asyncio.wait_for(started.wait(), BOUND)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, BOUND)

    with bind("127.0.0.1", 0) as listener:
        asyncio.run(main(listener))


def test_signals_stay_the_applications_unless_asked_for() -> None:
    seen: dict[str, object] = {}

    def during() -> None:
        seen["handlers"] = [signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)]
        seen["handlers_on_the_root"] = list(logging.getLogger().handlers)
        server.stop()

    before = [signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)]
    root_handlers = list(logging.getLogger().handlers)
    with bind("127.0.0.1", 0) as listener:
        server = GatewayServer(listener=listener, on_started=during)
        # In the main thread, where signals could be taken.
        asyncio.run(asyncio.wait_for(server.serve(_app), BOUND))
    assert "handlers" in seen
    assert seen["handlers"] == before
    assert seen["handlers_on_the_root"] == root_handlers


def test_with_signals_the_stop_signals_are_taken_while_serving_in_the_main_thread() -> None:
    seen: list[object] = []
    before = signal.getsignal(signal.SIGHUP)

    def during() -> None:
        seen.append(signal.getsignal(signal.SIGHUP))
        server.stop()

    with bind("127.0.0.1", 0) as listener:
        server = GatewayServer(listener=listener, signals=True, on_started=during)
        asyncio.run(asyncio.wait_for(server.serve(_app), BOUND))
    assert seen and seen[0] != before
    assert signal.getsignal(signal.SIGHUP) == before  # given back


def test_a_cut_answers_traceback_stays_out_of_the_servers_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def cuts(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await _app(scope, receive, send)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"partial", "more_body": True})
        if scope["path"] == "/cut":
            raise ch.CopilotHostError("the answer was cut", code="answer_cut")
        raise RuntimeError("a real bug")

    caplog.set_level(logging.ERROR, logger="uvicorn.error")
    with bind("127.0.0.1", 0) as listener:
        port = listener.getsockname()[1]
        with _serving(cuts, listener=listener):
            for path in ("/cut", "/bug"):
                with pytest.raises(httpx2.HTTPError):
                    httpx2.get(f"http://127.0.0.1:{port}{path}", trust_env=False, timeout=BOUND)
    logged = [r for r in caplog.records if r.name == "uvicorn.error" and r.exc_info]
    assert [type(r.exc_info[1]) for r in logged if r.exc_info] == [RuntimeError]
