"""A process recording into a ledger, as a gateway does, for the multi-process tests.

    python tests/ledger/writer_child.py LEDGER MODE [ARGS...]

Every mode opens the ledger, writes ``ready`` and waits for a line on stdin before it
records (so that the parent starts several at once), and prints one JSON line at the end.

``record N TASKS``
    N requests (start awaited, then end with 0.25 credits; 0.5 reserved) from TASKS
    concurrent asyncio tasks; prints ``{"run_id", "rows": [...]}``.
``hold N RESERVED [rows]``
    N requests as above, then one more start holding RESERVED credits that never ends;
    everything written, it prints ``{"run_id", "row"}`` and sleeps until killed. The start
    is kept in the run's journal, or with ``rows`` written as a row (a daily budget no
    request reaches makes it so).
``greedy LIMIT RESERVED``
    with ``--max-credits-per-day LIMIT``, starts holding RESERVED each until one is
    refused; prints ``{"run_id", "admitted": [...], "refused": {...}}``, then waits for a
    line on stdin and closes (its starts still in flight become interrupted).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from copilot_host.gateway._ledger import (
    Admitted,
    End,
    Ledger,
    LedgerOff,
    OverDailyBudget,
    Start,
    open_ledger,
)


def _start(reserved: float) -> Start:
    return Start(time.time(), "octocat", "codex", "responses", "gpt-5", "gpt-5", reserved, ())


async def _record(ledger: Ledger, count: int, tasks: int) -> list[int]:
    made: list[int] = []

    async def worker(share: int) -> None:
        for _ in range(share):
            admitted = await ledger.begin(_start(0.5))
            assert isinstance(admitted, Admitted) and admitted.row is not None
            made.append(admitted.row)
            await asyncio.sleep(0)  # the request is upstream: others go on meanwhile
            ledger.end(End(admitted.row, 200, 10, 5, 0, 0.25, False, 3))

    shares = [count // tasks + (1 if i < count % tasks else 0) for i in range(tasks)]
    await asyncio.gather(*(worker(share) for share in shares))
    return made


def main() -> None:
    path, mode, *args = sys.argv[1:]
    limit = float(args[0]) if mode == "greedy" else None
    if mode == "hold" and args[2:] == ["rows"]:
        limit = 1e9
    ledger = open_ledger(Path(path), max_credits_per_day=limit)
    assert not isinstance(ledger, LedgerOff), ledger.reason
    print("ready", flush=True)
    sys.stdin.readline()
    if mode == "record":
        made = asyncio.run(_record(ledger, int(args[0]), int(args[1])))
        ledger.close()
        print(json.dumps({"run_id": ledger.run_id, "rows": made}), flush=True)
    elif mode == "hold":
        asyncio.run(_record(ledger, int(args[0]), 1))
        held = ledger.begin_wait(_start(float(args[1])))
        assert isinstance(held, Admitted)
        assert ledger.flush()
        print(json.dumps({"run_id": ledger.run_id, "row": held.row}), flush=True)
        while True:
            time.sleep(60)
    elif mode == "greedy":
        admitted: list[int] = []
        while True:
            found = ledger.begin_wait(_start(float(args[1])), timeout=30)
            if isinstance(found, OverDailyBudget):
                break
            assert found.row is not None
            admitted.append(found.row)
        refused = {"spent": found.spent, "reserved": found.reserved}
        print(json.dumps({"run_id": ledger.run_id, "admitted": admitted, "refused": refused}))
        sys.stdout.flush()
        sys.stdin.readline()
        ledger.close()


if __name__ == "__main__":
    main()
