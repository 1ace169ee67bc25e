"""Codex over the gateway's WebSocket against the same session over HTTP, in one run.

A Codex-shaped session of ten turns (bench/bodies.py's Codex turn: a developer message,
Codex's tools with a namespace, a custom tool and ``web_search``), each turn a user message,
the model's tool call, the tool's output (about 27 KB) and the model's answer, so the
conversation grows to about 300 KB; ``copilot-host serve`` in its own process (the test
seam, bench/gateway.py's ``gateway``), an emulator behind a relay that counts the bytes
sent upstream. Over HTTP every request carries the whole conversation, as Codex sends it
without ``supports_websockets``; on the socket it sends what Codex 0.171.0 sends: the
warm-up, then each request chained with ``previous_response_id`` and only its new items,
compressed (``permessage-deflate``, as Codex offers it) and plain.

The model lists ``ws:/responses``, and a second gateway (the same, with the CLI's seam
routing Copilot's WebSocket to the emulator's socket port, behind its own counting relay)
sends the socket's requests up over Copilot's socket, chained with only the new items
(``ws>ws``), against the first, whose upstream is HTTP (``ws``: each request the whole
conversation).

Printed, per transport (medians of the rounds): the bytes the client sends per turn (first
and last turn, to show whether they grow), the bytes sent upstream per turn (first and last
turn too), the gateway's CPU per turn and the time to the first event; then each socket's
figures as ratios to HTTP's. Targets: the client's bytes per turn flat on the socket; the
bytes sent upstream per turn flat with Copilot's socket upstream; the gateway's CPU per
turn at most 1.2x HTTP's. Nothing is asserted.

    python bench/codex_socket.py [--rounds 3] [--turns 10]

(``ws>ws``: the client on the gateway's socket, the gateway on Copilot's.)
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bodies import codex_turn  # noqa: E402
from gateway import Gateway, emulator, gateway, login, tap  # noqa: E402

from tests._wsclient import SocketClient  # noqa: E402

MODEL = "gpt-5-mini"  # the emulator's Responses model (bench/gateway.py's inventory)
_VOCABULARY = (  # noqa: SIM905 - words, read as a sentence
    "def return self value path file line test error import class for if else while "
    "assert name data result config open read write list dict none true false raise "
    "module package build check parse token stream event socket request answer model"
).split()


def _output(turn: int, size: int = 27_000) -> str:
    """A tool's output of about ``size`` bytes, text that compresses as source code does
    (a seeded pick of words, not one phrase repeated)."""
    pick = random.Random(turn)  # noqa: S311 - reproducible filler, not a secret
    words: list[str] = []
    length = 0
    while length < size:
        word = pick.choice(_VOCABULARY) + ("\n" if pick.random() < 0.1 else " ")
        words.append(word)
        length += len(word)
    return "".join(words)


def cpu_seconds(pid: int) -> float:
    """The CPU time of every thread of ``pid``, from the scheduler's nanosecond count
    (/proc's tick counts are 10 ms coarse: a turn costs a few ms)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        total += int((task / "schedstat").read_text().split()[0])
    return total / 1e9


def _opening() -> dict[str, Any]:
    body = codex_turn(size=20_000, model=MODEL)
    body["input"] = body["input"][:1]  # the developer message; the turns come after
    return body


def _turn_prompt(turn: int) -> dict[str, Any]:
    text = f"Turn {turn}: look at the next file and fix what the test says."
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _events_of(data: bytes) -> list[dict[str, Any]]:
    return [
        json.loads(line[5:])
        for line in data.split(b"\n")
        if line.startswith(b"data:") and line[5:].strip() not in (b"", b"[DONE]")
    ]


def _outputs(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["item"] for e in events if e.get("type") == "response.output_item.done"]


class _Http:
    """Codex without the socket: every request the whole conversation."""

    def __init__(self, gw: Gateway) -> None:
        host, port = gw.base_url.removeprefix("http://").removesuffix("/v1").split(":")
        self._connection = http.client.HTTPConnection(host, int(port), timeout=60)
        self._key = gw.key
        self.sent = 0

    def request(self, body: dict[str, Any], _new: list[Any]) -> tuple[list[Any], float]:
        data = json.dumps(body).encode()
        headers = {
            "Authorization": f"Bearer {self._key}",
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
            "originator": "codex_exec",
        }
        began = time.perf_counter()
        self._connection.request("POST", "/v1/responses", data, headers)
        self.sent += len(data) + sum(len(k) + len(v) + 4 for k, v in headers.items()) + 60
        response = self._connection.getresponse()
        first = response.read1(65536)
        ttfe = time.perf_counter() - began
        events = _events_of(first + response.read())
        return _outputs(events), ttfe

    def close(self) -> None:
        self._connection.close()


class _Socket:
    """Codex with the socket: a warm-up, then only what is new, chained."""

    def __init__(self, gw: Gateway, *, deflate: bool) -> None:
        port = int(gw.base_url.rsplit(":", 1)[1].removesuffix("/v1"))
        self._client = SocketClient(port, gw.key, deflate=deflate, timeout=60).open()
        self._previous: str | None = None

    @property
    def sent(self) -> int:
        return self._client.sent

    def warm_up(self, body: dict[str, Any]) -> None:
        frames = self._client.request({**body, "generate": False})
        self._previous = frames[-1]["response"]["id"]

    def request(self, body: dict[str, Any], new: list[Any]) -> tuple[list[Any], float]:
        message = {**body, "input": new, "previous_response_id": self._previous}
        began = time.perf_counter()
        self._client.send_json({"type": "response.create", **message})
        frames = [self._client.receive()]
        ttfe = time.perf_counter() - began
        while frames[-1].get("type") not in ("response.completed", "error"):
            frames.append(self._client.receive())
        assert frames[-1]["type"] == "response.completed", frames[-1]
        self._previous = frames[-1]["response"]["id"]
        return [f["item"] for f in frames if f["type"] == "response.output_item.done"], ttfe

    def close(self) -> None:
        self._client.close()


def _sent(relays: tuple[Any, ...]) -> float:
    return float(sum(int(relay.ask("sent")) for relay in relays))


def session(gw: Gateway, relays: tuple[Any, ...], kind: str, turns: int) -> dict[str, Any]:
    """One session; what it cost per turn (``relays``: the counting relays in front of
    the emulator's HTTP and socket ports)."""
    body = _opening()
    client: Any = _Http(gw) if kind == "http" else _Socket(gw, deflate=kind == "ws+deflate")
    if isinstance(client, _Socket):
        client.warm_up(body)
    _sent(relays)
    pid = gw.child.process.pid
    sent_before, cpu_before = client.sent, cpu_seconds(pid)
    per_turn: list[dict[str, float]] = []
    for turn in range(turns):
        turn_sent, turn_cpu = client.sent, cpu_seconds(pid)
        ttfes = []
        new: list[Any] = [_turn_prompt(turn)]
        body["input"] = [*body["input"], *new]
        items, ttfe = client.request(body, new)
        ttfes.append(ttfe)
        call = next(item for item in items if item.get("type") == "function_call")
        output = _output(turn)
        result = {"type": "function_call_output", "call_id": call["call_id"], "output": output}
        new = [result]
        body["input"] = [*body["input"], *items, result]
        answer, ttfe = client.request(body, new)
        ttfes.append(ttfe)
        body["input"] = [*body["input"], *answer]
        per_turn.append(
            {
                "client": client.sent - turn_sent,
                "upstream": _sent(relays),
                "cpu_ms": (cpu_seconds(pid) - turn_cpu) * 1000,
                "ttfe_ms": statistics.median(ttfes) * 1000,
            }
        )
    client.close()
    return {
        "turns": per_turn,
        "client": (client.sent - sent_before) / turns,
        "cpu_ms": (cpu_seconds(pid) - cpu_before) * 1000 / turns,
        "size": len(json.dumps(body)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--turns", type=int, default=10)
    args = parser.parse_args()
    kinds = ("http", "ws+deflate", "ws", "ws>ws")
    found: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}
    with (
        tempfile.TemporaryDirectory() as folder,
        emulator(websocket=True) as emu,
        tap(emu.port) as (relay, relay_port),
        tap(int(emu.child.ask("socket"))) as (socket_relay, socket_port),
    ):
        relays = (relay, socket_relay)
        home = Path(folder) / "home"
        login(home, emu.port)
        with (
            gateway(home, emu.port, upstream=relay_port) as gw,
            gateway(home, emu.port, upstream=relay_port, sockets=socket_port) as gw_ws,
        ):

            def one(kind: str, turns: int) -> dict[str, Any]:
                if kind == "ws>ws":
                    return session(gw_ws, relays, "ws", turns)
                return session(gw, relays, kind, turns)

            one("http", 2)  # registration, connections, first parses
            one("ws", 2)
            one("ws>ws", 2)
            for round_ in range(args.rounds):
                order = kinds if round_ % 2 == 0 else tuple(reversed(kinds))
                for kind in order:
                    found[kind].append(one(kind, args.turns))
    size = found["http"][-1]["size"]
    print(f"Codex-shaped session: {args.turns} turns, 2 requests each, to {size / 1000:.0f} KB")
    print(f"medians of {args.rounds} rounds, the gateway in its own process ([fast] if installed)")

    def median(kind: str, key: str, turn: int | None = None) -> float:
        runs = found[kind]
        if turn is None:
            return float(statistics.median(float(run[key]) for run in runs))
        return float(statistics.median(float(run["turns"][turn][key]) for run in runs))

    def per_turn(kind: str, key: str) -> float:
        return float(
            statistics.median(
                statistics.mean(float(t[key]) for t in run["turns"]) for run in found[kind]
            )
        )

    print(
        f"{'':12} {'client/turn':>12} {'1st':>9} {'last':>9} {'upstream/turn':>14} "
        f"{'1st':>9} {'last':>9} {'cpu/turn':>10} {'first event':>12}"
    )
    for kind in kinds:
        print(
            f"{kind:12} {per_turn(kind, 'client') / 1000:10.1f}KB "
            f"{median(kind, 'client', 0) / 1000:7.1f}KB {median(kind, 'client', -1) / 1000:7.1f}KB "
            f"{per_turn(kind, 'upstream') / 1000:12.1f}KB "
            f"{median(kind, 'upstream', 0) / 1000:7.1f}KB "
            f"{median(kind, 'upstream', -1) / 1000:7.1f}KB {per_turn(kind, 'cpu_ms'):8.2f}ms "
            f"{per_turn(kind, 'ttfe_ms'):10.2f}ms"
        )

    def ratio(kind: str, key: str) -> float:
        return per_turn(kind, key) / per_turn("http", key)

    for kind in kinds[1:]:
        growth = median(kind, "client", -1) / median(kind, "client", 0)
        upstream_growth = median(kind, "upstream", -1) / median(kind, "upstream", 0)
        print(
            f"{kind} / http: client bytes {ratio(kind, 'client'):.3f}x, "
            f"upstream bytes {ratio(kind, 'upstream'):.2f}x, "
            f"CPU per turn {ratio(kind, 'cpu_ms'):.2f}x (target <= 1.2x), "
            f"first event {ratio(kind, 'ttfe_ms'):.2f}x; last turn / first: "
            f"client bytes {growth:.2f}x, upstream bytes {upstream_growth:.2f}x"
        )
    print(
        f"ws>ws / ws (Copilot's socket upstream against HTTP, the client on the socket): "
        f"upstream bytes {per_turn('ws>ws', 'upstream') / per_turn('ws', 'upstream'):.3f}x, "
        f"CPU per turn {per_turn('ws>ws', 'cpu_ms') / per_turn('ws', 'cpu_ms'):.2f}x"
    )


if __name__ == "__main__":
    main()
