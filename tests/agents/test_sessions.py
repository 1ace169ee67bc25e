"""Whole agent sessions through ``copilot-host run``: a real Claude Code or Codex CLI (as
npm installs them; .ci/run pins them) completes a turn that calls one of its own tools,
which runs for real in a throwaway working folder, and answers after the tool's result.

Each test starts an emulator in this process whose scenario scripts the tool call, logs a
throwaway store in to it, and runs ``run`` in a child process through the CLI's test seam
(tests/agents/run_child.py), so the emulator's records show exactly what the gateway sent
upstream. ``run --emulator`` itself stays text-only (README's promise): an agent would run
a scripted tool call for real.

Every test then checks two things from those records: that nothing the real service is
reported to refuse was sent (this file's own list of shapes, independent of the emulator's
and the gateway's), and that the emulator refused nothing (its ``refusals``). A gateway
that forwarded what the agents send unchanged fails both.

The agents run with a throwaway HOME, ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`` and
nothing of the person's own agent setup. Where an agent is not installed these tests skip,
except under ``CI``, where they fail.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from copilot_host.testing import (
    RecordedRequest,
    realistic_models,
)
from tests.agents._harness import REQUEST, SCRIPT, Pane, agent, env, isolated, onboard_claude

pytestmark = [pytest.mark.agents, pytest.mark.slow]

SESSION_CHILD = Path(__file__).resolve().parent / "session_child.py"
# One agent turn with a tool call is three or four model requests to a loopback emulator;
# each agent starts in a few seconds. A hung agent fails the test instead of the CI run.
BOUND = 60.0

# -- what the service is reported to refuse (docs/WIRE.md "Agents through the gateway") ---

BILLING_HEADER = "x-anthropic-billing-header:"
SERVER_TOOLS = ("web_search_", "web_fetch_", "code_execution_")
REFUSED_RESPONSES_TOOLS = frozenset({"custom", "namespace", "web_search"})
REFUSED_RESPONSES_ITEMS = frozenset({"additional_tools"})
# The fields of a Messages body that need a beta Copilot does not serve.
UNSERVED_FIELDS = ("thinking.display",)
OUTPUT_CAPS = {"messages": ("max_tokens",), "responses": ("max_output_tokens",)}


# Of the limits the emulator's inventory lists, the output cap per model id.
def _limits(model: Mapping[str, object]) -> Mapping[str, int]:
    capabilities = model.get("capabilities")
    limits = capabilities.get("limits") if isinstance(capabilities, Mapping) else None
    return limits if isinstance(limits, Mapping) else {}


OUTPUT_LIMITS = {
    str(model["id"]): int(_limits(model)["max_output_tokens"])
    for model in realistic_models()
    if "max_output_tokens" in _limits(model)
}


# The endpoint name of a message on Copilot's WebSocket (its handshake is a GET there).
SOCKET = "responses_socket"


def _api_of(record: RecordedRequest) -> str | None:
    """The API a forwarded model request speaks: a message on Copilot's socket is a
    Responses request (chained or whole)."""
    if record.endpoint == SOCKET:
        return "responses" if record.method == "WS" else None
    return record.endpoint if record.endpoint in ("messages", "responses") else None


def _refusable(record: RecordedRequest) -> list[str]:
    """What in one forwarded request the service is reported to refuse."""
    found: list[str] = []
    if record.path.endswith("/count_tokens"):
        return ["count_tokens went upstream"]
    api = _api_of(record)
    if api is None:
        return found
    body: Mapping[str, Any] = json.loads(record.body)
    model = body.get("model")
    limit = OUTPUT_LIMITS.get(model) if isinstance(model, str) else None
    for cap in OUTPUT_CAPS[api]:
        asked = body.get(cap)
        if isinstance(asked, int) and limit is not None and asked > limit:
            found.append(f"{cap}={asked} above {model}'s {limit}")
    tools = [t for t in body.get("tools") or () if isinstance(t, Mapping)]
    if api == "messages":
        system = body.get("system")
        blocks = system if isinstance(system, list) else [{"type": "text", "text": system}]
        for block in blocks:
            if isinstance(block, Mapping) and str(block.get("text", "")).startswith(BILLING_HEADER):
                found.append("billing header in system")
        thinking = body.get("thinking")
        if isinstance(thinking, Mapping) and "display" in thinking:
            found.append("thinking.display without its beta")
        for message in body.get("messages") or ():
            if isinstance(message, Mapping) and message.get("role") == "system":
                found.append('a role "system" message in messages')
        for tool in tools:
            if str(tool.get("type", "")).startswith(SERVER_TOOLS):
                found.append(f"server tool {tool['type']}")
    else:
        for tool in tools:
            if tool.get("type") in REFUSED_RESPONSES_TOOLS:
                found.append(f"{tool['type']} tool {tool.get('name', '')}")
        for item in body.get("input") or ():
            if isinstance(item, Mapping) and item.get("type") in REFUSED_RESPONSES_ITEMS:
                found.append(f"{item['type']} input item")
            if isinstance(item, Mapping) and str(item.get("type", "")).startswith("custom_tool"):
                found.append(f"{item['type']} input item")
    return found


# -- the harness -----------------------------------------------------------------------------


def _tool_script(*calls: tuple[str, Mapping[str, object]]) -> list[list[object]]:
    """The emulated model's script (tests/agents/session_child.py makes it a
    ``Scenario(replies=Replies(tool_script=...))``): each call in turn, each after the
    person's turn, then text; every rule the service enforces stays on (no ``lenient``)."""
    return [[name, dict(arguments)] for name, arguments in calls]


@dataclass(frozen=True)
class Session:
    done: subprocess.CompletedProcess[str]
    requests: tuple[RecordedRequest, ...]
    refusals: tuple[RecordedRequest, ...]
    log: str

    def model_requests(self, endpoint: str) -> list[RecordedRequest]:
        """The model requests of one API: ``responses`` holds those that went up as
        messages on Copilot's socket too."""
        return [r for r in self.requests if _api_of(r) == endpoint]

    def bodies(self, endpoint: str) -> list[dict[str, Any]]:
        return [json.loads(r.body) for r in self.model_requests(endpoint)]

    def check_chained(self) -> list[dict[str, Any]]:
        """Every Responses request went up on Copilot's socket (none over HTTP), and
        those after the first were chained with only their new items (no developer
        message again); returns the chained ones."""
        sent = [r for r in self.requests if r.endpoint in ("responses", SOCKET)]
        assert sent and not [r for r in sent if r.endpoint == "responses"], sent
        assert [r.status for r in sent if r.method == "GET"] == [101], sent
        bodies = self.bodies("responses")
        chained = [body for body in bodies if body.get("previous_response_id")]
        assert chained and len(chained) == len(bodies) - 1, bodies
        for body in chained:
            roles = {item.get("role") for item in body["input"]}
            assert "developer" not in roles, body["input"]
        return chained

    def check_upstream(self) -> None:
        """Nothing refusable went upstream, and the emulator refused nothing."""
        sent = {f"{r.method} {r.path} #{n}": _refusable(r) for n, r in enumerate(self.requests)}
        assert not {where: what for where, what in sent.items() if what}, sent
        assert not self.refusals, [
            (r.path, r.model, r.refusal, r.refusal_detail, r.status) for r in self.refusals
        ]
        # Every model request the gateway forwarded was answered 200.
        assert all(r.status == 200 for r in self.requests if _api_of(r) is not None)

    def check_socket(self) -> None:
        """Codex spoke Responses over the gateway's WebSocket alone: every model request
        is a ``WS`` access line answered 200, none came over HTTP, and Codex never said
        it fell back to HTTP (it prints a warning when it does)."""
        assert _over_the_socket(self.log), self.log
        assert "Falling back" not in self.done.stderr, self.done.stderr
        assert "Reconnecting" not in self.done.stderr, self.done.stderr


def _session(
    home: Path, script: list[list[object]], command: Sequence[str], *, bound: float = BOUND
) -> Session:
    """The emulator, the login and ``run`` of ``command`` in a child inside ``unshare -n``
    (tests/agents/session_child.py), and what the emulator recorded."""
    log, out, scripted = home / "gateway.log", home / "records.json", home / "script.json"
    scripted.write_text(json.dumps(script))
    try:
        child = [sys.executable, str(SESSION_CHILD), str(out), str(scripted), str(log)]
        ran = subprocess.run(
            [*isolated(), *child, "--", *command],
            env=env(home),
            cwd=home / "work",
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=bound,
            check=False,
        )
    except subprocess.TimeoutExpired as expired:
        shown = log.read_text() if log.exists() else ""
        raise AssertionError(f"{command[0]} ran past {bound} s; gateway log:\n{shown}") from expired
    assert out.exists(), ran.stderr
    found = json.loads(out.read_text())
    done = subprocess.CompletedProcess(command, found["status"], found["stdout"], found["stderr"])
    requests = tuple(
        RecordedRequest(
            r["method"],
            "",
            r["path"],
            r["endpoint"],
            {},
            None,
            r["body"].encode(),
            status=r["status"],
            model=r["model"],
            refusal=r["refusal"],
            refusal_detail=r["refusal_detail"],
        )
        for r in found["requests"]
    )
    refusals = tuple(r for r in requests if r.refusal is not None)
    return Session(done, requests, refusals, log.read_text())


# A socket request in the access log (Codex's warm-up among them), and any request for the
# Responses paths over HTTP.
SOCKET_REQUEST = re.compile(r" WS (/v1/responses|/responses) model=\S+ status=(\d+) ")
HTTP_RESPONSES = re.compile(r" (POST|GET) /(v1/)?responses\b")


def _over_the_socket(log: str) -> bool:
    statuses = [m[2] for m in SOCKET_REQUEST.finditer(log)]
    return bool(statuses) and set(statuses) == {"200"} and not HTTP_RESPONSES.search(log)


def _tool_results(bodies: list[dict[str, Any]]) -> Iterator[str]:
    """The text of every Messages ``tool_result`` block the agent sent back."""
    for body in bodies:
        for message in body.get("messages", ()):
            content = message.get("content")
            for block in content if isinstance(content, list) else ():
                if block.get("type") != "tool_result":
                    continue
                inner = block.get("content")
                if isinstance(inner, str):
                    yield inner
                for part in inner if isinstance(inner, list) else ():
                    if part.get("type") == "text":
                        yield str(part.get("text", ""))


def _call_outputs(bodies: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
    """(call id, output text) of every Responses ``function_call_output`` sent back."""
    for body in bodies:
        for item in body.get("input", ()):
            if item.get("type") == "function_call_output":
                output = item.get("output")
                text = output if isinstance(output, str) else json.dumps(output)
                yield str(item.get("call_id")), text


# -- Claude Code -----------------------------------------------------------------------------


def test_claude_reads_a_file_with_its_read_tool_and_answers_after_the_result(home: Path) -> None:
    claude = agent("claude")
    notes = home / "work" / "notes.txt"
    notes.write_text("The password of the day is PAPAYA-7731.\n")
    scenario = _tool_script(("Read", {"file_path": str(notes)}))
    session = _session(home, scenario, [claude, "-p", "What does notes.txt say?"])
    assert session.done.returncode == 0, session.done.stderr
    bodies = session.bodies("messages")
    # The scripted call, then the agent's next request carrying what Read returned from
    # the file on disk, answered with text that the agent printed.
    assert len(bodies) >= 2, session.log
    assert any("PAPAYA-7731" in text for text in _tool_results(bodies)), bodies[-1]["messages"]
    assert "echo:" in session.done.stdout
    session.check_upstream()


def test_claude_web_search_is_answered_with_the_gateways_explanation(home: Path) -> None:
    """Claude Code's WebSearch asks the API for the server tool ``web_search_20250305`` in a
    request of its own; the gateway answers that request itself (Copilot refuses the tool),
    so the tool's result says why, the session goes on and nothing refusable went up."""
    claude = agent("claude")
    scenario = _tool_script(("WebSearch", {"query": "copilot-host release notes"}))
    session = _session(
        home,
        scenario,
        [
            claude,
            "-p",
            "Search the web for copilot-host release notes",
            "--tools",
            "WebSearch",
            "--allowedTools",
            "WebSearch",
        ],
    )
    assert session.done.returncode == 0, session.done.stderr
    bodies = session.bodies("messages")
    results = " ".join(_tool_results(bodies))
    assert re.search(r"not available through GitHub Copilot", results, re.IGNORECASE), results
    # The sub-request never reached the emulator: the gateway answered it.
    assert not any(
        str(tool.get("type", "")).startswith("web_search_")
        for body in bodies
        for tool in body.get("tools", ())
    )
    assert re.search(r" POST /v1/messages\S* model=\S+ status=200 ", session.log), session.log
    assert "echo:" in session.done.stdout
    session.check_upstream()


# -- Codex CLI -------------------------------------------------------------------------------

# Codex's default sandbox is read-only, so a turn that writes runs with
# ``--sandbox=workspace-write`` (Codex's own Linux sandbox, confined to the throwaway
# working folder; it runs in this suite's container as root and inside ``unshare -n``).
# Where it cannot start, ``--dangerously-bypass-approvals-and-sandbox`` is the fallback the
# issue allows, inside the throwaway HOME: change this one constant and say so.
CODEX_SANDBOX = "--sandbox=workspace-write"


def _codex(home: Path, scenario: list[list[object]], *args: str) -> Session:
    codex = agent("codex")
    return _session(home, scenario, [codex, "exec", "--skip-git-repo-check", CODEX_SANDBOX, *args])


def test_codex_runs_exec_command_with_the_profiles_model(home: Path) -> None:
    """The profile picks a model Codex ships metadata for (gpt-5.6-luna here); for it Codex
    offers its shell only inside ``exec``, a freeform (custom) tool whose input is JavaScript
    calling ``tools.exec_command``: the whole custom-tool path, both directions."""
    made = home / "work" / "made.txt"
    script = "await tools.exec_command({cmd: \"printf 'made by codex' > made.txt\"});"
    # The emulated model calls the tool by the name it went upstream under: a member of
    # Codex's "functions" namespace, flattened as <namespace>__<name>.
    scenario = _tool_script(("functions__exec", {"input": script}))
    session = _codex(home, scenario, "Make made.txt")
    assert session.done.returncode == 0, session.done.stderr
    session.check_socket()
    assert made.read_text() == "made by codex"
    bodies = session.bodies("responses")
    # run chose the model (no -m): every request names the one model it chose.
    models = {body["model"] for body in bodies}
    assert models == {"gpt-5.6-luna"}, models
    assert len(bodies) >= 2 and list(_call_outputs(bodies[1:])), bodies[-1]["input"]
    # The model lists ws:/responses: after the turn, only the tool's output went up.
    chained = session.check_chained()
    assert [item["type"] for item in chained[0]["input"]] == ["function_call_output"]
    assert "echo:" in session.done.stdout
    session.check_upstream()


PATCH = "*** Begin Patch\n*** Add File: patched.txt\n+patched by codex\n*** End Patch\n"


def test_codex_edits_a_file_with_apply_patch_through_the_custom_tool_path(home: Path) -> None:
    """With ``-m gpt-5.5`` Codex offers ``apply_patch`` as a freeform ``custom`` tool, which
    Copilot refuses: upstream it is a function tool with one string argument, the call comes
    back to Codex as a ``custom_tool_call`` (else Codex would not run it), and Codex's
    ``custom_tool_call_output`` goes up as a ``function_call_output``."""
    scenario = _tool_script(("apply_patch", {"input": PATCH}))
    session = _codex(home, scenario, "-m", "gpt-5.5", "Add patched.txt")
    assert session.done.returncode == 0, session.done.stderr
    session.check_socket()
    assert (home / "work" / "patched.txt").read_text() == "patched by codex\n"
    bodies = session.bodies("responses")
    assert {body["model"] for body in bodies} == {"gpt-5.5"}
    tools = [tool for tool in bodies[0]["tools"] if tool.get("name") == "apply_patch"]
    assert [tool["type"] for tool in tools] == ["function"], tools
    # The agent's next request carried the tool's result, as a plain function call output
    # chained on the answer that held the call (which Copilot's socket keeps).
    later = [item for body in bodies[1:] for item in body["input"]]
    assert not {"custom_tool_call", "custom_tool_call_output"} & {i.get("type") for i in later}
    assert list(_call_outputs(bodies[1:])), later
    session.check_chained()
    assert "echo:" in session.done.stdout
    session.check_upstream()


def test_codex_runs_exec_command_with_gpt_5_5(home: Path) -> None:
    made = home / "work" / "listing.txt"
    scenario = _tool_script(("exec_command", {"cmd": "ls > listing.txt"}))
    session = _codex(home, scenario, "-m", "gpt-5.5", "List the folder")
    assert session.done.returncode == 0, session.done.stderr
    session.check_socket()
    assert "listing.txt" in made.read_text().split()
    assert {body["model"] for body in session.bodies("responses")} == {"gpt-5.5"}
    session.check_chained()
    session.check_upstream()


def test_codex_full_screen_runs_a_tool_and_a_second_turn_over_the_socket(home: Path) -> None:
    """Codex's full-screen interface in tmux, through ``run``: a turn that runs a tool, then
    a second turn, all on the gateway's socket (the user's thread and the title thread
    each on its own), no request over HTTP, no fallback warning on the screen."""
    codex = agent("codex")
    tmux = agent("tmux")
    log, out, scripted = home / "gateway.log", home / "records.json", home / "script.json"
    scripted.write_text(json.dumps(_tool_script(("exec_command", {"cmd": "ls > listing.txt"}))))
    child = [sys.executable, str(SESSION_CHILD), "--tty", str(out), str(scripted), str(log)]
    # gpt-5.5 with its migration notice answered, so the first screen is the prompt.
    command = [
        *isolated(),
        *child,
        "--",
        codex,
        "-m",
        "gpt-5.5",
        "-c",
        'notice.model_migrations={"gpt-5.5"="gpt-6-sol"}',
        "--ask-for-approval",
        "never",
        CODEX_SANDBOX,
    ]
    pane = Pane(tmux, home, shlex.join(command) + "; sleep 60", height=40, bound=BOUND)
    try:
        pane.wait_for("Ask Codex")
        pane.enter("List the folder")
        pane.wait_for(r"echo: List the folder")
        pane.enter("Say more")
        pane.wait_for(r"echo: Say more")
        screen = pane.screen()
        # /quit, not Ctrl-C: the terminal's interrupt would reach this test's child too.
        pane.enter("/quit")
        deadline = time.monotonic() + BOUND
        while not out.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert out.exists(), pane.screen()
    finally:
        pane.kill()
    assert "listing.txt" in (home / "work" / "listing.txt").read_text().split()
    assert "Falling back" not in screen and "Reconnecting" not in screen, screen
    text = log.read_text()
    assert _over_the_socket(text), text
    # Two warm-ups (the user's thread, the title thread) and at least the three turns.
    assert len(SOCKET_REQUEST.findall(text)) >= 5, text
    found = json.loads(out.read_text())
    messages = [r for r in found["requests"] if r["endpoint"] == SOCKET and r["method"] == "WS"]
    assert messages and not [r for r in found["requests"] if r["endpoint"] == "responses"]
    bodies = [json.loads(r["body"]) for r in messages]
    # Up on Copilot's socket, chained: the tool's output and the second turn went alone.
    chained = [body for body in bodies if body.get("previous_response_id")]
    kinds = [[item.get("type", item.get("role")) for item in body["input"]] for body in chained]
    assert ["function_call_output"] in kinds, kinds
    assert not [r for r in found["requests"] if r["refusal"]], found["requests"]


# -- Claude Code full-screen: /context -------------------------------------------------------


def _prompt_limit(model_id: str) -> int:
    for model in realistic_models():
        if model["id"] == model_id:
            limits = _limits(model)
            return int(limits.get("max_prompt_tokens") or limits["max_context_window_tokens"])
    raise AssertionError(f"{model_id} is not in the emulator's inventory")


def test_claude_context_shows_the_accounts_window_and_count_tokens_is_served(home: Path) -> None:
    """``/context`` in Claude Code's full-screen interface (in tmux), through ``run
    --emulator`` with no configuration: the auto-compact window is the prompt limit of the
    model serving Claude Code's default name (``run``'s Claude profile sets
    ``CLAUDE_CODE_AUTO_COMPACT_WINDOW``), and the ``count_tokens`` calls ``/context`` makes
    are answered by the gateway, never 404."""
    claude = agent("claude")
    tmux = agent("tmux")
    onboard_claude(home)
    log = home / "gateway.log"
    # run, its emulator and Claude Code in a network namespace with only loopback.
    inside = " ".join(shlex.quote(part) for part in isolated())
    inner = f"{inside} {SCRIPT} run --emulator --log {log} -- {claude}; sleep 60"
    pane = Pane(tmux, home, inner, height=50, bound=BOUND)
    window = _prompt_limit("claude-opus-5")  # serves Claude Code's default claude-opus-5-5
    try:
        pane.wait_for("❯")
        pane.enter("/context")
        shown = pane.wait_for(r"Auto-compact window:\s+(\S+) tokens")
        # /context fires its count_tokens calls before it draws: wait for their lines.
        deadline = time.monotonic() + BOUND
        while "count_tokens" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        pane.kill()
    counted = [m.groups() for m in REQUEST.finditer(log.read_text()) if "count_tokens" in m[1]]
    assert counted, log.read_text()
    assert all(status == "200" for *_, status in counted), counted
    assert " status=404 " not in log.read_text()
    assert shown.group(1) == f"{window // 1000}k", shown.group(0)
