"""Shared helpers of the GitHub adapter tests."""

from __future__ import annotations

import secrets
from pathlib import Path

from copilot_host._hosts import CopilotDeviceLogin
from copilot_host._safety._secret import Secret
from copilot_host.github._wire import WireResponse

DEVICE_PAGE = "https://github.com/login/device"


def canary_github_token() -> str:
    return "gho_" + secrets.token_hex(18)


def response(
    status: int = 200,
    body: bytes | str = b"{}",
    *,
    headers: dict[str, str] | None = None,
    at: float = 1000.0,
    wall: float = 1_700_000_000.0,
) -> WireResponse:
    raw = body.encode() if isinstance(body, str) else body
    return WireResponse(status, {k.lower(): v for k, v in (headers or {}).items()}, raw, at, wall)


def device_login(
    *, interval: float = 5.0, deadline: float = 1900.0, code: str | None = None
) -> CopilotDeviceLogin:
    return CopilotDeviceLogin(
        user_code="WDJB-MJHT",
        verification_uri=DEVICE_PAGE,
        expires_in=900.0,
        interval=interval,
        deadline=deadline,
        device_code=Secret(code if code is not None else secrets.token_hex(20)),
    )


def files_containing(root: Path, needles: tuple[str, ...]) -> list[Path]:
    """Every file under ``root`` whose bytes contain one of ``needles``."""
    found = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            if any(n.encode() in data for n in needles):
                found.append(path)
    return found


# What the emulator's default (realistic) inventory registers: 45 entries, 35 models, 10
# skipped (tests/github/test_github_drift.py says which and why), and Copilot Auto's route.
REALISTIC_MODELS = 35
REALISTIC_ROUTES = REALISTIC_MODELS + 1
