"""The emulator's Copilot WebSocket (``wss://{api}/responses``) over a real loopback socket:
the handshake's checks, chaining on one socket, the error frames, the age limit, and the
scripted failures a gateway's degradations are tested against."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus

from copilot_host import Catalog, CopilotAuth, ModelRoute, register_models
from copilot_host.github import GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import GitHubEmulator, Scenario, Sockets

USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}


@contextmanager
def _routes(emulator: GitHubEmulator, home: Path) -> Iterator[dict[str, ModelRoute]]:
    store = CredentialStore(home, key_file=True)
    with GitHubCopilotHost(store=store, transport=emulator.transport()) as host:
        host.login(sleep=lambda _seconds: None)
        catalog = Catalog()
        register_models(catalog, host)
        yield {route.model_id: route for route in catalog.routes().values()}


@pytest.fixture
def routes(tmp_path: Path) -> Iterator[tuple[GitHubEmulator, dict[str, ModelRoute]]]:
    with GitHubEmulator() as emulator, _routes(emulator, tmp_path / "home") as found:
        yield emulator, found


def _url(route: ModelRoute) -> str:
    return route.origin.replace("https://", "wss://") + "/responses"


def _headers(route: ModelRoute) -> list[tuple[str, str]]:
    auth = route.auth
    assert isinstance(auth, CopilotAuth)
    return auth.handshake_headers(_url(route))


async def _answer(socket: Any) -> list[dict[str, Any]]:
    frames: list[dict[str, Any]] = []
    while True:
        frame = json.loads(await socket.recv())
        frames.append(frame)
        if frame["type"] in ("response.completed", "response.failed", "error"):
            return frames


def _run(emulator: GitHubEmulator, route: ModelRoute, *messages: dict[str, Any]) -> list[Any]:
    """Each message on one socket (``previous_response_id`` ``"<last>"`` chains on the
    previous answer), and each answer's frames."""

    async def go() -> list[Any]:
        headers = _headers(route)
        socket = await emulator.socket_connector()(_url(route), headers)
        answers: list[Any] = []
        last = None
        try:
            for message in messages:
                sent = dict(message)
                if sent.get("previous_response_id") == "<last>":
                    sent["previous_response_id"] = last
                await socket.send(json.dumps({"type": "response.create", **sent}))
                frames = await _answer(socket)
                answers.append(frames)
                if frames[-1]["type"] == "response.completed":
                    last = frames[-1]["response"]["id"]
        except ConnectionClosed as closed:
            answers.append(closed)
        finally:
            await socket.close()
        return answers

    return asyncio.run(go())


def test_a_chain_on_one_socket_sends_only_new_items(routes: Any) -> None:
    emulator, found = routes
    route = found["gpt-5.5"]
    assert route.spec.websocket
    first, second = _run(
        emulator,
        route,
        {"model": "gpt-5.5", "input": [USER], "initiator": "user"},
        {
            "model": "gpt-5.5",
            "input": [USER],
            "previous_response_id": "<last>",
            "initiator": "agent",
        },
    )
    assert first[0]["type"] == "response.created" and first[-1]["type"] == "response.completed"
    # The quota as the socket reports it (VS Code's QuotaSnapshot).
    snapshot = first[-1]["copilot_quota_snapshots"]["premium_interactions"]
    assert set(snapshot) == {
        "entitlement",
        "percent_remaining",
        "overage_permitted",
        "overage_count",
        "reset_date",
    }
    assert second[-1]["type"] == "response.completed"
    records = emulator.requests_to("responses_socket")
    assert [r.method for r in records] == ["GET", "WS", "WS"]
    assert records[0].status == 101
    # Recorded as sent (the second carries one item), with initiator as X-Initiator.
    bodies = [json.loads(r.body) for r in records[1:]]
    assert [len(b["input"]) for b in bodies] == [1, 1]
    assert [r.initiator for r in records[1:]] == ["user", "agent"]
    assert all(r.status == 200 and r.model == "gpt-5.5" for r in records[1:])
    emulator.assert_no_refusals()


def test_an_unknown_previous_response_and_a_model_off_the_socket_are_error_frames(
    routes: Any,
) -> None:
    emulator, found = routes
    route = found["gpt-5.5"]
    (unknown,), (off,), (bad,), (done,) = (
        [frames[-1]]
        for frames in _run(
            emulator,
            route,
            {"model": "gpt-5.5", "input": [], "previous_response_id": "resp_other"},
            # grok-4.5 lists /responses only.
            {"model": "grok-4.5", "input": [USER]},
            {"model": "gpt-5.5", "input": [USER], "initiator": "person"},
            {"model": "gpt-5.5", "input": [USER]},
        )
    )
    assert unknown["error"]["code"] == "previous_response_not_found"
    assert "copilot_quota_snapshots" in unknown and "status" not in unknown
    assert off["error"]["code"] == "unsupported_api_for_model"
    assert bad["error"]["code"] == "bad_request"
    # The socket goes on after each.
    assert done["type"] == "response.completed"


def test_the_handshake_is_held_to_every_copilot_requests_checks(routes: Any) -> None:
    emulator, found = routes
    route = found["gpt-5.5"]
    url = _url(route)
    good = _headers(route)
    cases = [
        ([(k, v) for k, v in good if k.lower() != "authorization"], 401),
        ([(k, v) for k, v in good if k.lower() != "editor-version"], 400),
    ]

    async def refused(headers: list[tuple[str, str]], target: str) -> int:
        with pytest.raises(InvalidStatus) as caught:
            await emulator.socket_connector()(target, headers)
        return caught.value.response.status_code

    for headers, status in cases:
        assert asyncio.run(refused(headers, url)) == status
    assert asyncio.run(refused(good, url.replace("/responses", "/chat/completions"))) == 404
    # Only Copilot's hosts are routed, like the transports.
    with pytest.raises(OSError, match="does not route"):
        asyncio.run(emulator.socket_connector()("wss://example.com/responses", good))
    assert "wss://example.com/responses" in emulator.refused


def test_scripted_refusals_closes_and_forgets(tmp_path: Path) -> None:
    scenario = Scenario(sockets=Sockets(refused=(403,), closes=1, forgets=1))
    with GitHubEmulator(scenario) as emulator, _routes(emulator, tmp_path / "home") as found:
        route = found["gpt-5.5"]
        url = _url(route)
        headers = _headers(route)

        async def first() -> int:
            with pytest.raises(InvalidStatus) as caught:
                await emulator.socket_connector()(url, headers)
            return caught.value.response.status_code

        assert asyncio.run(first()) == 403
        (dropped,) = _run(emulator, route, {"model": "gpt-5.5", "input": [USER]})
        assert isinstance(dropped, ConnectionClosed) and dropped.rcvd is None
        served, forgot, again = _run(
            emulator,
            route,
            {"model": "gpt-5.5", "input": [USER]},
            {"model": "gpt-5.5", "input": [USER], "previous_response_id": "<last>"},
            {"model": "gpt-5.5", "input": [USER]},
        )
        assert served[-1]["type"] == "response.completed"
        assert forgot[-1]["error"]["code"] == "previous_response_not_found"
        assert again[-1]["type"] == "response.completed"
        assert emulator.requests_to("responses_socket")[-1].disconnected is False


def test_an_old_socket_and_an_expired_session_end_with_their_error_frames(tmp_path: Path) -> None:
    scenario = Scenario(sockets=Sockets(max_age=0.2))
    with GitHubEmulator(scenario) as emulator, _routes(emulator, tmp_path / "home") as found:
        route = found["gpt-5.5"]

        async def aged() -> tuple[dict[str, Any], int | None]:
            url = _url(route)
            headers = _headers(route)
            socket = await emulator.socket_connector()(url, headers)
            await asyncio.sleep(0.3)
            await socket.send(json.dumps({"type": "response.create", "model": "gpt-5.5"}))
            frame = json.loads(await socket.recv())
            with pytest.raises(ConnectionClosed):
                await socket.recv()
            return frame, socket.close_code

        frame, code = asyncio.run(aged())
        assert frame["error"]["code"] == "websocket_connection_limit_reached"
        assert code == 1000
    with GitHubEmulator() as emulator, _routes(emulator, tmp_path / "other") as found:
        route = found["gpt-5.5"]

        async def expired() -> dict[str, Any]:
            url = _url(route)
            headers = _headers(route)
            socket = await emulator.socket_connector()(url, headers)
            # The session the socket was opened with stops working while it lives.
            emulator.revoke_sessions()
            await socket.send(json.dumps({"type": "response.create", "model": "gpt-5.5"}))
            frame: dict[str, Any] = json.loads(await socket.recv())
            with pytest.raises(ConnectionClosed):
                await socket.recv()
            assert socket.close_code == 1008
            return frame

        assert asyncio.run(expired())["error"]["code"] == "session_expired"
