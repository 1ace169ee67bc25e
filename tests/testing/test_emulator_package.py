"""``copilot_host.testing`` as applications import it: no test dependencies, no output."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from copilot_host import testing

# A run that exercises the noisy paths: refusals, an unknown path, a hang-up in the middle of
# a stream, a drip, and a stop while an answer is still pausing.
SCRIPT = textwrap.dedent(
    """
    import sys
    for blocked in ("pytest", "openai", "anthropic", "hypothesis", "httpx2_pytest", "anyio"):
        sys.modules[blocked] = None  # importing any of them now fails

    import httpx2
    import copilot_host.testing as t

    scenario = t.Scenario(
        replies=t.Replies(stream_pause=0.05), faults=t.Faults(drip={"user": 0.01})
    )
    with t.GitHubEmulator(scenario) as emu, httpx2.Client(transport=emu.transport()) as c:
        token = c.get(
            "https://api.github.com/copilot_internal/v2/token",
            headers={"Authorization": "token " + emu.github_token},
        ).json()
        origin, bearer = token["endpoints"]["api"], "Bearer " + token["token"]
        c.get(origin + "/models", headers={"Authorization": bearer})  # refused: no editor
        c.get(origin + "/nowhere")
        c.get("https://api.github.com/user", headers={"Authorization": "token x"})
        headers = {
            "Authorization": bearer,
            "Editor-Version": "vscode/1.104.1",
            "Copilot-Integration-Id": "vscode-chat",
        }
        request = {"model": "gpt-4.1", "stream": True, "messages": [{"role": "user", "content": "x"}]}
        with c.stream("POST", origin + "/chat/completions", json=request, headers=headers) as a:
            next(a.iter_lines())
        emu.wait_for_disconnects(1)
        slow = t.GitHubEmulator(t.Scenario(replies=t.Replies(stream_pause=30.0))).start()
        client = httpx2.Client(transport=slow.transport())
        sid = client.get(
            "https://api.github.com/copilot_internal/v2/token",
            headers={"Authorization": "token " + slow.github_token},
        ).json()["token"]
        opened = client.stream(
            "POST", origin + "/chat/completions", json=request,
            headers={**headers, "Authorization": "Bearer " + sid},
        )
        next(opened.__enter__().iter_lines())
        slow.stop()  # the paused answer ends
    assert "copilot_host.github._oauth" not in sys.modules
    """
)


def test_the_package_needs_no_test_dependency_and_prints_nothing() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_the_public_names_are_curated() -> None:
    assert sorted(testing.__all__) == [
        "AUTO_CALLS",
        "AUTO_ONLY_PLANS",
        "Auto",
        "CHECKS",
        "COPILOT_CLI_CLIENT_ID",
        "DeviceFlow",
        "ENDPOINTS",
        "Faults",
        "GitHubEmulator",
        "Inventory",
        "RateWindow",
        "RawAnswer",
        "RecordedRequest",
        "Replies",
        "Scenario",
        "Session",
        "Sockets",
        "ToolCall",
        "USAGE_PLANS",
        "Usage",
        "VSCODE_CLIENT_ID",
        "async_loopback_transport",
        "chat_model",
        "embeddings_model",
        "inventory_of",
        "loopback_socket_connector",
        "loopback_transport",
        "minimal_models",
        "realistic_models",
        "token_billing",
    ]
    for name in testing.__all__:
        value = getattr(testing, name)
        if not isinstance(value, (str, frozenset)):
            assert value.__module__.startswith("copilot_host.testing._")
    assert testing.VSCODE_CLIENT_ID == "Iv1.b507a08c87ecfe98"
