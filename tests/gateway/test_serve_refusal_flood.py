"""``copilot-host serve`` under a flood of keyless refusals that linger (hardening round 3,
M1): keyless clients open, as fast as one thread can, connections whose head declares a
body that never comes; each is refused (401, ``Connection: close``) before its body is
read and would linger. Meanwhile the key holder asks every 0.25 s on a new connection and
is answered every time, at the review's two descriptor limits (soft = hard 256: bound
96; 1,024: bound 480)."""

from __future__ import annotations

import collections
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from tests.gateway.test_serve import (
    Served,
    _listening,
    _port,
    open_files_for,
)

# How long the flood runs while the key holder asks, and how often it asks.
FLOOD_SECONDS = 3.0
ASK_EVERY = 0.25
# Refused connections the flooder keeps open at once (it closes the oldest past this):
# far more than either bound, so that lingering ones alone could fill it.
KEPT_OPEN = 1_500
CHAT_BODY = b'{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}]}'


@pytest.fixture
def flood_descriptors() -> Iterator[None]:
    """This process may hold the connections the flood keeps open (and then some)."""
    with open_files_for(KEPT_OPEN + 500):
        yield


def _flood(port: int, stop: threading.Event, opened_count: list[int]) -> None:
    """Keyless POSTs declaring 100,000 body bytes and sending none, as fast as one thread
    can; the oldest is closed once :data:`KEPT_OPEN` are open."""
    head = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
        b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n" % port
    )
    kept: collections.deque[socket.socket] = collections.deque()
    try:
        while not stop.is_set():
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=2.0)
            except OSError:
                continue
            try:
                sock.sendall(head)
            except OSError:
                sock.close()
                continue
            kept.append(sock)
            opened_count[0] += 1
            if len(kept) > KEPT_OPEN:
                kept.popleft().close()
    finally:
        for sock in kept:
            sock.close()


def _keyed(port: int, key: str) -> int:
    """One chat request on a new connection; its status, or 0 when it got none."""
    request = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
        b"Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\nConnection: close\r\n\r\n%s"
        % (port, key.encode(), len(CHAT_BODY), CHAT_BODY)
    )
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10.0) as sock:
            sock.sendall(request)
            answer = b""
            while b"\r\n" not in answer:
                data = sock.recv(65536)
                if not data:
                    return 0
                answer += data
    except OSError:
        return 0
    return int(answer.split(b" ", 2)[1])


@pytest.mark.parametrize("open_files", [256, 1_024], ids=["256-descriptors", "1024-descriptors"])
def test_a_flood_of_lingering_keyless_refusals_never_stops_the_key_holder(
    serve: Callable[..., Served], flood_descriptors: None, open_files: int
) -> None:
    served = serve("--port", "0", "--json", open_files=(open_files, open_files))
    _listening(served)
    port = _port(served)
    stop = threading.Event()
    flooded = [0]
    flooder = threading.Thread(target=_flood, args=(port, stop, flooded), daemon=True)
    flooder.start()
    statuses: list[int] = []
    askers: list[threading.Thread] = []

    def ask() -> None:
        statuses.append(_keyed(port, served.key))

    try:
        time.sleep(0.5)  # the flood is under way before the first keyed request
        began = time.monotonic()
        for turn in range(int(FLOOD_SECONDS / ASK_EVERY)):
            time.sleep(max(0.0, began + turn * ASK_EVERY - time.monotonic()))
            asker = threading.Thread(target=ask, daemon=True)
            asker.start()
            askers.append(asker)
        for asker in askers:
            asker.join(15)
        rate = flooded[0] / (time.monotonic() - began + 0.5)
    finally:
        stop.set()
        flooder.join(15)
    answered = statuses.count(200)
    print(
        f"{open_files} descriptors: key holder answered {answered} of {len(askers)} "
        f"while {flooded[0]} keyless refused connections were opened ({rate:.0f}/s)"
    )
    assert answered == len(askers) == 12, statuses
    # It was a flood: far more refused connections than the bound holds.
    assert flooded[0] > open_files
    code, _stdout, stderr = served.stop(15)
    assert code == 143
    where = stderr.find("Traceback")
    assert where < 0, stderr[max(0, where - 300) : where + 4000]
