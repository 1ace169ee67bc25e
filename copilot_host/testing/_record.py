"""What the emulator saw: one immutable record per request."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["RecordedRequest"]


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """A request as it reached the emulated GitHub.

    ``headers`` has lower-case names. ``headers``, ``form`` and ``body`` may hold the canary
    tokens the emulator issued, so they are kept out of the repr.
    """

    method: str
    host: str
    path: str
    endpoint: str
    headers: Mapping[str, str] = field(repr=False)
    form: Mapping[str, str] | None = field(repr=False)
    body: bytes = field(repr=False)
    at: float = 0.0
