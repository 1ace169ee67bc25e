"""A real gateway for tests: the app under uvicorn on 127.0.0.1 port 0, in a thread with its
own event loop, an asynchronous GitHub host on that loop, and the loopback emulator behind.

The person's side (logging in and out, another account) goes through a separate blocking
host on the same store, as ``copilot-host login`` in another terminal would.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import logging
import secrets
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai

import copilot_host as ch
from copilot_host.gateway import (
    ACCESS_LOGGER,
    GatewayApp,
    GatewayHooks,
    GatewayServer,
    create_app,
    upstream_transport,
)
from copilot_host.gateway._server import ServerStack
from copilot_host.github import AsyncGitHubCopilotHost, GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import GitHubEmulator

START_TIMEOUT = 15.0


def new_key() -> str:
    return "cph_" + secrets.token_urlsafe(32)


class Switch(httpx2.AsyncBaseTransport):
    """Sends each request through ``targets[which[0]]``: two emulators as two accounts of
    one GitHub (the test flips ``which`` when the person logs in to the other)."""

    def __init__(self, which: list[int], *targets: httpx2.AsyncBaseTransport) -> None:
        self._which = which
        self._targets = targets

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return await self._targets[self._which[0]].handle_async_request(request)

    async def aclose(self) -> None:
        for target in self._targets:
            await target.aclose()


class AccessLines(logging.Handler):
    """The gateway's access lines, as formatted messages."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@dataclass
class Gateway:
    """A running gateway and what a test needs around it."""

    emulator: GitHubEmulator
    home: Path
    key: str
    port: int
    app: GatewayApp
    access: AccessLines
    loop: asyncio.AbstractEventLoop
    person: GitHubCopilotHost
    seen: list[tuple[str, str]] = field(default_factory=list)
    # The SDK clients made by openai() and anthropic(), closed by close_clients().
    clients: list[Any] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def openai(self, **options: Any) -> openai.OpenAI:
        """The OpenAI SDK on this gateway (its key, no retries unless ``options`` say),
        closed when the test ends: an SDK client left to the garbage collector warns of
        its open sockets in whichever later test the collection happens to run."""
        client = openai.OpenAI(
            **{"base_url": self.base_url, "api_key": self.key, "max_retries": 0, **options}
        )
        self.clients.append(client)
        return client

    def anthropic(self, **options: Any) -> anthropic.Anthropic:
        """The Anthropic SDK on this gateway (whose base URL has no /v1: the SDK adds it),
        closed when the test ends, like :meth:`openai`'s."""
        client = anthropic.Anthropic(
            **{"base_url": self.root_url, "api_key": self.key, "max_retries": 0, **options}
        )
        self.clients.append(client)
        return client

    def close_clients(self) -> None:
        while self.clients:
            self.clients.pop().close()

    def login(self) -> ch.LoginIdentity:
        return self.person.login(sleep=lambda _seconds: None)

    def logout(self) -> None:
        assert self.person.logout().removed is True

    def settle(self) -> None:
        """Wait until no registration is running on the gateway's loop (the gateway names
        its registration tasks)."""

        async def idle() -> None:
            running = [
                task
                for task in asyncio.all_tasks()
                if task.get_name() == "copilot-host gateway registration"
            ]
            if running:
                await asyncio.wait(running)

        asyncio.run_coroutine_threadsafe(idle(), self.loop).result(timeout=30)

    def on_loop(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` on the server's event loop and return its result."""

        async def call() -> Any:
            return fn()

        return asyncio.run_coroutine_threadsafe(call(), self.loop).result(timeout=10)

    # -- raw HTTP ------------------------------------------------------------------------

    def raw(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        headers: dict[str, str] | list[tuple[str, str]] | None = None,
        key: bool = True,
        host: str | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        """One request over a fresh connection, headers exactly as given (plus Host and
        the key unless told otherwise); returns status, lower-case headers and body."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            pairs = list(headers.items()) if isinstance(headers, dict) else list(headers or [])
            names = {name.lower() for name, _ in pairs}
            if "host" not in names:
                connection.putheader("Host", host if host is not None else f"127.0.0.1:{self.port}")
            if key and "authorization" not in names and "x-api-key" not in names:
                connection.putheader("Authorization", f"Bearer {self.key}")
            for name, value in pairs:
                connection.putheader(name, value)
            if body is not None and "content-length" not in names:
                connection.putheader("Content-Length", str(len(body)))
            connection.endheaders(body)
            response = connection.getresponse()
            data = response.read()
            found = {k.lower(): v for k, v in response.getheaders()}
        finally:
            connection.close()
        self.seen.append((f"{method} {path} (headers)", json.dumps(found)))
        self.seen.append((f"{method} {path} (body)", data.decode("utf-8", "replace")))
        return response.status, found, data

    def post(self, path: str, document: Any, **kwargs: Any) -> tuple[int, dict[str, str], Any]:
        status, headers, data = self.raw(
            "POST",
            path,
            body=json.dumps(document).encode(),
            headers={"Content-Type": "application/json", **kwargs.pop("headers", {})},
            **kwargs,
        )
        return status, headers, _json_or_text(data)

    def get(self, path: str, **kwargs: Any) -> tuple[int, dict[str, str], Any]:
        status, headers, data = self.raw("GET", path, **kwargs)
        return status, headers, _json_or_text(data)

    def client(self, **kwargs: Any) -> httpx2.Client:
        return httpx2.Client(
            base_url=self.root_url,
            headers={"Authorization": f"Bearer {self.key}"},
            timeout=30,
            **kwargs,
        )


def _json_or_text(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return data.decode("utf-8", "replace")


@contextmanager
def running_gateway(
    emulator: GitHubEmulator,
    home: Path,
    *,
    logged_in: bool = True,
    transport: httpx2.AsyncBaseTransport | None = None,
    clock: ch.Clock | None = None,
    host_transport: httpx2.AsyncBaseTransport | None = None,
    hooks: GatewayHooks | None = None,
    max_credits: float | None = None,
    model_aliases: dict[str, str] | None = None,
    default_model: str | None = None,
    stack: ServerStack | None = None,
    rewrites: frozenset[str] | None = None,
    access_line: Callable[[str], None] | None = None,
    sockets: Any = False,
) -> Iterator[Gateway]:
    """Serve a gateway for the account in ``home`` until the block ends, on the server
    stack serve would use (or ``stack``); ``sockets`` is ``create_app``'s (by default
    none: every request upstream over HTTP; ``emulator.socket_connector()`` serves a
    client socket's requests for a model that lists ``ws:/responses`` over the emulator's
    own socket)."""
    home.mkdir(mode=0o700, exist_ok=True)
    person = GitHubCopilotHost(
        store=CredentialStore(home, key_file=True), transport=emulator.transport()
    )
    if logged_in:
        person.login(sleep=lambda _seconds: None)
    key = new_key()
    access = AccessLines()
    access_logger = logging.getLogger(ACCESS_LOGGER)
    access_logger.addHandler(access)
    previous_level = access_logger.level
    access_logger.setLevel(logging.INFO)
    # TCP named: asyncio turns Nagle's algorithm off only on sockets that say so.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(256)
    port = sock.getsockname()[1]
    ready = threading.Event()
    made: dict[str, Any] = {}
    failed: list[BaseException] = []

    async def serve() -> None:
        extra: dict[str, Any] = {"clock": clock} if clock is not None else {}
        async with AsyncGitHubCopilotHost(
            store=CredentialStore(home),
            transport=host_transport if host_transport is not None else emulator.async_transport(),
            **extra,
        ) as host:
            app = create_app(
                host,
                api_key=key,
                # Over the transport serve would give the app (aiohttp on [fast]), so the
                # tests run the path users run; the emulator's own is httpx2's.
                transport=transport
                if transport is not None
                else emulator.async_transport(inner=upstream_transport(stack)),
                hooks=hooks,
                max_credits=max_credits,
                model_aliases=model_aliases,
                default_model=default_model,
                rewrites=rewrites,
                access_line=access_line,
                sockets=sockets,
                **extra,
            )
            # serve's server (as ``cli/_serve.py`` runs it), saying when it accepts
            # connections (no polling for it).
            server = GatewayServer(listener=sock, stack=stack, on_started=ready.set)
            made.update(app=app, server=server, loop=asyncio.get_running_loop())
            await server.serve(app)

    def run() -> None:
        try:
            asyncio.run(serve())
        except BaseException as exc:
            failed.append(exc)
            ready.set()

    thread = threading.Thread(target=run, name="gateway-under-test", daemon=True)
    thread.start()
    try:
        assert ready.wait(START_TIMEOUT), "the gateway did not start"
        assert not failed, failed
        gateway = Gateway(
            emulator=emulator,
            home=home,
            key=key,
            port=port,
            app=made["app"],
            access=access,
            loop=made["loop"],
            person=person,
        )
        made["gateways"] = (gateway,)
        yield gateway
    finally:
        for opened in made.get("gateways", ()):
            opened.close_clients()
        server = made.get("server")
        if server is not None:
            server.stop()
        thread.join(START_TIMEOUT)
        sock.close()
        person.close()
        access_logger.removeHandler(access)
        access_logger.setLevel(previous_level)
    assert not thread.is_alive(), "the gateway did not stop"
    assert not failed, failed
