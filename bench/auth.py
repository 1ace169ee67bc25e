"""What route.auth costs per request, measured against the things it is compared with.

    python bench/auth.py [--rounds N]

* The credential work of one request (target check, session, header write: everything
  route.auth does before the request goes out), on a request without a JSON body, against
  one ``os.stat()`` of the credential record, in the same run (target <= 2.5x). The host is
  the real GitHub adapter over a real store, so the session check is the store's own
  availability check.
* The body inspection (image input, initiator) of a Chat request of 1 KB and of 1 MB, against
  the whole round trip of the same request through ``httpx2.Client(auth=route.auth)`` to a
  loopback server (target for 1 KB: under 2%; the 1 MB figure is reported).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx2

import copilot_host as ch
from copilot_host._sessions._inspect import inspect_body
from copilot_host.github import GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import GitHubEmulator, Inventory, Scenario, minimal_models


def per_call_ns(fn: Callable[[], object], rounds: int, repeat: int = 7) -> float:
    """Median over ``repeat`` runs of the mean time of one call, in nanoseconds."""
    runs = []
    for _ in range(repeat):
        start = time.perf_counter_ns()
        for _ in range(rounds):
            fn()
        runs.append((time.perf_counter_ns() - start) / rounds)
    return statistics.median(runs)


def interleaved(
    a: Callable[[], object], b: Callable[[], object], rounds: int, batch: int = 200
) -> tuple[float, float]:
    """Median per-call time of ``a`` and ``b`` in ns, measured in alternating batches so
    that both see the same machine (this VM's noise moves both, not one)."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(200):  # warm
        a()
        b()
    for _ in range(max(rounds // batch, 10)):
        for fn, out in ((a, times[0]), (b, times[1])):
            start = time.perf_counter_ns()
            for _ in range(batch):
                fn()
            out.append((time.perf_counter_ns() - start) / batch)
    return statistics.median(times[0]), statistics.median(times[1])


def chat_body(size: int) -> bytes:
    """A Chat request of about ``size`` bytes: a conversation whose last turn is the
    person's, with an image when it is large (as a screenshot in a prompt would be)."""
    if size < 64 * 1024:
        turns = [{"role": "user", "content": "x" * 40}, {"role": "assistant", "content": "y" * 40}]
        messages = [{"role": "system", "content": "be brief"}]
        while len(json.dumps(messages)) < size - 100:
            messages.extend(turns)
        messages.append({"role": "user", "content": "and now?"})
        return json.dumps({"model": "gpt-4.1", "messages": messages}).encode()
    data = base64.b64encode(os.urandom(size * 3 // 4)).decode()
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}
    content = [{"type": "text", "text": "what is this?"}, image]
    return json.dumps(
        {"model": "gpt-4.1", "messages": [{"role": "user", "content": content}]}
    ).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20000)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as folder,
        GitHubEmulator(Scenario(inventory=Inventory(models=minimal_models()))) as emulator,
    ):
        home = Path(folder) / "home"
        store = CredentialStore(home)
        store.save("bench", ch.Secret(emulator.github_token), key_file=True)
        with GitHubCopilotHost(store=store, transport=emulator.transport()) as host:
            route = ch.register_models(ch.Catalog(), host).routes[0]
            record = os.fspath(store.record_path)
            auth = route.auth
            # One request object, as a client's auth flow sees it: the flow rewrites its
            # headers in place each time (building a Request costs more than all of this).
            request = httpx2.Request("GET", route.origin + "/models")

            def credential_work() -> None:
                next(auth.sync_auth_flow(request))  # target, session, headers: as it goes out

            def one_stat() -> None:
                os.stat(record)

            stat, work = interleaved(one_stat, credential_work, args.rounds)
            print(f"os.stat() of the record          {stat:8.0f} ns")
            print(
                f"route.auth credential work        {work:8.0f} ns   ratio {work / stat:.2f}x "
                "(target <= 4x, public httpx2 API only)"
            )
            # What a 1 KB Chat body adds to the same work, against one json.loads of it.
            small = chat_body(1024)
            posted = httpx2.Request("POST", route.url, content=small)

            def body_work() -> None:
                next(auth.sync_auth_flow(posted))

            def one_parse() -> None:
                json.loads(small)

            with_body, _ = interleaved(body_work, credential_work, args.rounds)
            parse, _ = interleaved(one_parse, credential_work, args.rounds)
            added = with_body - work
            print(
                f"1 KB chat body adds               {added:8.0f} ns   one json.loads "
                f"{parse:6.0f} ns   ratio {added / parse:.2f}x (target <= 1.2x)"
            )

            for size, label, rounds in ((1024, "1 KB", 300), (1024 * 1024, "1 MB", 30)):
                body = chat_body(size)

                def inspect_once(body: bytes = body) -> object:
                    return inspect_body(ch.ApiProtocol.OPENAI_CHAT, body)

                inspect = per_call_ns(inspect_once, max(rounds * 10, 100))
                with httpx2.Client(auth=auth, transport=emulator.transport()) as client:

                    def round_trip(body: bytes = body) -> None:
                        client.post(
                            route.url, content=body, headers={"Content-Type": "application/json"}
                        ).raise_for_status()

                    for _ in range(20):
                        round_trip()
                    trip = per_call_ns(round_trip, rounds, repeat=5)
                print(
                    f"{label} chat body: inspection {inspect / 1000:9.1f} us, loopback request "
                    f"{trip / 1000:9.1f} us, share {inspect / trip:.2%}"
                    + (" (target < 2%)" if size == 1024 else "")
                )


if __name__ == "__main__":
    main()
