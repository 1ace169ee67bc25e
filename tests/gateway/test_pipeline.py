"""One gateway request: its body read once and strictly, the model rewritten without
re-encoding where it can be, the parsed tree gone before the request leaves, and the hooks
other features plug into."""

from __future__ import annotations

import dataclasses
import gc
import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st

import copilot_host as ch
from copilot_host.gateway import GatewayHooks
from copilot_host.gateway._app._intake import OFF_LOOP_ABOVE, Parsed, parse_request
from copilot_host.gateway._changes import SERVED_BETAS, Changes, RequestEdit
from copilot_host.gateway._protocols import CHAT as CHAT_API
from copilot_host.gateway._protocols import MESSAGES
from copilot_host.testing import GitHubEmulator
from tests._json_strategies import json_scalars, json_values
from tests.core._routes import make_route
from tests.gateway._support import Gateway, running_gateway

CHAT = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}
PATHS = {
    "/v1/chat/completions": "gpt-4.1",
    "/v1/responses": "gpt-4.1",
    "/v1/messages": "claude-opus-5",
}


def _body(model: str) -> dict[str, object]:
    return {"model": model, "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}


# -- one strict reading ---------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize(
    "encode",
    [
        lambda text: b"\xef\xbb\xbf" + text.encode("utf-8"),
        lambda text: text.encode("utf-16"),
        lambda text: text.encode("utf-16-le"),
        lambda text: text.encode("utf-32"),
    ],
    ids=["utf8-bom", "utf16-bom", "utf16le", "utf32"],
)
def test_a_body_not_in_utf8_without_a_bom_is_invalid_json_on_every_path(
    shared_gateway: Gateway, path: str, encode: object
) -> None:
    text = json.dumps(_body(PATHS[path]))
    assert callable(encode)
    before = len(shared_gateway.emulator.requests)
    status, _, data = shared_gateway.raw(
        "POST", path, body=encode(text), headers={"Content-Type": "application/json"}
    )
    assert status == 400
    error = json.loads(data)["error"]
    assert error.get("code", "invalid_json") == "invalid_json"
    assert "not JSON (UTF-8, without a byte-order mark)" in error["message"]
    assert len(shared_gateway.emulator.requests) == before  # nothing went upstream


@pytest.mark.parametrize("model", ["gpt-4.1", "github-copilot/gpt-4.1"])
def test_a_lone_surrogate_is_served_or_refused_never_a_server_error(
    shared_gateway: Gateway, model: str
) -> None:
    body = b'{"model": "%s", "messages": [{"role": "user", "content": "\\ud800 x"}]}' % (
        model.encode()
    )
    status, _, _ = shared_gateway.raw(
        "POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json"}
    )
    assert status in (200, 400)


@pytest.mark.parametrize(
    ("given", "sent"),
    [("agent", "agent"), ("user", "user"), ("premium", "user"), ("AGENT", "user")],
)
def test_the_gateway_forwards_only_the_two_known_initiators(
    shared_gateway: Gateway, given: str, sent: str
) -> None:
    before = len(shared_gateway.emulator.requests_to("chat"))
    status, _, _ = shared_gateway.post("/v1/chat/completions", CHAT, headers={"X-Initiator": given})
    assert status == 200
    record = shared_gateway.emulator.requests_to("chat")[before]
    assert record.headers["x-initiator"] == sent


# -- the model rewrite ----------------------------------------------------------------------


def _parsed(body: bytes) -> Parsed:
    parsed = parse_request(body, CHAT_API)
    assert isinstance(parsed, Parsed)
    return parsed


def _upstream_body(api: Any, body: bytes, parsed: Parsed, model: str) -> bytes:
    """The body the change stage sends upstream for ``model`` (no switchable change on:
    only the always-on ones, the model id and a block system)."""
    route = dataclasses.replace(make_route("github-copilot/m"), model_id=model)
    edit = RequestEdit(api, parsed.value, route)
    changes = Changes(frozenset()).of(api)
    changes.request(edit)
    return changes.body(edit, body)


def rewrite_model(body: bytes, parsed: Parsed, model: str) -> bytes:
    return _upstream_body(CHAT_API, body, parsed, model)


def system_blocks(body: bytes, parsed: Parsed, model: str) -> bytes:
    return _upstream_body(MESSAGES, body, parsed, model)


@pytest.mark.parametrize(
    "body",
    [
        b'{"model":"github-copilot/gpt-4.1","messages":[{"role":"user","content":"x"}]}',
        b'{ "messages" : [ ] ,\n  "model"  :  "github-copilot/gpt-4.1" , "n": 1}',
        '{"model":"github-copilot/gpt-4.1","messages":[{"content":"caf\u00e9 \\u00e9"}]}'.encode(),
        # Keys that end in the word but are not "model": no doubt about which is the one.
        b'{"a\\"model":1,"a ,model":2,"model":"github-copilot/gpt-4.1"}',
        b'{"model":"github-copilot/gpt-4.1","text":"say \\"model\\": \\"x\\""}',
        b'{"text": "model : the word", "model":"github-copilot/gpt-4.1"}',
    ],
)
def test_the_model_is_spliced_into_the_bytes_leaving_the_rest_as_sent(body: bytes) -> None:
    rewritten = rewrite_model(body, _parsed(body), "gpt-4.1")
    assert rewritten == body.replace(b"github-copilot/gpt-4.1", b"gpt-4.1")


@pytest.mark.parametrize(
    "body",
    [
        # A second key "model" (nested): the splice cannot tell which is the top one.
        b'{"messages":[{"model":"github-copilot/gpt-4.1"}],"model":"github-copilot/gpt-4.1"}',
        # The top-level key spelled with an escape.
        b'{"messages":[{"model":"github-copilot/gpt-4.1"}],"mod\\u0065l":"github-copilot/gpt-4.1"}',
        # The value spelled another way (an escaped slash).
        b'{"model":"github-copilot\\/gpt-4.1","messages":[]}',
        # A duplicate top-level key: JSON's last one counts.
        b'{"model":"gpt-x","model":"github-copilot/gpt-4.1"}',
        # A lone surrogate, which UTF-8 cannot carry: re-encoded escaped.
        b'{"model":"github-copilot/gpt-4.1","messages":[{"c\\u006fntent":"\\ud800"}]}',
    ],
)
def test_a_body_the_splice_cannot_prove_is_encoded_again(body: bytes) -> None:
    parsed = _parsed(body)
    rewritten = rewrite_model(body, parsed, "gpt-4.1")
    again = json.loads(rewritten)
    assert again["model"] == "gpt-4.1"
    assert {k: v for k, v in again.items() if k != "model"} == {
        k: v for k, v in parsed.value.items() if k != "model"
    }


_KEYS = st.sampled_from(["model", "system", "messages", "mod\u0065l", 'a"model', "x"]) | st.text(
    max_size=6
)
_NAMES = st.sampled_from(["github-copilot/gpt-4.1", "gpt-4.1", "caf\u00e9/m", "a\\b", "\ud800"])


@given(
    json_values(keys=_KEYS, leaves=json_scalars(big=2**53) | _NAMES | st.just('"model": "x"')),
    _NAMES,
    _NAMES,
    st.booleans(),
    st.sampled_from([(",", ":"), (", ", ": "), (" ,\n", " :\t")]),
)
def test_any_body_rewritten_names_the_new_model_and_keeps_the_rest(
    rest: Any, old: str, new: str, ascii_only: bool, separators: tuple[str, str]
) -> None:
    # Spliced or encoded again, the document is the one with only "model" changed.
    value = (
        {"messages": rest, "model": old} if not isinstance(rest, dict) else {**rest, "model": old}
    )
    try:
        body = json.dumps(value, ensure_ascii=ascii_only, separators=separators).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: only the escaped spelling exists
        body = json.dumps(value, separators=separators).encode("ascii")
    rewritten = rewrite_model(body, _parsed(body), new)
    assert json.dumps(json.loads(rewritten), sort_keys=True) == json.dumps(
        {**value, "model": new}, sort_keys=True
    )


# -- a string system as a text block, in the bytes ---------------------------------------


def _messages(body: bytes) -> Parsed:
    parsed = parse_request(body, MESSAGES)
    assert isinstance(parsed, Parsed)
    return parsed


@pytest.mark.parametrize(
    ("body", "model"),
    [
        (b'{"model":"claude-x","system":"be brief","messages":[]}', "claude-x"),
        (b'{"system" : "caf\\u00e9\\n", "messages":[], "model":"sonnet"}', "claude-x"),
        ('{"model":"opus","system":"caf\u00e9","messages":[]}'.encode(), "claude-x"),
    ],
)
def test_a_string_system_becomes_a_block_in_the_bytes(body: bytes, model: str) -> None:
    parsed = _messages(body)
    system = parsed.value["system"]
    edited = system_blocks(body, parsed, model)
    # The one document the re-encoding would give, and the rest of the bytes as sent.
    assert json.loads(edited) == {
        **parsed.value,
        "system": [{"type": "text", "text": system}],
        "model": model,
    }
    start = body.index(b'"system"')
    assert edited[: edited.index(b'"system"')] == body[:start].replace(
        json.dumps(parsed.name).encode(), json.dumps(model).encode()
    )
    assert parsed.value["system"] == system  # the parsed document is left as it was


@pytest.mark.parametrize(
    "body",
    [
        # A second key "system" (nested): the splice cannot tell which is the top one.
        b'{"model":"m","messages":[{"system":"x"}],"system":"x"}',
        # The key spelled with an escape.
        b'{"model":"m","messages":[{"system":"x"}],"\\u0073ystem":"x"}',
        # The value spelled another way (an escaped slash).
        b'{"model":"m","system":"a\\/b","messages":[]}',
        # The model cannot be spliced (a second key "model").
        b'{"model":"m","system":"x","messages":[{"model":"m"}]}',
    ],
)
def test_a_system_the_splice_cannot_prove_is_encoded_again(body: bytes) -> None:
    parsed = _messages(body)
    edited = json.loads(system_blocks(body, parsed, "claude-x"))
    assert edited["model"] == "claude-x"
    assert edited["system"] == [{"type": "text", "text": parsed.value["system"]}]
    assert {k: v for k, v in edited.items() if k not in ("model", "system")} == {
        k: v for k, v in parsed.value.items() if k not in ("model", "system")
    }


# -- the parsed tree goes before the request does -----------------------------------------


class TreeWatcher(httpx2.AsyncBaseTransport):
    """Looks, as each request leaves for upstream, for any parsed body still alive."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, mark: str) -> None:
        self._inner = inner
        self._mark = mark
        self.alive: list[bool] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/chat/completions":
            gc.collect()
            mark = self._mark
            self.alive.append(
                any(isinstance(obj, dict) and mark in obj for obj in gc.get_objects())
            )
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[tuple[Gateway, TreeWatcher]]:
    mark = "mark_" + secrets.token_hex(8)
    with GitHubEmulator() as emulator:
        watcher = TreeWatcher(emulator.async_transport(), mark)
        with running_gateway(emulator, tmp_path / "home", transport=watcher) as gateway:
            yield gateway, watcher


@pytest.mark.parametrize("model", ["gpt-4.1", "github-copilot/gpt-4.1"])
def test_the_parsed_body_is_released_before_the_request_goes_upstream(
    watched: tuple[Gateway, TreeWatcher], model: str
) -> None:
    gateway, watcher = watched
    # Bytes only: no dict in this process holds the mark but the gateway's own parse.
    body = b'{"model": "%s", "messages": [{"role": "user", "content": "hi"}], "%s": 1}' % (
        model.encode(),
        watcher._mark.encode(),
    )
    status, _, _ = gateway.raw(
        "POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json"}
    )
    assert status == 200
    assert watcher.alive == [False]


def test_a_large_body_is_served_as_a_small_one(shared_gateway: Gateway) -> None:
    text = "x" * (OFF_LOOP_ABOVE + 10)
    body = {"model": "github-copilot/gpt-4.1", "messages": [{"role": "user", "content": text}]}
    before = len(shared_gateway.emulator.requests_to("chat"))
    status, _, _ = shared_gateway.post("/v1/chat/completions", body)
    assert status == 200
    record = shared_gateway.emulator.requests_to("chat")[before]
    assert json.loads(record.body) == {**body, "model": "gpt-4.1"}


# -- the hooks -------------------------------------------------------------------------------


class Seen:
    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def start(self, status: int, headers: httpx2.Headers) -> None:
        self.calls.append(("start", status))

    def whole(self, body: bytes) -> None:
        self.calls.append(("whole", json.loads(body).get("type")))

    def events(self, block: bytes) -> None:
        self.calls.append(("events", block.count(b"data:")))

    def end(self) -> None:
        self.calls.append(("end", None))


def test_the_hooks_see_the_forwarded_headers_and_the_answer(tmp_path: Path) -> None:
    seen = Seen()
    filtered: list[list[bytes]] = []

    def drop_betas(
        route: ch.ModelRoute, headers: list[tuple[bytes, bytes]]
    ) -> list[tuple[bytes, bytes]]:
        filtered.append([name for name, _ in headers])
        return [(name, value) for name, value in headers if name != b"anthropic-beta"]

    hooks = GatewayHooks(request_headers=drop_betas, observe=lambda route: seen)
    with (
        GitHubEmulator() as emulator,
        running_gateway(emulator, tmp_path / "home", hooks=hooks) as gateway,
    ):
        status, _, _ = gateway.post(
            "/v1/messages",
            _body("claude-opus-5"),
            # A beta the service serves: the gateway's own filter keeps it, the hook drops it.
            headers={"anthropic-version": "2023-06-01", "anthropic-beta": sorted(SERVED_BETAS)[0]},
        )
        assert status == 200
        (record,) = emulator.requests_to("messages")
        assert "anthropic-beta" not in record.headers
        assert filtered and b"anthropic-beta" in filtered[0]
        assert seen.calls == [("start", 200), ("whole", "message"), ("end", None)]
        seen.calls.clear()
        status, _, _ = gateway.post("/v1/chat/completions", {**CHAT, "stream": True})
        assert status == 200
        assert seen.calls[0] == ("start", 200)
        assert seen.calls[-1] == ("end", None)
        events = [n for kind, n in seen.calls if kind == "events"]
        assert events and sum(n for n in events if isinstance(n, int)) >= 2


# -- one parse, one lookup, one stat ---------------------------------------------------------


def test_one_gateway_request_parses_once_and_reads_the_login_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import asyncio

    from copilot_host.gateway import create_app
    from tests.sessions._hosts import AsyncCountingHost, CountingHost

    inner = CountingHost()
    host = AsyncCountingHost(inner)
    seen: list[httpx2.Request] = []

    def upstream(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json={"object": "chat.completion", "choices": []})

    key = "cph_" + "k" * 40
    app = create_app(host, api_key=key, transport=httpx2.MockTransport(upstream), clock=inner.clock)
    body = json.dumps(
        {"model": "counting/gpt-4o", "messages": [{"role": "tool", "content": "ok"}]}
    ).encode()
    parses: list[int] = []
    real_loads = json.loads

    def counting_loads(text: str | bytes, **kwargs: object) -> object:
        parses.append(len(text))
        return real_loads(text, **kwargs)  # type: ignore[arg-type]

    class CountingFast:
        """The accelerated parser (orjson when installed), counted the same way."""

        def __init__(self, fast: Any) -> None:
            self.JSONDecodeError = fast.JSONDecodeError
            self._fast = fast

        def loads(self, data: bytes) -> object:
            parses.append(len(data))
            return self._fast.loads(data)

    from copilot_host import _accel

    fast = _accel.orjson

    async def go() -> list[int]:
        statuses = []
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(
            transport=transport, base_url="http://127.0.0.1:4141"
        ) as client:
            headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
            # The first request registers (its own stats and parses); the second is the
            # steady state measured here.
            await client.post("/v1/chat/completions", content=body, headers=headers)
            before = inner.availability_calls
            monkeypatch.setattr(json, "loads", counting_loads)
            if fast is not None:
                monkeypatch.setattr(_accel, "orjson", CountingFast(fast))
            answer = await client.post("/v1/chat/completions", content=body, headers=headers)
            monkeypatch.setattr(json, "loads", real_loads)
            monkeypatch.setattr(_accel, "orjson", fast)
            statuses.append(answer.status_code)
            statuses.append(inner.availability_calls - before)
        await app.aclose()
        return statuses

    status, stats = asyncio.run(go())
    assert status == 200
    assert stats == 1  # the registry's look at the login; route.auth is handed it
    assert parses == [len(body)]  # the gateway's one parse; route.auth is handed the facts
    sent = seen[-1]
    assert json.loads(sent.content)["model"] == "gpt-4o"
    assert sent.headers["x-initiator"] == "agent"
