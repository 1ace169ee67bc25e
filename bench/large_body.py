"""Large bodies through the gateway: its peak memory, its answer to a small request meanwhile,
and what a model rewrite costs on a Claude-Code-sized body.

    python bench/large_body.py [--mib 30]

The gateway runs in its own process (``copilot-host serve`` through the CLI's test seam,
as in bench/gateway.py, whose helpers this reuses), its upstream an emulator in another.

1. **One 30 MiB Chat body** (a screenshot-sized base64 image, as large as the gateway
   takes): the gateway's resident-memory high-water mark before and after (target: peak
   < 400 MiB), and the latency of a small request sent while the large one is being read
   and parsed (target < 1 s).
2. **A 100 KB Messages body named by its route id** (the model rewritten), against the same
   body named by its model id, and a small body: the gateway's CPU time per request, and
   the rewrite's added cost against one ``json.loads`` of the body (target: at most the
   small-body figure plus 2.5x one json.loads).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import threading
import time
from pathlib import Path

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gateway as bench


def chat_body(mib: int) -> bytes:
    data = base64.b64encode(os.urandom(mib * 1024 * 1024 * 3 // 4 - 4096)).decode()
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}
    content = [{"type": "text", "text": "what is this?"}, image]
    return json.dumps(
        {"model": "gpt-4.1", "messages": [{"role": "user", "content": content}]}
    ).encode()


def messages_body(model: str, size: int) -> bytes:
    turns: list[dict[str, object]] = []
    while len(json.dumps(turns)) < size:
        turns.append(
            {"role": "user", "content": [{"type": "text", "text": "read this file " * 20}]}
        )
        turns.append({"role": "assistant", "content": [{"type": "text", "text": "done " * 40}]})
    turns.append({"role": "user", "content": "and now?"})
    return json.dumps(
        {"model": model, "max_tokens": 64, "system": "be brief", "messages": turns}
    ).encode()


def cpu_per_request(
    gw: bench.Gateway, path: str, body: bytes, count: int, headers: dict[str, str]
) -> float:
    with httpx2.Client(timeout=60) as client:
        for _ in range(20):
            client.post(gw.base_url.removesuffix("/v1") + path, content=body, headers=headers)
        before = gw.child.cpu_seconds()
        for _ in range(count):
            answer = client.post(
                gw.base_url.removesuffix("/v1") + path, content=body, headers=headers
            )
            answer.raise_for_status()
        return (gw.child.cpu_seconds() - before) / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=30)
    parser.add_argument("--count", type=int, default=300)
    args = parser.parse_args()
    with bench.keyed_gateway() as (gw, root, key):
        small = json.dumps(
            {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}
        ).encode()
        with httpx2.Client(timeout=120) as client:
            client.post(root + "/v1/chat/completions", content=small, headers=key)
            idle = gw.child.rss_mb()
            large = chat_body(args.mib)
            result: dict[str, object] = {}

            def send_large() -> None:
                with httpx2.Client(timeout=120) as other:
                    start = time.perf_counter()
                    answer = other.post(root + "/v1/chat/completions", content=large, headers=key)
                    result["status"] = answer.status_code
                    result["seconds"] = time.perf_counter() - start

            worker = threading.Thread(target=send_large)
            worker.start()
            time.sleep(0.15)  # the large body is on its way or being parsed
            start = time.perf_counter()
            client.post(root + "/v1/chat/completions", content=small, headers=key)
            meanwhile = time.perf_counter() - start
            worker.join()
            peak = gw.child.rss_mb("VmHWM")
        print(f"1. one {args.mib} MiB Chat body ({len(large) / 2**20:.1f} MiB sent)")
        print(
            f"   answered {result['status']} in {result['seconds']:.2f} s; gateway RSS idle "
            f"{idle:.0f} MiB, high-water {peak:.0f} MiB (target < 400)"
        )
        print(f"   a small request meanwhile: {meanwhile * 1000:.0f} ms (target < 1000)")

        headers = {**key, "anthropic-version": "2023-06-01"}
        with httpx2.Client(timeout=60) as client:
            listed = client.get(root + "/v1/models", headers=headers).json()["data"]
        claude = listed[0]["id"]
        named = messages_body(f"github-copilot/{claude}", 100 * 1024)
        plain = messages_body(claude, 100 * 1024)
        small_messages = messages_body(claude, 200)
        count = args.count
        cpu_small = cpu_per_request(gw, "/v1/messages", small_messages, count, headers)
        cpu_plain = cpu_per_request(gw, "/v1/messages", plain, count, headers)
        cpu_named = cpu_per_request(gw, "/v1/messages", named, count, headers)
        loads = min(_time(lambda: json.loads(named), 200) for _ in range(5)) * 1e6
        print(f"\n2. a {len(named) / 1024:.0f} KB Messages body, gateway CPU per request")
        print(f"   small body                 {cpu_small:7.0f} us")
        print(f"   100 KB, model id            {cpu_plain:7.0f} us")
        print(f"   100 KB, route id rewritten  {cpu_named:7.0f} us")
        print(
            f"   one json.loads of it {loads:.0f} us; budget small + 2.5x = "
            f"{cpu_small + 2.5 * loads:.0f} us; rewritten uses "
            f"{(cpu_named - cpu_small) / loads:.2f}x json.loads over the small body"
        )


def _time(fn: object, rounds: int) -> float:
    assert callable(fn)
    start = time.perf_counter()
    for _ in range(rounds):
        fn()
    return (time.perf_counter() - start) / rounds


if __name__ == "__main__":
    main()
