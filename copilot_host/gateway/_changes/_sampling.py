"""Sampling settings the GPT-5 and o-series models refuse (the Copilot CLI sends them).

Copilot answers ``temperature`` or ``top_p`` other than 1 for a GPT-5 or o-series model with
400 "Unsupported parameter: 'temperature' is not supported with this model." on
``/chat/completions`` and ``/responses``, and Chat Completions' ``max_tokens`` for them with
"Unsupported parameter: 'max_tokens' is not supported with this model. Use
'max_completion_tokens' instead." (codecompanion.nvim #2952, oh-my-pi #5606, jcode #190,
caozhiyuan/copilot-api #164; reported). The Copilot CLI sends ``temperature: 0`` and
``max_tokens`` whatever the model. For those models the settings go (``temperature``/
``top_p`` of 1 is the default they take) and ``max_tokens`` becomes
``max_completion_tokens``; VS Code avoids both by sending no sampling settings on
Responses and ``max_output_tokens`` there.
"""

from __future__ import annotations

from ._change import Change, RequestEdit

__all__ = ["REASONING_FAMILIES", "Sampling"]

# Model id prefixes of the families that refuse sampling settings (reported above).
REASONING_FAMILIES = ("gpt-5", "o1", "o3", "o4")


class Sampling(Change):
    name = "sampling"
    apis = frozenset({"chat", "responses"})
    summary = (
        "Chat, Responses: for GPT-5 and o-series models temperature and top_p other than 1 "
        "are removed, and Chat's max_tokens becomes max_completion_tokens"
    )
    evidence = "sampling"
    check = "sampling"
    agents = ("copilot-cli",)

    def request(self, edit: RequestEdit) -> None:
        if not edit.route.model_id.startswith(REASONING_FAMILIES):
            return
        value = edit.value
        dropped = [
            key
            for key in ("temperature", "top_p")
            if key in value and not (value[key] == 1 and not isinstance(value[key], bool))
        ]
        rename = edit.api.name == "chat" and "max_tokens" in value
        if not dropped and not rename:
            return
        doc = edit.edit()
        for key in dropped:
            del doc[key]
        if rename:
            cap = doc.pop("max_tokens")
            doc.setdefault("max_completion_tokens", cap)
        edit.did(self.name)
