"""The wire protocols a route speaks, and the path table that names them: the one core
module every layer may import (the catalog, the request path, the adapters, the gateway).
"""

from __future__ import annotations

import enum
from types import MappingProxyType

__all__ = ["ApiProtocol", "protocol_of_path"]


class ApiProtocol(enum.Enum):
    """The wire protocol a route speaks; always explicit, never guessed from a model name.

    The three chat protocols are declared in order of preference: a chat model that lists
    several is routed to the first. ``OPENAI_EMBEDDINGS`` is an embeddings model's, and
    only its: it is never a chat route's protocol, nor among its preferences.
    """

    OPENAI_RESPONSES = "openai-responses"
    OPENAI_CHAT = "openai-chat"
    ANTHROPIC_MESSAGES = "anthropic-messages"
    OPENAI_EMBEDDINGS = "openai-embeddings"

    @property
    def path(self) -> str:
        """The request path on the inference origin."""
        return _PATHS[self]

    @property
    def chat(self) -> bool:
        """Whether a chat route may speak it (every protocol but ``OPENAI_EMBEDDINGS``)."""
        return self is not ApiProtocol.OPENAI_EMBEDDINGS

    @classmethod
    def of_path(cls, path: str) -> ApiProtocol | None:
        """The protocol whose request path (or ``supported_endpoints`` entry) is ``path``."""
        return _BY_PATH.get(path)

    @classmethod
    def preferred(cls, protocols: frozenset[ApiProtocol]) -> ApiProtocol | None:
        """The first chat protocol of ``protocols`` in order of preference, or None when
        there is none (``OPENAI_EMBEDDINGS`` is never chosen)."""
        for protocol in _CHAT_PROTOCOLS:
            if protocol in protocols:
                return protocol
        return None


_PATHS = MappingProxyType(
    {
        ApiProtocol.OPENAI_RESPONSES: "/responses",
        ApiProtocol.OPENAI_CHAT: "/chat/completions",
        ApiProtocol.ANTHROPIC_MESSAGES: "/v1/messages",
        ApiProtocol.OPENAI_EMBEDDINGS: "/embeddings",
    }
)
# The chat protocols, in order of preference.
_CHAT_PROTOCOLS = tuple(protocol for protocol in ApiProtocol if protocol.chat)
_BY_PATH = MappingProxyType({path: protocol for protocol, path in _PATHS.items()})


def protocol_of_path(path: str | bytes) -> ApiProtocol | None:
    """The protocol a request path speaks on an inference origin, or None. Given bytes, the
    path as sent (percent-escapes and query included), which a caller can look up before
    paying to decode it: an inference path is plain ASCII."""
    if isinstance(path, bytes):
        return _BY_RAW_PATH.get(path)
    return ApiProtocol.of_path(path)


_BY_RAW_PATH = MappingProxyType(
    {protocol.path.encode("ascii"): protocol for protocol in ApiProtocol}
)
