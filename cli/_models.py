"""``copilot-host models``: register into a fresh catalog and list what it holds."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import click

from ._context import JSON_VERSION, make_host, make_store, output, use_json_errors
from ._editor import editor_from_environment
from ._format import table
from ._nodump import no_core_dumps
from ._output import CopilotHostCommand, Output

if TYPE_CHECKING:
    from copilot_host import ModelBilling, ModelRoute, SkippedModel

__all__ = ["TITLES", "models", "route_document", "skipped_document"]

# The columns of the ``models`` table, in order.
TITLES = ("ROUTE", "NAME", "PROTOCOL", "CONTEXT", "PICKER", "MULT", "IN/1M", "OUT/1M", "CACHE/1M")

_EPILOG = """\b
Examples:
  copilot-host models
  copilot-host models --all        also the embeddings models and what cannot be used
  copilot-host models --json | jq -r '.models[].route_id'

\b
--json prints one document (fields are only ever added):
  {"v":1,"provider":"github-copilot","origin":"https://api.…githubcopilot.com",
   "models":[{"route_id":"github-copilot/<id>","model_id":"<id>",
     "display_name":"…","protocol":"openai-responses"|"openai-chat"|"anthropic-messages"
     (with --all also "openai-embeddings"),
     "protocols":["…"],"url":"…","context_window":128000,"max_output_tokens":16384,
     "max_prompt_tokens":128000|null,"chat_default":false,"input_modalities":["text"],
     "supports_reasoning":false,"max_inputs":null|512,"dimensions":false,
     "picker_enabled":true,"warnings":[],"warning_codes":[],
     "billing":{"premium":true,"multiplier":1.0,"prices":{"batch_size":1000000,
       "input":500.0,"output":2500.0,"cache":50.0,"context_max":null,
       "input_per_million":500.0,"output_per_million":2500.0,
       "cache_per_million":50.0,"long_context":null}}|null}],
   "skipped":[{"model_id":"<id>","reason":"policy_not_enabled","message":"…"}],
   "auto_only":null|"this plan (free) can use only Auto model selection; …",
   "auto":null|{"pool":["<id>",…],"discounts":{"<id>":0.1},"only":false,"known":true}}
Each model carries "auto" too: null, except Copilot Auto's route (github-copilot/auto).
With no usable model: {"v":1,"error":{"code":"no_models",...},"skipped":[...]}; exit 1.
"""


def route_document(route: ModelRoute) -> dict[str, Any]:
    spec = route.spec
    return {
        "route_id": route.route_id,
        "model_id": route.model_id,
        "display_name": spec.display_name,
        "protocol": route.protocol.value,
        "protocols": sorted(p.value for p in spec.protocols),
        "url": route.url,
        "context_window": spec.context_window,
        "max_output_tokens": spec.max_output_tokens,
        "max_prompt_tokens": spec.max_prompt_tokens,
        "chat_default": spec.chat_default,
        "input_modalities": list(spec.input_modalities),
        "supports_reasoning": spec.supports_reasoning,
        "max_inputs": spec.max_inputs,
        "dimensions": spec.dimensions,
        "picker_enabled": spec.picker_enabled,
        "warnings": list(spec.warnings),
        "warning_codes": list(spec.warning_codes),
        "billing": None if spec.billing is None else spec.billing.document(),
        "auto": None if spec.auto is None else spec.auto.document(),
    }


def skipped_document(entry: SkippedModel) -> dict[str, str]:
    return {"model_id": entry.model_id, "reason": entry.reason, "message": entry.message}


def _number(value: float | None, suffix: str = "") -> str:
    return "-" if value is None else f"{value:,.2f}".rstrip("0").rstrip(".") + suffix


def _cost_cells(billing: ModelBilling | None) -> tuple[str, str, str, str]:
    """The multiplier (legacy request-billed plans) and AI credits per million input,
    output and cached input tokens (usage-billed plans; a price in nano-AIU converted),
    "-" where the inventory lists none."""
    if billing is None:
        return ("-", "-", "-", "-")
    prices = billing.prices
    cached = None
    if prices is not None:
        cached = prices.cache_read if prices.cache_read is not None else prices.cache
    return (
        _number(billing.multiplier, "x"),
        _number(prices.per_million(prices.input)) if prices else "-",
        _number(prices.per_million(prices.output)) if prices else "-",
        _number(prices.per_million(cached)) if prices else "-",
    )


def _print_billing_notes(out: Output, routes: Iterable[ModelRoute]) -> None:
    """Promotions, cache-write prices and prices in a unit copilot-host cannot convert:
    one line each, beside the table."""
    for route in routes:
        billing = route.spec.billing
        if billing is None:
            continue
        if billing.promo_discount_percent is not None:
            until = f" until {billing.promo_ends_at}" if billing.promo_ends_at else ""
            out.info(
                f"promotion ({route.model_id}): "
                f"{_number(billing.promo_discount_percent)}% off{until}"
            )
        prices = billing.prices
        if prices is None:
            continue
        if prices.unit is not None and prices.per_million(0.0) is None:
            out.info(
                f"prices of {route.model_id} are listed in {prices.unit}, a unit copilot-host "
                "does not convert: --json shows them as listed"
            )
            continue
        writes = [
            f"{label} {_number(prices.per_million(price))}"
            for label, price in (("write", prices.cache_write), ("1h write", prices.cache_write_1h))
            if price is not None
        ]
        if writes:
            out.info(
                f"cache prices ({route.model_id}, AI credits per 1M tokens): {', '.join(writes)}"
            )


def _tokens(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def _print_skipped(out: Output, skipped: Sequence[SkippedModel]) -> None:
    from copilot_host._internal import clean

    if not skipped:
        return
    out.result()
    rows = [
        (entry.model_id or "(not shown)", entry.reason, clean(entry.message))
        for entry in sorted(skipped, key=lambda e: (e.reason, e.model_id))
    ]
    for line in table(("SKIPPED", "REASON", "WHY"), rows):
        out.result(line)


# The warning code the service puts on every model when it calls the client stale.
DEPRECATED_CODE = "client_version_deprecated"
UPGRADE_NOTE = (
    "GitHub says this client's version is deprecated: upgrade copilot-host "
    "(pip install --upgrade copilot-host), or set COPILOT_HOST_EDITOR to a current VS Code "
    "identity (e.g. COPILOT_HOST_EDITOR='vscode/1.140.0 copilot-chat/0.68.0')"
)


def _print_notes(out: Output, routes: Iterable[ModelRoute]) -> None:
    """The service's notes on models, once per distinct text (real inventories repeat one
    billing note on every model); a deprecated client is told once what to do about it."""
    seen: dict[str, list[str]] = {}
    deprecated = False
    for route in routes:
        spec = route.spec
        for warning, code in zip(spec.warnings, spec.warning_codes, strict=False):
            if code == DEPRECATED_CODE:
                deprecated = True
                continue
            seen.setdefault(warning, []).append(route.model_id)
    if deprecated:
        out.info(UPGRADE_NOTE)
    for warning, model_ids in seen.items():
        which = model_ids[0] if len(model_ids) == 1 else f"{len(model_ids)} models"
        out.info(f"note from GitHub ({which}): {warning}")


@click.command(cls=CopilotHostCommand, epilog=_EPILOG)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help="Also list the embeddings models, and the models that cannot be used and why.",
)
def models(as_json: bool, show_all: bool) -> None:
    """List the Copilot models this login can use.

    Registers the account's models into a fresh, empty catalog (exactly what an
    application's register_models call does) and prints each route. With --all it
    registers the embeddings models too (as the gateway does: `serve` serves them on
    /v1/embeddings) and lists the inventory's entries that cannot be used (not chat or
    embeddings models, not enabled by policy, served only on endpoints copilot-host does
    not speak).
    """
    out = output()
    no_core_dumps()
    if as_json:
        use_json_errors()  # first: a failure at any later point is a JSON document too

    import copilot_host as ch
    from copilot_host._internal import clean

    editor = editor_from_environment()
    store = make_store()
    if out.err_is_tty:
        out.live("Asking GitHub Copilot for this account's models...")
    from ._plan import auto_document, auto_line, plan_line_now

    auto_only: str | None = None
    try:
        with make_host(store, editor) as host:
            result = ch.register_models(ch.Catalog(), host, embeddings=show_all)
            auto_only = plan_line_now(host)
    except ch.NoEligibleModelsError as exc:
        # Nothing usable, but the person (or program) still learns what there was.
        if as_json:
            use_json_errors(skipped=[skipped_document(s) for s in exc.skipped])
        else:
            _print_skipped(out, exc.skipped)
        raise
    routes = sorted(result.routes, key=lambda r: r.route_id)

    if as_json:
        out.json(
            {
                "v": JSON_VERSION,
                "provider": result.provider_id,
                "origin": result.origin,
                "models": [route_document(r) for r in routes],
                "skipped": [skipped_document(s) for s in result.skipped],
                "auto_only": auto_only,
                "auto": auto_document(routes),
            }
        )
        return
    rows = [
        (
            clean(r.route_id),
            clean(r.spec.display_name),
            r.protocol.value,
            _tokens(r.spec.context_window),
            "shown" if r.spec.picker_enabled else "hidden",
            *_cost_cells(r.spec.billing),
        )
        for r in routes
    ]
    for line in table(TITLES, rows):
        out.result(line)
    _print_billing_notes(out, routes)
    embedders = sum(1 for r in routes if not r.protocol.chat)
    if embedders:
        out.info(
            f"{embedders} embeddings model{'s' if embedders != 1 else ''} (protocol "
            "openai-embeddings): `copilot-host serve` serves them on /v1/embeddings; "
            "register_models(..., embeddings=True) in Python"
        )
    if show_all:
        _print_skipped(out, result.skipped)
    _print_notes(out, routes)
    auto = next((r for r in routes if r.spec.auto is not None), None)
    shown = auto_line(auto_document(routes), auto)
    if shown is not None:
        out.hint(shown)
    if auto_only is not None:
        out.warn(auto_only)
    hidden = "" if show_all or not result.skipped else f"; {len(result.skipped)} skipped (--all)"
    out.hint(f"{len(routes)} models at {result.origin}{hidden}")
