"""How the real services word their answers: request ids, error bodies, content types.

Every fact here is what GitHub or the Copilot API was seen to send (see docs/EMULATOR.md
for the list and where each was observed); the server module decides *when* to send them.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
import urllib.parse
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "DEVICE_CODE_GRANT_TYPE",
    "Answer",
    "copilot_error",
    "copilot_text",
    "github_json",
    "github_request_id",
    "json_answer",
    "model_not_supported",
    "oauth_answer",
    "refused",
    "wants_json",
]

# RFC 8628 section 3.4: the grant type a device-flow token request names.
DEVICE_CODE_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code"

# GitHub's REST errors carry this documentation link and the status as a string.
_REST_DOCS = "https://docs.github.com/rest"


@dataclass(frozen=True, slots=True)
class Answer:
    """One answer: a whole body, or (``events`` set) a stream flushed event by event.

    ``notes`` are fields of the request's :class:`RecordedRequest` to set with the status
    (the model and limits a model request used, the rule a refusal enforced).
    """

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes = b""
    events: tuple[bytes, ...] | None = None
    notes: tuple[tuple[str, object], ...] = ()


def github_request_id() -> str:
    """An ``x-github-request-id`` as GitHub and the Copilot API shape it: five colon-joined
    upper-case hex fields, e.g. ``F4AA:1CB92:5BBDA82:6780190:698C3C87``."""
    return ":".join(secrets.token_hex(size).upper().lstrip("0") or "0" for size in (2, 3, 4, 4, 4))


def copilot_request_id() -> str:
    """The Copilot API's own ``x-request-id``: a UUID, beside the GitHub request id."""
    return str(uuid.uuid4())


def json_answer(status: int, value: object, *extra: tuple[str, str]) -> Answer:
    body = json.dumps(value, separators=(",", ":")).encode()
    return Answer(status, (("Content-Type", "application/json; charset=utf-8"), *extra), body)


def github_json(status: int, message: str, *extra: tuple[str, str]) -> Answer:
    """A GitHub REST error: ``{"message", "documentation_url", "status"}``, the status as a
    string, served as JSON (as api.github.com answers every REST error)."""
    value = {"message": message, "documentation_url": _REST_DOCS, "status": str(status)}
    return json_answer(status, value, *extra)


def copilot_text(status: int, text: str, *extra: tuple[str, str]) -> Answer:
    """A Copilot API refusal as its Go server writes it: the text plus a newline, served as
    ``text/plain; charset=utf-8`` with ``nosniff`` (a model_not_supported answer is exactly
    138 bytes of this form)."""
    return Answer(
        status,
        (
            ("Content-Type", "text/plain; charset=utf-8"),
            ("X-Content-Type-Options", "nosniff"),
            *extra,
        ),
        (text + "\n").encode(),
    )


def copilot_error(status: int, message: str, code: str, **fields: str) -> Answer:
    """A Copilot API model-request refusal: ``{"error": {"message", "code", ...}}`` as
    compact JSON text, still served as ``text/plain`` (the service does not label it JSON)."""
    error: dict[str, str] = {"message": message, "code": code, **fields}
    return copilot_text(status, json.dumps({"error": error}, separators=(",", ":")))


def model_not_supported() -> Answer:
    """The service's 400 for a model it does not serve this request (138 bytes)."""
    return copilot_error(
        400,
        "The requested model is not supported.",
        "model_not_supported",
        param="model",
        type="invalid_request_error",
    )


def wants_json(headers: Mapping[str, str]) -> bool:
    """GitHub's OAuth endpoints answer JSON only when ``Accept`` names application/json."""
    accepted = headers.get("accept", "")
    return any(
        part.split(";")[0].strip().lower() == "application/json" for part in accepted.split(",")
    )


def oauth_answer(headers: Mapping[str, str], value: Mapping[str, object]) -> Answer:
    """A github.com device-flow answer (always HTTP 200, errors included), as JSON when asked
    for and otherwise form-encoded, the way github.com answers a client that sent no
    ``Accept: application/json``."""
    if wants_json(headers):
        return json_answer(200, value)
    body = urllib.parse.urlencode({key: str(item) for key, item in value.items()}).encode()
    return Answer(
        200, (("Content-Type", "application/x-www-form-urlencoded; charset=utf-8"),), body
    )


def refused(check: str, detail: str, answer: Answer) -> Answer:
    """``answer``, recorded as a refusal by the rule named ``check``."""
    notes = (*answer.notes, ("refusal", check), ("refusal_detail", detail))
    return dataclasses.replace(answer, notes=notes)
