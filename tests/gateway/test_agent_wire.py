"""What agents send, through a real gateway over raw HTTP: the model names (each rule, the
``x-copilot-host-model`` header, the access line, the 404's suggestions), the betas, a
string ``system``, and the probes."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from copilot_host.testing import GitHubEmulator, Inventory, Scenario
from tests.gateway._support import Gateway, running_gateway
from tests.gateway.conftest import assert_no_leaks

ALIASES = {"fast": "gpt-4.1", "big": "github-copilot/claude-opus-4.8"}


def _messages(model: str, **more: Any) -> dict[str, Any]:
    return {
        "model": model,
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "hi"}],
        **more,
    }


@pytest.fixture(scope="module")
def named(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """A gateway started with two aliases (no default model)."""
    home = tmp_path_factory.mktemp("names") / "home"
    with (
        GitHubEmulator() as emulator,
        running_gateway(emulator, home, model_aliases=ALIASES) as running,
    ):
        yield running


@pytest.fixture
def gw(named: Gateway) -> Iterator[Gateway]:
    named.emulator.clear_requests()
    named.seen.clear()
    named.access.lines.clear()
    yield named
    assert_no_leaks(named)


def _sent_model(gateway: Gateway, endpoint: str) -> str:
    (record,) = gateway.emulator.requests_to(endpoint)
    model = json.loads(record.body)["model"]
    assert isinstance(model, str)
    return model


@pytest.mark.parametrize(
    ("asked", "served"),
    [
        ("claude-opus-4.6", "claude-opus-4.6"),  # exact
        ("github-copilot/claude-opus-4.6", "claude-opus-4.6"),  # a route id
        ("big", "claude-opus-4.8"),  # an alias (to a route id)
        ("claude-haiku-4-5-20251001", "claude-haiku-4.5"),  # Anthropic's spelling, dated
        ("claude-sonnet-4-6", "claude-sonnet-4.6"),  # Anthropic's spelling
        ("claude-opus-5-5", "claude-opus-5"),  # a version the account lacks: the family
        ("sonnet", "claude-sonnet-5"),  # a bare family
    ],
)
def test_each_rule_serves_the_model_it_names_and_says_so(
    gw: Gateway, asked: str, served: str
) -> None:
    status, headers, body = gw.post(
        "/v1/messages", _messages(asked), headers={"anthropic-version": "2023-06-01"}
    )
    assert status == 200, body
    assert headers["x-copilot-host-model"] == served
    assert body["model"] == served  # the emulator answers for the model it was sent
    assert _sent_model(gw, "messages") == served
    (line,) = gw.access.lines
    shown = served if asked == served else f"{asked}->{served}"
    assert f" model={shown} status=200 " in line


def test_the_rules_apply_on_the_openai_paths_too(gw: Gateway) -> None:
    status, headers, _body = gw.post(
        "/v1/chat/completions", {"model": "fast", "messages": [{"role": "user", "content": "x"}]}
    )
    assert (status, headers["x-copilot-host-model"]) == (200, "gpt-4.1")
    assert _sent_model(gw, "chat") == "gpt-4.1"
    # On /chat/completions, claude-opus-5 (Messages only) is not the newest opus.
    status, headers, _body = gw.post(
        "/v1/chat/completions", {"model": "opus", "messages": [{"role": "user", "content": "x"}]}
    )
    assert (status, headers["x-copilot-host-model"]) == (200, "claude-opus-4.8")
    assert " model=opus->claude-opus-4.8 " in gw.access.lines[-1]


def test_an_error_answer_from_upstream_carries_the_model_too(tmp_path: Path) -> None:
    scenario = Scenario(inventory=Inventory(min_editor_version={"claude-sonnet-4.6": "99.0"}))
    with GitHubEmulator(scenario) as emulator, running_gateway(emulator, tmp_path / "h") as gw:
        status, headers, _body = gw.post("/v1/messages", _messages("claude-sonnet-4-6"))
        assert status == 400
        assert headers["x-copilot-host-model"] == "claude-sonnet-4.6"
        assert_no_leaks(gw)


def test_an_unknown_name_is_404_with_three_suggestions_on_that_endpoint(gw: Gateway) -> None:
    status, headers, body = gw.post("/v1/responses", {"model": "gpt-5.3-codec", "input": "x"})
    assert status == 404
    assert "x-copilot-host-model" not in headers
    message = body["error"]["message"]
    assert body["error"]["code"] == "model_not_found"
    closest = message.split("closest: ")[1].split(" (")[0].split(", ")
    assert closest[0] == "gpt-5.3-codex" and len(closest) == 3
    # Only models served on /v1/responses are suggested.
    assert "claude-opus-4.6" not in closest
    assert gw.emulator.requests_to("responses") == ()
    assert " model=gpt-5.3-codec status=404 " in gw.access.lines[-1]


def test_a_family_the_account_lacks_is_404_on_messages(gw: Gateway) -> None:
    status, _headers, body = gw.post("/v1/messages", _messages("claude-mythos-1"))
    assert status == 404
    assert body["error"]["type"] == "not_found_error"
    assert "closest: claude-" in body["error"]["message"]


def test_a_name_found_for_a_model_without_the_endpoint_is_400(gw: Gateway) -> None:
    status, _headers, body = gw.post("/v1/responses", {"model": "fast", "input": "x"})
    assert status == 400
    assert body["error"]["code"] == "unsupported_api_for_model"
    assert " model=fast->gpt-4.1 status=400 " in gw.access.lines[-1]


def test_get_model_by_name_follows_the_same_rules(gw: Gateway) -> None:
    status, headers, body = gw.get("/v1/models/claude-haiku-4-5-20251001")
    assert (status, body["id"], headers["x-copilot-host-model"]) == (
        200,
        "claude-haiku-4.5",
        "claude-haiku-4.5",
    )
    # An Anthropic client is shown models it can call on /v1/messages only.
    status, headers, body = gw.get("/v1/models/opus", headers={"anthropic-version": "2023-06-01"})
    assert (status, body["id"]) == (200, "claude-opus-5")
    status, _headers, body = gw.get("/v1/models/fast", headers={"anthropic-version": "2023-06-01"})
    assert status == 404 and body["error"]["type"] == "not_found_error"
    status, _headers, body = gw.get("/v1/models/gpt-4.2")
    assert status == 404 and "closest: gpt-4.1" in body["error"]["message"]


def test_a_default_model_and_an_alias_whose_model_is_gone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "copilot_host.gateway")
    with (
        GitHubEmulator() as emulator,
        running_gateway(
            emulator,
            tmp_path / "h",
            model_aliases={"old": "gpt-3"},
            default_model="gpt-5.3-codex",
        ) as gw,
    ):
        status, headers, _body = gw.post("/v1/responses", {"model": "gpt-6.1-sol", "input": "x"})
        assert (status, headers["x-copilot-host-model"]) == (200, "gpt-5.3-codex")
        assert " model=gpt-6.1-sol->gpt-5.3-codex status=200 " in gw.access.lines[-1]
        status, _headers, body = gw.post("/v1/responses", {"model": "old", "input": "x"})
        assert status == 404
        assert "'old'" in body["error"]["message"] and "'gpt-3'" in body["error"]["message"]
        # The default lacks /chat/completions: 400, as the model itself would be.
        status, _headers, body = gw.post(
            "/v1/chat/completions",
            {"model": "nope", "messages": [{"role": "user", "content": "x"}]},
        )
        assert (status, body["error"]["code"]) == (400, "unsupported_api_for_model")
        assert_no_leaks(gw)
    warnings = [r.getMessage() for r in caplog.records if "gpt-3" in r.getMessage()]
    # One registration, one warning.
    assert warnings == [
        "--model-alias old=gpt-3: this account has no model 'gpt-3' (requests for it get 404)"
    ]


# -- betas, system, probes -----------------------------------------------------------------------


def test_only_served_betas_are_forwarded_in_one_header(
    gw: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, "copilot_host.gateway")
    status, _headers, data = gw.raw(
        "POST",
        "/v1/messages",
        body=json.dumps(_messages("claude-opus-4.6")).encode(),
        headers=[
            ("Content-Type", "application/json"),
            ("anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14"),
            ("anthropic-beta", "afk-mode-2026-01-31, context-management-2025-06-27"),
        ],
    )
    assert status == 200, data
    (record,) = gw.emulator.requests_to("messages")
    assert record.headers["anthropic-beta"] == (
        "interleaved-thinking-2025-05-14,context-management-2025-06-27"
    )
    dropped = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert dropped == [
        "anthropic-beta not served by the Copilot API, dropped: "
        "claude-code-20250219, afk-mode-2026-01-31"
    ]


def test_a_request_whose_betas_are_all_dropped_has_no_beta_header(gw: Gateway) -> None:
    status, _headers, _body = gw.post(
        "/v1/messages",
        _messages("claude-opus-4.6"),
        headers={"anthropic-beta": "claude-code-20250219,dangerous-tool-use-2026-09-03"},
    )
    assert status == 200
    (record,) = gw.emulator.requests_to("messages")
    assert "anthropic-beta" not in record.headers


def test_the_emulator_refuses_a_beta_it_does_not_serve(tmp_path: Path) -> None:
    """The filter is what makes the request above pass: sent as it came, it is refused."""
    import httpx2

    from copilot_host.github import GitHubCopilotHost
    from copilot_host.store import CredentialStore

    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    with (
        GitHubEmulator() as emulator,
        GitHubCopilotHost(
            store=CredentialStore(home, key_file=True), transport=emulator.transport()
        ) as host,
    ):
        host.login(sleep=lambda _s: None)
        import copilot_host as ch

        result = ch.register_models(ch.Catalog(), host)
        route = next(r for r in result.routes if r.model_id == "claude-opus-4.6")
        with httpx2.Client(auth=route.auth, transport=emulator.transport()) as client:
            refused = client.post(
                route.origin + "/v1/messages",
                json=_messages("claude-opus-4.6"),
                headers={"anthropic-beta": "claude-code-20250219"},
            )
            text = client.post(
                route.origin + "/v1/messages", json=_messages("claude-opus-4.6", system="Be brief.")
            )
    assert refused.status_code == 400
    assert "claude-code-20250219" in refused.json()["error"]["message"]
    assert text.status_code == 400


def test_a_string_system_is_sent_as_one_text_block(gw: Gateway) -> None:
    status, _headers, body = gw.post("/v1/messages", _messages("opus", system="Be brief."))
    assert status == 200, body
    sent = json.loads(gw.emulator.requests_to("messages")[0].body)
    assert sent["system"] == [{"type": "text", "text": "Be brief."}]
    assert sent["model"] == "claude-opus-5"
    # Anything else in the body goes as it was sent; a block system is left alone.
    gw.emulator.clear_requests()
    blocks = [{"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}]
    raw = json.dumps(_messages("claude-opus-5", system=blocks, metadata={"user_id": "u"}))
    status, _headers, _data = gw.raw(
        "POST", "/v1/messages", body=raw.encode(), headers={"Content-Type": "application/json"}
    )
    assert status == 200
    assert gw.emulator.requests_to("messages")[0].body == raw.encode()


@pytest.mark.parametrize("path", ["/", "/api/hello"])
def test_probes_get_a_small_answer_with_the_key_and_a_refusal_without(
    gw: Gateway, path: str
) -> None:
    status, headers, data = gw.raw("HEAD", path)
    assert (status, data) == (200, b"")
    status, headers, data = gw.raw("GET", path)
    assert (status, headers["content-type"], data) == (200, "application/json", b"{}")
    status, _headers, _data = gw.raw("HEAD", path, key=False)
    assert status == 401
    status, _headers, _data = gw.raw("GET", path, headers={"Origin": "https://evil.example"})
    assert status == 403
    status, _headers, _data = gw.raw("GET", path, host="evil.example")
    assert status == 421
    # Other methods on a probe path are as before: no such endpoint.
    status, _headers, _data = gw.raw("POST", path, body=b"{}")
    assert status == 404
    assert gw.emulator.requests == ()
