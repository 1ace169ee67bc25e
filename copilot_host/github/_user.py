"""Step 5: the GitHub login name, the account label ``status`` shows (sans-IO)."""

from __future__ import annotations

import re

from .._errors import LoginRevokedError, ResponseError
from .._safety._secret import Secret
from ._headers import EditorIdentity, rest_headers
from ._status import status_error
from ._urls import USER_URL
from ._wire import WireRequest, WireResponse, json_object, reads_response, req_str

__all__ = ["build_user_request", "parse_user"]

WHAT = "GitHub's user lookup"
# GitHub logins: letters, digits and single hyphens, at most 39 characters.
_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?")


def build_user_request(github_token: Secret, editor: EditorIdentity) -> WireRequest:
    headers = rest_headers(editor)
    headers["Authorization"] = f"token {github_token.reveal()}"
    return WireRequest("GET", USER_URL, WHAT, tuple(headers.items()))


@reads_response
def parse_user(response: WireResponse) -> str:
    if response.status == 401:
        raise LoginRevokedError(
            "GitHub did not accept the new login; run `copilot-host login` again"
        )
    if response.status != 200:
        raise status_error(response, WHAT)
    login = req_str(json_object(response, WHAT), "login", WHAT, max_len=39)
    if not _LOGIN.fullmatch(login):
        raise ResponseError(f"{WHAT} answered with a login name that is not a GitHub login")
    return login
