"""Catalog and registration costs.

    python bench/catalog.py

Registration of N models into a catalog already holding 5,000 routes (validation, route
building and the atomic swap, through the real provider with an in-memory host), and the
cost of a snapshot read with a writer swapping routes concurrently.
"""

from __future__ import annotations

import secrets
import statistics
import threading
import time
from collections.abc import Mapping, Sequence

import httpx2

import copilot_host as ch


class BenchHost:
    provider_id = "github-copilot"

    def __init__(self, count: int) -> None:
        self.identity = ch.LoginIdentity("bench", "octocat")
        self.models = [
            ch.ModelSpec(f"model-{i}", f"Model {i}", ch.ApiProtocol.OPENAI_CHAT, 128000, 4096)
            for i in range(count)
        ]

    def availability(self) -> ch.LoginIdentity:
        return self.identity

    def begin_device_login(self) -> ch.CopilotDeviceLogin:
        raise NotImplementedError

    def poll_device_login(self, login: ch.CopilotDeviceLogin) -> ch.Pending | ch.Authorized:
        raise NotImplementedError

    def exchange(self, identity: ch.LoginIdentity) -> ch.CopilotSession:
        now = time.monotonic()
        return ch.CopilotSession(
            token=ch.Secret("tid=" + secrets.token_hex(16)),
            identity=identity,
            endpoint=ch.CopilotEndpoint.parse("https://api.githubcopilot.com"),
            received_monotonic=now,
            refresh_monotonic=now + 1200,
            expires_monotonic=now + 1500,
            expires_wall=time.time() + 1500,
        )

    def inventory(self, session: ch.CopilotSession) -> Sequence[ch.ModelSpec]:
        return self.models

    def request_headers(self) -> Mapping[str, str]:
        return {}


def filled_catalog(size: int) -> ch.Catalog:
    catalog = ch.Catalog()
    auth = httpx2.Auth()
    spec = ch.ModelSpec("x", "x", ch.ApiProtocol.OPENAI_CHAT)
    catalog.add_routes(
        ch.ModelRoute(f"other/{i}", "x", spec.protocol, "https://a", "https://a/x", auth, spec)
        for i in range(size)
    )
    return catalog


def bench_registration(models: int, rounds: int = 15) -> float:
    host = BenchHost(models)
    times = []
    for _ in range(rounds):
        catalog = filled_catalog(5000)
        start = time.perf_counter()
        ch.register_models(catalog, host)
        times.append(time.perf_counter() - start)
        assert len(catalog) == 5000 + models
    return statistics.median(times)


def bench_snapshot(size: int, reads: int = 200_000) -> float:
    catalog = filled_catalog(size)
    host = BenchHost(500)
    stop = threading.Event()

    def writer() -> None:
        while not stop.is_set():
            ch.register_models(catalog, host)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        start = time.perf_counter()
        for _ in range(reads):
            catalog.routes()
        elapsed = time.perf_counter() - start
    finally:
        stop.set()
        thread.join()
    return elapsed / reads


def main() -> None:
    print("registration into a catalog holding 5,000 routes (median):")
    per_model = {}
    for n in (500, 1000, 2000, 5000):
        t = bench_registration(n)
        per_model[n] = t / n
        print(f"  {n:>5} models: {t * 1000:7.2f} ms  ({t / n * 1e6:.2f} us/model)")
    print(f"  cost per model, 5,000 vs 500: {per_model[5000] / per_model[500]:.2f}x (1.0 = linear)")
    small, large = bench_snapshot(100), bench_snapshot(10_000)
    print("snapshot read with a concurrent writer:")
    print(f"  100 routes: {small * 1e9:.0f} ns   10,000 routes: {large * 1e9:.0f} ns")
    print(f"  ratio 10,000 / 100 routes: {large / small:.2f}x (1.0 = O(1))")


if __name__ == "__main__":
    main()
