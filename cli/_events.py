"""``login --json``: one JSON object per line on stdout, so any program can drive a login.

The format is stable (``"v": 1``; fields are only ever added):

``{"v":1,"event":"device_code","user_code":"ABCD-1234","verification_uri":"https://github.com/login/device","expires_in":899,"deadline":"2025-01-01T12:15:00Z","interval":5,"client_id":"Iv1.b507a08c87ecfe98"}``
    Show ``user_code`` to the person and send them to ``verification_uri``; ``client_id``
    is the OAuth app the person is asked to authorize.
``{"v":1,"event":"authorized","account":"octocat","login_id":"…","protection":"keyring"}``
    The login is verified (Copilot access included) and stored; the last line.
``{"v":1,"event":"error","code":"access_denied","message":"…","retryable":false}``
    The login failed; the last line. ``code`` is one of the library's stable error
    codes (``access_denied``, ``expired_token``, ``no_copilot_access``,
    ``keyring_unavailable``, ``network_error``, …) or the CLI's own
    ``already_logged_in``, ``login_cancelled`` (SIGINT/SIGTERM during the wait),
    ``interrupted``/``terminated`` (SIGINT/SIGTERM elsewhere), ``interrupted_after_login``
    (a signal as the login completed: it is stored) and ``internal_error``.

A program that stops reading does not stop the login: it goes on for the person, who has
the code on stderr too, and the exit code says how it ended.

No event ever carries a secret: the device code and the tokens stay in the process.
"""

from __future__ import annotations

from typing import Any

from ._failure import Problem
from ._output import Output, ReaderGone

__all__ = ["EVENT_VERSION", "LoginEvents", "iso_utc"]

EVENT_VERSION = 1


def iso_utc(epoch: float) -> str:
    """RFC 3339 UTC with a ``Z``, whole seconds: easy to parse in any language."""
    from datetime import UTC, datetime

    return datetime.fromtimestamp(int(epoch), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class LoginEvents:
    """Writes the events when ``--json`` is on; silent otherwise."""

    def __init__(self, out: Output, *, enabled: bool) -> None:
        self._out = out
        self.enabled = enabled
        # The OAuth app being authorized, set once ``login`` has chosen it.
        self.client_id: str | None = None
        # The person's line naming that app, shown on stderr before the code.
        self.app_line: str | None = None

    def _emit(self, event: str, **fields: Any) -> None:
        if not self.enabled:
            return
        try:
            self._out.json({"v": EVENT_VERSION, "event": event, **fields})
        except ReaderGone:
            # The program stopped reading. The login goes on for the person (the code is
            # on stderr too), and the exit code still says how it ended.
            self.enabled = False

    def device_code(
        self,
        *,
        user_code: str,
        verification_uri: str,
        expires_in: float,
        deadline_wall: float,
        interval: float,
    ) -> None:
        self._emit(
            "device_code",
            user_code=user_code,
            verification_uri=verification_uri,
            expires_in=max(0, int(expires_in)),
            deadline=iso_utc(deadline_wall),
            interval=max(1, round(interval)),
            **({} if self.client_id is None else {"client_id": self.client_id}),
        )

    def authorized(self, *, account: str, login_id: str, protection: str | None) -> None:
        self._emit("authorized", account=account, login_id=login_id, protection=protection)

    def error(self, problem: Problem) -> None:
        self._emit("error", code=problem.code, message=problem.message, retryable=problem.retryable)
