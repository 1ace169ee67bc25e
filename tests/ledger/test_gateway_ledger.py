"""``serve`` and ``run`` recording into the ledger, as real processes on a test home: one row
per request whichever process sent it, a gateway killed mid-stream leaving its request
``interrupted``, ``usage --history`` adding up to the access lines, the daily budget
counted across processes, and the ways to keep a gateway's requests out of the ledger."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from copilot_host.gateway._ledger import IN_FLIGHT, read_history
from copilot_host.testing import Faults, GitHubEmulator, Scenario
from tests.gateway.test_serve import BOUND, CHILD, LISTENING, _env, _Lines, _login

from . import load_child
from ._support import rows as ledger_rows

pytestmark = pytest.mark.slow

SCRIPT = Path(sys.executable).parent / "copilot-host"
LOAD = Path(load_child.__file__).resolve()
REPO = Path(__file__).resolve().parents[2]
CREDITS = re.compile(r" credits=([\d.]+)(?: \(estimated\))?$")


class Gateway:
    """One ``serve`` (or ``run``) child process of serve_child.py on the shared emulator."""

    def __init__(self, port: int, home: Path, *args: str, ledger: str | None = None) -> None:
        env = _env(home)
        env["PYTHONPATH"] = str(REPO)
        if ledger is not None:
            env["COPILOT_HOST_LEDGER"] = ledger
        self.child = subprocess.Popen(
            [sys.executable, str(CHILD), str(port), *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert self.child.stdout is not None and self.child.stderr is not None
        self.out = _Lines(self.child.stdout)
        self.err = _Lines(self.child.stderr)
        self.base_url = self.key = ""

    def listening(self) -> Gateway:
        line = self.out.wait_for("listening").rstrip("\n")
        match = LISTENING.fullmatch(line)
        assert match, line
        self.base_url = f"http://127.0.0.1:{match.group(1)}/v1"
        self.key = match.group(2)
        return self

    def stop(self) -> str:
        """SIGTERM, the exit awaited; stderr."""
        if self.child.poll() is None:
            self.child.send_signal(signal.SIGTERM)
        self.child.wait(BOUND)
        return self.finish()

    def finish(self) -> str:
        text = self.err.text()
        self.out.text()
        for pipe in (self.child.stdout, self.child.stderr):
            if pipe is not None:
                pipe.close()
        return text


@pytest.fixture
def gateways() -> Iterator[list[Gateway]]:
    started: list[Gateway] = []
    try:
        yield started
    finally:
        for gateway in started:
            if gateway.child.poll() is None:
                gateway.child.kill()
                gateway.child.wait()
            gateway.finish()


@pytest.fixture
def account(tmp_path: Path) -> Iterator[Callable[..., tuple[GitHubEmulator, Path]]]:
    """``account(scenario=None)``: an emulator of its own and a home folder logged in to it
    (with a key file); the emulator stopped after the test."""
    emulators: list[GitHubEmulator] = []

    def start(scenario: Scenario | None = None) -> tuple[GitHubEmulator, Path]:
        emulator = GitHubEmulator(scenario).start()
        emulators.append(emulator)
        home = tmp_path / "home"
        _login(emulator, home)
        return emulator, home

    try:
        yield start
    finally:
        for emulator in emulators:
            emulator.stop()


def _credits_of(lines: str) -> list[float]:
    """The credits of every model request's access line."""
    found = []
    for line in lines.splitlines():
        if " POST /v1/" in line and (match := CREDITS.search(line)):
            found.append(float(match.group(1)))
    return found


def _access_lines(lines: str) -> list[str]:
    return [line for line in lines.splitlines() if " POST /v1/" in line and " status=" in line]


def _history(home: Path, *args: str) -> Any:
    env = _env(home)
    done = subprocess.run(
        [str(SCRIPT), "usage", "--history", "--json", "--since", "1d", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=BOUND,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_two_serves_and_a_run_record_one_row_per_request_and_a_kill_interrupted(
    tmp_path: Path, account: Any, gateways: list[Gateway]
) -> None:
    # Responses answers drip a byte at a time: the one the test kills mid-stream.
    scenario = Scenario(faults=Faults(drip={"responses": 0.05}))
    emulator, home = account(scenario)
    log = tmp_path / "run.log"
    first = Gateway(emulator.port, home, "--port", "0", "--json").listening()
    second = Gateway(emulator.port, home, "--port", "0", "--json").listening()
    runner = Gateway(
        emulator.port,
        home,
        "run",
        "--log",
        str(log),
        "--",
        sys.executable,
        str(LOAD),
        "200",
    )
    gateways.extend([first, second, runner])
    statuses: dict[str, list[int]] = {}

    def load(name: str, gateway: Gateway, count: int, offset: int) -> None:
        statuses[name] = load_child.send(gateway.base_url, gateway.key, count, offset)

    threads = [
        threading.Thread(target=load, args=("first", first, 400, 0)),
        threading.Thread(target=load, args=("second", second, 399, 1)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(4 * 60)
    assert runner.child.wait(4 * 60) == 0, runner.err.text()
    ran = json.loads(runner.out.text().strip().splitlines()[-1])
    assert Counter(ran) == Counter({200: 200})
    assert Counter(statuses["first"]) == Counter({200: 400})
    assert Counter(statuses["second"]) == Counter({200: 399})

    # Every answer so far has ended in the file (each gateway's writer thread commits ends
    # within its linger), so the kill below can leave only its own request in flight.
    _ended(home / "ledger.sqlite3")
    # The 1,000th request: a stream the second gateway is killed in the middle of.
    with httpx2.Client(timeout=BOUND) as client:
        body = {"model": "gpt-5.4", "input": "hi", "stream": True}
        headers = {"Authorization": f"Bearer {second.key}"}
        with client.stream(
            "POST", f"{second.base_url}/responses", json=body, headers=headers
        ) as answer:
            assert answer.status_code == 200
            raw = answer.iter_raw()
            next(raw)  # its first bytes are here: it is mid-stream
            second.child.send_signal(signal.SIGKILL)
            second.child.wait(BOUND)
            with pytest.raises(httpx2.TransportError):
                for _ in raw:
                    pass
    first_err = first.stop()
    second_err = second.finish()
    run_err = log.read_text()

    ledger = home / "ledger.sqlite3"
    assert (ledger.stat().st_mode & 0o777) == 0o600
    # The killed stream's start is in its run's journal: reading shows it interrupted
    # already, and the next gateway to start writes its row.
    assert len(ledger_rows(ledger)) == 999
    shown = _history(home)
    assert len(shown["rows"]) == 1000
    assert [row["status"] for row in shown["rows"]].count("interrupted") == 1
    Gateway(emulator.port, home, "--port", "0", "--json").listening().stop()
    rows = ledger_rows(ledger)
    # Exactly one row per request: 1,000, three runs, the killed stream among them once.
    assert len(rows) == 1000
    assert (
        Counter(row["run_id"] for row in rows).most_common()
        and len({row["run_id"] for row in rows}) == 3
    )
    by_api = Counter(row["api"] for row in rows)
    assert by_api == Counter({"chat": 499, "messages": 500, "responses": 1})

    history = _history(home)
    assert len(history["rows"]) == 1000
    (killed,) = [row for row in history["rows"] if row["status"] == "interrupted"]
    assert killed["api"] == "responses" and killed["model"] == "gpt-5.4"
    assert all(row["status"] == 200 for row in history["rows"] if row is not killed)
    # The access lines of the 999 answered requests carry the credits the history holds
    # for them; the killed one, which has none, adds its reservation as an estimate.
    answered = _credits_of(first_err) + _credits_of(second_err) + _credits_of(run_err)
    assert len(_access_lines(first_err + second_err + run_err)) == 999
    # count_tokens (250 of them) is answered by the gateway: a line with no cost.
    assert len(answered) == 749
    assert sum(answered) == pytest.approx(
        sum(row["credits"] or 0.0 for row in history["rows"] if row is not killed)
    )
    assert history["total"]["requests"] == 1000
    assert history["total"]["credits"] == pytest.approx(sum(answered) + (killed["credits"] or 0.0))
    # count_tokens is answered by the gateway itself: a row of 0 credits each, naming it.
    counted = [row for row in history["rows"] if row["rewrote"] == ["count-tokens"]]
    assert len(counted) == 250 and not any(row["credits"] for row in counted)


def _ended(ledger: Path) -> None:
    """Wait (bounded) until every request recorded in ``ledger`` has ended: an answer's
    row is written by its gateway's writer thread within its linger (a quarter of a
    second) of the answer, and until then the request is in flight, its reservation held
    against the daily budget."""
    deadline = time.monotonic() + BOUND
    while any(row.status == IN_FLIGHT for row in read_history(ledger, since=0).rows):
        assert time.monotonic() < deadline, "a row stayed in flight"
        time.sleep(0.01)


def _refused(gateway: Gateway) -> httpx2.Response:
    with httpx2.Client(timeout=BOUND) as client:
        return client.post(
            f"{gateway.base_url}/chat/completions",
            json=load_child.KINDS[0][1],
            headers={"Authorization": f"Bearer {gateway.key}"},
        )


def test_the_daily_budget_is_counted_across_two_serve_processes(
    account: Any, gateways: list[Gateway]
) -> None:
    emulator, home = account()
    budget = ("--port", "0", "--json", "--max-credits-per-day", "0.5")
    first = Gateway(emulator.port, home, *budget).listening()
    second = Gateway(emulator.port, home, *budget).listening()
    gateways.extend([first, second])
    assert load_child.send(second.base_url, second.key, 1) == [200]
    _ended(home / "ledger.sqlite3")  # spent, no longer held
    # The first spends what is left of the day (0.0425 credits an answer), then is refused.
    spent = []
    while (answer := _refused(first)).status_code == 200:
        spent.append(answer)
        assert len(spent) < 20, "the daily budget never refused"
    assert spent, answer.text
    assert answer.status_code == 402, answer.text
    message = answer.json()["error"]["message"]
    assert "--max-credits-per-day" in message and "00:00 UTC" in message
    # The second, which spent one answer's worth itself, is refused on what the first spent.
    assert _refused(second).status_code == 402
    first.stop(), second.stop()
    rows = ledger_rows(home / "ledger.sqlite3")
    # Refused before going upstream: never recorded, never billed. As with --max-credits,
    # spent is spent: the last request admitted came while the day was under its budget.
    assert len(rows) == 1 + len(spent)
    credits = [row["credits"] for row in rows]
    assert sum(credits[:-1]) < 0.5 <= sum(credits)


def test_off_by_option_or_variable_records_nothing_and_a_file_named_records_there(
    tmp_path: Path, account: Any, gateways: list[Gateway]
) -> None:
    emulator, home = account()
    elsewhere = tmp_path / "spend" / "work.sqlite3"
    elsewhere.parent.mkdir(mode=0o700)
    off = Gateway(emulator.port, home, "--port", "0", "--json", "--no-ledger").listening()
    named = Gateway(
        emulator.port, home, "--port", "0", "--json", "--ledger", str(elsewhere)
    ).listening()
    gateways.extend([off, named])
    assert load_child.send(off.base_url, off.key, 2) == [200, 200]
    assert load_child.send(named.base_url, named.key, 2) == [200, 200]
    off.stop(), named.stop()
    variable = Gateway(emulator.port, home, "--port", "0", "--json", ledger="off").listening()
    gateways.append(variable)
    assert load_child.send(variable.base_url, variable.key, 1) == [200]
    variable.stop()
    assert not (home / "ledger.sqlite3").exists()
    assert len(ledger_rows(elsewhere)) == 2
    assert _history(home, "--ledger", str(elsewhere))["total"]["requests"] == 2


def test_a_daily_budget_without_the_ledger_is_a_usage_error(tmp_path: Path) -> None:
    env = _env(tmp_path / "home")
    done = subprocess.run(
        [str(SCRIPT), "serve", "--no-ledger", "--max-credits-per-day", "5"],
        capture_output=True,
        text=True,
        env=env,
        timeout=BOUND,
        check=False,
    )
    assert done.returncode == 2
    assert "--max-credits-per-day" in done.stderr and "ledger" in done.stderr
    assert not (tmp_path / "home").exists()


def test_an_emulator_gateway_records_only_into_a_file_named(tmp_path: Path) -> None:
    env = _env(tmp_path / "never")
    named = tmp_path / "emulated.sqlite3"
    for options in ((), ("--ledger", str(named))):
        child = subprocess.Popen(
            [str(SCRIPT), "serve", "--emulator", "--port", "0", "--json", *options],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert child.stdout is not None and child.stderr is not None
        out, err = _Lines(child.stdout), _Lines(child.stderr)
        try:
            line = json.loads(out.wait_for("listening"))
            assert load_child.send(line["base_url"], line["api_key"], 3) == [200, 200, 200]
        finally:
            child.send_signal(signal.SIGTERM)
            child.wait(BOUND)
            out.text(), err.text()
            child.stdout.close(), child.stderr.close()
    # The home folder is never made; only the named file holds the emulated requests.
    assert not (tmp_path / "never").exists()
    assert len(ledger_rows(named)) == 3


def test_each_socket_request_is_a_row_and_the_warm_up_costs_nothing(
    tmp_path: Path, account: Any, gateways: list[Gateway]
) -> None:
    """Codex's transport: each ``response.create`` on a socket is a request of its own in
    the ledger, as over HTTP; the warm-up the gateway answers itself is one at 0 credits."""
    from tests._wsclient import SocketClient

    emulator, home = account()
    gateway = Gateway(emulator.port, home, "--port", "0", "--json").listening()
    gateways.append(gateway)
    port = int(gateway.base_url.rsplit(":", 1)[1].split("/")[0])
    turn = {"model": "gpt-5.5", "store": False, "stream": True}
    text = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    with SocketClient(port, gateway.key).open() as client:
        client.request({**turn, "input": [text], "generate": False})
        for _ in range(2):
            frames = client.request({**turn, "input": [text]})
            assert frames[-1]["type"] == "response.completed", frames[-1]
    stderr = gateway.stop()
    rows = ledger_rows(home / "ledger.sqlite3")
    assert [(row["api"], row["status"]) for row in rows] == [("responses", 200)] * 3
    warm, *turns = rows
    assert warm["credits"] == 0 and warm["rewrote"] == "warm-up"
    assert all(row["credits"] > 0 and row["output_tokens"] for row in turns)
    # The access lines say the same: three socket requests, two of them costed.
    lines = [line for line in stderr.splitlines() if " WS /v1/responses " in line]
    assert len(lines) == 3 and lines[0].endswith(" rewrote=warm-up")
    credits = [float(match.group(1)) for line in lines if (match := CREDITS.search(line))]
    assert credits == [row["credits"] for row in turns]
