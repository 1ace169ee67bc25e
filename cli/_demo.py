"""``copilot-host demo``: the whole journey against the built-in loopback emulator.

Everything happens in a throwaway folder passed explicitly to the store, with the data
key in a key file inside it: the demo never reads or writes the real login, never
touches the OS keyring, and never leaves the machine (the emulator's transport routes
GitHub's and Copilot's hosts to a loopback server in this process).
"""

from __future__ import annotations

import stat
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ._context import output
from ._failure import CliFailure
from ._format import clock_time
from ._output import CopilotHostCommand, Output

if TYPE_CHECKING:
    from copilot_host import CopilotDeviceLogin, ModelRoute
    from copilot_host.github import GitHubCopilotHost
    from copilot_host.store import CredentialStore

__all__ = ["demo"]

_EPILOG = """\b
Examples:
  copilot-host demo
  NO_COLOR=1 copilot-host demo > journey.txt
"""


class _Steps:
    """Numbered steps with their wall time; details indented under each."""

    def __init__(self, out: Output, total: int) -> None:
        self._out = out
        self._total = total
        self._n = 0
        self.started = time.perf_counter()

    @contextmanager
    def step(self, title: str) -> Iterator[list[str]]:
        self._n += 1
        details: list[str] = []
        t0 = time.perf_counter()
        try:
            yield details
        except Exception as exc:
            from copilot_host import CopilotHostError

            reason = exc.message if isinstance(exc, CopilotHostError) else type(exc).__name__
            raise CliFailure(
                "demo_failed", f"demo step {self._n} ({title}) failed: {reason}"
            ) from exc
        elapsed = clock_time(time.perf_counter() - t0)
        self._out.result(
            f"{self._out.good('ok')} [{self._n}/{self._total}] {title}  "
            + click.style(f"({elapsed})", dim=True)
        )
        for line in details:
            self._out.result(f"         {line}")


def _first(routes: tuple[ModelRoute, ...], protocol: Any) -> ModelRoute:
    for route in routes:
        if route.protocol is protocol:
            return route
    raise CliFailure("demo_failed", f"the emulator offered no {protocol.value} model")


def _reply_text(body: Any) -> str:
    """The assistant's text from a chat or responses answer (shape-tolerant)."""
    from copilot_host._internal import clean

    try:
        if "choices" in body:
            return clean(body["choices"][0]["message"]["content"], limit=80)
        if body.get("type") == "message":  # Anthropic Messages
            for block in body.get("content", []):
                if block.get("type") == "text":
                    return clean(block["text"], limit=80)
        for item in body.get("output", []):
            for part in item.get("content", []):
                if "text" in part:
                    return clean(part["text"], limit=80)
        if "output_text" in body:
            return clean(body["output_text"], limit=80)
    except (KeyError, IndexError, TypeError, AttributeError):
        pass
    return "(no text in the answer)"


def _post(route: ModelRoute, emulator: Any, body: dict[str, Any]) -> list[str]:
    """One inference request the way an application makes it: route.auth on the client."""
    import httpx2

    from copilot_host._internal import clean

    emulator.clear_requests()
    with httpx2.Client(auth=route.auth, transport=emulator.transport()) as client:
        answer = client.post(route.url, json=body)
        answer.raise_for_status()
    sent = emulator.requests[-1]
    value = answer.json()
    lines = [
        f"{clean(route.route_id)} answered: {_reply_text(value)}",
        f"sent with X-Initiator: {sent.initiator} "
        + ("(billed as a person's turn)" if sent.initiator == "user" else "(an agent's step)"),
    ]
    cost = _reported_cost(value)
    if cost is not None:
        lines.append(f"the answer reported its cost: {cost} AI credits (copilot_usage)")
    return lines


def _reported_cost(body: Any) -> str | None:
    """The cost an answer reports (``copilot_usage.total_nano_aiu``), in AI credits."""
    for holder in (body, body.get("usage") if isinstance(body, dict) else None):
        usage = holder.get("copilot_usage") if isinstance(holder, dict) else None
        nano = usage.get("total_nano_aiu") if isinstance(usage, dict) else None
        if isinstance(nano, int | float) and not isinstance(nano, bool):
            return f"{nano / 1e9:.4f}".rstrip("0").rstrip(".")
    return None


def _finish_login(
    host: GitHubCopilotHost, login: CopilotDeviceLogin, store: CredentialStore, token: str
) -> list[str]:
    """Poll once (the person has approved), then show what was stored and how."""
    from copilot_host import Authorized
    from copilot_host._internal import clean

    result = host.poll_device_login(login)
    if isinstance(result, Authorized):
        identity = result.identity
    else:
        from copilot_host import wait_for_device_login

        identity = wait_for_device_login(host, login)
    header = store.header()
    if header is None:
        raise CliFailure("demo_failed", "the login was not stored")
    if token.encode() in store.record_path.read_bytes():
        raise CliFailure("demo_failed", "the token is readable in the record")
    mode = stat.S_IMODE(store.record_path.stat().st_mode)
    where = "a key file beside it" if header.protection.kind == "key-file" else "the OS keyring"
    return [
        f"logged in as {clean(identity.account)}",
        f"record {store.record_path}: AES-256-GCM, mode {mode:04o}, no plain token in it",
        f"data key in {where} (the demo never uses your real keyring)",
    ]


def _journey(out: Output, steps: _Steps, home: Path, stack: ExitStack) -> None:
    from copilot_host import ApiProtocol, Catalog, register_models
    from copilot_host._internal import clean
    from copilot_host.github import GitHubCopilotHost
    from copilot_host.testing import DeviceFlow, GitHubEmulator, Scenario

    from ._emulated import throwaway_store

    with steps.step("started the loopback GitHub emulator") as details:
        # The emulated person approves only when step 3 says so.
        emulator = stack.enter_context(
            GitHubEmulator(Scenario(login=DeviceFlow(auto_approve=False)))
        )
        details.append("github.com, api.github.com and Copilot's hosts route to 127.0.0.1")
    # The throwaway home is passed explicitly and the key goes to a key file in it: the
    # real store, the OS keyring and the network are never involved.
    store = throwaway_store(home)
    host = stack.enter_context(GitHubCopilotHost(store=store, transport=emulator.transport()))
    with steps.step("GitHub issued a device code") as details:
        login = host.begin_device_login()
        details.append(
            f"a person would enter {out.strong(clean(login.user_code))} "
            f"at {clean(login.verification_uri)}"
        )
    with steps.step("authorization simulated") as details:
        emulator.authorize()
        details.append("the emulator approves the code, as the person would")
    with steps.step("Copilot access verified, login stored encrypted") as details:
        details.extend(_finish_login(host, login, store, _reveal(emulator.github_token)))
    with steps.step("registered the account's models") as details:
        registration = register_models(Catalog(), host)
        names = ", ".join(clean(r.route_id) for r in registration.routes[:4])
        more = ", ..." if len(registration.routes) > 4 else ""
        details.append(f"{len(registration.routes)} routes from {registration.origin}")
        details.append(names + more)
        reasons = Counter(s.reason for s in registration.skipped)
        if reasons:
            why = ", ".join(f"{n} {reason}" for reason, n in reasons.most_common())
            details.append(f"{len(registration.skipped)} inventory entries skipped ({why})")
    with steps.step("read the account's Copilot usage") as details:
        from ._usage import usage_lines

        details.extend(usage_lines(host.usage()))
    chat = _first(registration.routes, ApiProtocol.OPENAI_CHAT)
    with steps.step("Chat Completions request through route.auth") as details:
        body = {"model": chat.model_id, "messages": [{"role": "user", "content": "Say hello."}]}
        details.extend(_post(chat, emulator, body))
    responses = _first(registration.routes, ApiProtocol.OPENAI_RESPONSES)
    with steps.step("Responses request through route.auth") as details:
        body = {"model": responses.model_id, "input": "Say hello."}
        details.extend(_post(responses, emulator, body))
    messages = _first(registration.routes, ApiProtocol.ANTHROPIC_MESSAGES)
    with steps.step("Anthropic Messages request through route.auth") as details:
        turn: dict[str, Any] = {
            "model": messages.model_id,
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "Say hello."}],
        }
        details.extend(_post(messages, emulator, turn))
    with steps.step("logged out") as details:
        host.logout()
        if store.header() is not None:
            raise CliFailure("demo_failed", "the record is still there after logout")
        details.append("record and key removed; a real logout also points you to")
        details.append("https://github.com/settings/applications to revoke the access")


@click.command(cls=CopilotHostCommand, epilog=_EPILOG)
def demo() -> None:
    """Run the whole journey against a built-in GitHub emulator.

    Device code, simulated authorization, encrypted storage, model registration from a
    real-shaped inventory, the account's usage, one request per protocol (Chat
    Completions, Responses, Anthropic Messages) through route.auth with the cost each
    answer reported, and logout: all on this machine, in a throwaway folder. Your real
    login, keyring and network are never touched.
    """
    import tempfile

    out = output()
    steps = _Steps(out, total=10)
    out.result(
        out.strong("copilot-host demo: the whole journey against a loopback GitHub emulator")
    )
    with tempfile.TemporaryDirectory(prefix="copilot-host-demo-") as tmp, ExitStack() as stack:
        home = Path(tmp) / "home"
        out.result(f"throwaway home: {home} (your real login and keyring are untouched)")
        out.result()
        _journey(out, steps, home, stack)
    out.result()
    elapsed = clock_time(time.perf_counter() - steps.started)
    out.result(f"Done in {elapsed}. Next: `copilot-host login` for real.")


def _reveal(value: object) -> str:
    """The emulator's canary as text, whether it hands out a Secret or a str."""
    reveal = getattr(value, "reveal", None)
    return str(reveal()) if callable(reveal) else str(value)
