"""The service's two refusals by policy reach gateway clients in their API's shape, with the
codes ``policy_refused`` and ``integrator_refused`` and plain words (the ``policy-refusal``
entry of the changes' table); a discovery the policy refuses is answered the same way."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from copilot_host.testing import (
    Faults,
    GitHubEmulator,
    Inventory,
    RawAnswer,
    Scenario,
    minimal_models,
)
from tests._refusals import POLICY
from tests.gateway._support import running_gateway

# One request per API, on a model of minimal_models() that speaks it.
REQUESTS = {
    "chat": (
        "/v1/chat/completions",
        {"model": "gpt-5-mini", "messages": [{"role": "user", "content": "hi"}]},
    ),
    "responses": ("/v1/responses", {"model": "gpt-5-mini", "input": "hi"}),
    "messages": (
        "/v1/messages",
        {
            "model": "claude-messages-only",
            "max_tokens": 8,
            "messages": [{"role": "user", "content": "hi"}],
        },
    ),
}


def _error(api: str, body: dict[str, object]) -> tuple[str, str | None, str]:
    """(type, code, message) of an error document in the API's shape."""
    error = body["error"]
    assert isinstance(error, dict)
    if api == "messages":
        assert body["type"] == "error"
        assert set(error) == {"type", "message"}
        return str(error["type"]), None, str(error["message"])
    return str(error["type"]), str(error["code"]), str(error["message"])


# On both upstream transports: the refusal is plain text, read whole and replaced.
@pytest.mark.usefixtures("upstream_path")
@pytest.mark.parametrize("api", sorted(REQUESTS))
def test_a_policy_refusal_is_403_in_the_clients_shape_sent_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, api: str
) -> None:
    path, document = REQUESTS[api]
    caplog.set_level(logging.WARNING, logger="copilot_host.gateway")
    scenario = Scenario(
        inventory=Inventory(models=minimal_models()), faults=Faults(answers={api: POLICY})
    )
    with (
        GitHubEmulator(scenario) as emulator,
        running_gateway(emulator, tmp_path / "home") as gateway,
    ):
        status, headers, body = gateway.post(path, document)
        sent = emulator.requests_to(api)
        # Not a stale session: the login's exchange and the gateway's one, no other; and
        # no second send.
        assert len(emulator.requests_to("copilot_token")) == 2
    assert status == 403
    assert len(sent) == 1
    assert headers["content-type"] == "application/json"
    kind, code, message = _error(api, body)
    assert kind == ("permission_error" if api == "messages" else "invalid_request_error")
    assert code in (None, "policy_refused")
    assert message.startswith("copilot-host: GitHub Copilot refused the request: ")
    assert "organisation or enterprise Copilot policy does not allow" in message
    assert "administrator" in message
    assert any("upstream refused (policy_refused)" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("api", sorted(REQUESTS))
def test_an_integrator_refusal_is_400_in_the_clients_shape(tmp_path: Path, api: str) -> None:
    """The emulator's rule: the login's OAuth app is served gpt-4.1 only."""
    path, document = REQUESTS[api]
    inventory = Inventory(models=minimal_models(), integrator_models=frozenset({"gpt-4.1"}))
    with (
        GitHubEmulator(Scenario(inventory=inventory)) as emulator,
        running_gateway(emulator, tmp_path / "home") as gateway,
    ):
        status, _headers, body = gateway.post(path, document)
        (record,) = emulator.requests_to(api)
    assert (record.status, status) == (400, 400)
    kind, code, message = _error(api, body)
    assert kind == "invalid_request_error"
    assert code in (None, "integrator_refused")
    assert 'integrator "vscode-chat"' in message
    assert "it serves gpt-4.1;" in message


def test_other_upstream_errors_are_relayed_as_they_are(tmp_path: Path) -> None:
    plain = RawAnswer(403, b"forbidden\n", (("Content-Type", "text/plain"),))
    path, document = REQUESTS["chat"]
    scenario = Scenario(
        inventory=Inventory(models=minimal_models()), faults=Faults(answers={"chat": plain})
    )
    with (
        GitHubEmulator(scenario) as emulator,
        running_gateway(emulator, tmp_path / "home") as gateway,
    ):
        status, _headers, body = gateway.post(path, document)
    assert (status, body) == (403, "forbidden\n")


def test_a_discovery_the_policy_refuses_is_answered_in_plain_words(tmp_path: Path) -> None:
    both = frozenset({"vscode-chat", "copilot-developer-cli"})
    inventory = Inventory(models=minimal_models(), refused_integration_ids=both)
    path, document = REQUESTS["chat"]
    with (
        GitHubEmulator(Scenario(inventory=inventory)) as emulator,
        running_gateway(emulator, tmp_path / "home") as gateway,
    ):
        status, _headers, body = gateway.post(path, document)
        assert emulator.requests_to("chat") == ()
    _kind, code, message = _error("chat", body)
    # 403, not a 503 SDKs would retry: waiting does not change a policy.
    assert (status, code) == (403, "policy_refused")
    assert "Copilot policy does not allow VS Code's Copilot Chat (vscode-chat)" in message
    assert json.dumps(body).count("HTTP 403") == 0
