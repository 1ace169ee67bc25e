"""RFC 8628: bounded display data, every polling answer, the wait loop's pacing,
deadline and cancellation."""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import pytest

import copilot_host as ch
from copilot_host import _device
from copilot_host._hosts import Authorized, CopilotDeviceLogin, LoginIdentity, Pending
from copilot_host.github import GitHubCopilotHost
from copilot_host.github._device_code import parse_device_code
from copilot_host.github._poll import Granted, parse_poll
from copilot_host.store import CredentialStore
from copilot_host.testing import DeviceFlow, GitHubEmulator, Scenario
from tests._clock import FakeClock
from tests.github._support import DEVICE_PAGE, device_login, response

# -- step 1: the device code ------------------------------------------------------------


def _device_body(**overrides: object) -> str:
    body: dict[str, object] = {
        "device_code": secrets.token_hex(20),
        "user_code": "WDJB-MJHT",
        "verification_uri": DEVICE_PAGE,
        "expires_in": 900,
        "interval": 5,
    }
    body.update(overrides)
    return json.dumps({k: v for k, v in body.items() if v is not None})


def test_device_code_is_bounded_and_secret() -> None:
    code = secrets.token_hex(20)
    login = parse_device_code(response(body=_device_body(device_code=code), at=50.0))
    assert login.user_code == "WDJB-MJHT"
    assert login.verification_uri == DEVICE_PAGE
    assert login.interval == 5.0
    assert login.deadline == 50.0 + 900.0
    assert isinstance(login.device_code, ch.Secret)
    assert login.device_code.reveal() == code
    assert code not in repr(login)


@pytest.mark.parametrize(
    ("given", "expected"), [(None, 5.0), (0, 1.0), (0.2, 1.0), (7, 7.0), (10_000, 900.0)]
)
def test_interval_default_floor_and_cap(given: object, expected: float) -> None:
    login = parse_device_code(response(body=_device_body(interval=given)))
    assert login.interval == expected


def test_expires_in_is_capped_at_900() -> None:
    login = parse_device_code(response(body=_device_body(expires_in=86_400), at=0.0))
    assert login.expires_in == 900.0
    assert login.deadline == 900.0


@pytest.mark.parametrize(
    "uri",
    [
        "https://github.com/login/device/",
        "http://github.com/login/device",
        "https://github.com.evil.example/login/device",
        "https://evil.example/login/device",
        "https://github.com/login/device?next=https://evil.example",
        "https://GITHUB.com/login/device",
    ],
)
def test_any_other_verification_page_is_refused(uri: str) -> None:
    with pytest.raises(ch.ResponseError) as caught:
        parse_device_code(response(body=_device_body(verification_uri=uri)))
    assert "evil" not in caught.value.message


@pytest.mark.parametrize(
    "code", ["", "abcd-efgh", "AB", "WDJB MJHT", "WDJB-MJHT\x1b[2J", "A" * 17, "-ABCD-", "ＷＤＪＢ"]
)
def test_user_code_must_be_short_upper_alnum(code: str) -> None:
    with pytest.raises(ch.ResponseError):
        parse_device_code(response(body=_device_body(user_code=code)))


@pytest.mark.parametrize("expires", [0, -5, "900", True, None])
def test_expires_in_must_be_a_positive_number(expires: object) -> None:
    with pytest.raises(ch.ResponseError):
        parse_device_code(response(body=_device_body(expires_in=expires)))


def test_device_code_oauth_error_is_reported_cleanly() -> None:
    body = json.dumps({"error": "unauthorized_client", "error_description": "bad\x1b[31m app"})
    with pytest.raises(ch.ResponseError) as caught:
        parse_device_code(response(body=body))
    assert caught.value.code == "oauth_error"
    assert "\x1b" not in caught.value.message


# -- step 2: each polling answer ----------------------------------------------------------


def _poll(body: Mapping[str, object], *, interval: float = 5.0, status: int = 200) -> object:
    return parse_poll(response(status, json.dumps(body)), device_login(interval=interval))


def test_pending_keeps_the_interval() -> None:
    assert _poll({"error": "authorization_pending"}) == Pending(5.0)


def test_pending_adopts_a_longer_server_interval_but_never_a_shorter_one() -> None:
    assert _poll({"error": "authorization_pending", "interval": 9}) == Pending(9.0)
    assert _poll({"error": "authorization_pending", "interval": 1}) == Pending(5.0)


def test_slow_down_adds_five_seconds_or_takes_the_server_value() -> None:
    assert _poll({"error": "slow_down"}) == Pending(10.0)
    assert _poll({"error": "slow_down", "interval": 8}) == Pending(10.0)
    assert _poll({"error": "slow_down", "interval": 20}) == Pending(20.0)
    assert _poll({"error": "slow_down"}, interval=10.0) == Pending(15.0)


def test_rfc_8628_400_answers_are_read_too() -> None:
    assert _poll({"error": "authorization_pending"}, status=400) == Pending(5.0)
    with pytest.raises(ch.AccessDeniedError):
        _poll({"error": "access_denied"}, status=400)


def test_expired_token_ends_the_login() -> None:
    with pytest.raises(ch.DeviceCodeExpiredError) as caught:
        _poll({"error": "expired_token"})
    assert caught.value.code == "expired_token"


def test_access_denied_ends_the_login() -> None:
    with pytest.raises(ch.AccessDeniedError) as caught:
        _poll({"error": "access_denied", "error_description": "The user has denied"})
    assert caught.value.code == "access_denied"


def test_unknown_error_ends_the_login_with_the_sanitized_description() -> None:
    body = {
        "error": "device_flow_disabled",
        "error_description": "Device\x1b]0;pwn\x07 flow off\u202e",
    }
    with pytest.raises(ch.ResponseError) as caught:
        _poll(body)
    assert caught.value.code == "oauth_error"
    assert "device_flow_disabled" in caught.value.message
    assert "Device" in caught.value.message
    assert not any(ch_ in caught.value.message for ch_ in "\x1b\x07\u202e")


def test_granted_token_becomes_a_secret_at_once() -> None:
    token = "gho_" + secrets.token_hex(18)
    outcome = _poll({"access_token": token, "token_type": "bearer"})
    assert isinstance(outcome, Granted)
    assert outcome.token.reveal() == token
    assert token not in repr(outcome)


@pytest.mark.parametrize(
    "body",
    [{}, {"access_token": ""}, {"access_token": 12}, {"access_token": "has space"}, {"error": 5}],
)
def test_answers_that_are_neither_are_errors(body: dict[str, object]) -> None:
    with pytest.raises(ch.ResponseError):
        _poll(body)


@pytest.mark.parametrize(
    ("status", "error"),
    [(500, ch.ServerError), (503, ch.ServerError), (429, ch.ServerError), (404, ch.ResponseError)],
)
def test_http_failures_while_polling(status: int, error: type[Exception]) -> None:
    with pytest.raises(error):
        _poll({"message": "nope"}, status=status)


# -- the wait loop (generic over any host) ------------------------------------------------

IDENTITY = LoginIdentity("id-1", "octocat")


@dataclass
class ScriptedHost:
    """Answers polls from a script; records the interval each poll was made with."""

    clock: FakeClock
    answers: list[object]
    polls: list[tuple[float, float]] = field(default_factory=list)

    def poll_device_login(self, login: CopilotDeviceLogin) -> Pending | Authorized:
        self.polls.append((self.clock.now, login.interval))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        assert isinstance(answer, Pending | Authorized)
        return answer


def test_first_poll_waits_a_little_over_the_interval(clock: FakeClock) -> None:
    host = ScriptedHost(clock, [Authorized(IDENTITY)])
    login = device_login(interval=5.0, deadline=clock.now + 900)
    assert _device.wait_for_device_login(host, login, sleep=clock.sleep, clock=clock) == IDENTITY
    assert clock.sleeps == [pytest.approx(6.0)]


def test_the_longest_interval_asked_for_is_kept(clock: FakeClock) -> None:
    host = ScriptedHost(
        clock, [Pending(10.0), Pending(5.0), Pending(15.0), Pending(5.0), Authorized(IDENTITY)]
    )
    login = device_login(interval=5.0, deadline=clock.now + 900)
    _device.wait_for_device_login(host, login, sleep=clock.sleep, clock=clock)
    assert clock.sleeps == pytest.approx([6.0, 12.0, 12.0, 18.0, 18.0])
    # The host sees the interval in force, so slow_down can keep adding to it.
    assert [interval for _, interval in host.polls] == [5.0, 10.0, 10.0, 15.0, 15.0]


def test_the_deadline_ends_the_wait_on_the_monotonic_clock(clock: FakeClock) -> None:
    host = ScriptedHost(clock, [Pending(5.0)] * 100)
    login = device_login(interval=5.0, deadline=clock.now + 20)
    with pytest.raises(ch.DeviceCodeExpiredError):
        _device.wait_for_device_login(host, login, sleep=clock.sleep, clock=clock)
    assert len(host.polls) == 3  # at 6, 12 and 18 s; the 4th wait is cut at 20 s
    assert clock.now == pytest.approx(login.deadline)


def test_a_wall_clock_jump_does_not_end_the_wait(clock: FakeClock) -> None:
    host = ScriptedHost(clock, [Pending(5.0), Authorized(IDENTITY)])

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        clock.wall += 86_400  # NTP or a person moving the clock a day ahead

    login = device_login(interval=5.0, deadline=clock.now + 60)
    assert _device.wait_for_device_login(host, login, sleep=sleep, clock=clock) == IDENTITY


def test_a_deadline_already_passed_polls_nothing(clock: FakeClock) -> None:
    host = ScriptedHost(clock, [Authorized(IDENTITY)])
    with pytest.raises(ch.DeviceCodeExpiredError):
        _device.wait_for_device_login(
            host, device_login(deadline=clock.now), sleep=clock.sleep, clock=clock
        )
    assert host.polls == []


def test_errors_from_the_host_end_the_wait(clock: FakeClock) -> None:
    host = ScriptedHost(clock, [Pending(5.0), ch.AccessDeniedError("denied")])
    with pytest.raises(ch.AccessDeniedError):
        _device.wait_for_device_login(
            host, device_login(deadline=clock.now + 900), sleep=clock.sleep, clock=clock
        )


def test_cancel_wakes_a_real_wait_promptly() -> None:
    clock = ch.SYSTEM_CLOCK
    host = ScriptedHost(FakeClock(), [Pending(5.0)] * 10)
    cancel = threading.Event()
    login = device_login(interval=30.0, deadline=clock.monotonic() + 600)
    timer = threading.Timer(0.1, cancel.set)
    started = time.monotonic()
    timer.start()
    with pytest.raises(ch.LoginCancelledError):
        _device.wait_for_device_login(host, login, cancel=cancel)
    # Woken by the event, not after the 36 s pause (bounded well below it, load-independent).
    assert time.monotonic() - started < 10
    assert host.polls == []


def test_cancel_with_an_injected_sleep_is_checked_around_it(clock: FakeClock) -> None:
    host = ScriptedHost(clock, [Pending(5.0)] * 10)
    cancel = threading.Event()

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if len(clock.sleeps) == 2:
            cancel.set()

    with pytest.raises(ch.LoginCancelledError):
        _device.wait_for_device_login(
            host, device_login(deadline=clock.now + 900), cancel=cancel, sleep=sleep, clock=clock
        )
    assert len(host.polls) == 1


@dataclass
class AsyncScriptedHost:
    inner: ScriptedHost

    async def poll_device_login(self, login: CopilotDeviceLogin) -> Pending | Authorized:
        return self.inner.poll_device_login(login)


def test_async_wait_paces_like_the_sync_one(clock: FakeClock) -> None:
    host = AsyncScriptedHost(ScriptedHost(clock, [Pending(10.0), Authorized(IDENTITY)]))
    login = device_login(interval=5.0, deadline=clock.now + 900)
    result = asyncio.run(_device.await_device_login(host, login, sleep=clock.asleep, clock=clock))
    assert result == IDENTITY
    assert clock.sleeps == pytest.approx([6.0, 12.0])


def test_async_wait_ends_at_the_deadline(clock: FakeClock) -> None:
    host = AsyncScriptedHost(ScriptedHost(clock, [Pending(5.0)] * 100))
    login = device_login(interval=5.0, deadline=clock.now + 10)
    with pytest.raises(ch.DeviceCodeExpiredError):
        asyncio.run(_device.await_device_login(host, login, sleep=clock.asleep, clock=clock))


def test_async_wait_is_cancelled_by_task_cancellation() -> None:
    host = AsyncScriptedHost(ScriptedHost(FakeClock(), [Pending(5.0)] * 10))
    login = device_login(interval=30.0, deadline=time.monotonic() + 600)

    async def main() -> None:
        task = asyncio.create_task(_device.await_device_login(host, login))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(main(), timeout=10))
    assert host.inner.polls == []


# -- the whole device flow against the emulator -------------------------------------------


def _login(emu: GitHubEmulator, store: CredentialStore, clock: FakeClock) -> LoginIdentity:
    with GitHubCopilotHost(store=store, transport=emu.transport(), clock=clock) as host:
        return host.login(sleep=clock.sleep)


def test_slow_down_then_pending_then_approved(store: CredentialStore, clock: FakeClock) -> None:
    scenario = Scenario(login=DeviceFlow(slow_down_polls=2, pending_polls=2, interval=5))
    with GitHubEmulator(scenario) as emu:
        identity = _login(emu, store, clock)
        polls = emu.requests_to("access_token")
    assert identity.account == "octocat"
    assert len(polls) == 5
    # slow_down raised the interval to 10 then 15 (the emulator's values); kept after that.
    assert clock.sleeps == pytest.approx([6.0, 12.0, 18.0, 18.0, 18.0])
    assert store.availability() == identity


@pytest.mark.parametrize(
    ("result", "error"),
    [
        ("access_denied", ch.AccessDeniedError),
        ("expired_token", ch.DeviceCodeExpiredError),
        ("incorrect_client_credentials", ch.ResponseError),
    ],
)
def test_ending_answers_store_nothing(
    result: str, error: type[Exception], store: CredentialStore, clock: FakeClock
) -> None:
    with GitHubEmulator(Scenario(login=DeviceFlow(pending_polls=1, login_result=result))) as emu:
        with pytest.raises(error):
            _login(emu, store, clock)
        assert emu.requests_to("copilot_token") == ()
    assert store.availability() is None


def test_the_person_approves_while_we_wait(store: CredentialStore) -> None:
    with GitHubEmulator(Scenario(login=DeviceFlow(auto_approve=False, interval=1))) as emu:

        def sleep(seconds: float) -> None:
            if len(emu.requests_to("access_token")) >= 2:
                emu.authorize()

        with GitHubCopilotHost(store=store, transport=emu.transport()) as host:
            identity = host.login(sleep=sleep)
        assert len(emu.requests_to("access_token")) == 3
    assert store.availability() == identity


def test_cancelled_login_stores_nothing(store: CredentialStore) -> None:
    with GitHubEmulator(Scenario(login=DeviceFlow(auto_approve=False, interval=1))) as emu:
        cancel = threading.Event()
        shown: list[CopilotDeviceLogin] = []

        def on_code(login: CopilotDeviceLogin) -> None:
            shown.append(login)
            threading.Timer(0.3, cancel.set).start()

        with (
            GitHubCopilotHost(store=store, transport=emu.transport()) as host,
            pytest.raises(ch.LoginCancelledError),
        ):
            host.login(on_code=on_code, cancel=cancel)
        emu.authorize()
    assert shown and shown[0].user_code == "WDJB-MJHT"
    assert store.availability() is None


def test_cancel_set_during_the_approving_poll_stores_nothing(
    store: CredentialStore, clock: FakeClock
) -> None:
    with GitHubEmulator(Scenario()) as emu:
        cancel = threading.Event()
        with GitHubCopilotHost(store=store, transport=emu.transport(), clock=clock) as host:
            original = host._sender.send

            def send(request):  # type: ignore[no-untyped-def]
                answer = original(request)
                if request.url.endswith("/user"):
                    cancel.set()  # the person hits Ctrl-C just before the persist step
                return answer

            host._sender.send = send  # type: ignore[method-assign]
            with pytest.raises(ch.LoginCancelledError):
                host.login(cancel=cancel, sleep=clock.sleep)
    assert store.availability() is None


def test_async_login_cancelled_stores_nothing(store: CredentialStore) -> None:
    from copilot_host.github import AsyncGitHubCopilotHost

    async def main() -> None:
        with GitHubEmulator(Scenario(login=DeviceFlow(auto_approve=False, interval=1))) as emu:
            async with AsyncGitHubCopilotHost(store=store, transport=emu.async_transport()) as host:

                async def quick(seconds: float) -> None:
                    await asyncio.sleep(0.01)

                task = asyncio.create_task(host.login(sleep=quick))
                while not emu.requests_to("access_token"):
                    await asyncio.sleep(0.05)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
            emu.authorize()

    asyncio.run(asyncio.wait_for(main(), timeout=20))
    assert store.availability() is None
