"""The request pipeline: driven by hand as a state machine, and through route.auth."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import httpx2
import pytest

import copilot_host as ch
from copilot_host import CopilotSession, SessionResolver
from copilot_host._sessions._inspect import RequestFacts, facts_of_body, read_json_body
from copilot_host._sessions._pipeline import (
    NEED_ERROR_BODY,
    NEED_SESSION,
    Pipeline,
    Send,
    SwitchesIdentity,
)
from tests.sessions._hosts import ENDPOINT, ORIGIN, AsyncCountingHost, CountingHost, make_session

CHAT = ORIGIN + "/chat/completions"
NOT_SUPPORTED = json.dumps(
    {"error": {"message": "The requested model is not supported.", "code": "model_not_supported"}}
).encode()
EDITOR = {"Editor-Version": "vscode/1.0", "Copilot-Integration-Id": "vscode-chat"}
A_TURN = RequestFacts(False, "user", "gpt-4o")
FALLBACK = {"Editor-Version": "vscode/1.0", "Copilot-Integration-Id": "copilot-fallback"}


@dataclass
class Rejecting:
    """The resolver's part, scripted: whether each rejection is worth a new exchange."""

    worth_it: bool = True
    installs: int = 0
    rejections: list[tuple[int, bool]] = field(default_factory=list)

    def rejected(self, session: CopilotSession, asked: int, *, forbidden: bool) -> bool:
        self.rejections.append((asked, forbidden))
        return self.worth_it


@dataclass
class Switcher:
    """A host double with a second identity (the seam a GitHub host implements)."""

    other: Mapping[str, str] | None = field(default_factory=lambda: dict(FALLBACK))
    refused: list[dict[str, str]] = field(default_factory=list)

    def switch_identity(self, refused: Mapping[str, str]) -> Mapping[str, str] | None:
        self.refused.append(dict(refused))
        return self.other


def sessions() -> tuple[CopilotSession, CopilotSession]:
    from tests._clock import FakeClock
    from tests.sessions._hosts import identity

    clock, who = FakeClock(), identity()
    return make_session(clock, who), make_session(clock, who)


def run(
    pipeline: Pipeline,
    answers: Sequence[tuple[int, bytes]],
    facts: RequestFacts = A_TURN,
    client: Sequence[tuple[bytes, bytes]] = (),
) -> list[list[tuple[bytes, bytes]]]:
    """Drive one request as route.auth does; return the header lists it sent, in order."""
    first, second = sessions()
    given = iter([first, second])
    replies = iter(answers)
    asked = pipeline._resolver.installs
    session = next(given)
    headers, identity = pipeline.first(facts, client, session)
    sent: list[list[tuple[bytes, bytes]]] = [headers]
    status, body = next(replies)
    if pipeline.settled(status, facts):
        return sent
    flow = pipeline.after(
        facts, client, session=session, identity=identity, asked=asked, status=status
    )
    step = next(flow, None)
    while step is not None:
        reply: object
        if step is NEED_SESSION:
            reply = next(given)
        elif step is NEED_ERROR_BODY:
            reply = body
        else:
            assert isinstance(step, Send)
            sent.append(step.headers)
            status, body = next(replies)
            reply = status
        try:
            step = flow.send(reply)
        except StopIteration:
            break
    return sent


def header(headers: list[tuple[bytes, bytes]], name: bytes) -> list[bytes]:
    return [value for key, value in headers if key.lower() == name]


# -- the state machine ----------------------------------------------------------------------


def test_an_answer_is_taken_as_it_is_after_one_send() -> None:
    assert len(run(Pipeline(Rejecting(), ENDPOINT, EDITOR), [(200, b"")])) == 1


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_session_is_sent_once_more_when_the_resolver_says_so(status: int) -> None:
    resolver = Rejecting()
    sent = run(Pipeline(resolver, ENDPOINT, EDITOR), [(status, b""), (status, b"")])
    assert len(sent) == 2
    assert resolver.rejections == [(0, status == 403)]
    assert header(sent[0], b"authorization") != header(sent[1], b"authorization")


def test_an_organisations_policy_refusal_is_the_answer_not_a_stale_session() -> None:
    resolver = Rejecting()
    policy = b"unauthorized: not authorized to use this Copilot feature\n"
    sent = run(Pipeline(resolver, ENDPOINT, EDITOR), [(403, policy)])
    assert len(sent) == 1
    assert resolver.rejections == []


def test_a_refusal_the_resolver_does_not_retry_is_the_answer() -> None:
    assert len(run(Pipeline(Rejecting(worth_it=False), ENDPOINT, EDITOR), [(401, b"")])) == 1


def test_model_not_supported_for_a_listed_model_switches_identity_and_resends_once() -> None:
    host = Switcher()
    pipeline = Pipeline(Rejecting(), ENDPOINT, EDITOR, switcher=host, listed=["gpt-4o"])
    sent = run(pipeline, [(400, NOT_SUPPORTED), (200, b"")])
    assert len(sent) == 2
    assert host.refused == [EDITOR]
    assert header(sent[0], b"copilot-integration-id") == [b"vscode-chat"]
    assert header(sent[1], b"copilot-integration-id") == [b"copilot-fallback"]
    # The same session: the identity is the request headers, not the login.
    assert header(sent[0], b"authorization") == header(sent[1], b"authorization")
    # From then on the other identity is what requests carry.
    later = run(pipeline, [(200, b"")])
    assert header(later[0], b"copilot-integration-id") == [b"copilot-fallback"]


@dataclass
class TwoIdentities:
    """A host double that flips between two identities, as the GitHub hosts do."""

    current: Mapping[str, str] = field(default_factory=lambda: EDITOR)
    refused: list[str] = field(default_factory=list)

    def switch_identity(self, refused: Mapping[str, str]) -> Mapping[str, str] | None:
        self.refused.append(refused["Copilot-Integration-Id"])
        self.current = FALLBACK if self.refused[-1] == "vscode-chat" else EDITOR
        return self.current


@pytest.mark.parametrize("second", [(400, NOT_SUPPORTED), (403, b""), (429, b""), (500, b"")])
def test_a_switch_whose_resend_fails_too_is_handed_back(second: tuple[int, bytes]) -> None:
    host = TwoIdentities()
    pipeline = Pipeline(Rejecting(), ENDPOINT, EDITOR, switcher=host, listed=["gpt-4o"])
    sent = run(pipeline, [(400, NOT_SUPPORTED), second])
    assert [header(h, b"copilot-integration-id") for h in sent] == [
        [b"vscode-chat"],
        [b"copilot-fallback"],
    ]
    # The host was told the other identity was refused too, and went back to the first.
    assert host.refused == ["vscode-chat", "copilot-fallback"]
    assert host.current is EDITOR
    later = run(pipeline, [(200, b"")])
    assert header(later[0], b"copilot-integration-id") == [b"vscode-chat"]


def test_a_host_that_builds_its_headers_anew_is_followed_back() -> None:
    # A host returning a fresh mapping each time (equal, not the same object).
    class Fresh(TwoIdentities):
        def switch_identity(self, refused: Mapping[str, str]) -> Mapping[str, str] | None:
            return dict(super().switch_identity(refused) or {})

    host = Fresh()
    pipeline = Pipeline(Rejecting(), ENDPOINT, dict(EDITOR), switcher=host, listed=["gpt-4o"])
    run(pipeline, [(400, NOT_SUPPORTED), (400, NOT_SUPPORTED)])
    assert host.refused == ["vscode-chat", "copilot-fallback"]
    later = run(pipeline, [(200, b"")])
    assert header(later[0], b"copilot-integration-id") == [b"vscode-chat"]


def test_a_host_that_cannot_switch_back_keeps_the_other_identity() -> None:
    # Hands over the fallback once, and has nothing to go back to.
    answers: list[Mapping[str, str] | None] = [dict(FALLBACK), None]

    class OneWay(Switcher):
        def switch_identity(self, refused: Mapping[str, str]) -> Mapping[str, str] | None:
            self.refused.append(dict(refused))
            return answers[len(self.refused) - 1]

    host = OneWay()
    pipeline = Pipeline(Rejecting(), ENDPOINT, EDITOR, switcher=host, listed=["gpt-4o"])
    assert len(run(pipeline, [(400, NOT_SUPPORTED), (400, NOT_SUPPORTED)])) == 2
    assert host.refused == [EDITOR, FALLBACK]
    later = run(pipeline, [(200, b"")])
    assert header(later[0], b"copilot-integration-id") == [b"copilot-fallback"]


@pytest.mark.parametrize(
    ("model", "answer"),
    [
        ("gpt-unlisted", NOT_SUPPORTED),  # a model the inventory did not list
        ("gpt-4o", b'{"error":{"code":"model_not_supported_in_version"}}'),
        ("gpt-4o", b"model_not_supported"),  # not the JSON error document
        (None, NOT_SUPPORTED),
    ],
)
def test_no_switch_for_other_refusals(model: str | None, answer: bytes) -> None:
    host = Switcher()
    pipeline = Pipeline(Rejecting(), ENDPOINT, EDITOR, switcher=host, listed=["gpt-4o"])
    sent = run(pipeline, [(400, answer)], facts=RequestFacts(False, "user", model))
    assert len(sent) == 1
    assert host.refused == []


def test_a_host_with_no_other_identity_leaves_the_answer_be() -> None:
    host = Switcher(other=None)
    pipeline = Pipeline(Rejecting(), ENDPOINT, EDITOR, switcher=host, listed=["gpt-4o"])
    assert len(run(pipeline, [(400, NOT_SUPPORTED)])) == 1
    assert host.refused == [EDITOR]


def test_the_stale_session_rule_comes_first_and_no_request_goes_three_times() -> None:
    host = Switcher()
    pipeline = Pipeline(Rejecting(), ENDPOINT, EDITOR, switcher=host, listed=["gpt-4o"])
    sent = run(pipeline, [(401, b""), (400, NOT_SUPPORTED)])
    assert len(sent) == 2
    assert host.refused == []


def test_a_switched_identity_is_vetted_like_the_first() -> None:
    host = Switcher(other={"Authorization": "Bearer smuggled"})
    pipeline = Pipeline(Rejecting(), ENDPOINT, EDITOR, switcher=host, listed=["gpt-4o"])
    with pytest.raises(ValueError, match="Authorization"):
        run(pipeline, [(400, NOT_SUPPORTED)])


@pytest.mark.parametrize(
    ("given", "sent"),
    [
        (b"user", b"user"),
        (b"agent", b"agent"),
        (b"User", b"agent"),
        (b"agent ", b"agent"),
        (b"bot", b"agent"),
        (b"", b"agent"),
    ],
)
def test_a_client_initiator_is_kept_only_when_exactly_user_or_agent(
    given: bytes, sent: bytes
) -> None:
    headers = run(
        Pipeline(Rejecting(), ENDPOINT, EDITOR),
        [(200, b"")],
        facts=RequestFacts(False, "agent", "gpt-4o"),
        client=[(b"X-Initiator", given)],
    )[0]
    assert header(headers, b"x-initiator") == [sent]


def test_the_switch_seam_is_a_runtime_protocol() -> None:
    assert isinstance(Switcher(), SwitchesIdentity)
    assert not isinstance(CountingHost(), SwitchesIdentity)


# -- through route.auth ---------------------------------------------------------------------


@dataclass
class SwitchingHost(CountingHost):
    """A counting host whose editor identity the service does not serve some models to."""

    current: dict[str, str] = field(default_factory=lambda: dict(EDITOR))
    switches: int = 0

    def request_headers(self) -> Mapping[str, str]:
        return self.current

    def switch_identity(self, refused: Mapping[str, str]) -> Mapping[str, str] | None:
        self.switches += 1
        if refused != FALLBACK:
            self.current = dict(FALLBACK)
            return self.current
        return None


def service(request: httpx2.Request) -> httpx2.Response:
    """Serves gpt-4o only to the fallback identity, as the service answers (text/plain)."""
    if request.headers.get("copilot-integration-id") != "copilot-fallback":
        return httpx2.Response(400, text=NOT_SUPPORTED.decode() + "\n")
    return httpx2.Response(200, json={"ok": True})


def test_route_auth_switches_identity_once_and_keeps_it() -> None:
    host = SwitchingHost()
    seen: list[str | None] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.headers.get("copilot-integration-id"))
        return service(request)

    result = ch.register_models(ch.Catalog(), host, clock=host.clock)
    route = result.routes[0]
    with httpx2.Client(auth=route.auth, transport=httpx2.MockTransport(handler)) as client:
        first = client.post(CHAT, json={"model": "gpt-4o", "messages": []})
        second = client.post(CHAT, json={"model": "gpt-4o", "messages": []})
    assert (first.status_code, second.status_code) == (200, 200)
    assert seen == ["vscode-chat", "copilot-fallback", "copilot-fallback"]
    assert host.switches == 1


def test_async_route_auth_switches_identity_too() -> None:
    inner = SwitchingHost()

    class Host(AsyncCountingHost):
        def switch_identity(self, refused: Mapping[str, str]) -> Mapping[str, str] | None:
            return inner.switch_identity(refused)

    host = Host(inner)

    async def go() -> list[int]:
        result = await ch.aregister_models(ch.Catalog(), host, clock=inner.clock)
        auth = result.routes[0].auth
        async with httpx2.AsyncClient(auth=auth, transport=httpx2.MockTransport(service)) as c:
            answers = [await c.post(CHAT, json={"model": "gpt-4o"}) for _ in range(2)]
        return [answer.status_code for answer in answers]

    assert asyncio.run(go()) == [200, 200]
    assert inner.switches == 1


def test_a_model_not_supported_for_an_unlisted_model_is_returned_as_it_is() -> None:
    host = SwitchingHost()
    route = ch.register_models(ch.Catalog(), host, clock=host.clock).routes[0]
    with httpx2.Client(auth=route.auth, transport=httpx2.MockTransport(service)) as client:
        answer = client.post(CHAT, json={"model": "gpt-unknown"})
    assert answer.status_code == 400
    assert host.switches == 0


def test_route_auth_forwards_only_the_two_known_initiators() -> None:
    host = CountingHost()
    auth = ch.CopilotAuth(SessionResolver(host, clock=host.clock), ENDPOINT, EDITOR)
    sent: list[str | None] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(request.headers.get("x-initiator"))
        return httpx2.Response(200, json={})

    body = {"model": "gpt-4o", "messages": [{"role": "tool", "content": "done"}]}
    with httpx2.Client(auth=auth, transport=httpx2.MockTransport(handler)) as client:
        for given in ("user", "premium", "USER"):
            client.post(CHAT, json=body, headers={"X-Initiator": given})
    assert sent == ["user", "agent", "agent"]


# -- one reading of a body --------------------------------------------------------------------


IMAGE_TURN = {
    "model": "gpt-4o",
    "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}],
}


@pytest.mark.parametrize(
    "body",
    [
        b"\xef\xbb\xbf" + json.dumps(IMAGE_TURN).encode(),  # a UTF-8 byte-order mark
        json.dumps(IMAGE_TURN).encode("utf-16"),
        json.dumps(IMAGE_TURN).encode("utf-32-le"),
    ],
)
def test_a_body_that_is_not_utf8_json_without_a_bom_is_not_read_as_json(body: bytes) -> None:
    with pytest.raises(ValueError):
        read_json_body(body)
    facts = facts_of_body(ch.ApiProtocol.OPENAI_CHAT, body)
    assert facts == RequestFacts(False, "user")


def test_route_auth_reads_a_bom_body_as_the_gateway_does() -> None:
    host = CountingHost()
    auth = ch.CopilotAuth(SessionResolver(host, clock=host.clock), ENDPOINT, EDITOR)
    sent: list[str | None] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(request.headers.get("copilot-vision-request"))
        return httpx2.Response(200, json={})

    with httpx2.Client(auth=auth, transport=httpx2.MockTransport(handler)) as client:
        client.post(CHAT, content=b"\xef\xbb\xbf" + json.dumps(IMAGE_TURN).encode())
        client.post(CHAT, content=json.dumps(IMAGE_TURN).encode())
    assert sent == [None, "true"]


def test_facts_name_the_model() -> None:
    assert facts_of_body(ch.ApiProtocol.OPENAI_CHAT, json.dumps(IMAGE_TURN).encode()) == (
        RequestFacts(True, "user", "gpt-4o")
    )
