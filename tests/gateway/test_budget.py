"""``max_credits`` under the loads that overran it in 0.3.0 (hardening 3, M4): streams whose
client hangs up once it has the text, and many requests in flight at once. The emulator
bills a flat 10 credits an answer against a 5-credit budget; what it served is what
GitHub would bill, and it must stay within the budget plus one request's reservation."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from pathlib import Path

import pytest

from copilot_host.gateway._app._spend import Reservation, Spend, estimate_cost
from copilot_host.testing import (
    Faults,
    GitHubEmulator,
    Inventory,
    Replies,
    Scenario,
    Usage,
    chat_model,
)
from tests.gateway._support import Gateway, running_gateway

BUDGET = 5.0
COST = 10.0
# A model whose inventory entry lists no prices: its first request is admitted alone, and
# later ones reserve the largest cost it reported.
MODEL = "flat-model"


def _scenario(stream_pause: float = 0.0, faults: Faults | None = None) -> Scenario:
    return Scenario(
        inventory=Inventory(models=(chat_model(MODEL, name="Flat"),)),
        replies=Replies(stream_events=6, stream_pause=stream_pause),
        usage=Usage(request_cost=COST),
        faults=faults or Faults(),
    )


def _billed(emulator: GitHubEmulator) -> float:
    return len(emulator.requests_to("chat")) * COST


def _settled(gateway: Gateway, requests: int) -> None:
    """Wait (bounded) until ``requests`` model requests have their access line and none
    is in flight on the gateway's loop."""

    async def idle() -> None:
        for _ in range(3000):
            lines = [line for line in gateway.access.lines if "/v1/chat/completions" in line]
            if len(lines) >= requests and getattr(gateway.app.spend, "in_flight", 0) == 0:
                return
            await asyncio.sleep(0.01)
        raise AssertionError("requests still in flight after 30 s")

    asyncio.run_coroutine_threadsafe(idle(), gateway.loop).result(timeout=40)


def _stream_cut_after_text(gateway: Gateway) -> int:
    """A streamed chat request whose client hangs up once a text delta arrived (before
    the last event, which reports the cost); the status line's code."""
    body = json.dumps(
        {"model": MODEL, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    ).encode()
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{gateway.port}\r\n"
        f"Authorization: Bearer {gateway.key}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=30) as sock:
        sock.sendall(head + body)
        seen = b""
        while b'"content"' not in seen.partition(b"\r\n\r\n")[2]:
            chunk = sock.recv(65536)
            if not chunk:
                break
            seen += chunk
            if seen.startswith(b"HTTP/1.1 4"):
                break
        return int(seen.split(b" ", 2)[1])


def test_streams_cut_after_their_text_are_counted_and_stop_at_the_budget(
    tmp_path: Path,
) -> None:
    # A pause between events: the client has its text well before the cost event.
    with GitHubEmulator(_scenario(stream_pause=0.2)) as emulator:
        with running_gateway(emulator, tmp_path / "home", max_credits=BUDGET) as gateway:
            statuses = []
            for sent in range(1, 7):
                statuses.append(_stream_cut_after_text(gateway))
                _settled(gateway, sent)
            spend = gateway.app.spend
            counted, totals = spend.credits, spend.totals()
        billed = _billed(emulator)
    print(f"6 streams cut after their text: billed {billed} vs budget {BUDGET}")
    assert statuses == [200, 402, 402, 402, 402, 402]  # spent: final, not retryable
    assert billed <= BUDGET + COST
    # The cut stream's cost was read upstream all the same.
    assert counted == billed
    assert "credits 10 (by model" in totals


def test_concurrent_requests_stay_within_the_budget_plus_one_reservation(tmp_path: Path) -> None:
    # Each answer takes a second upstream: all twelve are in flight together.
    with GitHubEmulator(_scenario(faults=Faults(slow={"chat": 1.0}))) as emulator:
        with running_gateway(emulator, tmp_path / "home", max_credits=BUDGET) as gateway:
            start = threading.Barrier(12)
            statuses: list[int] = []

            def ask() -> None:
                start.wait()
                with gateway.client() as client:
                    answer = client.post(
                        "/v1/chat/completions",
                        json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}]},
                    )
                statuses.append(answer.status_code)

            threads = [threading.Thread(target=ask) for _ in range(12)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(60)
            _settled(gateway, 12)
            counted = gateway.app.spend.credits
        billed = _billed(emulator)
    print(f"12 concurrent requests: billed {billed} vs budget {BUDGET}")
    assert sorted(statuses) == [200] + [429] * 11
    assert billed <= BUDGET + COST
    assert counted == billed


# -- the admission rule, by itself ------------------------------------------------------------


def test_admission_holds_reservations_and_counts_unread_answers() -> None:
    spend = Spend(max_credits=1.0)
    # No cost known and no prices: one request at a time.
    first = spend.admit("m", None)
    assert first == Reservation("m", None)
    assert spend.admit("m", None) is None
    spend.settle(first, 0.3, unread=False)
    # Now every request of m reserves 0.3 (the largest it reported).
    held = [spend.admit("m", None), spend.admit("m", None)]
    assert all(h is not None for h in held)
    assert spend.reserved == pytest.approx(0.6)
    assert spend.admit("m", None) is None  # 0.3 + 0.6 + 0.3 > 1
    # An estimate from prices stands in for a model that never reported.
    assert spend.admit("other", 0.2) is None  # 0.3 + 0.6 + 0.2 > 1
    assert spend.admit("other", 0.1) is not None
    # An answer whose cost could not be read counts its reservation, as estimated.
    h0, h1 = held
    assert h0 is not None and h1 is not None
    spend.settle(h0, None, unread=True)
    spend.settle(h1, 0.25, unread=False)
    assert spend.credits == pytest.approx(0.85)
    assert "credits 0.85 (0.3 estimated)" in spend.totals()
    # Nothing spent past the budget and nothing in flight: one more gets through.
    spend = Spend(max_credits=1.0)
    spend.record("big", 0.9)
    assert spend.admit("big", None) is not None  # 0.9 < 1, nothing in flight


def test_an_estimate_from_prices() -> None:
    from copilot_host import TokenPrices

    prices = TokenPrices(batch_size=1_000_000, input=200.0, output=800.0)
    # 4000 bytes: 1000 input tokens; output the cap.
    cost = estimate_cost(prices, input_bytes=4000, output_cap=500, output_limit=16_000)
    assert cost == pytest.approx((1000 * 200 + 500 * 800) / 1e6)
    # No cap: an eighth of the model's output limit.
    cost = estimate_cost(prices, input_bytes=0, output_cap=None, output_limit=16_000)
    assert cost == pytest.approx(2000 * 800 / 1e6)
    assert estimate_cost(prices, input_bytes=0, output_cap=None, output_limit=None) is None
    assert estimate_cost(None, input_bytes=0, output_cap=1, output_limit=1) is None
    # A cap no float holds (a request's max_tokens with the caps switched off) is priced
    # as none: it was an OverflowError, a 500.
    assert estimate_cost(prices, input_bytes=0, output_cap=10**400, output_limit=None) is None
