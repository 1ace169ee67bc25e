"""The model-name rules (gateway/_names.py) as pure functions over a table of routes."""

from __future__ import annotations

import httpx2
import pytest

from copilot_host import ApiProtocol, ModelRoute, ModelSpec
from copilot_host.gateway._app._names import (
    ModelNames,
    NameTable,
    NotFound,
    Served,
    WrongEndpoint,
    claude_spelling,
    family_of,
)

MESSAGES = ApiProtocol.ANTHROPIC_MESSAGES
CHAT = ApiProtocol.OPENAI_CHAT
RESPONSES = ApiProtocol.OPENAI_RESPONSES
_AUTH = httpx2.Auth()


def route(model_id: str, *protocols: ApiProtocol) -> ModelRoute:
    chosen = frozenset(protocols or (CHAT,))
    preferred = next(p for p in ApiProtocol if p in chosen)
    spec = ModelSpec(model_id=model_id, display_name=model_id, protocol=preferred, protocols=chosen)
    origin = "https://api.githubcopilot.com"
    return ModelRoute(
        route_id=f"github-copilot/{model_id}",
        model_id=model_id,
        protocol=preferred,
        origin=origin,
        url=origin + preferred.path,
        auth=_AUTH,
        spec=spec,
    )


# An account shaped like the emulator's realistic one, in inventory order.
ROUTES = [
    route("claude-opus-4.6", MESSAGES, CHAT),
    route("claude-opus-4.8", MESSAGES, CHAT),
    route("claude-opus-4.8-1m", MESSAGES),
    route("claude-opus-5", MESSAGES),
    route("claude-sonnet-4.6", CHAT, MESSAGES),
    route("claude-sonnet-5", MESSAGES, CHAT),
    route("claude-sonnet-5-thought", MESSAGES),
    route("claude-haiku-4.5", CHAT, MESSAGES),
    route("claude-haiku-4.5.0", CHAT),
    route("gpt-5.3-codex", RESPONSES),
    route("gpt-4.1", CHAT),
]


def served(name: str, protocol: ApiProtocol | None = MESSAGES, **names: object) -> tuple[str, str]:
    table = NameTable(ROUTES, ModelNames(**names))  # type: ignore[arg-type]
    found = table.resolve(name, protocol)
    assert isinstance(found, Served), found
    return found.route.model_id, found.rule


@pytest.mark.parametrize(
    ("name", "spelled"),
    [
        ("claude-sonnet-4-6", "claude-sonnet-4.6"),
        ("claude-haiku-4-5-20251001", "claude-haiku-4.5"),
        ("claude-opus-4-8-latest", "claude-opus-4.8"),
        ("claude-3-5-sonnet-20241022", "claude-sonnet-3.5"),
        ("claude-3-opus-20240229", "claude-opus-3"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("claude-opus-5-20260101", "claude-opus-5"),
        ("claude-opus-4.6-20251001", "claude-opus-4.6"),
        ("claude-opus-5", None),  # already Copilot's spelling
        ("claude-sonnet-4.6", None),
        ("gpt-4.1", None),
        ("claude-opus-4-6-1234567", None),  # 7 digits: not a date
    ],
)
def test_anthropic_spelling_reads_as_copilots(name: str, spelled: str | None) -> None:
    assert claude_spelling(name) == spelled


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("opus", "opus"),
        ("sonnet", "sonnet"),
        ("haiku", "haiku"),
        ("claude-opus-5-5", "opus"),
        ("claude-3-5-sonnet", "sonnet"),
        ("claude-latest", None),
        ("claude-4", None),
        ("Opus", None),
        ("gpt-4.1", None),
        ("mythos", None),
    ],
)
def test_the_family_of_a_name(name: str, family: str | None) -> None:
    assert family_of(name) == family


def test_an_exact_id_then_a_route_id_come_first() -> None:
    assert served("claude-opus-4.6") == ("claude-opus-4.6", "exact")
    assert served("github-copilot/claude-opus-4.6") == ("claude-opus-4.6", "exact")
    # An exact id wins over an alias of the same name.
    assert served("claude-opus-4.6", aliases={"claude-opus-4.6": "claude-opus-5"}) == (
        "claude-opus-4.6",
        "exact",
    )


def test_an_alias_comes_before_the_claude_rules() -> None:
    aliases = {"claude-opus-5-5": "claude-sonnet-4.6", "fast": "github-copilot/gpt-4.1"}
    assert served("claude-opus-5-5", aliases=aliases) == ("claude-sonnet-4.6", "alias")
    assert served("fast", CHAT, aliases=aliases) == ("gpt-4.1", "alias")


@pytest.mark.parametrize(
    ("name", "model", "rule"),
    [
        ("claude-sonnet-4-6", "claude-sonnet-4.6", "claude"),
        ("claude-haiku-4-5-20251001", "claude-haiku-4.5", "claude"),
        ("claude-opus-5-20260101", "claude-opus-5", "claude"),
        ("claude-opus-4-8-latest", "claude-opus-4.8", "claude"),
        # A version the account lacks: the newest of the family on /v1/messages.
        ("claude-opus-5-5", "claude-opus-5", "family"),
        ("claude-sonnet-5-5", "claude-sonnet-5", "family"),
        ("claude-haiku-9", "claude-haiku-4.5", "family"),
        ("claude-3-5-sonnet-20241022", "claude-sonnet-5", "family"),
        ("opus", "claude-opus-5", "family"),
        ("sonnet", "claude-sonnet-5", "family"),
        ("haiku", "claude-haiku-4.5", "family"),
    ],
)
def test_claude_names_agents_send(name: str, model: str, rule: str) -> None:
    assert served(name) == (model, rule)


def test_newest_counts_only_models_that_list_the_endpoint_called() -> None:
    # On /chat/completions claude-opus-5 (Messages only) does not take part.
    assert served("opus", CHAT) == ("claude-opus-4.8", "family")
    # claude-haiku-4.5.0 is newer as a tuple but lists /chat/completions only.
    assert served("haiku", MESSAGES) == ("claude-haiku-4.5", "family")
    assert served("haiku", CHAT) == ("claude-haiku-4.5.0", "family")


def test_variants_never_count_as_newest() -> None:
    table = NameTable([route("claude-opus-9-1m", MESSAGES), route("claude-opus-4", MESSAGES)])
    found = table.resolve("opus", MESSAGES)
    assert isinstance(found, Served) and found.route.model_id == "claude-opus-4"


def test_versions_compare_as_numbers_and_equals_keep_inventory_order() -> None:
    routes = [
        route("claude-opus-4.10", MESSAGES),
        route("claude-opus-4.9", MESSAGES),
        route("claude-opus-5.0", MESSAGES),
        route("claude-opus-5.00", MESSAGES),
    ]
    found = NameTable(routes).resolve("opus", MESSAGES)
    # (5, 0) twice: the first in the inventory; 4.10 > 4.9 as numbers.
    assert isinstance(found, Served) and found.route.model_id == "claude-opus-5.0"
    found = NameTable(routes[:2]).resolve("opus", MESSAGES)
    assert isinstance(found, Served) and found.route.model_id == "claude-opus-4.10"


def test_the_default_model_comes_last() -> None:
    assert served("gpt-6.1-sol", RESPONSES, default="gpt-5.3-codex") == (
        "gpt-5.3-codex",
        "default",
    )
    # A family the account has is found before the default.
    assert served("sonnet", default="claude-opus-4.6") == ("claude-sonnet-5", "family")
    # A family the account lacks falls to the default.
    assert served("claude-mythos-1", default="claude-opus-4.6") == ("claude-opus-4.6", "default")


@pytest.mark.parametrize(
    ("name", "protocol", "names"),
    [
        ("gpt-5.3-codex", CHAT, {}),
        ("claude-opus-5-20260101", CHAT, {}),
        ("fast", MESSAGES, {"aliases": {"fast": "gpt-4.1"}}),
        ("anything", MESSAGES, {"default": "gpt-4.1"}),
    ],
)
def test_a_model_found_that_lacks_the_endpoint_is_the_wrong_endpoint(
    name: str, protocol: ApiProtocol, names: dict[str, object]
) -> None:
    found = NameTable(ROUTES, ModelNames(**names)).resolve(name, protocol)  # type: ignore[arg-type]
    assert isinstance(found, WrongEndpoint)


def test_unknown_names_get_up_to_three_suggestions_among_models_on_the_endpoint() -> None:
    found = NameTable(ROUTES).resolve("gpt-4.2", CHAT)
    assert isinstance(found, NotFound)
    assert "'gpt-4.2'" in found.message
    closest = found.message.split("closest: ")[1].split(" (")[0].split(", ")
    assert closest[0] == "gpt-4.1"
    assert len(closest) == 3
    # gpt-5.3-codex lists /responses only: never suggested on /chat/completions.
    assert "gpt-5.3-codex" not in closest
    found = NameTable(ROUTES).resolve("gpt-5.3-codec", RESPONSES)
    assert isinstance(found, NotFound)
    assert found.message.split("closest: ")[1].startswith("gpt-5.3-codex (")


def test_names_that_are_not_claude_never_reach_the_family_rule() -> None:
    for name in ("Opus", "my-opus", "sonnet-5", "gpt-opus"):
        assert isinstance(NameTable(ROUTES).resolve(name, MESSAGES), NotFound)


def test_an_alias_whose_model_is_gone_is_404_naming_both() -> None:
    names = ModelNames({"fast": "gpt-9"}, default="gpt-10")
    table = NameTable(ROUTES, names)
    found = table.resolve("fast", CHAT)
    assert isinstance(found, NotFound)
    assert "'fast'" in found.message and "'gpt-9'" in found.message
    found = table.resolve("nothing-like-it", CHAT)
    assert isinstance(found, NotFound) and "'gpt-10'" in found.message
    assert table.missing_targets() == [
        "--model-alias fast=gpt-9: this account has no model 'gpt-9'",
        "--default-model gpt-10: this account has no such model",
    ]
    assert NameTable(ROUTES, ModelNames({"fast": "gpt-4.1"}, "opus-x")).missing_targets() == [
        "--default-model opus-x: this account has no such model"
    ]


@pytest.mark.parametrize("bad", ["", "a b", "x=y", "é", "a" * 129])
def test_alias_spelling_is_checked(bad: str) -> None:
    with pytest.raises(ValueError, match="NAME=MODEL"):
        ModelNames({bad: "gpt-4.1"})
    with pytest.raises(ValueError, match="NAME=MODEL"):
        ModelNames({"fast": bad})
    with pytest.raises(ValueError, match="default model"):
        ModelNames(default=bad)


def test_no_endpoint_means_any_endpoint() -> None:
    assert served("opus", None) == ("claude-opus-5", "family")
    assert served("gpt-5.3-codex", None) == ("gpt-5.3-codex", "exact")
