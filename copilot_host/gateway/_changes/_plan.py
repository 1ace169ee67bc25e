"""An upstream answer reshaped: a plan that can use only Auto refuses every named model.

Since 2026-06-24 Copilot Free and Student may use only Auto model selection; a request that
names a model is refused with 400 ``model_not_supported``, "The requested model is not
supported." (github/gh-aw #46531, diegosouzapw/OmniRoute #12000, CopilotChat.nvim #1576;
reported), in OpenAI's error shape whatever the endpoint. On such a plan ``/models`` still lists
every model, none of them ``model_picker_enabled`` (diegosouzapw/OmniRoute #12000,
editor-code-assistant/eca #601; reported), and the service's words say nothing of the plan:
Claude Code showed them after six requests, on ``/v1/messages``, in a shape not its own. So
that refusal of a model whose entry is not picker-enabled reaches the client in its API's
shape, with the same status and code, saying the plan allows only Auto and what to ask for
instead. (The same refusal of a picker-enabled model, an identity the service does not
serve it to, is relayed as it came.)
"""

from __future__ import annotations

from collections.abc import Mapping

from .._protocols import Api
from ._change import Change, RequestEdit, Reshaped
from ._rate_limit import error_code

__all__ = ["AUTO_ONLY_MESSAGE", "AutoOnlyRefusal"]

AUTO_ONLY_MESSAGE = (
    "GitHub Copilot refused this model although the account lists it: this account's plan "
    "can use only Auto model selection (Copilot Free and Student), which refuses every "
    "request that names a model; ask for the model name auto instead "
    "(`copilot-host usage` shows the plan)"
)


class AutoOnlyRefusal(Change):
    name = "auto-only"
    apis = frozenset({"chat", "responses", "messages"})
    summary = (
        "an upstream 400 model_not_supported for a model the account lists outside the "
        "picker (as an Auto-only plan lists every model) reaches the client in its API's "
        "shape, saying the plan can use only Auto"
    )
    evidence = "auto-only"
    check = (
        "none: the emulator answers a named model on an Auto-only plan as the service is "
        "reported to (docs/EMULATOR.md, Usage(auto_only=True))"
    )
    agents = ("claude-code",)
    switchable = False

    def reshape(
        self,
        api: Api,
        status: int,
        body: bytes,
        headers: Mapping[str, str],
        edit: RequestEdit | None = None,
    ) -> Reshaped | None:
        if status != 400 or edit is None or edit.route.spec.picker_enabled:
            return None
        if b"model_not_supported" not in body or error_code(body) != "model_not_supported":
            return None
        return Reshaped(
            api.errors.body(400, "model_not_supported", AUTO_ONLY_MESSAGE),
            None,
            "upstream refused a model the account lists (model_not_supported): the plan can "
            "use only Auto model selection",
        )
