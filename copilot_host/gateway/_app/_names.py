"""Which model a request's ``model`` names: the rules, in one place, with no I/O.

Agents ask for models by their own names: Claude Code for ``claude-opus-5-5`` by default,
``claude-sonnet-5-5`` for ``--model sonnet``, dated Anthropic ids such as
``claude-haiku-4-5-20251001`` where a setting names one; Copilot's ids are dotted
(``claude-sonnet-4.6``). :meth:`NameTable.resolve` reads a name in this order, and the
first rule that matches wins:

1. ``exact``: a Copilot model id, then a route id (``github-copilot/<id>``);
2. ``alias``: a ``--model-alias NAME=MODEL`` the gateway was started with;
3. ``claude``: Anthropic's API spelling of a Claude id: a date suffix (``-`` and 8 digits)
   or ``-latest`` is dropped, ``claude-<family>-<major>-<minor>`` reads as
   ``claude-<family>-<major>.<minor>``, and the old order
   ``claude-<major>-<minor>-<family>`` (or ``claude-<major>-<family>``) as the same;
4. ``family``: a bare ``opus``, ``sonnet`` or ``haiku``, or a Claude name whose version the
   account lacks: the newest model of that family that lists the endpoint called. Only ids
   that are exactly ``claude-<family>-<version>`` take part (a ``-1m`` or ``-thought``
   variant does not); versions compare as tuples of numbers (``claude-opus-4.8`` is
   (4, 8), ``claude-opus-5`` is (5,)); among equals the inventory's order wins;
5. ``default``: the ``--default-model``, when one was given (``auto`` included); else, for
   ``run`` (``ModelNames.auto_default``) on a plan that can use only Copilot Auto, ``auto``.

Otherwise the answer is 404 ``model_not_found``, naming up to three of the account's
models closest to the name (:mod:`difflib`), among those that list the endpoint called; on
a plan that can use only Copilot Auto it is 400 ``model_not_supported`` (the service's
answer to a named model there), saying to ask for ``auto``.
Rules 3 and 4 apply only to names that start with ``claude-`` or are exactly a family
word. A model found by rules 1, 2, 3 or 5 that does not list the endpoint called is a
400, as for an exact id; an alias or default whose model the account no longer has is a
404 naming both.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import copilot_host as ch
from copilot_host._internal import AutoPick, clean

__all__ = [
    "FAMILY_WORDS",
    "MAX_MODEL_NAME",
    "ModelNames",
    "NameTable",
    "NotFound",
    "Served",
    "WrongEndpoint",
    "claude_spelling",
    "family_of",
]

# The bare names Claude Code (and people) use for a family.
FAMILY_WORDS = frozenset({"opus", "sonnet", "haiku"})
SUGGESTIONS = 3
# The longest model name read at all: longer ones are refused (400) before any rule or
# suggestion runs, since the family split and difflib's search cost time in proportion to
# the name (an 8 MiB name held the event loop for seconds). Copilot's ids are far shorter.
MAX_MODEL_NAME = 256

_DATE = re.compile(r"-\d{8}$")
_NEW_ORDER = re.compile(r"claude-([a-z]+)-(\d+)-(\d+)")
_OLD_ORDER = re.compile(r"claude-(\d+)-(\d+)-([a-z]+)")
_OLD_MAJOR = re.compile(r"claude-(\d+)-([a-z]+)")
_VERSION = re.compile(r"\d+(?:\.\d+)*")
# Characters an alias name or target may hold: what a model id may hold, and ``/`` for
# route ids.
_NAME = re.compile(r"[A-Za-z0-9._:/-]{1,128}")


@dataclass(frozen=True, slots=True)
class ModelNames:
    """The names a gateway was told about at start: ``aliases`` (name -> model or route
    id) and the ``default`` model for names no rule finds; with ``auto_default`` (``run``),
    on a plan that can use only Copilot Auto and with no ``default``, ``auto`` is it."""

    aliases: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    default: str | None = None
    auto_default: bool = False

    def __post_init__(self) -> None:
        for name, target in self.aliases.items():
            for value in (name, target):
                if not isinstance(value, str) or not _NAME.fullmatch(value):
                    raise ValueError(
                        f"a model alias is NAME=MODEL, each letters, digits and . _ : / -, "
                        f"not {clean(str(value), limit=80)!r}"
                    )
        if self.default is not None and not _NAME.fullmatch(self.default):
            raise ValueError(
                f"the default model is a model id, not {clean(self.default, limit=80)!r}"
            )
        object.__setattr__(self, "aliases", MappingProxyType(dict(self.aliases)))


@dataclass(frozen=True, slots=True)
class Served:
    """The model that serves the request, and the rule that found it. On Copilot Auto's
    route, the resolve stage (:mod:`._resolve`) makes it the concrete model's: ``route``
    is then that model's, ``via`` the Auto route's model id (``auto``), and ``pick`` the
    session and model :meth:`copilot_host.CopilotAuth.auto_pick` chose."""

    route: ch.ModelRoute
    rule: str
    via: str = ""
    pick: AutoPick | None = None


@dataclass(frozen=True, slots=True)
class WrongEndpoint:
    """The name found a model that does not list the endpoint called (400)."""

    route: ch.ModelRoute


@dataclass(frozen=True, slots=True)
class NotFound:
    """No model for the name (404 ``model_not_found``; on a plan that can use only Auto,
    400 ``model_not_supported``), with the message to send."""

    message: str
    status: int = 404
    code: str = "model_not_found"


Resolution = Served | WrongEndpoint | NotFound


def claude_spelling(name: str) -> str | None:
    """The Copilot spelling of an Anthropic API Claude name, or None when the name is not
    one (or is already spelled as Copilot spells it)."""
    if not name.startswith("claude-"):
        return None
    base = name.removesuffix("-latest")
    if base == name:
        base = _DATE.sub("", name)
    if found := _NEW_ORDER.fullmatch(base):
        family, major, minor = found.groups()
        return f"claude-{family}-{major}.{minor}"
    if found := _OLD_ORDER.fullmatch(base):
        major, minor, family = found.groups()
        return f"claude-{family}-{major}.{minor}"
    if found := _OLD_MAJOR.fullmatch(base):
        major, family = found.groups()
        return f"claude-{family}-{major}"
    return base if base != name else None


def family_of(name: str) -> str | None:
    """The Claude family a name asks for: a bare family word, or the first word of letters
    after ``claude-`` (``claude-opus-5-5`` and ``claude-3-5-sonnet`` alike)."""
    if name in FAMILY_WORDS:
        return name
    if not name.startswith("claude-"):
        return None
    for word in name.split("-")[1:]:
        if word.isascii() and word.isalpha() and word != "latest":
            return word.lower()
    return None


def _version(model_id: str, family: str) -> tuple[int, ...] | None:
    """The version of an id that is exactly ``claude-<family>-<version>``, else None."""
    prefix = f"claude-{family}-"
    if not model_id.startswith(prefix):
        return None
    rest = model_id[len(prefix) :]
    if not _VERSION.fullmatch(rest):
        return None
    return tuple(int(part) for part in rest.split("."))


def _speaks(route: ch.ModelRoute, protocol: ch.ApiProtocol | None) -> bool:
    return protocol is None or protocol in route.spec.protocols


class NameTable:
    """The rules applied to one registration's routes (see the module docstring)."""

    __slots__ = ("_auto_only", "_by_name", "_names", "_routes")

    def __init__(self, routes: Sequence[ch.ModelRoute], names: ModelNames | None = None) -> None:
        self._routes = tuple(routes)  # the inventory's order
        self._names = names if names is not None else ModelNames()
        # Copilot Auto's route on a plan that can use nothing else.
        self._auto_only = next(
            (r for r in self._routes if r.spec.auto is not None and r.spec.auto.only), None
        )
        by_name: dict[str, ch.ModelRoute] = {}
        for route in self._routes:
            by_name.setdefault(route.model_id, route)
        for route in self._routes:
            by_name.setdefault(route.route_id, route)
        self._by_name: Mapping[str, ch.ModelRoute] = by_name

    @property
    def routes(self) -> tuple[ch.ModelRoute, ...]:
        """The registration's routes, in the inventory's order."""
        return self._routes

    @property
    def auto_only(self) -> ch.ModelRoute | None:
        """Copilot Auto's route when the plan can use only Auto (its only route), else None."""
        return self._auto_only

    def find(self, name: str) -> ch.ModelRoute | None:
        """The route of an exact model id or route id (rule 1 only)."""
        return self._by_name.get(name)

    def missing_targets(self) -> list[str]:
        """One line for each alias (and the default) whose model this account lacks."""
        lines = [
            f"--model-alias {alias}={target}: this account has no model {target!r}"
            for alias, target in self._names.aliases.items()
            if target not in self._by_name
        ]
        default = self._names.default
        if default is not None and default not in self._by_name:
            lines.append(f"--default-model {default}: this account has no such model")
        return lines

    def resolve(self, name: str, protocol: ch.ApiProtocol | None) -> Resolution:
        """The model that serves ``name`` on the endpoint of ``protocol`` (None: any)."""
        route = self._by_name.get(name)
        if route is not None:
            return self._checked(route, "exact", protocol)
        target = self._names.aliases.get(name)
        if target is not None:
            return self._named(name, "alias", target, protocol)
        if name.startswith("claude-") or name in FAMILY_WORDS:
            spelled = claude_spelling(name)
            route = self._by_name.get(spelled) if spelled is not None else None
            if route is not None:
                return self._checked(route, "claude", protocol)
            family = family_of(name)
            newest = self._newest(family, protocol) if family is not None else None
            if newest is not None:
                return Served(newest, "family")
        default = self._names.default
        auto = self._auto_only
        if default is None and auto is not None and self._names.auto_default:
            default = auto.model_id
        if default is not None:
            return self._named(name, "default", default, protocol)
        if auto is not None:
            return NotFound(
                f"copilot-host gateway: this plan can use only Copilot Auto model selection, "
                f"so {clean(name, limit=100)!r} is refused; ask for the model "
                f"{auto.model_id!r}, which picks one of the plan's models",
                400,
                "model_not_supported",
            )
        return NotFound(self._unknown(name, protocol))

    def _checked(
        self, route: ch.ModelRoute, rule: str, protocol: ch.ApiProtocol | None
    ) -> Resolution:
        return Served(route, rule) if _speaks(route, protocol) else WrongEndpoint(route)

    def _named(
        self, name: str, rule: str, target: str, protocol: ch.ApiProtocol | None
    ) -> Resolution:
        route = self._by_name.get(target)
        if route is None:
            how = "--model-alias" if rule == "alias" else "--default-model"
            return NotFound(
                f"copilot-host gateway: {clean(name, limit=100)!r} goes to {target!r} "
                f"({how}), which this account no longer has (GET /v1/models lists them)"
            )
        return self._checked(route, rule, protocol)

    def _newest(self, family: str, protocol: ch.ApiProtocol | None) -> ch.ModelRoute | None:
        best: ch.ModelRoute | None = None
        best_version: tuple[int, ...] = ()
        for route in self._routes:
            version = _version(route.model_id, family)
            # Strictly newer only: among equals the first in the inventory stays.
            if version is not None and _speaks(route, protocol) and version > best_version:
                best, best_version = route, version
        return best

    def _unknown(self, name: str, protocol: ch.ApiProtocol | None) -> str:
        ids = [route.model_id for route in self._routes if _speaks(route, protocol)]
        close = difflib.get_close_matches(name, ids, n=SUGGESTIONS, cutoff=0.0)
        hint = f"; closest: {', '.join(close)}" if close else ""
        return (
            f"copilot-host gateway: the model {clean(name, limit=100)!r} is not one this "
            f"account can use{hint} (GET /v1/models lists them)"
        )
