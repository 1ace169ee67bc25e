"""``copilot-host models``: register into a fresh catalog and list what it holds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from ._format import table
from ._output import CopilotHostCommand
from ._seam import JSON_VERSION, make_host, make_store, output, use_json_errors

if TYPE_CHECKING:
    from copilot_host._model import ModelRoute

__all__ = ["models", "route_document"]

_EPILOG = """\b
Examples:
  copilot-host models
  copilot-host models --json | jq -r '.models[].route_id'

\b
--json prints one document (fields are only ever added):
  {"v":1,"provider":"github-copilot","origin":"https://api.…githubcopilot.com",
   "models":[{"route_id":"github-copilot/<id>","model_id":"<id>",
     "display_name":"…","protocol":"openai-chat"|"openai-responses","url":"…",
     "context_window":128000,"max_output_tokens":16384,
     "input_modalities":["text"],"supports_reasoning":false,
     "picker_enabled":true}]}
"""


def route_document(route: ModelRoute) -> dict[str, Any]:
    spec = route.spec
    return {
        "route_id": route.route_id,
        "model_id": route.model_id,
        "display_name": spec.display_name,
        "protocol": route.protocol.value,
        "url": route.url,
        "context_window": spec.context_window,
        "max_output_tokens": spec.max_output_tokens,
        "input_modalities": list(spec.input_modalities),
        "supports_reasoning": spec.supports_reasoning,
        "picker_enabled": spec.picker_enabled,
    }


def _tokens(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


@click.command(cls=CopilotHostCommand, epilog=_EPILOG)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
def models(as_json: bool) -> None:
    """List the Copilot models this login can use.

    Registers the account's models into a fresh, empty catalog (exactly what an
    application's register_models call does) and prints each route.
    """
    out = output()
    if as_json:
        use_json_errors()  # first: a failure at any later point is a JSON document too

    from copilot_host._catalog import Catalog
    from copilot_host._register import register_models
    from copilot_host._text import clean

    store = make_store()
    if out.err_is_tty:
        out.live("Asking GitHub Copilot for this account's models...")
    with make_host(store) as host:
        result = register_models(Catalog(), host)
    routes = sorted(result.routes, key=lambda r: r.route_id)

    if as_json:
        out.json(
            {
                "v": JSON_VERSION,
                "provider": result.provider_id,
                "origin": result.origin,
                "models": [route_document(r) for r in routes],
            }
        )
        return
    if not routes:
        out.result("This account has no Copilot models available.")
        return
    rows = [
        (
            clean(r.route_id),
            clean(r.spec.display_name),
            r.protocol.value,
            _tokens(r.spec.context_window),
            "shown" if r.spec.picker_enabled else "hidden",
        )
        for r in routes
    ]
    for line in table(("ROUTE", "NAME", "PROTOCOL", "CONTEXT", "PICKER"), rows):
        out.result(line)
    out.hint(f"{len(routes)} models at {result.origin}")
