"""The two refusals of a client by policy, read once for every layer that meets them.

The Copilot API refuses a request for who is asking, not for what was asked, in two ways
(docs/WIRE.md, "Refusals by policy"):

* HTTP 403 with the plain text ``unauthorized: not authorized to use this Copilot
  feature``: an organisation's or enterprise's Copilot policy does not allow the client
  identity presented (the "Copilot CLI" policy, an editor or model policy), on ``/models``
  and on model requests alike (reported: github/copilot-cli #18, #539, #552; oh-my-pi pull
  request #10748). A new session would be refused the same way.
* HTTP 400 ``model_not_available_for_integrator``: the model is not served to the OAuth
  app the login was minted for (the "integrator"), whatever ``Copilot-Integration-Id``
  says; the message names the integrator and lists the models it is served (reported:
  gethouston/houston #1153, tontinton/maki #939).

:func:`refusal_of` recognises them in an answer (any bytes: it never raises, and reads a
bounded prefix) and :meth:`Refusal.error` words them as an ``EntitlementError`` with the
stable codes ``policy_refused`` and ``integrator_refused``: which identity or app is
refused, and what an administrator or the person can do. The adapters (exchange,
discovery, usage), ``route.auth`` and the gateway all read them here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .._errors import EntitlementError
from .._safety._text import clean

__all__ = [
    "INTEGRATOR_CODE",
    "INTEGRATOR_REFUSED",
    "POLICY_REFUSED",
    "POLICY_TEXT",
    "Refusal",
    "identity_name",
    "refusal_of",
]

POLICY_REFUSED = "policy_refused"
INTEGRATOR_REFUSED = "integrator_refused"
# What the service answers a client its policy refuses (the status is 403).
POLICY_TEXT = "not authorized to use this Copilot feature"
# The error code of a model the login's OAuth app is not served (the status is 400); the
# houston report shows the same message without the code, so the words count too.
INTEGRATOR_CODE = "model_not_available_for_integrator"
_INTEGRATOR_WORDS = "not available for integrator"
_SETTINGS = "https://github.com/settings/copilot"

# Refusals are a few hundred bytes: a bounded prefix keeps every reading linear and small.
_READ = 8192
_INTEGRATOR = re.compile(r'integrator \\?"([A-Za-z0-9._-]{1,64})\\?"')
_AVAILABLE = re.compile(r"Available models: \[([^\]]{0,4000})\]")
_MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,99}")
_MAX_LISTED = 12

# The integration ids copilot-host presents, by the name a person knows the client by.
_NAMES = {
    "vscode-chat": "VS Code's Copilot Chat",
    "copilot-developer-cli": "the Copilot CLI",
}


def identity_name(integration_id: str) -> str:
    """``VS Code's Copilot Chat (vscode-chat)``: a client identity as a person reads it."""
    shown = clean(integration_id, limit=64)
    name = _NAMES.get(integration_id)
    return f"{name} ({shown})" if name else f"the client {shown!r}"


@dataclass(frozen=True, slots=True)
class Refusal:
    """A refusal by policy: ``code`` is ``policy_refused`` or ``integrator_refused``;
    an integrator refusal names the ``integrator`` and the models it is ``available``
    (when its message lists them)."""

    code: str
    status: int
    integrator: str | None = None
    available: tuple[str, ...] = ()

    def message(self, identities: Sequence[str] = ()) -> str:
        """What was refused and what to do, in one line; ``identities`` are the
        ``Copilot-Integration-Id`` values that were presented and refused (empty: not
        known to the caller)."""
        if self.code == POLICY_REFUSED:
            return _policy_words(identities)
        return _integrator_words(self.integrator, self.available)

    def error(self, what: str, identities: Sequence[str] = ()) -> EntitlementError:
        """The typed error for ``what`` (the step that was refused)."""
        return EntitlementError(f"{what} was refused: {self.message(identities)}", code=self.code)


def _policy_words(identities: Sequence[str]) -> str:
    names = [identity_name(i) for i in dict.fromkeys(identities)]
    if not names:
        who = "this Copilot client"
    elif len(names) == 1:
        who = names[0]
    else:
        who = "either client identity copilot-host presents (" + " and ".join(names) + ")"
    return (
        f"an organisation or enterprise Copilot policy does not allow {who} "
        f'(GitHub: "{POLICY_TEXT}"); '
        "an administrator can allow it in the organisation's Copilot policies (the "
        '"Copilot CLI" policy for the Copilot CLI, the model policies for a model), which '
        f"takes a few minutes to apply; {_SETTINGS} shows which organisations give you Copilot"
    )


def _integrator_words(integrator: str | None, available: tuple[str, ...]) -> str:
    app = f'integrator "{integrator}"' if integrator else "its integrator"
    listed = ""
    if available:
        more = len(available) > _MAX_LISTED
        listed = "; it serves " + ", ".join(available[:_MAX_LISTED]) + (", ..." if more else "")
    return (
        f"the model is not served to the OAuth app this login was made with ({app}){listed}; "
        "use a model it serves, or log in again with VS Code's app (`copilot-host login "
        "--force`, the default) if `copilot-host status` names another; no "
        "Copilot-Integration-Id or organisation policy changes this"
    )


def _text_of(body: bytes) -> tuple[str, str | None]:
    """The refusal's message (the JSON ``error.message``/``message``, else the text) and
    its ``error.code``; never raises."""
    text = body[:_READ].decode("utf-8", "replace")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text, None
    if not isinstance(value, dict):
        return text, None
    error = value.get("error")
    holder = error if isinstance(error, dict) else value
    message = holder.get("message")
    code = holder.get("code")
    return (
        message if isinstance(message, str) else text,
        code if isinstance(code, str) else None,
    )


def _listed(message: str) -> tuple[str, ...]:
    found = _AVAILABLE.search(message)
    if found is None:
        return ()
    ids = (part for part in found.group(1).split() if _MODEL_ID.fullmatch(part))
    return tuple(dict.fromkeys(ids))


def refusal_of(status: int, body: bytes) -> Refusal | None:
    """The refusal by policy ``body`` (an answer with ``status``) is, or None."""
    if status == 403:
        text = body[:_READ].decode("utf-8", "replace")
        return Refusal(POLICY_REFUSED, status) if POLICY_TEXT in text else None
    if status != 400:
        return None
    message, code = _text_of(body)
    if code != INTEGRATOR_CODE and _INTEGRATOR_WORDS not in message:
        return None
    named = _INTEGRATOR.search(message)
    return Refusal(
        INTEGRATOR_REFUSED,
        status,
        integrator=named.group(1) if named else None,
        available=_listed(message),
    )
