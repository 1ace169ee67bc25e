"""Instructions per relayed request, counted by valgrind's callgrind: the one figure of the
gateway's cost that this machine's swings in speed do not move.

    python bench/instructions.py [--requests 50,250]

Each subject runs in its own process under ``valgrind --tool=callgrind`` (every thread
counted, user-space instructions only: the kernel's work for sockets and files is not in
it) in front of the emulator, one client sending the same non-streaming Chat request over
keep-alive (``--workload claude``: a Claude Code turn of 200 KB instead, bench/ledger.py's).
Each subject runs twice, for the two request counts, and the figure is the
difference divided by the difference of the counts, so start-up and shutdown cancel out.

Subjects: the bare relay (``gateway.py``'s baseline), ``serve`` with its ledger off,
``serve`` recording, and ``serve`` recording with the ledger writer's wait (``LINGER``,
a quarter second) stretched 50 times. Under valgrind everything runs about 50 times
slower, so a wait holds about a fiftieth of the ends it holds at full speed, and each end
carries that much more of a commit; stretched, the writer's batch holds as many ends as at
full speed. The stretched run is the full-speed case; the other is what a request costs
when requests come that much less often.

Needs valgrind (``apt install valgrind``); prints a table, asserts nothing.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from pathlib import Path

import httpx2

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import gateway as relay_bench  # noqa: E402 - bench/gateway.py, a sibling script
from _callgrind import counted, instructions, valgrind_or_exit  # noqa: E402 - a sibling
from ledger import WORKLOADS  # noqa: E402 - bench/ledger.py's workloads

from copilot_host.gateway._ledger._writer import LINGER  # noqa: E402

Subject = Callable[[Path, int, list[str]], AbstractContextManager[relay_bench.Gateway]]


def _subjects() -> dict[str, Subject]:
    def served(ledger: bool, linger: str | None = None) -> Subject:
        def start(
            home: Path, port: int, wrap: list[str]
        ) -> AbstractContextManager[relay_bench.Gateway]:
            extra = {"BENCH_LEDGER_LINGER": linger} if linger else None
            return relay_bench.gateway(home, port, ledger=ledger, wrap=wrap, extra_env=extra)

        return start

    return {
        "bare relay": lambda home, port, wrap: relay_bench.bare(home, port, wrap=wrap),
        "serve, ledger off": served(False),
        "serve, recording": served(True),
        "serve, recording, writer's wait x50": served(True, str(LINGER * 50)),
    }


def _count(subject: Subject, requests: int, out: Path, workload: str) -> int:
    """Instructions callgrind counted over a whole run of ``subject`` serving ``requests``
    of ``workload``."""
    path, body, extra, groups = WORKLOADS[workload]
    wrap = counted(out)
    with tempfile.TemporaryDirectory() as folder, relay_bench.emulator(**groups) as emu:
        home = Path(folder) / "home"
        relay_bench.login(home, emu.port)
        with subject(home, emu.port, wrap) as served:
            headers = {
                "Authorization": f"Bearer {served.key}",
                "Content-Type": "application/json",
                **extra,
            }
            with httpx2.Client(headers=headers, timeout=300) as client:
                for _ in range(requests):
                    client.post(served.base_url + path, content=body).raise_for_status()
    return instructions(out)


def per_request(
    subject: Subject, low: int, high: int, folder: Path, name: str, workload: str
) -> float:
    # The two runs at once: their counts do not depend on what else the machine does.
    with ThreadPoolExecutor(2) as pool:
        few, many = pool.map(
            lambda n: _count(subject, n, folder / f"{name}-{n}.out", workload), (low, high)
        )
    return (many - few) / (high - low)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", default="50,250", help="the two request counts")
    parser.add_argument(
        "--workload",
        choices=sorted(WORKLOADS),
        default="chat",
        help="a small Chat request, or a Claude Code turn of 200 KB (bench/ledger.py's)",
    )
    args = parser.parse_args()
    low, high = (int(n) for n in args.requests.split(","))
    valgrind = valgrind_or_exit("instructions.py")
    version = subprocess.run([valgrind, "--version"], check=True, capture_output=True, text=True)
    print(
        f"{version.stdout.strip()}, the {args.workload} workload, requests {low} and {high}; "
        "instructions per request:"
    )
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as folder:
        for index, (name, subject) in enumerate(_subjects().items()):
            figures[name] = per_request(subject, low, high, Path(folder), str(index), args.workload)
            base = figures["bare relay"]
            count = figures[name]
            print(f"  {name:38} {count / 1e6:6.3f} M  {count / base:5.2f}x the bare relay")
    off = figures["serve, ledger off"]
    for name in ("serve, recording", "serve, recording, writer's wait x50"):
        share = (figures[name] / off - 1) * 100
        print(f"the ledger in {name!r}: {share:+.1f}% of serve's instructions")


if __name__ == "__main__":
    main()
