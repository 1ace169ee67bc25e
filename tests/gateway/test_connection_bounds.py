"""The connection bounds the gateway's server keeps (``copilot_host.gateway._server._hardening``),
on a real :class:`copilot_host.gateway.GatewayServer` in this process with short deadlines: the head deadline, the bound on
connections held, the bound on a request head, and one warning per out-of-descriptors
episode; on both HTTP parsers serve may use (httptools, h11)."""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from copilot_host.gateway import GatewayServer
from copilot_host.gateway._server import Hardening
from copilot_host.gateway._server._hardening import MAX_HEAD_BYTES
from copilot_host.gateway._server._process import connection_bound, quiet_accept_errors
from copilot_host.gateway._server._stack import PURE_PYTHON, ServerStack
from tests._extras import require

# The parser serve uses when httptools is installed, and the pure-Python one.
STACKS = [ServerStack(http="httptools"), PURE_PYTHON]
STACK_IDS = ["httptools", "h11"]

HEAD = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
BOUND = 10.0


class _App:
    """Answers at once, or holds the answer while ``hold`` is clear for ``/hold``."""

    def __init__(self) -> None:
        self.hold = threading.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if scope["path"] == "/hold":
            while not self.hold.is_set():
                await asyncio.sleep(0.01)
        if scope["path"] == "/refuse":
            # Refused before its body is read, as the gateway refuses a keyless request.
            headers = [(b"connection", b"close"), (b"content-length", b"2")]
            await send({"type": "http.response.start", "status": 401, "headers": headers})
            await send({"type": "http.response.body", "body": b"no"})
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


class _Running:
    def __init__(
        self, bound: int, head_timeout: float, stack: ServerStack, linger: float = 2.0
    ) -> None:
        self.app = _App()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.server = GatewayServer(
            listener=self.listener,
            stack=stack,
            hardening=Hardening(
                head_timeout=head_timeout, max_connections=bound, linger_seconds=linger
            ),
            lifespan=False,
        )
        self.thread = threading.Thread(
            target=asyncio.run, args=(self.server.serve(self.app),), daemon=True
        )

    def __enter__(self) -> _Running:
        self.thread.start()
        deadline = time.monotonic() + BOUND
        while not self.server.started:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        return self

    def __exit__(self, *_exc: object) -> None:
        self.app.hold.set()
        self.server.stop()
        self.thread.join(BOUND)
        self.listener.close()

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=BOUND)


@pytest.fixture(params=STACKS, ids=STACK_IDS)
def running(request: pytest.FixtureRequest) -> Iterator[Any]:
    """``running(bound=, head_timeout=)`` starts a hardened server on each stack."""
    made: list[_Running] = []
    stack: ServerStack = request.param
    if stack.http == "httptools":
        require("httptools")  # [fast]; skipped only on the base install

    def start(bound: int = 100, head_timeout: float = 0.5, linger: float = 2.0) -> _Running:
        server = _Running(bound, head_timeout, stack, linger).__enter__()
        made.append(server)
        return server

    yield start
    for server in made:
        server.__exit__()


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the server closes ``sock`` (EOF or reset) within ``seconds``."""
    sock.settimeout(seconds)
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def _closed_now(sock: socket.socket) -> bool:
    """Whether the server has already closed ``sock`` (nothing sent on it yet)."""
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True
    finally:
        sock.setblocking(True)


def _asks(sock: socket.socket, path: str = "/") -> bytes:
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    sock.settimeout(BOUND)
    return sock.recv(65536)


def test_a_connection_that_sends_nothing_is_closed_after_the_head_deadline(running: Any) -> None:
    server = running(head_timeout=0.5)
    with server.connect() as idle:
        began = time.monotonic()
        assert _closed_within(idle, BOUND)
        assert 0.4 <= time.monotonic() - began < 5.0


def test_a_dripping_request_head_is_closed_after_the_head_deadline(running: Any) -> None:
    server = running(head_timeout=0.5)
    with server.connect() as dripping:
        began = time.monotonic()
        closed = False
        for byte in HEAD[:-2]:  # never completes the head
            try:
                dripping.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            time.sleep(0.05)
            if time.monotonic() - began > 3.0:
                break
        assert closed or _closed_within(dripping, BOUND)
        assert time.monotonic() - began < 3.0


def test_a_head_after_a_kept_alive_answer_has_the_same_deadline(running: Any) -> None:
    server = running(head_timeout=0.5)
    with server.connect() as sock:
        assert _asks(sock).startswith(b"HTTP/1.1 200")
        sock.sendall(b"GET / HT")  # the second head never completes
        began = time.monotonic()
        assert _closed_within(sock, BOUND)
        assert time.monotonic() - began < 3.0


def test_a_complete_head_is_answered_and_not_cut_by_the_deadline(running: Any) -> None:
    server = running(head_timeout=0.3)
    with server.connect() as sock:
        sock.sendall(b"GET /hold HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        time.sleep(0.8)  # longer than the deadline, busy with its request
        server.app.hold.set()
        sock.settimeout(BOUND)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")


def test_pipelined_requests_are_answered_in_order_and_not_cut_by_the_deadline(
    running: Any,
) -> None:
    """Three requests in one write, the first held past the head deadline: those queued
    behind it are requests, not a connection waiting for a head."""
    server = running(head_timeout=0.3)
    with server.connect() as sock:
        sock.sendall(
            b"GET /hold HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            b"GET /a HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            b"GET /b HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        )
        time.sleep(0.8)
        server.app.hold.set()
        sock.settimeout(BOUND)
        answers = b""
        while answers.count(b"HTTP/1.1 200") < 3:
            data = sock.recv(65536)
            assert data, answers
            answers += data
        # Then the connection waits for a head again, and the deadline applies.
        assert _closed_within(sock, BOUND)


def test_an_oversized_request_head_is_refused_with_a_400(running: Any) -> None:
    server = running(head_timeout=30.0)
    with server.connect() as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nX-Long: " + b"a" * (MAX_HEAD_BYTES + 1024))
        sock.settimeout(BOUND)
        assert sock.recv(65536).startswith(b"HTTP/1.1 400")
        assert _closed_within(sock, BOUND)


def test_an_endless_request_head_is_not_read_on(running: Any) -> None:
    """One header that never ends: the server refuses it past :data:`MAX_HEAD_BYTES` and
    closes the connection, rather than buffering what follows."""
    server = running(head_timeout=30.0)
    with server.connect() as sock:
        sent = 0
        try:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: ")
            while sent < 256 * 1024 * 1024:
                sock.sendall(b"a" * 65536)
                sent += 65536
        except OSError:
            pass  # closed: it reads no more
        # What the sockets' buffers hold, no more.
        assert sent < 64 * 1024 * 1024, f"{sent >> 20} MiB taken"


def test_a_head_just_under_the_bound_is_answered(running: Any) -> None:
    server = running()
    with server.connect() as sock:
        filler = b"a" * (MAX_HEAD_BYTES - 200)
        sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: " + filler + b"\r\n\r\n")
        sock.settimeout(BOUND)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")


def test_past_the_bound_the_longest_idle_connection_makes_room(running: Any) -> None:
    server = running(bound=3, head_timeout=30.0)
    idle = [server.connect() for _ in range(3)]
    time.sleep(0.2)
    try:
        with server.connect() as newcomer:
            assert _asks(newcomer).startswith(b"HTTP/1.1 200")
        assert _closed_within(idle[0], BOUND)  # the oldest went
        assert not _closed_within(idle[2], 0.3)
    finally:
        for sock in idle:
            sock.close()


def test_past_the_bound_with_every_connection_busy_the_new_one_is_refused(running: Any) -> None:
    server = running(bound=2, head_timeout=30.0)
    busy = [server.connect() for _ in range(2)]
    try:
        for sock in busy:
            sock.sendall(b"GET /hold HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        time.sleep(0.2)
        with server.connect() as refused:
            assert _closed_within(refused, BOUND)
        server.app.hold.set()
        for sock in busy:  # the requests held were not disturbed
            sock.settimeout(BOUND)
            assert sock.recv(65536).startswith(b"HTTP/1.1 200")
    finally:
        for sock in busy:
            sock.close()


def test_the_bound_leaves_room_for_upstream_connections_and_the_process() -> None:
    assert connection_bound(1_024) < 1_024 // 2 + 1
    assert connection_bound(1_024) >= 400
    assert connection_bound(65_536) > 60_000
    assert connection_bound(10) >= 1
    import resource

    assert connection_bound(resource.RLIM_INFINITY) > 1_000_000


def test_out_of_descriptors_is_one_warning_per_episode(caplog: pytest.LogCaptureFixture) -> None:
    loop = asyncio.new_event_loop()
    now = [100.0]
    loop.time = lambda: now[0]  # type: ignore[method-assign]
    try:
        accepted = quiet_accept_errors(loop)
        failure = {
            "message": "socket.accept() out of system resource",
            "exception": OSError(errno.EMFILE, "Too many open files"),
        }
        with caplog.at_level(logging.WARNING, logger="copilot_host.gateway"):
            for _ in range(500):
                loop.call_exception_handler(failure)
            # The connections accepted in the batch that ran out are set up just after
            # it: the episode goes on.
            accepted()
            now[0] += 1.0
            loop.call_exception_handler(failure)  # the retry a second later fails too
            now[0] += 1.0
            accepted()  # a later retry worked: the episode is over
            for _ in range(500):
                loop.call_exception_handler(failure)
        lines = [r for r in caplog.records if r.name == "copilot_host.gateway"]
        assert len(lines) == 2
        assert all(r.exc_info is None for r in lines)
        assert "Too many open files" in lines[0].getMessage()
    finally:
        loop.close()


def test_running_out_of_descriptors_in_a_real_server_is_one_warning_not_tracebacks() -> None:
    """A server whose accept() fails for want of descriptors (its connection bound set far
    above its open-file limit, which serve never does) says so once per episode, logs no
    traceback, leaves the connections waiting in the listen queue, and answers again once
    descriptors are free."""
    import signal
    import subprocess
    import sys
    from pathlib import Path

    child_script = Path(__file__).resolve().parent / "emfile_child.py"
    child = subprocess.Popen(
        [sys.executable, str(child_script), "64"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None
    opened: list[socket.socket] = []
    try:
        port = int(child.stdout.readline())
        for _ in range(200):  # far more than 64 descriptors: accept() fails over and over
            opened.append(socket.create_connection(("127.0.0.1", port), timeout=BOUND))
        time.sleep(2.5)  # asyncio retries a failed accept a second later, twice here
        assert sum(_closed_now(sock) for sock in opened) == 0  # they wait, none is cut
        for sock in opened:
            sock.close()
        opened.clear()
        time.sleep(0.5)  # the server closes its ends
        with socket.create_connection(("127.0.0.1", port), timeout=BOUND) as again:
            assert _asks(again).startswith(b"HTTP/1.1 200")
        # asyncio's retry of a failed accept outlives the server's close (and logs a
        # traceback when it fires on the closed socket): the stop waits for the last one.
        time.sleep(1.5)
    finally:
        for sock in opened:
            sock.close()
        child.send_signal(signal.SIGTERM)
        try:
            _out, err = child.communicate(timeout=BOUND)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
    text = err.decode()
    assert "Traceback" not in text
    warnings = [line for line in text.splitlines() if "cannot accept connections" in line]
    assert len(warnings) == 1, text[:2000]
    assert "Too many open files" in warnings[0]


def test_the_bounds_follow_the_gateways_own_limits() -> None:
    from copilot_host.gateway import MAX_BODY_BYTES
    from copilot_host.gateway._app import UPSTREAM_LIMITS
    from copilot_host.gateway._server import _hardening as hardening
    from copilot_host.gateway._server import _process

    # The lingering close discards as much as a body the gateway would accept.
    assert hardening.LINGER_BYTES == MAX_BODY_BYTES
    # The bound leaves room for every upstream connection the pool may hold.
    assert UPSTREAM_LIMITS.max_connections == _process.UPSTREAM_CONNECTIONS


def test_the_soft_open_file_limit_is_raised_to_the_hard_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import resource

    from copilot_host.gateway._server import _process as hardening

    limits = {"now": (1_024, 4_096)}
    monkeypatch.setattr(resource, "getrlimit", lambda _which: limits["now"])

    def setrlimit(_which: int, wanted: tuple[int, int]) -> None:
        limits["now"] = wanted

    monkeypatch.setattr(resource, "setrlimit", setrlimit)
    assert hardening.raise_open_file_limit() == 4_096
    assert limits["now"] == (4_096, 4_096)
    # No hard limit at all: a large finite soft one (some systems refuse an unlimited one).
    limits["now"] = (1_024, resource.RLIM_INFINITY)
    assert hardening.raise_open_file_limit() == 1 << 20

    def refused(_which: int, _wanted: tuple[int, int]) -> None:
        raise ValueError("not allowed")

    monkeypatch.setattr(resource, "setrlimit", refused)
    limits["now"] = (256, 1_024)
    assert hardening.raise_open_file_limit() == 256  # kept as it was


REFUSED = b"POST /refuse HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n"


def _refused(server: _Running, *, upload: bool) -> socket.socket:
    """A connection refused before its body was read (the client has the 401); with
    ``upload``, it has sent a byte of its body too."""
    sock = server.connect()
    sock.sendall(REFUSED)
    sock.settimeout(BOUND)
    assert sock.recv(65536).startswith(b"HTTP/1.1 401")
    if upload:
        sock.sendall(b"{")
    return sock


def _asks_whole(sock: socket.socket) -> bytes:
    """An answer read to its end (the app's answers are chunked), so the connection is
    kept alive and waits for the next head."""
    sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    sock.settimeout(BOUND)
    answer = b""
    while not answer.endswith(b"0\r\n\r\n"):
        data = sock.recv(65536)
        assert data, answer
        answer += data
    return answer


def _gone(sock: socket.socket) -> bool:
    """Whether the server has closed its end of a connection it lingers on (it shut its
    write side at once, so the client reads EOF either way): a byte sent to a closed
    end is answered with a reset; one sent to a lingering end is discarded."""
    try:
        sock.sendall(b"x")
        sock.settimeout(0.5)
        sock.recv(1)
        time.sleep(0.05)
        sock.sendall(b"x")
        sock.recv(1)
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False
    return False


def test_a_refusal_whose_body_never_starts_lingers_only_briefly(running: Any) -> None:
    server = running(linger=30.0)
    with _refused(server, upload=False) as sock:
        time.sleep(2.0)  # LINGER_IDLE_SECONDS is 0.25; the linger once a body byte came, 30
        assert _gone(sock)


def test_a_refusal_whose_body_is_arriving_gets_the_full_linger(running: Any) -> None:
    server = running(linger=30.0)
    with _refused(server, upload=True) as sock:
        time.sleep(2.0)
        assert not _gone(sock)


def test_past_the_bound_a_lingering_refused_connection_goes_first(running: Any) -> None:
    """Connections refused before their bodies were read stand in nobody's way: a new
    connection past the bound closes the one that has lingered longest."""
    server = running(bound=3, head_timeout=30.0, linger=30.0)
    refused = [_refused(server, upload=True) for _ in range(3)]
    try:
        with server.connect() as newcomer:
            assert _asks(newcomer).startswith(b"HTTP/1.1 200")
        deadline = time.monotonic() + BOUND
        while not _gone(refused[0]):  # closed on the server's loop, a moment later
            assert time.monotonic() < deadline
        assert not _gone(refused[2])
    finally:
        for sock in refused:
            sock.close()


def test_a_quarter_of_the_bound_is_kept_for_connections_that_were_answered(
    running: Any,
) -> None:
    """A kept-alive connection that got an answer is not pushed out by connections
    nobody has answered yet, although it has waited longest."""
    server = running(bound=4, head_timeout=30.0)
    with server.connect() as answered:
        assert _asks_whole(answered).startswith(b"HTTP/1.1 200")
        idle = [server.connect() for _ in range(3)]
        time.sleep(0.2)
        try:
            with server.connect():
                assert _closed_within(idle[0], BOUND)  # an unanswered one went
                # The answered one stayed.
                assert _asks_whole(answered).startswith(b"HTTP/1.1 200")
        finally:
            for sock in idle:
                sock.close()


def test_when_the_system_refuses_a_large_soft_limit_the_most_it_allows_is_taken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """macOS: soft 256, hard unlimited, and setrlimit refuses past kern.maxfilesperproc."""
    import resource

    from copilot_host.gateway._server import _process as hardening

    limits = {"now": (256, resource.RLIM_INFINITY)}
    allowed = {"most": 24_576}
    monkeypatch.setattr(resource, "getrlimit", lambda _which: limits["now"])

    def setrlimit(_which: int, wanted: tuple[int, int]) -> None:
        if wanted[0] > allowed["most"]:
            raise ValueError("not allowed")
        limits["now"] = wanted

    monkeypatch.setattr(resource, "setrlimit", setrlimit)
    monkeypatch.setattr(hardening, "_per_process_files", lambda: [24_576])
    assert hardening.raise_open_file_limit() == 24_576
    # kern.maxfilesperproc unreadable: OPEN_MAX, 10240.
    limits["now"] = (256, resource.RLIM_INFINITY)
    allowed["most"] = 10_240
    monkeypatch.setattr(hardening, "_per_process_files", list)
    assert hardening.raise_open_file_limit() == 10_240
    assert limits["now"] == (10_240, resource.RLIM_INFINITY)


def test_the_bound_in_force_is_said_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    with caplog.at_level(logging.DEBUG, logger="copilot_host.gateway"):
        GatewayServer(lifespan=False)._config(_App())
    said = [
        r.getMessage() for r in caplog.records if "client connections at once" in r.getMessage()
    ]
    assert said == [
        f"open-file limit {soft}: at most {connection_bound(soft)} client connections at once"
    ]
