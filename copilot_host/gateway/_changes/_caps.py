"""The output caps: a request may not ask for more output than the served model gives.

Agents size their requests for the model they think they talk to: Claude Code asks
``max_tokens: 128000`` of ``claude-opus-5-5`` (served by a 64,000-token model), opencode
``max_tokens: 32000`` of ``gpt-4.1`` (16,384). Anthropic's and OpenAI's APIs refuse a cap
above the model's limit, so a cap above the served model's ``max_output_tokens`` is set to
it; an absent cap stays absent.
"""

from __future__ import annotations

from ._change import Change, RequestEdit

__all__ = ["MaxCompletionTokens", "MaxOutputTokens", "MaxTokens"]


class _Cap(Change):
    check = "output_limit"

    def request(self, edit: RequestEdit) -> None:
        limit = edit.max_output
        asked = edit.value.get(self.name)
        if limit is None or not isinstance(asked, int) or isinstance(asked, bool) or asked <= limit:
            return
        edit.edit()[self.name] = limit
        edit.did(self.name)


class MaxTokens(_Cap):
    name = "max_tokens"
    apis = frozenset({"messages", "chat"})
    summary = "Messages, Chat: max_tokens above the model's output limit is set to it"
    evidence = "max_tokens"
    agents = ("claude-code", "opencode")


class MaxCompletionTokens(_Cap):
    name = "max_completion_tokens"
    apis = frozenset({"chat"})
    summary = "Chat: max_completion_tokens above the output limit is set to it"
    evidence = "max_completion_tokens"


class MaxOutputTokens(_Cap):
    name = "max_output_tokens"
    apis = frozenset({"responses"})
    summary = "Responses: max_output_tokens above the output limit is set to it"
    evidence = "max_output_tokens"
