"""This tree's gateway against another tree's (a release), counted in instructions.

    python bench/against_instructions.py OTHER_TREE [--python OTHER_PYTHON]
        [--stack pure-python] [--requests 50,250] [--ledger off]

``bench/against.py`` compares the two trees by the clock, whose runs on this machine spread
by several percent; here each tree's bare relay and gateway (each tree's own
``bench/gateway.py`` roles, started in that tree's interpreter, each on its own emulator)
run under ``valgrind --tool=callgrind`` (every thread, user space only), and the figure
is the difference between two runs of different lengths divided by the difference of
their request counts, so start-up and shutdown cancel out (``bench/instructions.py``'s
recipe). The same small Chat request as ``against.py``'s.

A tree whose bench can record (this one) records, with the ledger writer's wait stretched
50 times: under valgrind a request takes about 50 times as long, and unstretched each
batch would hold a fiftieth of the ends it holds at full speed (``bench/instructions.py``
says more). A release that records nothing runs as it is. ``--ledger off`` turns the
recording off where the bench can.

Printed: each tree's bare relay and gateway in millions of instructions a request, the
gateway over its bare relay (``bench/gateway.py`` 1's ratio), and this tree's gateway over
the other's. Needs valgrind; asserts nothing.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

# bench/_callgrind.py, beside this script (the first entry of sys.path when it runs).
from _callgrind import counted, instructions, valgrind_or_exit

ROOT = Path(__file__).resolve().parents[1]
_ROLES = ("gateway", "bare")


def role_tree(tree: str, stack: str, ledger: str, low: int, high: int, stretched: str) -> None:
    """In the tree's own interpreter: its bare relay's and gateway's instructions a
    request, as JSON on stdout. Nothing here imports copilot_host: the tree's bench does."""
    sys.path.insert(0, str(Path(tree) / "bench"))
    bench: Any = importlib.import_module("gateway")  # the tree's own bench/gateway.py
    # The callgrind output of the next child to start in one of _ROLES (under the lock,
    # so that each count's child, and only it, is measured).
    target: list[str] = []
    starting = threading.Lock()

    class Counted(bench.Child):  # type: ignore[misc]
        def __init__(self, argv: list[str], *rest: Any, **named: Any) -> None:
            if target and "--role" in argv and argv[argv.index("--role") + 1] in _ROLES:
                argv = [*counted(target[0]), *argv]
            super().__init__(argv, *rest, **named)

    bench.Child = Counted
    options: dict[str, Any] = {"stack": stack}
    parameters = inspect.signature(bench.gateway).parameters
    if "ledger" in parameters:
        options["ledger"] = ledger == "on"
    if "extra_env" in parameters and ledger == "on":
        options["extra_env"] = {"BENCH_LEDGER_LINGER": stretched}
    body = json.dumps(bench.CHAT).encode()

    def count(kind: str, requests: int, folder: Path) -> int:
        import httpx2

        out = folder / f"{kind}-{requests}.out"
        with ExitStack() as held:
            home = Path(held.enter_context(tempfile.TemporaryDirectory())) / "home"
            emu = held.enter_context(bench.emulator())
            bench.login(home, emu.port)
            with starting:
                target.append(str(out))
                try:
                    one = held.enter_context(
                        bench.bare(home, emu.port, stack=stack)
                        if kind == "bare"
                        else bench.gateway(home, emu.port, **options)
                    )
                finally:
                    target.clear()
            headers = {"Authorization": f"Bearer {one.key}", "Content-Type": "application/json"}
            with httpx2.Client(headers=headers, timeout=600) as client:
                for _ in range(requests):
                    client.post(f"{one.base_url}/chat/completions", content=body).raise_for_status()
        return instructions(out)

    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as folder:
        for kind in _ROLES[::-1]:
            with ThreadPoolExecutor(2) as pool:
                few, many = pool.map(count, (kind, kind), (low, high), (Path(folder),) * 2)
            figures[kind] = (many - few) / (high - low)
    print(json.dumps(figures), flush=True)


def main() -> None:
    if sys.argv[1:3] == ["--role", "tree"]:  # before the parser, whose positional is OTHER
        tree, stack, ledger, low, high, stretched = sys.argv[3:9]
        return role_tree(tree, stack, ledger, int(low), int(high), stretched)
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("other", help="the other tree (a checkout of a release)")
    parser.add_argument("--python", default=sys.executable, help="the other tree's Python")
    parser.add_argument("--stack", default="default", help="bench/gateway.py's stacks")
    parser.add_argument("--requests", default="50,250", help="the two request counts")
    parser.add_argument("--ledger", choices=["on", "off"], default="on")
    args = parser.parse_args()
    valgrind_or_exit("against_instructions.py")
    low, high = (str(int(n)) for n in args.requests.split(","))
    # This tree's writer's wait, fifty times over (the module docstring says why).
    from copilot_host.gateway._ledger._writer import LINGER

    stretched = str(LINGER * 50)
    print(
        f"this tree against {args.other}, the {args.stack} stack, ledger {args.ledger}, "
        f"requests {low} and {high}; instructions per request:"
    )
    found: dict[str, dict[str, float]] = {}
    for name, tree, python in (
        ("this", str(ROOT), sys.executable),
        ("other", args.other, args.python),
    ):
        me = str(Path(__file__).resolve())
        argv = [python, me, "--role", "tree", tree, args.stack, args.ledger, low, high, stretched]
        done = subprocess.run(argv, cwd=tree, check=True, capture_output=True, text=True)
        found[name] = figures = json.loads(done.stdout.strip().splitlines()[-1])
        bare, gateway = figures["bare"], figures["gateway"]
        print(
            f"  {name:5} bare relay {bare / 1e6:6.3f} M  gateway {gateway / 1e6:6.3f} M  "
            f"{gateway / bare:6.3f}x the bare relay"
        )
    ratio = found["this"]["gateway"] / found["other"]["gateway"]
    print(f"  gateway this / other {ratio:.3f}")
    return None


if __name__ == "__main__":
    main()
