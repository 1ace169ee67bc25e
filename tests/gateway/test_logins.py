"""The gateway follows the login without a restart: it starts and stays up logged out
(503 not_logged_in), serves once someone logs in, stops serving at a logout, follows an
account change, registers again at least every 30 minutes, and shares one registration
among concurrent first requests."""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from copilot_host.github import GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import (
    DeviceFlow,
    Faults,
    GitHubEmulator,
    Inventory,
    Scenario,
    Session,
    chat_model,
)
from tests._clock import FakeClock
from tests.gateway._support import Gateway, Switch, running_gateway
from tests.gateway.conftest import assert_no_leaks

CHAT = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}
MESSAGES = {
    "model": "claude-opus-5",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "hi"}],
}


def _not_logged_in(gateway: Gateway) -> None:
    status, _headers, body = gateway.get("/v1/models")
    assert status == 503
    assert body["error"]["code"] == "not_logged_in"
    assert "copilot-host login" in body["error"]["message"]
    status, _headers, body = gateway.post("/v1/chat/completions", CHAT)
    assert (status, body["error"]["code"]) == (503, "not_logged_in")
    status, _headers, body = gateway.post("/v1/messages", MESSAGES)
    assert (status, body["type"], body["error"]["type"]) == (503, "error", "api_error")


def test_it_starts_logged_out_and_serves_once_someone_logs_in(
    emulator: GitHubEmulator, tmp_path: Path
) -> None:
    with running_gateway(emulator, tmp_path / "home", logged_in=False) as gateway:
        _not_logged_in(gateway)
        assert emulator.requests == ()  # nothing to ask GitHub without a login
        gateway.login()
        status, _headers, body = gateway.post("/v1/chat/completions", CHAT)
        assert status == 200
        assert body["choices"][0]["message"]["content"] == "echo: hi"
        assert_no_leaks(gateway)


def test_a_logout_is_503_and_the_next_login_serves_without_a_restart(gateway: Gateway) -> None:
    assert gateway.post("/v1/chat/completions", CHAT)[0] == 200
    gateway.logout()
    _not_logged_in(gateway)
    gateway.emulator.clear_requests()
    gateway.login()
    assert gateway.post("/v1/chat/completions", CHAT)[0] == 200
    # A new login: a new registration (its own exchange and discovery) served it.
    assert len(gateway.emulator.requests_to("models")) == 1
    (sent,) = gateway.emulator.requests_to("chat")
    assert sent.headers["authorization"] == "Bearer " + gateway.emulator.session_tokens[-1]


def test_another_account_and_the_model_list_follows(tmp_path: Path) -> None:
    home = tmp_path / "home"
    mona = Scenario(
        login=DeviceFlow(account="mona"),
        inventory=Inventory(
            models=(chat_model("mona-model"), chat_model("shared-model", endpoints=("/responses",)))
        ),
    )
    which = [0]
    with GitHubEmulator() as octocat_github, GitHubEmulator(mona) as mona_github:
        host = Switch(which, octocat_github.async_transport(), mona_github.async_transport())
        upstream = Switch(which, octocat_github.async_transport(), mona_github.async_transport())
        with running_gateway(
            octocat_github, home, host_transport=host, transport=upstream
        ) as gateway:
            before = {m["id"] for m in gateway.get("/v1/models")[2]["data"]}
            assert "gpt-4.1" in before and "mona-model" not in before
            # The person logs in as mona (replacing octocat's login) in another terminal.
            with GitHubCopilotHost(
                store=CredentialStore(home, key_file=True),
                transport=mona_github.transport(),
            ) as person:
                person.login(sleep=lambda _seconds: None)
            which[0] = 1
            after = gateway.get("/v1/models")[2]["data"]
            assert [m["id"] for m in after] == ["auto", "mona-model", "shared-model"]
            assert after[2]["endpoints"] == ["/v1/responses"]
            answer = gateway.post("/v1/chat/completions", {**CHAT, "model": "mona-model"})
            assert answer[0] == 200
            assert gateway.post("/v1/chat/completions", CHAT)[0] == 404  # octocat's model
            assert len(mona_github.requests_to("chat")) == 1
            assert octocat_github.requests_to("chat") == ()
            gateway.emulator = mona_github  # the leak check looks at both accounts' tokens
            assert_no_leaks(gateway)
        assert_no_leaks(dataclasses.replace(gateway, emulator=octocat_github))


def test_routes_are_registered_again_every_30_minutes(
    emulator: GitHubEmulator, tmp_path: Path
) -> None:
    from copilot_host.gateway._app import REREGISTER_AFTER

    assert REREGISTER_AFTER == 30 * 60
    clock = FakeClock()
    with running_gateway(emulator, tmp_path / "home", clock=clock) as gateway:
        assert gateway.post("/v1/chat/completions", CHAT)[0] == 200
        clock.advance(REREGISTER_AFTER - 1)
        assert gateway.post("/v1/chat/completions", CHAT)[0] == 200
        gateway.settle()
        assert len(emulator.requests_to("models")) == 1
        clock.advance(1)
        # Served at once by the routes in hand; the new registration runs beside it.
        assert gateway.post("/v1/chat/completions", CHAT)[0] == 200
        gateway.settle()
        assert len(emulator.requests_to("models")) == 2
        assert gateway.post("/v1/chat/completions", CHAT)[0] == 200
        gateway.settle()
        assert len(emulator.requests_to("models")) == 2


def test_a_failed_background_registration_keeps_the_routes_in_hand(tmp_path: Path) -> None:
    clock = FakeClock()
    # Sessions outlive the 30 minutes here, so only the registration needs GitHub.
    long_sessions = Scenario(session=Session(session_lifetime=4 * 3600, refresh_in=3 * 3600))
    with (
        GitHubEmulator(long_sessions) as emulator,
        running_gateway(emulator, tmp_path / "home", clock=clock) as gateway,
    ):
        assert gateway.post("/v1/chat/completions", CHAT)[0] == 200
        emulator.revoke_login()  # GitHub stops accepting the login: exchanges fail
        clock.advance(30 * 60)
        assert gateway.post("/v1/chat/completions", CHAT)[0] == 200
        gateway.settle()
        # A registration was tried, and failed ...
        assert emulator.requests_to("copilot_token")[-1].status == 401
        # ... and the session in hand still works: nothing was taken away.
        assert gateway.post("/v1/chat/completions", CHAT)[0] == 200
        assert_no_leaks(gateway)


def test_after_a_failed_background_registration_the_next_waits_a_minute(tmp_path: Path) -> None:
    clock = FakeClock()
    long_sessions = Scenario(session=Session(session_lifetime=4 * 3600, refresh_in=3 * 3600))
    with (
        GitHubEmulator(long_sessions) as emulator,
        running_gateway(emulator, tmp_path / "home", clock=clock) as gateway,
    ):
        assert gateway.post("/v1/chat/completions", CHAT)[0] == 200
        emulator.revoke_login()
        clock.advance(30 * 60)
        assert gateway.post("/v1/chat/completions", CHAT)[0] == 200
        gateway.settle()
        tried = len(emulator.requests_to("copilot_token"))
        clock.advance(59.0)
        assert gateway.post("/v1/chat/completions", CHAT)[0] == 200
        gateway.settle()
        assert len(emulator.requests_to("copilot_token")) == tried  # held back
        clock.advance(1.0)
        assert gateway.post("/v1/chat/completions", CHAT)[0] == 200
        gateway.settle()
        assert len(emulator.requests_to("copilot_token")) == tried + 1  # tried again
        assert_no_leaks(gateway)


def test_a_failing_registration_is_tried_once_a_second_not_once_a_request(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    # Discovery fails twice (the adapter's own retry takes the second), then works.
    scenario = Scenario(faults=Faults(models_failures=(503, 503), retry_after="0"))
    with (
        GitHubEmulator(scenario) as emulator,
        running_gateway(emulator, tmp_path / "home", clock=clock) as gateway,
    ):
        for _ in range(3):
            status, _headers, body = gateway.post("/v1/chat/completions", CHAT)
            assert (status, body["error"]["code"]) == (503, "server_error")
        assert len(emulator.requests_to("models")) == 2  # one registration
        clock.advance(1.0)
        assert gateway.post("/v1/chat/completions", CHAT)[0] == 200
        assert len(emulator.requests_to("models")) == 3
        assert_no_leaks(gateway)


def test_concurrent_first_requests_share_one_registration(gateway: Gateway) -> None:
    gateway.emulator.clear_requests()

    def ask(index: int) -> Any:
        path = "/v1/models" if index % 4 == 0 else "/v1/chat/completions"
        if path == "/v1/models":
            return gateway.get(path)[0]
        return gateway.post(path, CHAT)[0]

    with ThreadPoolExecutor(max_workers=24) as pool:
        statuses = list(pool.map(ask, range(48)))
    assert statuses == [200] * 48
    assert len(gateway.emulator.requests_to("copilot_token")) == 1
    assert len(gateway.emulator.requests_to("models")) == 1
    assert len(gateway.emulator.requests_to("chat")) == 36


def test_one_exchange_when_the_session_is_due_however_many_requests_arrive(
    emulator: GitHubEmulator, tmp_path: Path
) -> None:
    clock = FakeClock()
    with running_gateway(emulator, tmp_path / "home", clock=clock) as gateway:
        assert gateway.post("/v1/chat/completions", CHAT)[0] == 200
        before = len(emulator.requests_to("copilot_token"))
        # 30 s before the session expires: every request must wait for the one refresh.
        clock.advance(emulator.scenario.session.session_lifetime - 30)
        with ThreadPoolExecutor(max_workers=24) as pool:
            statuses = list(
                pool.map(lambda _: gateway.post("/v1/chat/completions", CHAT)[0], range(48))
            )
        assert statuses == [200] * 48
        assert len(emulator.requests_to("copilot_token")) == before + 1
        # The routes were not registered again for it: the refresh is the resolver's.
        assert len(emulator.requests_to("models")) == 1
        assert_no_leaks(gateway)
