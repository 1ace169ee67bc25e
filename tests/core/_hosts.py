"""Small in-test hosts implementing the CopilotHost seam (no network, no store)."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from copilot_host import (
    ApiProtocol,
    Authorized,
    CopilotDeviceLogin,
    CopilotEndpoint,
    CopilotSession,
    LoginIdentity,
    ModelSpec,
    Pending,
    Secret,
)
from tests._clock import FakeClock


def spec(model_id: str, protocol: ApiProtocol = ApiProtocol.OPENAI_CHAT) -> ModelSpec:
    return ModelSpec(model_id=model_id, display_name=model_id, protocol=protocol)


@dataclass
class MemoryHost:
    """A synchronous host whose every answer is scripted by the test."""

    models: Sequence[ModelSpec] = field(default_factory=lambda: [spec("gpt-4o")])
    origin: str = "https://api.githubcopilot.com"
    identity: LoginIdentity | None = field(
        default_factory=lambda: LoginIdentity(secrets.token_hex(8), "octocat")
    )
    clock: FakeClock = field(default_factory=FakeClock)
    lifetime: float = 1500.0
    fail_exchange: Exception | None = None
    fail_inventory: Exception | None = None
    echo_token_in_name: bool = False
    exchanges: int = 0
    issued: list[Secret] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def provider_id(self) -> str:
        return "github-copilot"

    def availability(self) -> LoginIdentity | None:
        return self.identity

    def begin_device_login(self) -> CopilotDeviceLogin:
        raise NotImplementedError

    def poll_device_login(self, login: CopilotDeviceLogin) -> Pending | Authorized:
        raise NotImplementedError

    def exchange(self, identity: LoginIdentity) -> CopilotSession:
        with self._lock:
            self.exchanges += 1
        if self.fail_exchange is not None:
            raise self.fail_exchange
        token = Secret("tid=" + secrets.token_hex(16))
        self.issued.append(token)
        now = self.clock.monotonic()
        return CopilotSession(
            token=token,
            identity=identity,
            endpoint=CopilotEndpoint.parse(self.origin),
            received_monotonic=now,
            refresh_monotonic=now + self.lifetime - 300,
            expires_monotonic=now + self.lifetime,
            expires_wall=self.clock.time() + self.lifetime,
        )

    def inventory(self, session: CopilotSession) -> Sequence[ModelSpec]:
        if self.fail_inventory is not None:
            raise self.fail_inventory
        if self.echo_token_in_name:
            echoed = ModelSpec("echo", f"echo {session.token.reveal()}", ApiProtocol.OPENAI_CHAT)
            return [*self.models, echoed]
        return list(self.models)

    def request_headers(self) -> Mapping[str, str]:
        return {"Editor-Version": "test/1"}


@dataclass
class AsyncMemoryHost:
    """The asyncio twin, delegating to a MemoryHost."""

    inner: MemoryHost = field(default_factory=MemoryHost)

    @property
    def provider_id(self) -> str:
        return self.inner.provider_id

    def availability(self) -> LoginIdentity | None:
        return self.inner.availability()

    async def begin_device_login(self) -> CopilotDeviceLogin:
        raise NotImplementedError

    async def poll_device_login(self, login: CopilotDeviceLogin) -> Pending | Authorized:
        raise NotImplementedError

    async def exchange(self, identity: LoginIdentity) -> CopilotSession:
        return self.inner.exchange(identity)

    async def inventory(self, session: CopilotSession) -> Sequence[ModelSpec]:
        return self.inner.inventory(session)

    def request_headers(self) -> Mapping[str, str]:
        return self.inner.request_headers()
