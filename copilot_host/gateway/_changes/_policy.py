"""The service's two refusals by policy, told to the client in its API's shape.

An organisation's Copilot policy that does not allow the client refuses with 403 and the
plain text ``unauthorized: not authorized to use this Copilot feature``; a model not served
to the OAuth app the login was made with is refused with 400
``model_not_available_for_integrator`` (docs/WIRE.md, "Refusals by policy", has the
reports). Relayed as they are, a Messages client reads neither (the first is not JSON, the
second not Anthropic's shape) and an OpenAI client shows a bare code. So each reaches the
client with its own status, in its API's error shape, with the code ``policy_refused`` or
``integrator_refused`` and one line saying what is refused and what an administrator or
the person can do; the gateway logs the same line. Every other answer is left alone.
"""

from __future__ import annotations

from collections.abc import Mapping

from copilot_host._internal import refusal_of

from .._protocols import Api
from ._change import Change, RequestEdit, Reshaped

__all__ = ["PolicyRefusal"]


class PolicyRefusal(Change):
    name = "policy-refusal"
    apis = frozenset({"chat", "responses", "messages"})
    summary = (
        "an upstream refusal by policy (403 not authorized to use this Copilot feature, 400 "
        "model_not_available_for_integrator) reaches the client in its API's shape, in "
        "plain words"
    )
    evidence = "policy-refusal"
    check = (
        "none: the emulator answers both refusals as the service is reported to "
        "(docs/EMULATOR.md, Every Copilot API request and Model requests)"
    )
    switchable = False

    def reshape(
        self,
        api: Api,
        status: int,
        body: bytes,
        headers: Mapping[str, str],
        edit: RequestEdit | None = None,
    ) -> Reshaped | None:
        found = refusal_of(status, body)
        if found is None:
            return None
        message = f"copilot-host: GitHub Copilot refused the request: {found.message()}"
        return Reshaped(
            api.errors.body(status, found.code, message),
            None,
            f"upstream refused ({found.code}): {found.message()}",
        )
