"""The answer the gateway gives itself on a WebSocket: Codex's warm-up.

On its first socket of a thread Codex sends a ``response.create`` with ``"generate": false``
before the first turn (measured with Codex CLI 0.171.0: docs/WIRE.md, "Responses over
WebSocket"): the server takes in the prefix and produces nothing, and the turn then chains
on the warm-up's response id with ``previous_response_id``. Copilot's HTTP ``/responses``
has no such request, so the gateway answers it: ``response.created`` and
``response.completed`` with no output and an id of its own (which the socket's
conversation remembers, so the turn may chain on it), never upstream and never billed.
"""

from __future__ import annotations

from ._change import Change, LocalAnswer, RequestEdit

__all__ = ["WarmUp"]


class WarmUp(Change):
    name = "warm-up"
    apis = frozenset({"responses"})
    transports = frozenset({"ws"})
    summary = (
        'a WebSocket request with "generate": false (Codex\'s warm-up) is answered by the '
        "gateway with an empty response later requests chain on"
    )
    evidence = "WebSocket warm-up"
    check = (
        "none: the gateway never sends a warm-up upstream (Copilot's HTTP /responses has "
        "none to refuse)"
    )
    agents = ("codex",)
    # Off, a warm-up would go upstream as a request for a whole answer.
    switchable = False

    def request(self, edit: RequestEdit) -> None:
        # A request hook first in the table, so no other change works on a request that
        # never goes upstream (the local answer ends the change stage).
        if edit.original.get("generate") is not False:
            return
        ident = f"resp_copilot_host_{edit.serial}"
        body = edit.api.text_answer(edit.route.model_id, "", ident=ident, stream=True)
        edit.local = LocalAnswer(body, stream=True)
        edit.did(self.name)
