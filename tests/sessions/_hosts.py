"""Counting hosts and a fake clock for the session tests (no network, no store, no sleeps)."""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from copilot_host import (
    ApiProtocol,
    AsyncSessionResolver,
    CopilotDeviceLogin,
    CopilotEndpoint,
    CopilotSession,
    LoginIdentity,
    ModelSpec,
    Pending,
    Secret,
    SessionResolver,
)
from copilot_host._hosts import Authorized
from tests._clock import FakeClock

ORIGIN = "https://api.individual.githubcopilot.com"
ENDPOINT = CopilotEndpoint.parse(ORIGIN)
OTHER_ENDPOINT = CopilotEndpoint.parse("https://api.business.githubcopilot.com")


def canary() -> str:
    """A session-token-shaped value generated at run time (never a committed literal)."""
    return "tid=" + secrets.token_hex(20)


def identity(account: str = "octocat") -> LoginIdentity:
    return LoginIdentity(secrets.token_hex(8), account)


def make_session(
    clock: FakeClock,
    who: LoginIdentity,
    *,
    lifetime: float = 1800.0,
    refresh_in: float | None = 1500.0,
    endpoint: CopilotEndpoint = ENDPOINT,
    token: str | None = None,
) -> CopilotSession:
    now = clock.monotonic()
    refresh_after = lifetime if refresh_in is None else min(refresh_in, lifetime)
    return CopilotSession(
        token=Secret(token or canary()),
        identity=who,
        endpoint=endpoint,
        received_monotonic=now,
        refresh_monotonic=now + refresh_after,
        expires_monotonic=now + lifetime,
        expires_wall=clock.time() + lifetime,
    )


Script = Callable[[LoginIdentity], "CopilotSession | BaseException | None"]


def prime(
    resolver: SessionResolver | AsyncSessionResolver, host: CountingHost, session: CopilotSession
) -> CopilotSession:
    """Install ``session`` in ``resolver`` the way a first exchange would, without counting
    it as one of the host's exchanges (tests of what happens to a session already held)."""
    with host._lock:
        host.primed.append(session)
    if isinstance(resolver, AsyncSessionResolver):
        got = asyncio.run(resolver.get())
    else:
        got = resolver.get()
    assert got is session
    return session


@dataclass
class CountingHost:
    """A blocking host that counts exchanges; each can be gated, scripted to fail, or both.

    ``gate``: when set, every exchange waits (bounded) for it, so a test can hold one
    exchange in flight. ``failures``: exceptions raised by the next exchanges, in order.
    """

    clock: FakeClock = field(default_factory=FakeClock)
    who: LoginIdentity | None = field(default_factory=identity)
    lifetime: float = 1800.0
    refresh_in: float | None = 1500.0
    endpoint: CopilotEndpoint = ENDPOINT
    gate: threading.Event | None = None
    failures: list[BaseException] = field(default_factory=list)
    exchanges: int = 0
    issued: list[CopilotSession] = field(default_factory=list)
    availability_calls: int = 0
    entered: threading.Event = field(default_factory=threading.Event)
    # Tokens with no recognisable shape: only the registered-secret redaction can catch them.
    shapeless_tokens: bool = False
    models: list[ModelSpec] = field(
        default_factory=lambda: [ModelSpec("gpt-4o", "GPT-4o", ApiProtocol.OPENAI_CHAT)]
    )
    # Sessions the next exchanges hand out as they are (see prime()); not counted.
    primed: list[CopilotSession] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def provider_id(self) -> str:
        return "counting"

    def availability(self) -> LoginIdentity | None:
        self.availability_calls += 1
        return self.who

    def begin_device_login(self) -> CopilotDeviceLogin:
        raise NotImplementedError

    def poll_device_login(self, login: CopilotDeviceLogin) -> Pending | Authorized:
        raise NotImplementedError

    def exchange(self, identity: LoginIdentity) -> CopilotSession:
        with self._lock:
            if self.primed:
                return self.primed.pop(0)
            self.exchanges += 1
            failure = self.failures.pop(0) if self.failures else None
        self.entered.set()
        if self.gate is not None and not self.gate.wait(10):
            raise AssertionError("the test never opened the exchange gate")
        if failure is not None:
            raise failure
        return self._mint(identity)

    def _mint(self, identity: LoginIdentity) -> CopilotSession:
        session = make_session(
            self.clock,
            identity,
            lifetime=self.lifetime,
            refresh_in=self.refresh_in,
            endpoint=self.endpoint,
            token=secrets.token_urlsafe(30) if self.shapeless_tokens else None,
        )
        with self._lock:
            self.issued.append(session)
        return session

    def inventory(self, session: CopilotSession) -> Sequence[ModelSpec]:
        return list(self.models)

    def request_headers(self) -> Mapping[str, str]:
        return {"Editor-Version": "tests/1.0", "Copilot-Integration-Id": "tests"}


@dataclass
class AsyncCountingHost:
    """The asyncio twin: the gate is an asyncio-agnostic threading.Event polled cooperatively,
    so the host works on any event loop (the multi-loop tests need that)."""

    inner: CountingHost = field(default_factory=CountingHost)

    @property
    def provider_id(self) -> str:
        return "counting"

    def availability(self) -> LoginIdentity | None:
        return self.inner.availability()

    async def begin_device_login(self) -> CopilotDeviceLogin:
        raise NotImplementedError

    async def poll_device_login(self, login: CopilotDeviceLogin) -> Pending | Authorized:
        raise NotImplementedError

    async def exchange(self, identity: LoginIdentity) -> CopilotSession:
        inner = self.inner
        with inner._lock:
            if inner.primed:
                return inner.primed.pop(0)
            inner.exchanges += 1
            failure = inner.failures.pop(0) if inner.failures else None
        inner.entered.set()
        await asyncio.sleep(0)  # a real exchange always yields to the loop at least once
        if inner.gate is not None:
            for _ in range(10_000):
                if inner.gate.is_set():
                    break
                await asyncio.sleep(0.001)
            else:
                raise AssertionError("the test never opened the exchange gate")
        if failure is not None:
            raise failure
        return inner._mint(identity)

    async def inventory(self, session: CopilotSession) -> Sequence[ModelSpec]:
        return self.inner.inventory(session)

    def request_headers(self) -> Mapping[str, str]:
        return self.inner.request_headers()
