"""GitHub adapter costs, measured against the loopback emulator (real sockets).

    python bench/github.py [--requests N]

* Registration with 20 and 2,000 models: round trips to the emulated GitHub, wall time
  and the CPU time of the calling thread (the emulator's threads are not counted).
* The warm path: one chat request through ``route.auth`` versus a plain httpx2 client
  whose default headers carry the same bearer and editor headers, to the same emulator;
  and the same pair over an in-memory ``httpx2.MockTransport`` to isolate the auth
  overhead from the socket.

The store uses a key file in a throwaway folder, so no keyring is touched.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import httpx2

import copilot_host as ch
from copilot_host.github import GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import GitHubEmulator, Inventory, Scenario, inventory_of


def _logged_in_store(emu: GitHubEmulator, home: str) -> CredentialStore:
    store = CredentialStore(home)
    store.save("octocat", ch.Secret(emu.github_token), key_file=True)
    return store


def bench_registration(models: int, rounds: int) -> dict[str, float]:
    with (
        GitHubEmulator(Scenario(inventory=Inventory(models=inventory_of(models)))) as emu,
        tempfile.TemporaryDirectory() as home,
    ):
        store = _logged_in_store(emu, home)
        walls, cpus, trips = [], [], []
        with GitHubCopilotHost(store=store, transport=emu.transport()) as host:
            for _ in range(rounds):
                catalog = ch.Catalog()
                before = len(emu.requests)
                wall, cpu = time.perf_counter(), time.thread_time()
                result = ch.register_models(catalog, host)
                cpus.append(time.thread_time() - cpu)
                walls.append(time.perf_counter() - wall)
                trips.append(len(emu.requests) - before)
                assert len(result.routes) == models
    return {
        "round_trips": statistics.median(trips),
        "wall_ms": statistics.median(walls) * 1000,
        "cpu_ms": statistics.median(cpus) * 1000,
    }


def _time_requests(send: object, count: int) -> tuple[float, float]:
    assert callable(send)
    for _ in range(20):  # warm up connections and the session
        send()
    samples = []
    cpu = time.thread_time()
    for _ in range(count):
        start = time.perf_counter()
        send()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e6, (time.thread_time() - cpu) / count * 1e6


def bench_warm_path(count: int) -> dict[str, tuple[float, float]]:
    figures: dict[str, tuple[float, float]] = {}
    body = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "ping"}]}
    with GitHubEmulator() as emu, tempfile.TemporaryDirectory() as home:
        store = _logged_in_store(emu, home)
        with GitHubCopilotHost(store=store, transport=emu.transport()) as host:
            catalog = ch.Catalog()
            ch.register_models(catalog, host)
            route = catalog.get("github-copilot/gpt-4.1")
            assert route is not None
            session = host.exchange(store.availability())  # type: ignore[arg-type]
            manual = {
                **host.request_headers(),
                "Authorization": f"Bearer {session.token.reveal()}",
            }
            with (
                httpx2.Client(transport=emu.transport(), auth=route.auth) as with_auth,
                httpx2.Client(transport=emu.transport(), headers=manual) as plain,
            ):

                def via_auth() -> None:
                    assert with_auth.post(route.url, json=body).status_code == 200

                def by_hand() -> None:
                    assert plain.post(route.url, json=body).status_code == 200

                figures["loopback route.auth"] = _time_requests(via_auth, count)
                figures["loopback plain"] = _time_requests(by_hand, count)

            canned = httpx2.Response(200, json={"ok": True})
            mock = httpx2.MockTransport(lambda request: canned)
            with (
                httpx2.Client(transport=mock, auth=route.auth) as with_auth,
                httpx2.Client(transport=mock, headers=manual) as plain,
            ):
                figures["in-memory route.auth"] = _time_requests(
                    lambda: with_auth.post(route.url, json=body), count * 4
                )
                figures["in-memory plain"] = _time_requests(
                    lambda: plain.post(route.url, json=body), count * 4
                )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()

    print("registration against the emulator (median of", args.rounds, "rounds)")
    for models in (20, 2000):
        f = bench_registration(models, args.rounds)
        print(
            f"  {models:>5} models: {f['round_trips']:.0f} round trips, "
            f"wall {f['wall_ms']:.1f} ms, client CPU {f['cpu_ms']:.1f} ms"
        )

    print(f"warm path, one chat request (median wall us, client CPU us/request; n={args.requests})")
    figures = bench_warm_path(args.requests)
    for name, (wall, cpu) in figures.items():
        print(f"  {name:<22} wall {wall:8.1f} us   CPU {cpu:8.1f} us")
    for where in ("loopback", "in-memory"):
        auth, plain = figures[f"{where} route.auth"], figures[f"{where} plain"]
        print(
            f"  {where}: route.auth / plain = {auth[0] / plain[0]:.2f}x wall, "
            f"{auth[1] / plain[1]:.2f}x CPU (+{auth[1] - plain[1]:.1f} us CPU per request)"
        )


if __name__ == "__main__":
    main()
