"""The credential-free description of a model, and the route an application sends to."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx2

__all__ = ["ApiProtocol", "ModelRoute", "ModelSpec"]


class ApiProtocol(enum.Enum):
    """The wire protocol a route speaks; always explicit, never guessed from a model name."""

    OPENAI_CHAT = "openai-chat"
    OPENAI_RESPONSES = "openai-responses"

    @property
    def path(self) -> str:
        """The request path on the inference origin."""
        return _PATHS[self]


_PATHS = {
    ApiProtocol.OPENAI_CHAT: "/chat/completions",
    ApiProtocol.OPENAI_RESPONSES: "/responses",
}


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """What the inventory says about one model: display data only, never credentials."""

    model_id: str
    display_name: str
    protocol: ApiProtocol
    context_window: int | None = None
    max_output_tokens: int | None = None
    input_modalities: tuple[str, ...] = ("text",)
    supports_reasoning: bool = False
    picker_enabled: bool = True


@dataclass(frozen=True, slots=True)
class ModelRoute:
    """One model as the application's catalog sees it.

    ``auth`` adds the current session bearer per request and refuses any other origin;
    it holds no token itself.
    """

    route_id: str
    model_id: str
    protocol: ApiProtocol
    origin: str
    url: str
    auth: httpx2.Auth
    spec: ModelSpec
