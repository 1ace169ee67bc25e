"""What reading the reported cost adds to the gateway's relay.

    python bench/spend.py

The gateway reads ``copilot_usage.total_nano_aiu`` from every complete chunk of events it
relays, after the chunk went to the client. This measures that read per chunk: a chunk
without the field (every text delta: one substring search) and the chunk that carries it
(the last one: one JSON parse), and a whole answer.
"""

from __future__ import annotations

import timeit
from collections.abc import Callable

from copilot_host.gateway._app._costs import answer_cost, events_cost

DELTA = (
    b'data: {"id":"chatcmpl-x","object":"chat.completion.chunk","created":0,"model":"m",'
    b'"choices":[{"index":0,"delta":{"content":"hello there"},"finish_reason":null}]}\n\n'
)
LAST = (
    b'data: {"id":"chatcmpl-x","object":"chat.completion.chunk","created":0,"model":"m",'
    b'"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,'
    b'"completion_tokens":4,"total_tokens":5},"copilot_usage":{"total_nano_aiu":42500000}}'
    b"\n\ndata: [DONE]\n\n"
)
WHOLE = (
    b'{"id":"chatcmpl-x","object":"chat.completion","choices":[{"index":0,"message":'
    b'{"role":"assistant","content":"' + b"x" * 4000 + b'"},"finish_reason":"stop"}],'
    b'"copilot_usage":{"total_nano_aiu":42500000}}'
)


def per_call(fn: Callable[[bytes], object], arg: bytes, number: int) -> float:
    return timeit.timeit(lambda: fn(arg), number=number) / number * 1e6


def main() -> None:
    print(f"a text delta (no cost field): {per_call(events_cost, DELTA, 200_000):.2f} us")
    print(f"the last chunk (the cost):     {per_call(events_cost, LAST, 20_000):.2f} us")
    print(f"a 4 KB whole answer:           {per_call(answer_cost, WHOLE, 20_000):.2f} us")


if __name__ == "__main__":
    main()
