"""README.md: its opening commands, and every command and snippet it shows, exercised."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from copilot_host.store import CredentialStore

from .conftest import REPO, Cli

README = (REPO / "README.md").read_text(encoding="utf-8")
OPENING = """```
pip install . && copilot-host demo
pip install -e '.[test]' && pytest
```
"""
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)


def _blocks(language: str) -> list[str]:
    return [body for lang, body in _BLOCK.findall(README) if lang == language]


def _shell_commands() -> list[list[str]]:
    """Every ``copilot-host …`` invocation in README's shell blocks, in order."""
    commands = []
    for body in [*_blocks(""), *_blocks("sh")]:
        for line in body.splitlines():
            for part in line.split("&&"):
                words = shlex.split(part.split("|")[0], comments=True)
                if words[:1] == ["copilot-host"]:
                    commands.append(words[1:])
    return commands


def test_readme_opens_with_the_two_commands() -> None:
    assert README.startswith(OPENING)


def test_readme_shows_every_command() -> None:
    shown = {args[0] for args in _shell_commands()}
    assert shown == {
        "demo",
        "login",
        "status",
        "models",
        "usage",
        "doctor",
        "logout",
        "serve",
        "run",
    }


def _logged_in(cli: Cli, seam: Any) -> None:
    if CredentialStore().header() is None:
        assert cli("login", "--headless", seam=seam).exit_code == 0


# serve runs until stopped: tests/gateway/test_serve.py runs README's serve commands and
# snippets against it in a child process; tests/cli/test_run.py runs README's run commands.
@pytest.mark.usefixtures("copilot_home")
@pytest.mark.parametrize(
    "args", [a for a in _shell_commands() if a[0] not in ("serve", "run")], ids=" ".join
)
def test_readme_command_works(
    cli: Cli, emulate: Any, args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A command that writes a file (usage --report spend.html) writes it here.
    monkeypatch.chdir(tmp_path)
    env = emulate()
    if args[0] == "login":
        cli("logout")
    elif args[0] in ("status", "models", "usage", "doctor", "logout"):
        _logged_in(cli, env.seam)
    result = cli(*args, seam=env.seam)
    assert result.exit_code == 0, result.stderr
    if "--report" in args:
        page = (tmp_path / args[args.index("--report") + 1]).read_text(encoding="utf-8")
        assert page.startswith("<!DOCTYPE html>")
        assert "octocat: plan " in page  # logged in: the quota from the live lookup
    if "--json" in args:
        for line in result.stdout.splitlines():
            json.loads(line)


def test_readme_testing_snippet_runs_as_written(tmp_path: Path) -> None:
    (snippet,) = [b for b in _blocks("python") if "def test_my_app_talks_to_copilot" in b]
    namespace: dict[str, Any] = {}
    exec(compile(snippet, "README.md", "exec"), namespace)
    namespace["test_my_app_talks_to_copilot"](tmp_path)


def _run_against_the_emulator(
    tmp_path: Path, marker: str, client: str, endpoint: str, scenario: Any = None
) -> tuple[dict[str, Any], tuple[Any, ...], tuple[str, ...]]:
    """The README snippet holding ``marker``, its host and its ``httpx2.Client`` pointed at
    an emulator (of ``scenario``) a person has logged in to, run; its namespace (``client``
    closed, as the end of a script would close it), what reached ``endpoint`` and the
    session tokens issued (Copilot's, then Copilot Auto's)."""
    from copilot_host.github import GitHubCopilotHost
    from copilot_host.testing import GitHubEmulator

    (snippet,) = [b for b in _blocks("python") if marker in b]
    with GitHubEmulator(scenario) as emulator:
        store = CredentialStore(tmp_path / "home", key_file=True)
        with GitHubCopilotHost(store=store, transport=emulator.transport()) as h:
            h.login(sleep=lambda _seconds: None)
        rewritten = snippet.replace(
            "GitHubCopilotHost()",
            "GitHubCopilotHost(store=_store, transport=_emulator.transport())",
        ).replace(
            "httpx2.Client(auth=route.auth",
            "httpx2.Client(transport=_emulator.transport(), auth=route.auth",
        )
        assert rewritten.count("_emulator") == 2
        namespace: dict[str, Any] = {"_store": store, "_emulator": emulator}
        exec(compile(rewritten, "README.md", "exec"), namespace)
        namespace[client].close()
        issued = (*emulator.session_tokens, *emulator.auto_session_tokens)
        return namespace, emulator.requests_to(endpoint), issued


def test_readme_embedding_snippet_against_the_emulator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The embedding example with the real OpenAI SDK, pointed at the emulator by
    rewriting its two I/O lines."""
    namespace, chats, sessions = _run_against_the_emulator(
        tmp_path, "route.spec.display_name", "client", "chat"
    )
    assert namespace["answer"].choices[0].message.content == "echo: Hello"
    printed = capsys.readouterr().out
    assert "github-copilot/gpt-4.1 openai-chat GPT-4.1" in printed
    # The placeholder key never left the process: the session bearer replaced it.
    assert len(chats) == 1
    authorization = chats[0].headers["authorization"]
    assert authorization.startswith("Bearer ")
    assert authorization.removeprefix("Bearer ") in sessions


AUTO = "github-copilot/auto"


def test_readme_auto_snippet_on_a_free_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The Copilot Auto example with the real OpenAI SDK, on the emulator's Copilot Free
    plan (which may use only Auto), pointed at it by rewriting its two I/O lines."""
    from copilot_host.testing import Scenario, Usage

    free = Scenario(usage=Usage(usage_plan="free"))
    namespace, (sent,), issued = _run_against_the_emulator(tmp_path, AUTO, "client", "chat", free)
    answer = namespace["answer"]
    assert (answer.model, answer.choices[0].message.content) == ("gpt-5-mini", "echo: Hello")
    printed = capsys.readouterr().out.splitlines()
    assert printed == [
        "Auto picks from ('gpt-5-mini', 'claude-opus-4.6', 'gpt-5.3-codex')",
        "gpt-5-mini",
    ]
    # The request named the pick, and carried the Auto session registration obtained.
    assert json.loads(sent.body)["model"] == "gpt-5-mini"
    assert sent.headers["copilot-session-token"] == issued[-1]
    assert sent.refusal is None


def test_readme_anthropic_snippet_against_the_emulator(tmp_path: Path) -> None:
    """The Anthropic SDK example, after the first one registered the routes."""
    from copilot_host import Catalog, register_models
    from copilot_host.github import GitHubCopilotHost
    from copilot_host.testing import GitHubEmulator

    (snippet,) = [b for b in _blocks("python") if "anthropic.Anthropic" in b]
    with GitHubEmulator() as emulator:
        store = CredentialStore(tmp_path / "home", key_file=True)
        with GitHubCopilotHost(store=store, transport=emulator.transport()) as host:
            host.login(sleep=lambda _seconds: None)
            catalog = Catalog()
            register_models(catalog, host)
            rewritten = snippet.replace(
                "httpx2.Client(auth=route.auth)",
                "httpx2.Client(auth=route.auth, transport=_emulator.transport())",
            )
            assert rewritten.count("_emulator") == 1
            namespace: dict[str, Any] = {"catalog": catalog, "_emulator": emulator}
            exec(compile(rewritten, "README.md", "exec"), namespace)
            namespace["claude"].close()  # as the end of a script would
        (sent,) = emulator.requests_to("messages")
    assert namespace["reply"].content[0].text == "echo: Hello"
    assert sent.initiator == "user"
    assert sent.headers["authorization"].removeprefix("Bearer ") in emulator.session_tokens


def test_readme_embeddings_snippet_against_the_emulator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The embeddings example with the real OpenAI SDK and route.auth."""
    _namespace, (sent,), sessions = _run_against_the_emulator(
        tmp_path, "embeddings.create", "embedder", "embeddings"
    )
    assert capsys.readouterr().out == "[512, 512]\n"
    assert sent.refusal is None and sent.initiator is None
    assert sent.headers["authorization"].removeprefix("Bearer ") in sessions


def test_readme_async_snippet_against_the_emulator(tmp_path: Path) -> None:
    """The asyncio example, pointed at the emulator by rewriting its two I/O lines."""
    import asyncio

    from copilot_host import Catalog
    from copilot_host.github import GitHubCopilotHost
    from copilot_host.testing import GitHubEmulator

    (snippet,) = [b for b in _blocks("python") if "AsyncGitHubCopilotHost()" in b]
    with GitHubEmulator() as emulator:
        store = CredentialStore(tmp_path / "home", key_file=True)
        with GitHubCopilotHost(store=store, transport=emulator.transport()) as h:
            h.login(sleep=lambda _seconds: None)
        rewritten = snippet.replace(
            "AsyncGitHubCopilotHost()",
            "AsyncGitHubCopilotHost(store=_store, transport=_emulator.async_transport())",
        ).replace(
            "httpx2.AsyncClient(\n            auth=route.auth, ",
            "httpx2.AsyncClient(\n            transport=_emulator.async_transport(), "
            "auth=route.auth, ",
        )
        assert rewritten.count("_emulator") == 2
        namespace: dict[str, Any] = {"_store": store, "_emulator": emulator}
        exec(compile(rewritten, "README.md", "exec"), namespace)
        reply = asyncio.run(namespace["ask"](Catalog()))
        assert len(emulator.requests_to("chat")) == 1
    assert reply == "echo: Hello"
