"""The route an application sends to: a model of the account, with the ``auth`` that adds the
session to each request (the model's own description is :mod:`copilot_host._models`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._api import ApiProtocol
from .._models import ModelSpec

if TYPE_CHECKING:
    import httpx2

__all__ = ["ModelRoute"]


@dataclass(frozen=True, slots=True)
class ModelRoute:
    """One model as the application's catalog sees it.

    ``auth`` adds the current session bearer per request and refuses any other origin;
    the route's fields (and so the catalog) hold no token, and ``auth``'s repr shows none.
    ``owner`` is the provider id the route was registered under (``route_id``'s prefix).
    """

    route_id: str
    model_id: str
    protocol: ApiProtocol
    origin: str
    url: str
    auth: httpx2.Auth
    spec: ModelSpec
    owner: str = ""

    def __post_init__(self) -> None:
        if not self.owner:
            # Built by hand without one: the owner is what the route id says it is.
            object.__setattr__(self, "owner", self.route_id.rpartition("/")[0])
