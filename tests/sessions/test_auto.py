"""The core's Copilot Auto: which model a request goes to, one exchange for everyone per
(API, tier), sessions renewed before they expire, and failures told plainly. Driven by
in-test hosts on a fake clock (no network): tests/github/test_github_auto.py runs the same
against the emulator."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field

import pytest

from copilot_host import (
    ApiProtocol,
    CopilotEndpoint,
    CopilotSession,
    EntitlementError,
    LoginIdentity,
    ModelBilling,
    ModelSpec,
    Secret,
    TokenPrices,
)
from copilot_host._sessions._auto import (
    PROMPT_LIMIT,
    RENEW_BEFORE,
    AutoChooser,
    AutoProbe,
    AutoSession,
    ServesAuto,
    prompt_of,
)
from tests._clock import FakeClock

CHAT = ApiProtocol.OPENAI_CHAT
RESPONSES = ApiProtocol.OPENAI_RESPONSES
MESSAGES = ApiProtocol.ANTHROPIC_MESSAGES
ME = LoginIdentity("login-1", "octocat")
ENDPOINT = CopilotEndpoint.parse("https://api.githubcopilot.com")

PRICES = TokenPrices(batch_size=1_000_000, input=100.0, output=400.0, cache=10.0)
INVENTORY = (
    ModelSpec("gpt-chat", "Chat only", CHAT, billing=ModelBilling(multiplier=1.0, prices=PRICES)),
    ModelSpec("claude", "Claude", MESSAGES, protocols=frozenset({CHAT, MESSAGES})),
    ModelSpec("gpt-eyes", "Sees", RESPONSES, input_modalities=("text", "image")),
)


def copilot_session(identity: LoginIdentity = ME) -> CopilotSession:
    return CopilotSession(
        token=Secret("tid=1;exp=2"),
        identity=identity,
        endpoint=ENDPOINT,
        received_monotonic=0.0,
        refresh_monotonic=1e9,
        expires_monotonic=1e9,
        expires_wall=1e9,
    )


@dataclass
class AutoHost:
    """Answers each Auto call with a new session of ``models``, lasting ``lifetime`` on
    ``clock``; ``gate`` holds every call until it is set (to make callers overlap)."""

    clock: FakeClock
    models: tuple[str, ...] = ("gpt-chat", "claude", "gpt-eyes")
    lifetime: float = 3600.0
    chosen: bool = False
    fail: Exception | None = None
    gate: threading.Event | None = None
    calls: list[dict[str, object]] = field(default_factory=list)

    def auto_probe(self, session: CopilotSession) -> AutoProbe:
        return AutoProbe(None, offered=True)

    def auto_session(
        self, session: CopilotSession, *, prompt: str, vision: bool = False, tier: str | None = None
    ) -> AutoSession:
        self.calls.append({"prompt": prompt, "vision": vision, "tier": tier})
        if self.gate is not None:
            assert self.gate.wait(10)
        if self.fail is not None:
            raise self.fail
        now = self.clock.monotonic()
        return AutoSession(
            token=Secret(f"ast_{len(self.calls)}"),
            models=self.models,
            identity=session.identity,
            expires_monotonic=now + self.lifetime,
            expires_wall=now + self.lifetime,
            discounts=(("gpt-chat", 0.25),),
            chosen=self.chosen,
        )


@dataclass
class AsyncAutoHost(AutoHost):
    release: asyncio.Event | None = None

    async def auto_session(  # type: ignore[override]
        self, session: CopilotSession, *, prompt: str, vision: bool = False, tier: str | None = None
    ) -> AutoSession:
        if self.release is not None:
            await self.release.wait()
        return AutoHost.auto_session(self, session, prompt=prompt, vision=vision, tier=tier)


def chooser(host: AutoHost, clock: FakeClock, seed: AutoSession | None = None) -> AutoChooser:
    assert isinstance(host, ServesAuto)
    return AutoChooser(host, INVENTORY, clock=clock, max_wait=10.0, seed=seed)


def chat_body(text: str) -> dict[str, object]:
    return {"model": "auto", "messages": [{"role": "user", "content": text}]}


def test_each_api_gets_the_first_model_of_the_session_that_speaks_it() -> None:
    clock = FakeClock()
    host = AutoHost(clock)
    auto = chooser(host, clock)
    session = copilot_session()
    assert auto.choose(session, CHAT, chat_body("hi")).model_id == "gpt-chat"
    # Never a model without /v1/messages for a Messages request: the pool's first is skipped.
    assert auto.choose(session, MESSAGES, chat_body("hi")).model_id == "claude"
    assert auto.choose(session, RESPONSES, {"input": "hi"}).model_id == "gpt-eyes"
    # One pool call served all three APIs (the client picks from it).
    assert len(host.calls) == 1


def test_images_go_to_a_model_of_the_pool_that_takes_them() -> None:
    clock = FakeClock()
    host = AutoHost(clock, models=("gpt-chat", "gpt-eyes"))
    auto = chooser(host, clock)
    picked = auto.choose(copilot_session(), RESPONSES, {"input": "x"}, vision=True)
    assert picked.model_id == "gpt-eyes"
    # Without a model that takes images, the first that speaks the API (the service says no).
    plain = AutoHost(clock, models=("gpt-chat",))
    assert chooser(plain, clock).choose(copilot_session(), CHAT, {}, vision=True).model_id == (
        "gpt-chat"
    )


def test_the_pick_is_priced_less_the_sessions_discount() -> None:
    clock = FakeClock()
    picked = chooser(AutoHost(clock), clock).choose(copilot_session(), CHAT, chat_body("hi"))
    billing = picked.model.billing
    assert billing is not None and billing.prices is not None
    assert (billing.prices.input, billing.prices.output, billing.prices.cache) == (75.0, 300.0, 7.5)
    assert billing.multiplier == 0.75
    assert INVENTORY[0].billing == ModelBilling(multiplier=1.0, prices=PRICES)  # unchanged


def test_concurrent_requests_share_one_exchange() -> None:
    clock = FakeClock()
    gate = threading.Event()
    host = AutoHost(clock, gate=gate)
    auto = chooser(host, clock)
    picks: list[str] = []
    errors: list[BaseException] = []

    def ask() -> None:
        try:
            picks.append(auto.choose(copilot_session(), MESSAGES, chat_body("hi")).model_id)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    while not host.calls:
        threading.Event().wait(0.01)
    gate.set()
    for thread in threads:
        thread.join(10)
    assert not errors and picks == ["claude"] * 8
    assert len(host.calls) == 1


def test_concurrent_async_requests_share_one_exchange() -> None:
    async def main() -> tuple[list[str], int]:
        clock = FakeClock()
        host = AsyncAutoHost(clock, release=asyncio.Event())
        auto = chooser(host, clock)
        tasks = [
            asyncio.create_task(auto.achoose(copilot_session(), CHAT, chat_body("hi")))
            for _ in range(8)
        ]
        await asyncio.sleep(0.05)
        assert host.release is not None
        host.release.set()
        picks = [pick.model_id for pick in await asyncio.gather(*tasks)]
        return picks, len(host.calls)

    picks, calls = asyncio.run(main())
    assert (picks, calls) == (["gpt-chat"] * 8, 1)


def test_a_session_is_replaced_before_it_expires() -> None:
    clock = FakeClock()
    host = AutoHost(clock, lifetime=600.0)
    auto = chooser(host, clock)
    first = auto.choose(copilot_session(), CHAT, chat_body("one"))
    clock.advance(600.0 - RENEW_BEFORE - 1)
    assert auto.choose(copilot_session(), CHAT, chat_body("two")).session is first.session
    clock.advance(1)  # five minutes before it expires: a new one, before any request uses it
    renewed = auto.choose(copilot_session(), CHAT, chat_body("three"))
    assert renewed.session is not first.session
    assert renewed.session.token.reveal() == "ast_2" and len(host.calls) == 2


def test_registrations_session_serves_until_it_is_due() -> None:
    clock = FakeClock()
    host = AutoHost(clock)
    seed = host.auto_session(copilot_session(), prompt="")
    auto = chooser(host, clock, seed=seed)
    for protocol in (CHAT, RESPONSES, MESSAGES):
        assert auto.choose(copilot_session(), protocol, {}).session is seed
    assert len(host.calls) == 1  # the seed's own


def test_a_session_the_service_chose_serves_only_the_api_it_was_asked_for() -> None:
    clock = FakeClock()
    host = AutoHost(clock, models=("claude",), chosen=True)
    auto = chooser(host, clock)
    first = auto.choose(copilot_session(), CHAT, chat_body("hi"))
    second = auto.choose(copilot_session(), MESSAGES, chat_body("hi"))
    assert first.session is not second.session and len(host.calls) == 2
    assert auto.choose(copilot_session(), MESSAGES, chat_body("again")).session is second.session


def test_the_prompt_is_the_last_user_text_cut_to_its_limit() -> None:
    clock = FakeClock()
    host = AutoHost(clock)
    long = "x" * (PROMPT_LIMIT + 50)
    body = {
        "messages": [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "answer"},
            {"role": "user", "content": [{"type": "text", "text": long}]},
        ]
    }
    chooser(host, clock).choose(copilot_session(), MESSAGES, body, vision=True)
    assert host.calls == [{"prompt": "x" * PROMPT_LIMIT, "vision": True, "tier": None}]
    assert prompt_of(RESPONSES, {"input": "plain"}) == "plain"
    assert prompt_of(CHAT, {"messages": "not a list"}) == ""
    assert prompt_of(CHAT, ["not", "an", "object"]) == ""


def test_a_session_with_no_model_on_the_api_is_a_plain_refusal_never_kept() -> None:
    clock = FakeClock()
    host = AutoHost(clock, models=("gpt-chat",))
    auto = chooser(host, clock)
    with pytest.raises(EntitlementError) as refused:
        auto.choose(copilot_session(), MESSAGES, chat_body("hi"))
    assert refused.value.code == "auto_unavailable"
    assert "/v1/messages" in refused.value.message and "gpt-chat" in refused.value.message
    # Told again for a second without another call, then asked again.
    with pytest.raises(EntitlementError):
        auto.choose(copilot_session(), MESSAGES, chat_body("hi"))
    assert len(host.calls) == 1
    clock.advance(1.0)
    with pytest.raises(EntitlementError):
        auto.choose(copilot_session(), MESSAGES, chat_body("hi"))
    assert len(host.calls) == 2
    # The other APIs were never given that session either.
    assert auto.choose(copilot_session(), CHAT, chat_body("hi")).model_id == "gpt-chat"


def test_a_refusal_reaches_every_waiter_as_it_is() -> None:
    clock = FakeClock()
    host = AutoHost(clock, fail=EntitlementError("no Auto (HTTP 404)", code="auto_unavailable"))
    with pytest.raises(EntitlementError, match=r"HTTP 404") as refused:
        chooser(host, clock).choose(copilot_session(), CHAT, chat_body("hi"))
    assert refused.value.code == "auto_unavailable"


def test_another_login_never_gets_a_session_of_the_first() -> None:
    clock = FakeClock()
    host = AutoHost(clock)
    auto = chooser(host, clock)
    mine = auto.choose(copilot_session(), CHAT, chat_body("hi"))
    theirs = auto.choose(copilot_session(LoginIdentity("login-2", "mona")), CHAT, chat_body("hi"))
    assert theirs.session is not mine.session
    assert theirs.session.identity.login_id == "login-2" and len(host.calls) == 2
