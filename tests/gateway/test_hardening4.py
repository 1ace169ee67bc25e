"""Hardening round 4: each finding of the review of 0.4.0, proven where a user would meet it.

N1 a Messages body whose system messages made the fold quadratic on the event loop; N2 a
cheap answer that let a burst of expensive requests past ``--max-credits``; N4 namespaced
tools whose flat names collided; N6 a streamed custom-tool input decoded again from its
start at every delta; N7 ``Retry-After`` values and resets the rate-limit refusal could not
take; N10 the account's GitHub token unmasked in what ``serve`` relays. (N8, ``run``'s
command outliving it, is in tests/cli/test_run.py.) Each test failed on 0.4.0.
"""

from __future__ import annotations

import json
import signal
from typing import Any

import httpx2

from copilot_host.testing import Replies, Scenario
from tests.gateway.test_serve import BOUND, _listening

# -- N10: the GitHub token is masked in what serve relays ----------------------------------


def test_serve_masks_the_github_token_in_relayed_answers_whole_and_streamed(serve: Any) -> None:
    # One delta per streamed answer: the echo, token and all, is one event (a value split
    # across events is not masked, as SECURITY.md says).
    served = serve("--port", "0", "--json", scenario=Scenario(replies=Replies(stream_events=1)))
    _listening(served)
    token = served.emulator.github_token
    ask = {"model": "gpt-4.1", "messages": [{"role": "user", "content": f"say {token} now"}]}
    seen: list[str] = []
    with httpx2.Client(
        base_url=served.base_url, headers={"Authorization": f"Bearer {served.key}"}, timeout=BOUND
    ) as client:
        # Twice each: serve reads the token from the store again for a later exchange
        # (and for the plan at start), and it must stay masked across those reads.
        for stream in (False, True, False, True):
            answer = client.post("/chat/completions", json={**ask, "stream": stream})
            assert answer.status_code == 200
            seen.append(answer.text)
    whole, streamed = json.loads(seen[0]), seen[1]
    assert whole["choices"][0]["message"]["content"] == "echo: say [REDACTED] now"
    assert '"content":"echo: say [REDACTED] now"' in streamed
    assert [token in text for text in seen] == [False] * 4
    code, stdout, stderr = served.stop(signal.SIGTERM)
    assert code == 143
    assert served.leaks(stdout, stderr, *seen) == []
