"""What the ledger costs: recording against the gateway's relay, reading against ``status``.

    python bench/ledger.py [--requests N] [--rounds R] [--rows N] [--stack pure-python]

Measured in one run, as ratios (absolute times differ about threefold between the machines
this project runs on):

1. **Recording.** The gateway's CPU per relayed non-streaming Chat request: ``copilot-host
   serve`` in its own process on the emulator, through the CLI's test seam, one client over
   keep-alive (``bench/gateway.py``'s machinery, on the default stack). Beside it, the CPU
   the ledger adds per recorded request (``begin`` awaited, then ``end``), in a process of
   its own on an asyncio loop as the gateway would call it: that process's CPU (its writer
   thread and SQLite included) with the ledger, minus the same loop making the same
   records without one. One caller in turn, 16 at once, and with a daily budget. Target:
   at most 5% of the gateway's CPU per request.
2. **Reading.** ``copilot-host usage --history --json`` over a ledger of a year of rows
   (default 500,000, spread evenly over 365 days), against ``copilot-host status`` (logged
   out), each a fresh process, best of R runs interleaved: the default 30 days, the whole
   year, and the whole year by day. Target: under 20x ``status``.

Figures are printed, not asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import bodies  # noqa: E402 - bench/bodies.py, the agents' bodies
import gateway as relay_bench  # noqa: E402 - bench/gateway.py, a sibling script

SCRIPT = Path(sys.executable).parent / "copilot-host"
DAY = 86_400


# -- 1. recording -------------------------------------------------------------------------------


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def role_recorder(folder: str, requests: int, callers: int, limit: float | None) -> None:
    """Prints the process CPU (us) per request of the loop with the ledger and without."""
    from copilot_host.gateway._ledger import Admitted, End, Ledger, Start, open_ledger

    def make() -> tuple[Start, End]:
        start = Start(time.time(), "octocat", "openai-sdk", "chat", "gpt-4.1", "gpt-4.1", 0.04)
        return start, End(0, 200, 12, 9, 0, 0.0425, False, 3)

    async def run(record: bool, ledger: Any) -> None:
        async def caller(share: int) -> None:
            for _ in range(share):
                start, end = make()
                row = 0
                if record:
                    admitted = await ledger.begin(start)
                    assert isinstance(admitted, Admitted)
                    assert admitted.row is not None
                    row = admitted.row
                # The request is upstream: the loop serves others meanwhile.
                await asyncio.sleep(0)
                if record:
                    ledger.end(end._replace(row=row))

        await asyncio.gather(*(caller(requests // callers) for _ in range(callers)))

    found: dict[str, float] = {}
    for label, record in (("without", False), ("with", True), ("without2", False)):
        ledger: Ledger | None = None
        if record:
            path = Path(folder) / "ledger.sqlite3"
            made = open_ledger(path, max_credits_per_day=limit)
            assert isinstance(made, Ledger)
            ledger = made
            asyncio.run(run(True, ledger))  # warm: statements prepared, pages cached
        before = _cpu()
        asyncio.run(run(record, ledger))
        if ledger is not None:
            assert ledger.flush(30)
        found[label] = (_cpu() - before) / requests * 1e6
        if ledger is not None:
            ledger.close()
    print(json.dumps(found), flush=True)


def _recorder(folder: Path, requests: int, callers: int, limit: float | None) -> float:
    done = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--role",
            "recorder",
            str(folder),
            str(requests),
            str(callers),
            "" if limit is None else str(limit),
        ],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    found = json.loads(done.stdout)
    return float(found["with"] - (found["without"] + found["without2"]) / 2)


# workload: (path, body, extra headers, emulator groups)
WORKLOADS: dict[str, tuple[str, bytes, dict[str, str], dict[str, Any]]] = {
    "chat": ("/chat/completions", json.dumps(relay_bench.CHAT).encode(), {}, {}),
    "claude": (
        "/messages",
        bodies.encoded(bodies.claude_turn(200_000)),
        {"anthropic-beta": bodies.BETAS, "anthropic-version": "2023-06-01"},
        {"inventory": "whole"},
    ),
}


def gateway_cpu_per_request(
    requests: int,
    blocks: int = 20,
    workload: str = "chat",
    *,
    control: bool = False,
    swapped: bool = False,
    stack: str = "default",
) -> tuple[float, float]:
    """``serve``'s CPU (us) per relayed request of ``workload`` (a small non-streaming
    Chat request, or a Claude Code turn of 200 KB), one client: recording into the home
    folder's ledger, and with ``COPILOT_HOST_LEDGER=off``. Both gateways run at once and
    take turns, ``blocks`` blocks of requests each (the first to go alternates), so that
    this machine's swings in speed fall on both alike. ``control``: both with the ledger
    off, the same comparison of two identical processes (its noise floor). ``swapped``:
    the gateway without the ledger is started first (the control shows the first-started
    reading a few percent higher on this machine, so rounds alternate it). ``stack``: the
    server stack both run on (``bench/gateway.py``'s names)."""
    path, body, extra, groups = WORKLOADS[workload]
    headers = {"Content-Type": "application/json", **extra}
    per_block = max(requests // blocks, 1)
    with tempfile.TemporaryDirectory() as folder, relay_bench.emulator(**groups) as emu:
        home = Path(folder) / "home"
        relay_bench.login(home, emu.port)
        with (
            relay_bench.gateway(
                home, emu.port, ledger=not control and not swapped, stack=stack
            ) as first,
            relay_bench.gateway(
                home, emu.port, ledger=not control and swapped, stack=stack
            ) as second,
        ):
            pair = (second, first) if swapped else (first, second)
            clients = [
                httpx2.Client(headers={"Authorization": f"Bearer {gw.key}"}, timeout=60)
                for gw in pair
            ]
            spent = [0.0, 0.0]
            try:
                for which in (0, 1):
                    for _ in range(max(per_block, 10)):  # warm: sessions, pools, statements
                        url = pair[which].base_url + path
                        clients[which].post(url, content=body, headers=headers)
                for block in range(blocks):
                    for which in (block % 2, 1 - block % 2):
                        gw, client = pair[which], clients[which]
                        before = gw.child.cpu_seconds()
                        for _ in range(per_block):
                            answer = client.post(gw.base_url + path, content=body, headers=headers)
                            answer.raise_for_status()
                        spent[which] += gw.child.cpu_seconds() - before
            finally:
                for client in clients:
                    client.close()
    done = per_block * blocks
    return spent[0] / done * 1e6, spent[1] / done * 1e6


def control(requests: int, rounds: int, workload: str = "chat", stack: str = "default") -> None:
    """Two ``serve`` processes, both with the ledger off, measured as section 1 measures
    one recording against one not: what that comparison reads when nothing differs."""
    reads = []
    for round_ in range(rounds):
        first, second = gateway_cpu_per_request(
            requests, workload=workload, control=True, swapped=round_ % 2 == 1, stack=stack
        )
        reads.append((first / second - 1) * 100)
    shown = ", ".join(f"{one:+.1f}%" for one in reads)
    print(f"   control, two serves with the ledger off side by side: {shown}")


def recording(requests: int, rounds: int, workload: str = "chat", stack: str = "default") -> None:
    print(
        f"1. recording ({requests} requests a measurement, medians of {rounds} rounds, "
        f"the {workload} workload, the {stack} stack)"
    )
    gateway: list[float] = []
    unrecorded: list[float] = []
    cases = {"1 caller": (1, None), "16 callers": (16, None), "1 caller, daily budget": (1, 1e9)}
    ledger: dict[str, list[float]] = {case: [] for case in cases}
    for round_ in range(rounds):
        with_ledger, without = gateway_cpu_per_request(
            requests, workload=workload, swapped=round_ % 2 == 1, stack=stack
        )
        gateway.append(with_ledger)
        unrecorded.append(without)
        for case, (callers, limit) in cases.items():
            with tempfile.TemporaryDirectory() as folder:
                ledger[case].append(_recorder(Path(folder), requests, callers, limit))
    relay = sorted(gateway)[len(gateway) // 2]
    bare = sorted(unrecorded)[len(unrecorded) // 2]
    print(f"   the gateway, per relayed request:        {relay:7.0f} us of CPU")
    print(
        f"   the same with COPILOT_HOST_LEDGER=off:   {bare:7.0f} us: recording is "
        f"{(relay / bare - 1) * 100:+.1f}% of the gateway's CPU (target <= 5%)"
    )
    for case, values in ledger.items():
        cost = sorted(values)[len(values) // 2]
        print(
            f"   the ledger, per recorded request, {case + ':':24} {cost:5.1f} us = "
            f"{cost / relay * 100:4.1f}% of the gateway's (target <= 5%)"
        )


# -- 2. reading ---------------------------------------------------------------------------------


def _year(path: Path, rows: int) -> None:
    """``rows`` requests over the 365 days before now, written straight into a ledger
    made by open_ledger (so the schema is the real one)."""
    import sqlite3

    from copilot_host.gateway._ledger import open_ledger

    open_ledger(path).close()
    db = sqlite3.connect(path)
    now = time.time()
    agents = ("claude-code", "codex", "aider", "opencode")
    models = ("claude-sonnet-4.5", "gpt-5", "gpt-4.1", "claude-haiku-4.5")
    step = 365 * DAY / rows
    db.executemany(
        "INSERT INTO requests (time, run_id, login, agent, api, model_asked, model, status, "
        "input_tokens, output_tokens, cached_tokens, credits, credits_estimated, duration_ms, "
        "rewrote) VALUES (?, ?, 'octocat', ?, 'messages', ?, ?, 200, 1200, 310, 0, 0.0425, 0, "
        "2310, 'billing-header')",
        (
            (
                now - 365 * DAY + i * step,
                f"{i // 2000:012x}",
                agents[i % 4],
                models[i % 4],
                models[i % 4],
            )
            for i in range(rows)
        ),
    )
    db.commit()
    db.close()


def _best(argv: list[str], env: dict[str, str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
        )
        times.append(time.perf_counter() - start)
    return min(times)


def reading(rows: int, runs: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        home.mkdir(mode=0o700)
        made = time.perf_counter()
        _year(home / "ledger.sqlite3", rows)
        took = time.perf_counter() - made
        print(f"\n2. reading a ledger of {rows:,} rows over 365 days ({took:.0f} s to make)")
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("COPILOT_HOST_")},
            "COPILOT_HOST_HOME": str(home),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        }
        history = [str(SCRIPT), "usage", "--history", "--json"]
        commands = {
            "status (logged out)": [str(SCRIPT), "status"],
            "usage --history --json (30 days)": history,
            "... --since 365d (every row)": [*history, "--since", "365d"],
            "... --since 365d --by day": [*history, "--since", "365d", "--by", "day"],
        }
        for argv in commands.values():
            _best(argv, env, 1)  # warm: bytecode, the page cache
        best: dict[str, list[float]] = {label: [] for label in commands}
        for _ in range(runs):  # interleaved, so machine load weighs on all alike
            for label, argv in commands.items():
                best[label].append(_best(argv, env, 1))
        base = min(best["status (logged out)"])
        for label, values in best.items():
            took = min(values)
            print(f"   {label:36} {took * 1000:7.0f} ms  {took / base:5.1f}x status")
        print("   (target: usage --history under 20x status)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", choices=["recording", "reading"])
    parser.add_argument(
        "--control",
        action="store_true",
        help="also compare two serves that both have the ledger off (the noise floor)",
    )
    parser.add_argument(
        "--workload",
        choices=sorted(WORKLOADS),
        default="chat",
        help="what serve relays while recording: a small Chat request, or a Claude Code turn",
    )
    parser.add_argument(
        "--stack",
        default="default",
        help="the server stack the two serves run on (bench/gateway.py's: pure-python, ...)",
    )
    parser.add_argument("--role", help=argparse.SUPPRESS)
    parser.add_argument("role_args", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "recorder":
        folder, requests, callers, limit = args.role_args
        return role_recorder(folder, int(requests), int(callers), float(limit) if limit else None)
    print(f"ledger benchmark on {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    if args.only != "reading":
        recording(args.requests, args.rounds, args.workload, args.stack)
        if args.control:
            control(args.requests, args.rounds, args.workload, args.stack)
    if args.only != "recording":
        reading(args.rows, args.runs)
    return None


if __name__ == "__main__":
    main()
