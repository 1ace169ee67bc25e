"""The emulator under an application's load test: more than 1,023 descriptors open in the
process (select() cannot watch a descriptor numbered 1,024 or above)."""

from __future__ import annotations

import os
import resource
from collections.abc import Iterator

import httpx2
import pytest

from copilot_host.testing import Faults, GitHubEmulator, Replies, Scenario
from tests.testing._support import PATH, body, copilot, payloads, sse

HELD = 1_100


@pytest.fixture
def many_descriptors_open() -> Iterator[None]:
    """This process holds over 1,100 descriptors, so the emulator's next connections are
    numbered above 1,024."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = HELD + 512
    if hard != resource.RLIM_INFINITY and hard < wanted:
        pytest.skip(f"the hard open-file limit ({hard}) is below {wanted}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))
    held = [os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC) for _ in range(HELD)]
    try:
        assert max(held) >= 1_024
        yield
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_paced_answers_work_with_descriptors_above_1024(many_descriptors_open: None) -> None:
    scenario = Scenario(
        replies=Replies(stream_pause=0.01, stream_events=5), faults=Faults(slow={"chat": 0.2})
    )
    with GitHubEmulator(scenario) as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        url = f"{origin}{PATH['chat']}"
        # A slow answer (the emulator waits, watching for a hang-up) ...
        whole = client.post(url, json=body("chat", "gpt-4.1", "hello"), headers=headers)
        assert whole.status_code == 200, whole.text
        # ... and a paced stream (a wait between events).
        with client.stream(
            "POST", url, json=body("chat", "gpt-4.1", "hello", stream=True), headers=headers
        ) as streamed:
            assert streamed.status_code == 200
            events = payloads(sse(streamed.iter_lines()))
    assert len(events) >= 5
