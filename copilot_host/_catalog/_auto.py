"""Copilot Auto's route as the catalog shows it: ``github-copilot/auto``.

Auto is not an inventory entry (the service lists none; VS Code makes its picker's "Auto"
entry itself), so registration makes its spec from what the host's probe read
(:class:`copilot_host._sessions._auto.AutoProbe`) and the inventory: the models of Auto's
pool that the inventory lists, in the pool's order; the route's protocol, the first in
order of preference that any of them speaks; and each limit the smallest of theirs, so an
application that sizes a prompt or an answer by the route never sends more than any model
Auto may pick takes. When the pool could not be read (a timeout, a refusal on a plan that
can use only Auto) every model of the inventory stands in for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .._api import ApiProtocol
from .._sessions._auto import AUTO_MODEL, AutoProbe
from ._specs import AutoPool, ModelSpec, SkippedModel

__all__ = ["AUTO_DISPLAY_NAME", "auto_only_skipped", "auto_spec"]

AUTO_DISPLAY_NAME = "Copilot Auto"


def _least(models: Sequence[ModelSpec], limit: Callable[[ModelSpec], int | None]) -> int | None:
    given = [value for value in map(limit, models) if value is not None]
    return min(given) if given else None


def auto_spec(models: Sequence[ModelSpec], probe: AutoProbe) -> ModelSpec | None:
    """The spec of Auto's route over the inventory ``models``; None when no model of the
    pool speaks an API copilot-host speaks (or the inventory has its own ``auto``)."""
    by_id = {model.model_id: model for model in models}
    if AUTO_MODEL in by_id:
        return None  # the inventory's own entry of that name wins; none is known to exist
    found = probe.session
    pool = tuple(dict.fromkeys(i for i in (found.models if found else ()) if i in by_id))
    stand_ins = [by_id[model_id] for model_id in pool] if pool else list(models)
    protocols = frozenset().union(*(model.protocols for model in stand_ins))
    protocol = ApiProtocol.preferred(protocols)
    if protocol is None:
        return None
    discounts = tuple((i, d) for i, d in (found.discounts if found else ()) if i in pool)
    return ModelSpec(
        model_id=AUTO_MODEL,
        display_name=AUTO_DISPLAY_NAME,
        protocol=protocol,
        context_window=_least(stand_ins, lambda m: m.context_window),
        max_output_tokens=_least(stand_ins, lambda m: m.max_output_tokens),
        # A request with images goes to a model of the pool that takes them.
        input_modalities=(
            ("text", "image")
            if any("image" in m.input_modalities for m in stand_ins)
            else ("text",)
        ),
        supports_reasoning=all(m.supports_reasoning for m in stand_ins),
        picker_enabled=True,
        protocols=protocols,
        max_prompt_tokens=_least(stand_ins, lambda m: m.max_prompt_tokens),
        auto=AutoPool(
            models=pool,
            discounts=discounts,
            only=probe.only,
            known=bool(pool),
            inventory=tuple(models),
        ),
    )


def auto_only_skipped(models: Sequence[ModelSpec], provider: str) -> tuple[SkippedModel, ...]:
    """The inventory's models on a plan that can use only Auto: each skipped, since the
    service refuses every request that names one (docs/WIRE.md, "Plans that can use only
    Auto")."""
    route = f"{provider}/{AUTO_MODEL}"
    return tuple(
        SkippedModel(
            model.model_id,
            "auto_only",
            f"this plan can use only Copilot Auto model selection: reach it through {route}",
            model.display_name,
        )
        for model in models
    )
