"""What the emulator saw: one immutable record per request."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["RecordedRequest"]


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """A request as it reached the emulated GitHub, and how its answer went.

    ``headers`` has lower-case names. ``headers``, ``form`` and ``body`` may hold the canary
    tokens the emulator issued, so they are kept out of the repr.

    ``status`` is the status the emulator answered with (0 while the answer is not yet
    started), ``request_id`` the ``x-github-request-id`` it sent, and ``disconnected`` says
    the client went away before the whole answer (a stream, a drip) was written. Records are
    snapshots: read :attr:`GitHubEmulator.requests` again to see a later state.
    """

    method: str
    host: str
    path: str
    endpoint: str
    headers: Mapping[str, str] = field(repr=False)
    form: Mapping[str, str] | None = field(repr=False)
    body: bytes = field(repr=False)
    at: float = 0.0
    request_id: str = ""
    status: int = 0
    disconnected: bool = False

    @property
    def initiator(self) -> str | None:
        """The ``X-Initiator`` header (``"user"``/``"agent"``), or None when absent: the
        Copilot API bills a premium request only for ``user``."""
        return self.headers.get("x-initiator")

    @property
    def vision(self) -> bool:
        """Whether the request said ``Copilot-Vision-Request: true``, which the Copilot API
        requires of every request that carries image input."""
        return self.headers.get("copilot-vision-request", "").strip().lower() == "true"
