"""What the gateway's changes cost a request, as a multiple of one ``json.loads`` of its body.

    python bench/changes.py [--rounds N] [--tree PATH]

For each body (bench/bodies.py: a small Chat request, the 100 KB Messages conversation of
0.4.0's bench/rewrites.py, a 400 KB Claude Code turn, a 300 KB Codex turn), in this process:
the CPU time of one ``json.loads`` of the body, and of the change stage on the parsed body
(every request change of the table that acts on its API, then the body that goes upstream:
spliced, or the edited document encoded once). The figure is their ratio, medians of
``--rounds`` alternating batches, so the machine's speed cancels out. ``--tree PATH`` runs
the same measurement on another checkout of copilot-host (0.4.0's: its ``rewrite_request``
and ``encode_body``), in a child process, so both trees are measured in one run.

Figures are printed, not asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bodies

HERE = Path(__file__).resolve().parent


def _cases() -> dict[str, tuple[str, dict[str, Any], int]]:
    """name -> (API, body, the served model's output limit)."""
    turns: list[dict[str, Any]] = []
    while len(json.dumps(turns)) < 100_000:
        turns += [
            {"role": "user", "content": [{"type": "text", "text": "please look at this " * 40}]},
            {"role": "assistant", "content": [{"type": "text", "text": "done, here it is " * 40}]},
        ]
    turns.append({"role": "user", "content": "next"})
    tool = {"name": "Read", "description": "read a file " * 20, "input_schema": {"type": "object"}}
    old_100kb = {
        "model": "claude-opus-5",
        "max_tokens": 32000,
        "system": [
            {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332;"},
            {"type": "text", "text": "You are Claude Code. " * 100},
        ],
        "tools": [tool] * 20,
        "messages": turns,
    }
    return {
        "chat, small": (
            "chat",
            {"model": "gpt-4.1", "messages": [{"role": "user", "content": "How are you?"}]},
            16_384,
        ),
        "messages, 100 KB (0.4.0's)": ("messages", old_100kb, 64_000),
        "Claude Code turn, 400 KB": ("messages", bodies.claude_turn(), 64_000),
        "Codex turn, 300 KB": ("responses", bodies.codex_turn(), 128_000),
    }


def _stage_now(api_name: str, limit: int) -> Callable[[bytes, dict[str, Any]], bytes]:
    """This tree's change stage (copilot_host.gateway._changes)."""
    import dataclasses

    import httpx2

    import copilot_host as ch
    from copilot_host.gateway._changes import Changes, RequestEdit
    from copilot_host.gateway._protocols import APIS

    api = next(a for a in APIS if a.name == api_name)
    spec = ch.ModelSpec(
        model_id="m", display_name="m", protocol=api.protocol, max_output_tokens=limit
    )
    route = ch.ModelRoute(
        route_id="github-copilot/m",
        model_id="m",
        protocol=api.protocol,
        origin="https://api.githubcopilot.com",
        url="https://api.githubcopilot.com" + api.protocol.path,
        auth=httpx2.Auth(),
        spec=dataclasses.replace(spec),
    )
    changes = Changes().of(api)
    betas = (bodies.BETAS.encode(),)

    def stage(body: bytes, value: dict[str, Any]) -> bytes:
        edit = RequestEdit(api, value, route, betas)
        changes.request(edit)
        return changes.body(edit, body)

    return stage


def _stage_040(api_name: str, limit: int) -> Callable[[bytes, dict[str, Any]], bytes]:
    """0.4.0's rewrites (copilot_host.gateway._rewrites) and its one re-encode."""
    import importlib

    import copilot_host as ch

    # Modules of 0.4.0's tree (this one has none of them): looked up by name.
    _messages: Any = importlib.import_module("copilot_host.gateway._messages")
    _request: Any = importlib.import_module("copilot_host.gateway._request")
    _rewrites: Any = importlib.import_module("copilot_host.gateway._rewrites")

    protocol = {
        "chat": ch.ApiProtocol.OPENAI_CHAT,
        "responses": ch.ApiProtocol.OPENAI_RESPONSES,
        "messages": ch.ApiProtocol.ANTHROPIC_MESSAGES,
    }[api_name]
    betas = _messages.forwarded_betas([bodies.BETAS.encode()])
    enabled = _rewrites.check_rewrites(None)

    def stage(body: bytes, value: dict[str, Any]) -> bytes:
        done = _rewrites.rewrite_request(
            protocol, value, max_output=limit, betas=betas, enabled=enabled
        )
        if done.value is None:
            return body
        done.value["model"] = "m"
        _messages.system_as_blocks(done.value)
        return bytes(_request.encode_body(done.value))

    return stage


def measure(rounds: int) -> dict[str, float]:
    try:
        import copilot_host.gateway._changes  # noqa: F401

        make = _stage_now
    except ImportError:
        make = _stage_040
    ratios: dict[str, float] = {}
    for name, (api_name, document, limit) in _cases().items():
        body = bodies.encoded(document)
        stage = make(api_name, limit)
        batch = max(1, 2_000_000 // len(body))

        def parse(body: bytes = body) -> None:
            json.loads(body)

        def change(body: bytes = body, stage: Callable[..., bytes] = stage) -> None:
            stage(body, json.loads(body))

        parses: list[float] = []
        changes: list[float] = []
        for turn in range(rounds):
            for run, into in ((parse, parses), (change, changes))[:: 1 if turn % 2 else -1]:
                start = time.process_time_ns()
                for _ in range(batch):
                    run()
                into.append((time.process_time_ns() - start) / batch)
        loads = statistics.median(parses)
        # The change stage's own cost: the batch above parsed the body too.
        ratios[name] = (statistics.median(changes) - loads) / loads
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--tree", type=Path, help="another checkout, measured in the same run")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:
        print(json.dumps(measure(args.rounds)))
        return
    results = {"this tree": measure(args.rounds)}
    if args.tree is not None:
        env = {**os.environ, "PYTHONPATH": str(args.tree.resolve())}
        done = subprocess.run(
            [sys.executable, str(HERE / "changes.py"), "--json", "--rounds", str(args.rounds)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd=args.tree,
        )
        results[f"tree {args.tree}"] = json.loads(done.stdout)
    print("the change stage's CPU time as a multiple of one json.loads of the body (medians):")
    names = list(next(iter(results.values())))
    print(f"  {'body':30}" + "".join(f"{tree:>22}" for tree in results))
    for name in names:
        print(f"  {name:30}" + "".join(f"{found[name]:21.2f}x" for found in results.values()))


if __name__ == "__main__":
    main()
