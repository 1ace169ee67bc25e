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

    A model request also records the ``model`` it named and the ``limits`` that model's
    inventory entry lists (``max_output_tokens``, ``max_prompt_tokens``,
    ``max_context_window_tokens``, as given). A request the emulator refused by one of its
    rules records the rule's name in ``refusal`` (a check of ``CHECKS``, or ``"model"`` for
    a model it does not serve) and what broke it in ``refusal_detail``; see
    :attr:`GitHubEmulator.refusals`.
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
    model: str | None = None
    limits: Mapping[str, float] = field(default_factory=dict)
    refusal: str | None = None
    refusal_detail: str = ""

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
