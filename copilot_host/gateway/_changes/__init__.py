"""The changes the gateway makes to the wire: one ordered table, the only place one is declared.

Coding agents send the Copilot API shapes that VS Code and the Copilot CLI never send, and
that the service is reported to refuse (docs/WIRE.md, "Agents through the gateway", has the
evidence for each). Each change is one object of :data:`TABLE` (:class:`~._change.Change`:
its name, the APIs and sides it acts on, its evidence, the emulator check that refuses the
unchanged shape), in the order they apply. :data:`REWRITES` (the names the access line's
``rewrote=`` and ``COPILOT_HOST_REWRITES`` use), docs/WIRE.md's table and the emulator's
checks are all compared with it by tests. The always-on changes (the model id, a block
``system``, the served betas, the rate-limit refusal's shape) are entries too: they cannot
be switched off and are not named in ``rewrote=``.

:class:`Changes` is the table as one gateway applies it (the switched-off entries left
out), sorted by API once, so a request walks only the entries that can act on it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType

from copilot_host._internal import clean

from .._protocols import APIS, Api
from ._answers import AnswerPass
from ._betas import FIELD_BETAS, SERVED_BETAS
from ._caps import MaxCompletionTokens, MaxOutputTokens, MaxTokens
from ._change import AnswerMapper, Change, LocalAnswer, RequestEdit, Reshaped, Side
from ._embeddings import (
    EmbeddingsDimensions,
    EmbeddingsEnvelope,
    EmbeddingsInput,
    EmbeddingsInputs,
    EmbeddingsTokens,
    EncodingFormat,
)
from ._local import COUNT_TOKENS, CountTokens
from ._messages import BetaFields, BillingHeader, ServerTools, SystemMessages, ThinkingBudget
from ._policy import PolicyRefusal
from ._rate_limit import RateLimitRefusal
from ._socket import WarmUp
from ._splices import Betas, BlockSystem, ModelId, Splice
from ._tool_choice import ToolChoice
from ._tools import AdditionalTools, CustomTools, Namespaces, WebSearch

__all__ = [
    "COUNT_TOKENS",
    "TRANSPORTS",
    "FIELD_BETAS",
    "REWRITES",
    "REWRITES_VARIABLE",
    "SERVED_BETAS",
    "TABLE",
    "AnswerPass",
    "ApiChanges",
    "Change",
    "Changes",
    "LocalAnswer",
    "RequestEdit",
    "Reshaped",
    "Side",
    "check_rewrites",
    "rewrites_from_environment",
]

_log = logging.getLogger("copilot_host.gateway")

REWRITES_VARIABLE = "COPILOT_HOST_REWRITES"
# How a request reaches the gateway: an HTTP request, or a WebSocket message.
TRANSPORTS = ("http", "ws")

TABLE: tuple[Change, ...] = (
    WarmUp(),
    Betas(),
    BillingHeader(),
    BetaFields(),
    SystemMessages(),
    MaxTokens(),
    ThinkingBudget(),
    MaxCompletionTokens(),
    MaxOutputTokens(),
    ServerTools(),
    AdditionalTools(),
    Namespaces(),
    WebSearch(),
    CustomTools(),
    ToolChoice(),
    # Embeddings: the gateway's own refusals first (a request they answer goes no further).
    EmbeddingsTokens(),
    EmbeddingsInputs(),
    EmbeddingsDimensions(),
    EmbeddingsInput(),
    EncodingFormat(),
    EmbeddingsEnvelope(),
    CountTokens(),
    RateLimitRefusal(),
    PolicyRefusal(),
    ModelId(),
    BlockSystem(),
)

# Each change that can be switched off, by the name the access line and COPILOT_HOST_REWRITES
# use, with what it does.
REWRITES: Mapping[str, str] = MappingProxyType(
    {change.name: change.summary for change in TABLE if change.switchable}
)
_ALL = frozenset(REWRITES)


def check_rewrites(names: Iterable[str] | None) -> frozenset[str]:
    """The rewrites to apply: every one for None, else ``names`` (each from REWRITES; a
    ``ValueError`` names one that is not)."""
    if names is None:
        return _ALL
    if isinstance(names, str):
        raise TypeError("rewrites is a collection of names, not one string")
    chosen = frozenset(names)
    unknown = sorted(chosen - _ALL)
    if unknown:
        raise ValueError(
            f"unknown rewrite {clean(unknown[0], limit=60)!r}; the names are "
            + ", ".join(sorted(_ALL))
        )
    return chosen


def rewrites_from_environment(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The rewrites ``COPILOT_HOST_REWRITES`` leaves on: ``-name,-name`` turns those off;
    unset or empty, all are on. A ``ValueError`` (one line) for any other spelling."""
    value = (os.environ if environ is None else environ).get(REWRITES_VARIABLE, "").strip()
    off: set[str] = set()
    for part in value.split(","):
        item = part.strip()
        if not item:
            continue
        if not item.startswith("-") or item[1:] not in _ALL:
            raise ValueError(
                f"{REWRITES_VARIABLE} lists rewrites to turn off as -name,-name (names: "
                f"{', '.join(sorted(_ALL))}), not {clean(item, limit=60)!r}"
            )
        off.add(item[1:])
    return _ALL - off


class ApiChanges:
    """The enabled changes that act on one API's requests that came over one transport, by
    side, in the table's order."""

    __slots__ = ("_answers", "_headers", "_local", "_request", "_reshapes", "_splices", "api")

    def __init__(self, api: Api, changes: Sequence[Change], transport: str = "http") -> None:
        self.api = api
        mine = [change for change in changes if change.acts_on(api, transport)]

        def having(side: str) -> tuple[Change, ...]:
            return tuple(change for change in mine if side in change.sides)

        self._splices = tuple(change for change in mine if isinstance(change, Splice))
        self._request = tuple(
            change for change in having(Side.REQUEST) if not isinstance(change, Splice)
        )
        self._headers = having(Side.HEADERS)
        self._answers = having(Side.ANSWER)
        self._local = tuple(change for change in having(Side.LOCAL) if not change.paths)
        self._reshapes = having(Side.RESHAPE)

    def request(self, edit: RequestEdit) -> None:
        """Apply the request changes (they record their names in ``edit.applied`` and any
        answer the gateway gives itself in ``edit.local``)."""
        for change in self._request:
            change.request(edit)
            if edit.local is not None:
                break
        for change in self._local:
            if edit.local is not None:
                break
            edit.local = change.local(edit)
        if edit.applied and _log.isEnabledFor(logging.DEBUG):
            for name in edit.applied:
                _log.debug("rewrote %s: %s", name, REWRITES.get(name, name))

    def body(self, edit: RequestEdit, body: bytes) -> bytes:
        """The body that goes upstream: the bytes as sent with the always-on splices, or,
        when a change edited the document (or a splice cannot be proven right on the
        bytes), the edited document with them, encoded again."""
        if not edit.edited:
            out = body
            for splice in self._splices:
                spliced = splice.splice(edit, out)
                if spliced is None:
                    break
                out = spliced
            else:
                return out
        for splice in self._splices:
            splice.request(edit)
        from ._splices import encode

        return encode(edit, body)

    def headers(
        self, edit: RequestEdit, headers: list[tuple[bytes, bytes]]
    ) -> list[tuple[bytes, bytes]]:
        for change in self._headers:
            headers = change.headers(edit, headers)
        return headers

    def answers(self, edit: RequestEdit) -> AnswerPass | None:
        """What this request's answer goes through, None when nothing would change it."""
        mappers: list[AnswerMapper] = []
        for change in self._answers:
            mapper = change.answer(edit)
            if mapper is not None:
                mappers.append(mapper)
        return AnswerPass(mappers) if mappers else None

    def reshape(self, status: int, body: bytes, headers: Mapping[str, str]) -> Reshaped | None:
        for change in self._reshapes:
            reshaped = change.reshape(self.api, status, body, headers)
            if reshaped is not None:
                return reshaped
        return None


class Changes:
    """The table as one gateway applies it: ``enabled`` names the switchable changes that
    are on (the always-on ones always are)."""

    __slots__ = ("_by_api", "_path_apis", "_paths", "enabled")

    def __init__(self, enabled: frozenset[str] = _ALL) -> None:
        self.enabled = enabled
        chosen = [change for change in TABLE if not change.switchable or change.name in enabled]
        self._by_api = {
            (api, transport): ApiChanges(api, chosen, transport)
            for api in APIS
            for transport in TRANSPORTS
        }
        self._paths = MappingProxyType({path: change for change in chosen for path in change.paths})
        self._path_apis = {
            path: api for path, change in self._paths.items() for api in APIS if change.acts_on(api)
        }

    def of(self, api: Api, transport: str = "http") -> ApiChanges:
        """The changes for ``api``'s requests that came over ``transport``."""
        return self._by_api[(api, transport)]

    @property
    def paths(self) -> Mapping[str, Change]:
        """The gateway's own paths the enabled changes answer (count_tokens), by path."""
        return self._paths

    def api_of_path(self, path: str) -> Api | None:
        """The API a path the changes answer belongs to (its requests' shape)."""
        return self._path_apis.get(path)
