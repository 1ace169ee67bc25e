"""What the gateway tells the ledger, and what the ledger answers (pure; no I/O).

A model request is two records: a :class:`Start` before it goes upstream and an
:class:`End` when its answer is over; an answer the gateway gives itself (count_tokens, a
server-tool request) is one :class:`Start` and its :class:`End` together. Every field is a
count, a time, a word from a closed vocabulary, or a name the gateway resolved (a served
model, the account's login, a rewrite's name): never a prompt, an answer, a header value or
a secret. The writer cleans what it stores again (:func:`stored_text`), so a mistake in a
caller cannot put text of another kind in the file.
"""

from __future__ import annotations

import functools
import re
import secrets
from dataclasses import dataclass
from typing import NamedTuple

from copilot_host import mask_secrets
from copilot_host._internal import clean, secrets_generation

from .._agents import NAMES

__all__ = [
    "AGENTS",
    "APIS",
    "IN_FLIGHT",
    "INTERRUPTED",
    "Admission",
    "Admitted",
    "End",
    "Named",
    "OverDailyBudget",
    "Start",
    "agent_word",
    "api_word",
    "format_credits",
    "new_run_id",
    "rewrote_text",
    "stored_names",
    "stored_text",
    "valid_run_id",
]

# Who sent a request: one word of the gateway's closed vocabulary (the agents' module
# tells requests apart; `run` records the agent it started), never the raw header.
AGENTS: tuple[str, ...] = NAMES
# The client API a request came in on.
APIS = ("chat", "responses", "messages", "embeddings")
# The status of a row whose process ended before its answer did, and how history shows a
# row whose answer has not ended yet (its process is still running).
INTERRUPTED = "interrupted"
IN_FLIGHT = "in_flight"

_RUN_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
_REWRITE = re.compile(r"[a-z0-9][a-z0-9_.:-]{0,63}")
_AGENTS = frozenset(AGENTS)
_APIS = frozenset(APIS)


def new_run_id() -> str:
    """A fresh run id: 12 random hex digits (also the name of the run's lock file)."""
    return secrets.token_hex(6)


def valid_run_id(run_id: str) -> bool:
    return _RUN_ID.fullmatch(run_id) is not None


# Start, End and Admitted are named tuples, not frozen dataclasses: the gateway makes one
# of each per request on its event loop, and a frozen dataclass's __init__ (a call per
# field to get past its own __setattr__) costs twice as much. They are as immutable.
class Start(NamedTuple):
    """A model request about to go upstream (or answered by the gateway itself).

    ``time`` is the wall clock (seconds since the epoch, UTC) when it came in; ``login``
    the account it is billed to; ``agent`` a word of :data:`AGENTS`; ``api`` one of
    :data:`APIS`; ``model_asked`` the name the client used (an alias, ``auto``, a model
    id), ``model`` the model that serves it; ``reserved`` what it holds against the
    budgets until its answer ends (None: its model's cost is not known yet); ``rewrote``
    the names of the changes the gateway applied (the access line's ``rewrote=``).
    """

    time: float
    login: str
    agent: str
    api: str
    model_asked: str
    model: str
    reserved: float | None = None
    rewrote: tuple[str, ...] = ()


class End(NamedTuple):
    """How the request recorded as ``row`` ended: the HTTP status its client got, the
    tokens and credits its answer reported (None: not reported), whether ``credits`` is
    an estimate (the reservation, when the answer's cost could not be read), how long it
    took, and (when not None) every change applied, the answer's included: it replaces
    the start's ``rewrote``, so the row names what the access line names."""

    row: int
    status: int
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    credits: float | None = None
    credits_estimated: bool = False
    duration_ms: int | None = None
    rewrote: tuple[str, ...] | None = None


class Admitted(NamedTuple):
    """The start is kept: ``row`` is what :class:`End` names (a committed row's id, or a
    negative number for a slot of the run's journal); None when the ledger could not
    record it (it said so once) or is off."""

    row: int | None


@dataclass(frozen=True, slots=True)
class OverDailyBudget:
    """Refused: this request would take the account's credits for the UTC day past the
    ``--max-credits-per-day`` budget. Nothing was recorded."""

    login: str
    spent: float
    reserved: float
    limit: float

    def message(self) -> str:
        held = f", {format_credits(self.reserved)} reserved" if self.reserved else ""
        return (
            f"copilot-host gateway: the daily budget of {format_credits(self.limit)} AI "
            f"credits set with --max-credits-per-day is used up for today (UTC) "
            f"({format_credits(self.spent)} spent{held} by every copilot-host process of "
            "this account); it renews at 00:00 UTC"
        )


Admission = Admitted | OverDailyBudget


def format_credits(credits: float) -> str:
    """Credits as people read them: up to four decimals, no trailing zeros (``0.0425``,
    ``12``). The access line, the stop line and the history all show them so."""
    text = f"{credits:.4f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


def agent_word(agent: str) -> str:
    return agent if agent in _AGENTS else "other"


def api_word(api: str) -> str:
    if api not in _APIS:
        raise ValueError(f"unknown API {api!r}: one of {', '.join(APIS)}")
    return api


@functools.lru_cache(maxsize=256)
def stored_text(text: str) -> str:
    """A model name or login as the ledger keeps it: printable, one line, at most 128
    characters. (Names repeat: the few in use stay cached.)"""
    return clean(text, limit=128)


def _stored_name(text: str) -> str:
    """:func:`stored_text` with this process's known secrets masked: what a row keeps of
    a login or a model name."""
    return mask_secrets(stored_text(text))


def rewrote_text(names: tuple[str, ...]) -> str:
    """The rewrite names, comma-joined; anything not shaped like a name, or holding a
    known secret (a token is shaped like a name), is left out."""
    if not names:
        return ""
    return _rewrote_text(names, secrets_generation())


@functools.lru_cache(maxsize=256)
def _rewrote_text(names: tuple[str, ...], generation: int) -> str:
    # Per set of known secrets (``generation``): a gateway's requests repeat a few sets
    # of names, and each row and each end names one.
    return ",".join(name for name in names if _REWRITE.fullmatch(mask_secrets(name)))


Named = tuple[str, str, str, str, str, str]
# A start's names as stored, for the secrets' generation they were masked at (replaced
# whole when it moves: a name masked before a registration is never answered after it).
_named: tuple[int, dict[tuple[object, ...], Named]] = (-1, {})
_NAMED_KEPT = 256


def stored_names(start: Start) -> Named:
    """``login``, ``agent``, ``api``, ``model_asked``, ``model`` and ``rewrote`` of
    ``start`` as its row stores them. A gateway's requests repeat a handful of these, so
    they are cleaned and masked once while the known secrets stay the same."""
    global _named  # noqa: PLW0603 - replaced whole; a lost replacement is rebuilt
    key = (*start[1:6], start.rewrote)
    generation, known = _named
    if generation != secrets_generation() or len(known) >= _NAMED_KEPT:
        # Tagged with the generation read before masking: masking may see a later set
        # of secrets (more is masked), never an earlier one.
        known = {}
        _named = (secrets_generation(), known)
    named = known.get(key)
    if named is None:
        named = known[key] = (
            _stored_name(start.login),
            agent_word(start.agent),
            api_word(start.api),
            _stored_name(start.model_asked),
            _stored_name(start.model),
            rewrote_text(start.rewrote),
        )
    return named
