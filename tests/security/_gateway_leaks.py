"""The gateway's flows for the leak suite: a real gateway (in a thread, and
``copilot-host serve`` in a child process) serving, refusing and failing every way it
can, with what it answered (bodies and headers) and printed kept as evidence. The
client key of each run is a canary like the tokens: it may appear only in the listening
line that hands it out."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Protocol

import httpx2

from copilot_host.github import GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import GitHubEmulator
from tests.gateway._support import Gateway, running_gateway
from tests.security._support import files_under

GATEWAY_FLOWS = {
    "gateway.serve",
    "gateway.stream",
    "gateway.refusals",
    "gateway.not_logged_in",
    "gateway.login_failure",
    "gateway.401_relayed",
    "gateway.network_failure",
    "gateway.cli_json",
    "gateway.cli_debug",
    "gateway.cli_run",
}
CHAT = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}
MESSAGES = {
    "model": "claude-opus-5",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "hi"}],
}
SERVE_CHILD = Path(__file__).resolve().parents[1] / "gateway" / "serve_child.py"
RUN_CHILD = Path(__file__).resolve().parent / "run_child.py"
RUN_COMMAND = Path(__file__).resolve().parent / "run_command.py"


class Evidence(Protocol):
    texts: list[tuple[str, str]]
    canaries: set[str]

    def home(self) -> Path: ...

    def flow(self, name: str) -> None: ...

    def emulator(self, emu: GitHubEmulator) -> None: ...


class _Down(httpx2.AsyncBaseTransport):
    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused")


def _keep(ev: Evidence, gateway: Gateway) -> None:
    ev.canaries.add(gateway.key)
    ev.texts += gateway.seen
    ev.texts += [("gateway access line", line) for line in gateway.access.lines]
    ev.emulator(gateway.emulator)


def _refusals(gateway: Gateway) -> None:
    port = gateway.port
    for path, options in (
        ("/v1/models", {"host": f"evil.example:{port}"}),
        ("/v1/models", {"headers": {"Origin": "null"}}),
        ("/v1/models", {"key": False}),
        ("/v1/models", {"key": False, "headers": {"Authorization": "Bearer cph_wrong"}}),
        ("/v1/messages", {"key": False, "headers": {"x-api-key": "cph_wrong"}}),
        ("/v1/embeddings", {}),
        ("/v1/models/no-such-model", {}),
    ):
        gateway.raw("GET", path, **options)
    gateway.raw("GET", "/v1/chat/completions")
    gateway.raw("POST", "/v1/chat/completions", headers={"Content-Length": str(64 << 20)})
    gateway.raw("POST", "/v1/chat/completions", body=b"{not json")
    gateway.post("/v1/chat/completions", {**CHAT, "model": "no-such-model"})
    gateway.post("/v1/chat/completions", {**CHAT, "model": "gpt-5.5"})
    gateway.post("/v1/messages", {**MESSAGES, "model": "gpt-4.1"})


def gateway_flows(ev: Evidence) -> None:
    with GitHubEmulator() as emu, running_gateway(emu, ev.home()) as gateway:
        assert gateway.post("/v1/chat/completions", CHAT)[0] == 200
        assert gateway.post("/v1/messages", MESSAGES)[0] == 200
        assert gateway.post("/v1/responses", {"model": "gpt-5.5", "input": "hi"})[0] == 200
        assert gateway.get("/v1/models")[0] == 200
        assert gateway.get("/v1/models", headers={"anthropic-version": "2023-06-01"})[0] == 200
        ev.flow("gateway.serve")
        for path, body in (("/v1/chat/completions", CHAT), ("/v1/messages", MESSAGES)):
            status, _headers, _data = gateway.raw(
                "POST", path, body=json.dumps({**body, "stream": True}).encode()
            )
            assert status == 200
        ev.flow("gateway.stream")
        _refusals(gateway)
        ev.flow("gateway.refusals")
        emu.revoke_sessions()
        # route.auth retries with a new session, or (an exchange ran within the last
        # second) the Copilot API's 401 is answered 503 session_refused.
        assert gateway.post("/v1/chat/completions", CHAT)[0] in (200, 503)
        ev.flow("gateway.401_relayed")
        gateway.logout()
        assert gateway.post("/v1/chat/completions", CHAT)[0] == 503
        ev.flow("gateway.not_logged_in")
        gateway.login()
        emu.revoke_login()  # GitHub stops accepting the new login before it is used
        status, _headers, body = gateway.post("/v1/chat/completions", CHAT)
        assert (status, body["error"]["code"]) == (503, "login_invalid")
        ev.flow("gateway.login_failure")
        _keep(ev, gateway)
        ev.texts += [("gateway home", repr(sorted(os.listdir(gateway.home))))]

    with (
        GitHubEmulator() as emu,
        running_gateway(emu, ev.home(), transport=_Down()) as gateway,
    ):
        status, _headers, body = gateway.post("/v1/chat/completions", CHAT)
        assert (status, body["error"]["code"]) == (502, "network_error")
        ev.flow("gateway.network_failure")
        _keep(ev, gateway)

    for flow, options in (
        ("gateway.cli_json", ["--port", "0", "--json"]),
        ("gateway.cli_debug", ["--debug", "--port", "0", "--json"]),
    ):
        _serve_in_a_child(ev, options)
        ev.flow(flow)
    _run_in_a_child(ev)
    ev.flow("gateway.cli_run")


def _serve_in_a_child(ev: Evidence, options: list[str]) -> None:
    home = ev.home()
    with GitHubEmulator() as emu:
        with GitHubCopilotHost(
            store=CredentialStore(home, key_file=True), transport=emu.transport()
        ) as person:
            person.login(sleep=lambda _seconds: None)
        env = {
            **os.environ,
            "COPILOT_HOST_HOME": str(home),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        }
        child = subprocess.Popen(
            [sys.executable, str(SERVE_CHILD), str(emu.port), *options],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        try:
            assert child.stdout is not None
            listening: dict[str, Any] = json.loads(child.stdout.readline())
            key, base_url = listening["api_key"], listening["base_url"]
            ev.canaries.add(key)
            with httpx2.Client(timeout=30) as client:
                for headers in ({"Authorization": f"Bearer {key}"}, {"x-api-key": "cph_wrong"}):
                    answer = client.post(f"{base_url}/chat/completions", json=CHAT, headers=headers)
                    ev.texts.append(("serve answer", answer.text))
                    ev.texts.append(("serve answer headers", repr(answer.headers.multi_items())))
                    answer = client.get(f"{base_url}/models", headers={**headers, "Origin": "null"})
                    ev.texts.append(("serve refusal", answer.text))
            ev.texts.append(("serve home", repr(sorted(os.listdir(home)))))
            child.send_signal(signal.SIGTERM)
            rest, stderr = child.communicate(timeout=30)
        finally:
            if child.poll() is None:
                child.kill()
                child.communicate()
        assert child.returncode == 143
        # After the listening line, which hands the key out, nothing may carry it.
        ev.texts.append(("serve stdout after the listening line", rest.decode()))
        ev.texts.append(("serve stderr", stderr.decode()))
        ev.emulator(emu)


def _run_in_a_child(ev: Evidence) -> None:
    """``copilot-host run`` on a login, its command a program that uses the gateway with
    the key from its environment: run's stdout and stderr, its --log file, every file under
    HOME and every command line seen while it ran are evidence; the key is a canary too
    (run hands it out in the command's environment only)."""
    home = ev.home()
    report = home.parent.parent / "run-report.json"  # outside every home the suite searches
    log = home / "run.log"
    with GitHubEmulator() as emu:
        with GitHubCopilotHost(
            store=CredentialStore(home, key_file=True), transport=emu.transport()
        ) as person:
            person.login(sleep=lambda _seconds: None)
        env = {
            **os.environ,
            "HOME": str(home),
            "COPILOT_HOST_HOME": str(home),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        }
        options = ["--log", str(log), "--", sys.executable, str(RUN_COMMAND), str(report)]
        done = subprocess.run(
            [sys.executable, str(RUN_CHILD), str(emu.port), *options],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=env,
            timeout=60,
            check=False,
        )
        assert (done.returncode, done.stdout, done.stderr) == (0, b"done\n", b""), done
        seen = json.loads(report.read_text(encoding="utf-8"))
        report.unlink()
        assert seen["statuses"] == [200, 200]
        # The emulator issued a session for the command's requests, and it answered them.
        assert emu.session_tokens and emu.requests_to("chat")
        ev.canaries.add(seen["key"])
        ev.texts += [("run: a command line seen while it ran", line) for line in seen["cmdlines"]]
        assert any(str(RUN_COMMAND) in line for line in seen["cmdlines"])
        ev.texts.append(("run stdout", done.stdout.decode()))
        ev.texts.append(("run stderr", done.stderr.decode()))
        logged = log.read_text(encoding="utf-8")
        assert " POST /v1/chat/completions model=gpt-4.1 status=200 " in logged
        ev.texts.append(("run --log file", logged))
        for name, data in files_under(home):
            ev.texts.append((f"run home: {name}", data.decode("latin-1")))
        ev.emulator(emu)
