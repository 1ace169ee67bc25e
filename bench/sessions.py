"""Session machinery costs: the resolver hot path, fan-in, and the auth per request.

    python bench/sessions.py [--rounds N]

Figures and their targets:

* ``get()`` with a fresh session, availability included, for a host whose availability is
  a cached ``stat()`` of its record, against one bare ``os.stat()`` of that record
  measured in the same run (target <= 1.5x);
* fan-in: 64 threads / 500 tasks hitting an expired session (exchanges, wall time);
* a warm request through ``httpx2.Client(auth=route.auth)`` against the same request with
  a static ``Authorization`` header and no auth, both on one MockTransport, alternating
  single requests over many rounds and comparing medians (target <= 1.05x).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import cast

import httpx2

import copilot_host as ch
from copilot_host import CopilotEndpoint, CopilotSession, LoginIdentity, ModelSpec, Secret

ORIGIN = "https://api.individual.githubcopilot.com"
ENDPOINT = CopilotEndpoint.parse(ORIGIN)


class StatHost:
    """A host whose availability is a cached stat() of a record file, as the store's is."""

    def __init__(
        self,
        record: Path,
        *,
        lifetime: float = 1800.0,
        delay: float = 0.0,
        refresh_after: float | None = None,
    ) -> None:
        self._refresh_after = lifetime - 300 if refresh_after is None else refresh_after
        self._record = record
        self._identity = LoginIdentity(secrets.token_hex(16), "bench")
        self._key: tuple[int, int, int, int, int] | None = None
        self._lifetime = lifetime
        self._delay = delay
        self.exchanges = 0
        self._lock = threading.Lock()

    @property
    def provider_id(self) -> str:
        return "bench"

    def availability(self) -> LoginIdentity | None:
        try:
            st = os.stat(self._record)
        except FileNotFoundError:
            return None
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if key != self._key:
            self._key = key  # a real store would re-read the login id here
        return self._identity

    def begin_device_login(self) -> ch.CopilotDeviceLogin:
        raise NotImplementedError

    def poll_device_login(self, login: ch.CopilotDeviceLogin) -> ch.Pending | ch.Authorized:
        raise NotImplementedError

    def _mint(self, identity: LoginIdentity) -> CopilotSession:
        with self._lock:
            self.exchanges += 1
        now, wall = time.monotonic(), time.time()
        return CopilotSession(
            token=Secret("tid=" + secrets.token_hex(24)),
            identity=identity,
            endpoint=ENDPOINT,
            received_monotonic=now,
            refresh_monotonic=now + self._refresh_after,
            expires_monotonic=now + self._lifetime,
            expires_wall=wall + self._lifetime,
        )

    def exchange(self, identity: LoginIdentity) -> CopilotSession:
        if self._delay:
            time.sleep(self._delay)
        return self._mint(identity)

    def inventory(self, session: CopilotSession) -> Sequence[ModelSpec]:
        return [ModelSpec("gpt-4o", "GPT-4o", ch.ApiProtocol.OPENAI_CHAT)]

    def request_headers(self) -> Mapping[str, str]:
        return {
            "Editor-Version": "vscode/1.99.0",
            "Editor-Plugin-Version": "copilot-chat/0.26.0",
            "Copilot-Integration-Id": "vscode-chat",
            "User-Agent": "GitHubCopilotChat/0.26.0",
            "X-GitHub-Api-Version": "2025-04-01",
        }


class AsyncStatHost(StatHost):
    async def exchange(self, identity: LoginIdentity) -> CopilotSession:  # type: ignore[override]
        if self._delay:
            await asyncio.sleep(self._delay)
        return self._mint(identity)


def per_call_ns(fn: Callable[[], object], calls: int, repeats: int) -> float:
    """Best-of-``repeats`` mean cost of one call, in nanoseconds."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter_ns() - start) / calls)
    return best


def bench_get(record: Path) -> None:
    host = StatHost(record)
    resolver = ch.SessionResolver(host)
    resolver.get()
    path = str(record)
    calls, repeats = 20_000, 15
    # Interleave the two measurements so that machine noise hits both alike.
    stats, gets = [], []
    for _ in range(repeats):
        stats.append(per_call_ns(lambda: os.stat(path), calls, 1))
        gets.append(per_call_ns(resolver.get, calls, 1))
    stat_ns, get_ns = min(stats), min(gets)
    print(f"os.stat(record)              {stat_ns:8.0f} ns")
    ratio = get_ns / stat_ns
    print(f"resolver.get() (fresh)       {get_ns:8.0f} ns   ratio {ratio:.2f}x  (target <= 1.5x)")
    hot_ns = per_call_ns(lambda: resolver._core.hot(host._identity), calls, repeats)
    print(f"  of which the session check {hot_ns:8.0f} ns")


def bench_fan_in(record: Path) -> None:
    host = StatHost(record, lifetime=1800.0, delay=0.05)
    resolver = ch.SessionResolver(host)
    resolver.get()
    resolver.invalidate()
    before = host.exchanges
    barrier = threading.Barrier(64)
    done: list[float] = []

    def worker() -> None:
        barrier.wait()
        start = time.perf_counter()
        resolver.get()
        done.append(time.perf_counter() - start)

    threads = [threading.Thread(target=worker) for _ in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(
        f"64 threads, no session:      {host.exchanges - before} exchange(s), "
        f"slowest caller {max(done) * 1000:.1f} ms (exchange takes 50 ms)"
    )

    ahost = AsyncStatHost(record, lifetime=1800.0, delay=0.05)
    # A blocking host's other methods, awaited by nothing here: the resolver only exchanges.
    aresolver = ch.AsyncSessionResolver(cast(ch.AsyncCopilotHost, ahost))

    async def fan() -> float:
        start = time.perf_counter()
        await asyncio.gather(*[aresolver.get() for _ in range(500)])
        return time.perf_counter() - start

    elapsed = asyncio.run(fan())
    print(
        f"500 tasks, no session:       {ahost.exchanges} exchange(s), "
        f"all served in {elapsed * 1000:.1f} ms"
    )

    # Advisory window: the session is still valid; only the refreshing caller waits.
    host = StatHost(record, delay=0.05, refresh_after=1.0)
    resolver = ch.SessionResolver(host)
    resolver.get()
    time.sleep(1.05)  # into the advisory window (and past the 1 s storm guard)
    barrier = threading.Barrier(64)
    waits: list[float] = []

    def adv() -> None:
        barrier.wait()
        start = time.perf_counter()
        resolver.get()
        waits.append(time.perf_counter() - start)

    threads = [threading.Thread(target=adv) for _ in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    waits.sort()
    print(
        f"64 threads, advisory window: {host.exchanges - 1} exchange(s), "
        f"median caller {waits[32] * 1e6:.0f} us, slowest {waits[-1] * 1000:.1f} ms (the refresher)"
    )


class MemoryHost(StatHost):
    """Availability without a syscall: separates the auth's own cost from the host's stat."""

    def availability(self) -> LoginIdentity | None:
        return self._identity


def bench_request(record: Path, rounds: int) -> None:
    host = StatHost(record)
    route = ch.register_models(ch.Catalog(), host).routes[0]
    memory_route = ch.register_models(ch.Catalog(), MemoryHost(record)).routes[0]
    static = {"Authorization": "Bearer " + "x" * 60, **host.request_headers()}

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=b'{"ok":true}')

    transport = httpx2.MockTransport(handler)
    with (
        httpx2.Client(transport=transport, headers=static) as static_client,
        httpx2.Client(transport=transport, auth=route.auth) as dynamic_client,
        httpx2.Client(transport=transport, auth=memory_route.auth) as memory_client,
    ):
        clients = [static_client, dynamic_client, memory_client]
        url = route.url
        for _ in range(200):  # warm all three
            for client in clients:
                client.get(url)
        samples: list[list[int]] = [[], [], []]
        clock = time.perf_counter_ns
        for i in range(rounds):
            # Rotate the order so that no client always runs first (or last) in a round.
            for k in range(3):
                j = (i + k) % 3
                t0 = clock()
                clients[j].get(url)
                samples[j].append(clock() - t0)
    s, d, m = (statistics.median(x) for x in samples)
    print(f"warm request, static header  {s / 1000:8.1f} us (median of {rounds})")
    print(
        f"warm request, route.auth     {d / 1000:8.1f} us   ratio {d / s:.3f}x  (target <= 1.05x)"
    )
    print(f"  same, availability no stat {m / 1000:8.1f} us   ratio {m / s:.3f}x  (the auth alone)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        record = Path(folder) / "record.json"
        record.write_bytes(b"{}")
        bench_get(record)
        bench_fan_in(record)
        bench_request(record, args.rounds)


if __name__ == "__main__":
    main()
