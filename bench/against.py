"""This tree's gateway against another tree's (a release), side by side in one run.

    python bench/against.py OTHER_TREE [--python OTHER_PYTHON] [--stack pure-python]
        [--runs 3] [--rounds 4] [--requests 500] [--ledger off]

``bench/gateway.py`` 1 measures a gateway, then its baseline, one after the other, and this
machine's speed can move by a third between the two (its rounds within one run read 988
and 1,369 µs for the same gateway): a comparison of two trees there needs many alternate
runs, and still overlaps. Here both trees' gateways and both bare relays (each tree's own
``bench/gateway.py`` roles, each on its own emulator, each tree in its own interpreter) run
at once, and one client sends the same non-streaming Chat request to each in turn, so a
swing in speed falls on all four alike. CPU is each process's scheduler count
(``/proc/PID/task/*/schedstat``). Each run starts fresh processes (a process's placement
moves its figures by a few percent for as long as it lives), each round reverses the order
of the turn, and the figures are medians over rounds, then means over runs. Which tree's
processes start first alternates between runs: with this tree against itself the
first-started side read 1.0-2.4% higher in every run, gateway and bare relay alike.

Printed per run: each tree's gateway / bare relay (``bench/gateway.py`` 1's ratio), this
tree's gateway / the other's, and the two bare relays' (which do the same work: their
ratio is the comparison's noise). ``--python`` is the other tree's interpreter, with its
packages (default: this one). ``--ledger off`` turns this tree's ledger off (a tree whose
bench has no such switch records nothing anyway). Asserts nothing.
"""

from __future__ import annotations

import argparse
import inspect
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def role_side(tree: str, stack: str, ledger: str) -> None:
    """One tree's emulator, gateway and bare relay; prints their addresses, keys and pids,
    and keeps them until stdin closes. Runs in that tree's interpreter, on its bench."""
    sys.path.insert(0, str(Path(tree) / "bench"))
    import gateway as bench  # the tree's own bench/gateway.py

    options: dict[str, Any] = {"stack": stack}
    if ledger == "off" and "ledger" in inspect.signature(bench.gateway).parameters:
        options["ledger"] = False
    with tempfile.TemporaryDirectory() as folder, bench.emulator() as emu:
        home = Path(folder) / "home"
        bench.login(home, emu.port)
        with (
            bench.gateway(home, emu.port, **options) as gw,
            bench.bare(home, emu.port, stack=stack) as bare,
        ):
            found = {
                kind: [one.base_url, one.key, one.child.process.pid]
                for kind, one in (("gateway", gw), ("bare", bare))
            }
            print(json.dumps(found), flush=True)
            sys.stdin.readline()


def _cpu_us(pid: int) -> float:
    tasks = Path(f"/proc/{pid}/task")
    return sum(int((task / "schedstat").read_text().split()[0]) for task in tasks.iterdir()) / 1e3


def one_run(
    trees: list[tuple[str, str, str]], stack: str, ledger: str, rounds: int, requests: int
) -> dict[str, float]:
    """Medians over ``rounds`` of CPU (us) per request for each tree (``(name, tree,
    python)``, started in that order) x ``gateway``/``bare``, fresh processes."""
    import httpx2

    sys.path.insert(0, str(ROOT / "bench"))
    import gateway as bench  # this tree's bench/gateway.py, for its request body

    sides: list[subprocess.Popen[str]] = []
    targets: list[tuple[str, httpx2.Client, str, int]] = []
    try:
        for name, tree, python in trees:
            side = subprocess.Popen(
                [python, str(Path(__file__).resolve()), "--role", "side", tree, stack, ledger],
                cwd=tree,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            sides.append(side)
            assert side.stdout is not None
            line = side.stdout.readline()
            if not line:
                raise SystemExit(f"{name} ({tree}): its gateway did not start")
            for kind, (url, key, pid) in json.loads(line).items():
                client = httpx2.Client(
                    headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
                    timeout=60,
                )
                targets.append((f"{name} {kind}", client, f"{url}/chat/completions", pid))
        body = json.dumps(bench.CHAT).encode()
        for _ in range(50):  # warm: sessions, pools, the ledger's statements
            for _name, client, url, _pid in targets:
                client.post(url, content=body).raise_for_status()
        taken: dict[str, list[float]] = {name: [] for name, *_ in targets}
        for round_ in range(rounds):
            turn = targets if round_ % 2 == 0 else targets[::-1]
            before = {name: _cpu_us(pid) for name, _c, _u, pid in turn}
            for _ in range(requests):
                for _name, client, url, _pid in turn:
                    client.post(url, content=body).raise_for_status()
            for name, _c, _u, pid in turn:
                taken[name].append((_cpu_us(pid) - before[name]) / requests)
        return {name: statistics.median(values) for name, values in taken.items()}
    finally:
        for _name, client, _url, _pid in targets:
            client.close()
        for side in sides:
            if side.stdin is not None:
                side.stdin.close()
            side.wait(60)


def main() -> None:
    if sys.argv[1:3] == ["--role", "side"]:  # before the parser, whose first positional is OTHER
        return role_side(*sys.argv[3:6])
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("other", nargs="?", help="the other tree (a checkout of a release)")
    parser.add_argument("--python", default=sys.executable, help="the other tree's Python")
    parser.add_argument("--stack", default="pure-python", help="bench/gateway.py's stacks")
    parser.add_argument("--runs", type=int, default=4, help="even: each tree starts first as often")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--ledger", choices=["on", "off"], default="on")
    args = parser.parse_args()
    if args.other is None:
        parser.error("name the other tree")
    trees = [("this", str(ROOT), sys.executable), ("other", args.other, args.python)]
    print(
        f"this tree against {args.other}, the {args.stack} stack, ledger {args.ledger}: "
        f"{args.runs} runs of {args.rounds} rounds of {args.requests} requests to each"
    )
    found: dict[str, list[float]] = {}
    for run in range(args.runs):
        order = trees if run % 2 == 0 else trees[::-1]
        cpu = one_run(order, args.stack, args.ledger, args.rounds, args.requests)
        figures = {
            "this gateway / bare": cpu["this gateway"] / cpu["this bare"],
            "other gateway / bare": cpu["other gateway"] / cpu["other bare"],
            "gateway this / other": cpu["this gateway"] / cpu["other gateway"],
            "bare this / other": cpu["this bare"] / cpu["other bare"],
        }
        for name, value in figures.items():
            found.setdefault(name, []).append(value)
        shown = "  ".join(f"{name} {value:.3f}" for name, value in figures.items())
        mine = cpu["this gateway"]
        print(f"   run {run + 1} ({order[0][0]} first): {shown}  (this gateway {mine:.0f} us)")
    print("   means: " + "  ".join(f"{k} {statistics.fmean(v):.3f}" for k, v in found.items()))
    return None


if __name__ == "__main__":
    main()
