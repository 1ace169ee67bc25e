"""A very long ``model`` name and another client's ``GET /v1/models`` meanwhile.

    python bench/long_name.py [--mib 8] [--rounds 3]

The gateway runs in its own process (``copilot-host serve`` through the CLI's test seam, as
in bench/gateway.py, whose helpers this reuses). A key holder sends a Chat request whose
``model`` is a Claude-shaped name of MIB MiB (within the body cap); while it is served, a
second client lists the models. Reported: that listing's time as a ratio to an unloaded
listing measured in the same run (median of 20), the worst of ROUNDS rounds, and the long
request's own time and status. Before names over 256 characters were refused, the name ran
through the family rule and difflib's suggestion search on the event loop.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gateway as bench


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    name = ("claude-opus-" + "9" * (args.mib * 1024 * 1024))[: args.mib * 1024 * 1024]
    body = json.dumps({"model": name, "messages": [{"role": "user", "content": "hi"}]}).encode()
    with bench.keyed_gateway() as (_gw, root, key):

        def listing(client: httpx2.Client) -> float:
            start = time.perf_counter()
            client.get(root + "/v1/models", headers=key).raise_for_status()
            return time.perf_counter() - start

        with httpx2.Client(timeout=120) as client:
            for _ in range(5):
                listing(client)
            unloaded = statistics.median(listing(client) for _ in range(20))
            worst = 0.0
            long_seconds: list[float] = []
            statuses: set[int] = set()
            for _ in range(args.rounds):
                sent = threading.Event()

                def send_long(sent: threading.Event = sent) -> None:
                    with httpx2.Client(timeout=120) as other:
                        start = time.perf_counter()
                        sent.set()
                        answer = other.post(
                            root + "/v1/chat/completions", content=body, headers=key
                        )
                        statuses.add(answer.status_code)
                        long_seconds.append(time.perf_counter() - start)

                worker = threading.Thread(target=send_long)
                worker.start()
                sent.wait()
                time.sleep(0.15)  # the body is read and parsed by now, or nearly
                worst = max(worst, listing(client))
                worker.join()
    print(f"a {args.mib} MiB model name, {args.rounds} rounds")
    print(f"  unloaded GET /v1/models: {unloaded * 1000:.1f} ms (median of 20)")
    print(
        f"  GET /v1/models while it is served: worst {worst * 1000:.1f} ms = "
        f"{worst / unloaded:.1f}x unloaded"
    )
    print(
        f"  the long request: status {sorted(statuses)}, "
        f"{statistics.median(long_seconds) * 1000:.0f} ms (median)"
    )


if __name__ == "__main__":
    main()
