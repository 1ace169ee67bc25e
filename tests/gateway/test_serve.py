"""``copilot-host serve`` itself: in a child process (the real signals, the real stdout),
against an emulator in this one; and in-process for what fails before it listens."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import resource
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

import httpx2
import openai
import pytest
from click.testing import CliRunner
from copilot_host_cli import main
from copilot_host_cli._context import CliSeam

from copilot_host.gateway._server._stack import PURE_PYTHON_ENV
from copilot_host.github import AsyncGitHubCopilotHost, GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import Faults, GitHubEmulator, Replies, Scenario, Usage
from tests.security._support import TOKEN_SHAPES

CHILD = Path(__file__).resolve().parent / "serve_child.py"
LISTENING = re.compile(
    r'\{"v": 1, "event": "listening", "base_url": "http://127\.0\.0\.1:(\d+)/v1", '
    r'"api_key": "(cph_[A-Za-z0-9_-]{43})"\}'
)
CHAT = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}
BOUND = 30.0  # seconds any single wait below may take before the test fails


class _Lines:
    """Everything a child writes to one pipe, read on a thread (so the child never blocks
    on a full pipe), with a wait for a line that matches."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._done = False
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[bytes]) -> None:
        for raw in stream:
            with self._changed:
                self.lines.append(raw.decode("utf-8", "replace"))
                self._changed.notify_all()
        with self._changed:
            self._done = True
            self._changed.notify_all()

    def wait_for(self, pattern: str) -> str:
        with self._changed:
            found = self._changed.wait_for(
                lambda: self._done or any(re.search(pattern, line) for line in self.lines), BOUND
            )
            matches = [line for line in self.lines if re.search(pattern, line)]
        assert found and matches, f"no line matching {pattern!r} in {self.lines}"
        return matches[0]

    def text_so_far(self) -> str:
        with self._changed:
            return "".join(self.lines)

    def text(self) -> str:
        self._thread.join(BOUND)
        return "".join(self.lines)


@dataclass
class Served:
    child: subprocess.Popen[bytes]
    out: _Lines
    err: _Lines
    home: Path
    emulator: GitHubEmulator
    key: str = ""
    base_url: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def stop(self, signum: int) -> tuple[int, str, str]:
        self.child.send_signal(signum)
        try:
            code = self.child.wait(BOUND)
        except subprocess.TimeoutExpired:
            self.child.kill()
            raise AssertionError("serve did not stop") from None
        return code, self.out.text(), self.err.text()

    def leaks(self, *texts: str) -> list[str]:
        secrets = [*self.emulator.canaries()]
        found = []
        for text in texts:
            found += [f"canary {s[:4]}..." for s in secrets if s in text]
            found += [m.group()[:6] for m in TOKEN_SHAPES.finditer(text)]
        return found


def _login(emulator: GitHubEmulator, home: Path) -> None:
    home.mkdir(mode=0o700, exist_ok=True)
    with GitHubCopilotHost(
        store=CredentialStore(home, key_file=True), transport=emulator.transport()
    ) as person:
        person.login(sleep=lambda _seconds: None)


def _env(home: Path, *, pure_python: bool = False) -> dict[str, str]:
    """The child's environment: on the default server stack, or on the pure-Python one."""
    env = dict(os.environ)
    env.pop(PURE_PYTHON_ENV, None)
    if pure_python:
        env[PURE_PYTHON_ENV] = "1"
    env["COPILOT_HOST_HOME"] = str(home)
    # The child cannot see the suite's in-memory keyring; make sure it finds no real one.
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
    return env


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    """``serve(*options, scenario=, logged_in=, home=, open_files=, read_stderr=)`` starts
    ``copilot-host serve`` in a child process on an emulator of its own (under the open-file
    limits ``(soft, hard)`` when given; its stderr a pipe nobody reads with
    ``read_stderr=False``; on the pure-Python server stack with ``pure_python=True``); the
    child is killed if the test left it."""
    started: list[Served] = []
    emulators: list[GitHubEmulator] = []

    def start(
        *options: str,
        scenario: Scenario | None = None,
        logged_in: bool = True,
        home: Path | None = None,
        open_files: tuple[int, int] | None = None,
        read_stderr: bool = True,
        pure_python: bool = False,
    ) -> Served:
        emulator = GitHubEmulator(scenario).start()
        emulators.append(emulator)
        home = home if home is not None else tmp_path / f"home-{len(started)}"
        if logged_in:
            _login(emulator, home)
        prefix = _limited(*open_files) if open_files else [sys.executable]
        child = subprocess.Popen(
            [*prefix, str(CHILD), str(emulator.port), *options],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(home, pure_python=pure_python),
        )
        assert child.stdout is not None and child.stderr is not None
        # Unread, the child's stderr is a pipe nobody reads until the test starts reading.
        err = _Lines(child.stderr) if read_stderr else _Lines(cast(IO[bytes], _Nothing()))
        served = Served(child, _Lines(child.stdout), err, home, emulator)
        started.append(served)
        return served

    try:
        yield start
    finally:
        for served in started:
            if served.child.poll() is None:
                served.child.kill()
                served.child.wait()
            served.out.text(), served.err.text()  # the readers reach the end of the pipes
            for pipe in (served.child.stdout, served.child.stderr):
                if pipe is not None:
                    pipe.close()
        for emulator in emulators:
            emulator.stop()


@contextlib.contextmanager
def open_files_for(wanted: int) -> Iterator[None]:
    """This process may hold ``wanted`` descriptors (its soft limit raised while inside;
    the test skipped when the hard limit is lower)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < wanted:
        pytest.skip(f"the hard open-file limit ({hard}) is below {wanted}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


class _Nothing:
    """A stream with no lines (the stand-in reader of an unread stderr)."""

    def __iter__(self) -> Iterator[bytes]:
        return iter(())


def _limited(soft: int, hard: int) -> list[str]:
    """A command prefix that runs the rest under these open-file limits (set in the child
    before it becomes serve: no preexec_fn, which is unsafe beside threads)."""
    set_then_exec = (
        "import os, resource, sys; "
        f"resource.setrlimit(resource.RLIMIT_NOFILE, ({soft}, {hard})); "
        "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
    )
    return [sys.executable, "-c", set_then_exec]


def _listening(served: Served) -> None:
    line = served.out.wait_for("listening")
    match = LISTENING.fullmatch(line.rstrip("\n"))
    assert match, line
    served.base_url = f"http://127.0.0.1:{match.group(1)}/v1"
    served.key = match.group(2)


def _port(served: Served) -> int:
    return int(served.base_url.rsplit(":", 1)[1].split("/")[0])


# -- in a child process ------------------------------------------------------------------------


def _environ_of(pid: int) -> bytes:
    """``/proc/PID/environ`` of serve, which makes itself non-dumpable: root's to read."""
    if os.geteuid() != 0:
        pytest.skip("serve is not dumpable: only root reads its /proc/PID/environ")
    return Path(f"/proc/{pid}/environ").read_bytes()


@pytest.mark.parametrize("pure", [False, True], ids=["default", "pure-python"])
def test_json_mode_one_listening_line_a_0600_key_file_and_sigterm_143(
    serve: Any, pure: bool
) -> None:
    served = serve("--port", "0", "--json", pure_python=pure)
    _listening(served)
    key_file = served.home / f"gateway-{_port(served)}.key"
    assert (key_file.stat().st_mode & 0o777) == 0o600
    assert key_file.read_text() == served.key + "\n"
    # A program reads the key from the file and uses the gateway with it.
    with openai.OpenAI(base_url=served.base_url, api_key=key_file.read_text().strip()) as client:
        answer = client.chat.completions.create(**CHAT)  # type: ignore[call-overload]
    assert answer.choices[0].message.content == "echo: hi"
    # The key is nowhere in the process's command line or environment.
    assert served.key.encode() not in Path(f"/proc/{served.child.pid}/cmdline").read_bytes()
    assert served.key.encode() not in _environ_of(served.child.pid)
    served.err.wait_for("POST /v1/chat/completions")
    code, stdout, stderr = served.stop(signal.SIGTERM)
    assert code == 143
    # The listening line and nothing after it, not even the signal's error document.
    assert stdout.count("\n") == 1 and LISTENING.fullmatch(stdout.rstrip("\n"))
    assert not key_file.exists()
    assert "terminated" in stderr
    access = [line for line in stderr.splitlines() if "POST /v1/chat/completions" in line]
    assert len(access) == 1
    # The cost the answer reported, in AI credits, ends the line.
    assert re.search(r"model=gpt-4\.1 status=200 bytes=\d+ [\d.]+ms credits=0\.0425$", access[0])
    # One stop line: requests, credits, per model.
    (stop,) = [line for line in stderr.splitlines() if "copilot-host gateway stopped" in line]
    assert "stopped after 1 request; 1 model requests, credits 0.0425 (by model" in stop
    assert served.key not in stderr
    assert served.leaks(stdout, stderr) == []


@pytest.mark.parametrize("pure", [False, True], ids=["default", "pure-python"])
def test_sigint_lets_a_request_in_flight_finish_then_exits_130(serve: Any, pure: bool) -> None:
    served = serve(
        "--port",
        "0",
        "--json",
        scenario=Scenario(faults=Faults(slow={"chat": 1.0})),
        pure_python=pure,
    )
    _listening(served)
    results: list[int] = []

    def ask() -> None:
        with httpx2.Client(timeout=BOUND) as client:
            answer = client.post(
                f"{served.base_url}/chat/completions",
                json=CHAT,
                headers={"Authorization": f"Bearer {served.key}"},
            )
            results.append(answer.status_code)

    asking = threading.Thread(target=ask)
    asking.start()
    deadline = time.monotonic() + BOUND
    while not served.emulator.requests_to("chat"):
        assert time.monotonic() < deadline, "the request never reached upstream"
        time.sleep(0.01)
    code, stdout, stderr = served.stop(signal.SIGINT)
    asking.join(BOUND)
    assert results == [200]  # finished, although the signal came while it was upstream
    assert code == 130
    assert stdout.count("\n") == 1
    assert "interrupted" in stderr
    assert not list(served.home.glob("gateway-*.key"))
    assert served.leaks(stdout, stderr) == []


@pytest.mark.parametrize("pure", [False, True], ids=["default", "pure-python"])
def test_a_stream_cut_upstream_is_one_warning_line_and_no_traceback(serve: Any, pure: bool) -> None:
    """GitHub (or a proxy) drops a stream mid-answer: the client's connection is cut, and
    stderr says so in one line; uvicorn's traceback for the error that cuts it is left out."""
    served = serve(
        "--port", "0", "--json", scenario=Scenario(replies=Replies(stream_cut=1)), pure_python=pure
    )
    _listening(served)
    with (
        httpx2.Client(timeout=BOUND) as client,
        client.stream(
            "POST",
            f"{served.base_url}/chat/completions",
            json={**CHAT, "stream": True},
            headers={"Authorization": f"Bearer {served.key}"},
        ) as answer,
        pytest.raises(httpx2.RemoteProtocolError),
    ):
        for _chunk in answer.iter_raw():
            pass
    served.err.wait_for("POST /v1/chat/completions")
    code, stdout, stderr = served.stop(signal.SIGTERM)
    assert code == 143
    cut = [line for line in stderr.splitlines() if "ended early" in line]
    assert cut == [
        "WARNING copilot_host.gateway: relay of /v1/chat/completions ended early: "
        "RemoteProtocolError"
    ]
    assert "Traceback" not in stderr and "Exception in ASGI application" not in stderr
    assert served.leaks(stdout, stderr) == []


def test_people_are_told_where_it_listens_and_how_to_point_tools_at_it(serve: Any) -> None:
    served = serve("--port", "0")
    line = served.err.wait_for("listening on")
    base_url = re.search(r"http://127\.0\.0\.1:\d+/v1", line)
    assert base_url
    served.err.wait_for("Ctrl-C")
    code, stdout, stderr = served.stop(signal.SIGINT)
    assert code == 130
    assert stdout == ""
    root = base_url.group().removesuffix("/v1")
    assert "octocat" in stderr
    assert f'OpenAI(base_url="{base_url.group()}", api_key=KEY)' in stderr
    assert f'Anthropic(base_url="{root}", api_key=KEY)' in stderr
    assert f"curl {base_url.group()}/models" in stderr
    assert f"OPENAI_BASE_URL={base_url.group()}" in stderr
    assert f"ANTHROPIC_BASE_URL={root} " in stderr
    keys = re.findall(r"cph_[A-Za-z0-9_-]{43}", stderr)
    assert len(keys) == 1  # shown once
    assert served.leaks(stdout, stderr) == []


def _recording_curl(folder: Path) -> tuple[dict[str, str], Path]:
    """A PATH whose ``curl`` notes its arguments, then runs the real one."""
    real = shutil.which("curl")
    assert real is not None
    folder.mkdir()
    wrapper = folder / "curl"
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "$CURL_ARGS"\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    args = folder / "args"
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}", "CURL_ARGS": str(args)}, args


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_the_curl_it_suggests_works_and_keeps_the_key_off_the_command_line(
    serve: Any, tmp_path: Path
) -> None:
    served = serve("--port", "0")
    served.err.wait_for("Ctrl-C")
    lines = served.err.text_so_far().splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("curl "))
    command = lines[start].split(None, 1)[1] + "\n" + lines[start + 1].strip()
    key = re.findall(r"cph_[A-Za-z0-9_-]{43}", "\n".join(lines))[0]
    recording, args = _recording_curl(tmp_path / "bin")
    done = subprocess.run(
        ["sh", "-c", command],
        capture_output=True,
        text=True,
        env={**_env(served.home), **recording},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert '"gpt-4.1"' in done.stdout
    assert "/models -K -" in args.read_text()
    assert key not in args.read_text()
    assert served.stop(signal.SIGINT)[0] == 130


def test_it_starts_logged_out_and_says_so(serve: Any) -> None:
    served = serve("--port", "0", "--json", logged_in=False)
    _listening(served)
    with httpx2.Client(timeout=BOUND) as client:
        answer = client.get(
            f"{served.base_url}/models", headers={"Authorization": f"Bearer {served.key}"}
        )
    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == "not_logged_in"
    assert served.stop(signal.SIGTERM)[0] == 143


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="this machine has no IPv6 loopback")
def test_on_ipv6_loopback_the_base_url_names_it(serve: Any) -> None:
    served = serve("--port", "0", "--json", "--host", "::1")
    line = served.out.wait_for("listening")
    document = json.loads(line)
    assert re.fullmatch(r"http://\[::1\]:\d+/v1", document["base_url"])
    with httpx2.Client(timeout=BOUND) as client:
        answer = client.get(
            f"{document['base_url']}/models",
            headers={"Authorization": f"Bearer {document['api_key']}"},
        )
    assert answer.status_code == 200
    assert served.stop(signal.SIGTERM)[0] == 143


def test_localhost_binds_127_0_0_1_and_debug_stays_redacted(serve: Any) -> None:
    served = serve("--debug", "--port", "0", "--json", "--host", "localhost")
    _listening(served)  # the base URL names 127.0.0.1
    with httpx2.Client(timeout=BOUND) as client:
        for headers in ({"Authorization": f"Bearer {served.key}"}, {"x-api-key": "wrong"}):
            client.post(f"{served.base_url}/chat/completions", json=CHAT, headers=headers)
    served.err.wait_for("status=401")
    code, stdout, stderr = served.stop(signal.SIGTERM)
    assert code == 143
    assert "DEBUG" in stderr  # the details --debug adds, the HTTP stack's included
    assert "refused (401 invalid_api_key)" in stderr
    assert served.key not in stderr
    assert served.leaks(stdout, stderr) == []


def test_a_stale_key_file_is_replaced_and_removed(serve: Any, tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    home = tmp_path / "stale"
    home.mkdir(mode=0o700)
    stale = home / f"gateway-{port}.key"
    stale.write_text("cph_left-by-a-gateway-that-was-killed\n")
    stale.chmod(0o644)
    served = serve("--port", str(port), "--json", home=home)
    _listening(served)
    assert stale.read_text() == served.key + "\n"
    assert (stale.stat().st_mode & 0o777) == 0o600
    assert served.stop(signal.SIGTERM)[0] == 143
    assert not stale.exists()


# -- before it listens (in-process) ------------------------------------------------------------


def _run(*args: str) -> Any:
    return CliRunner().invoke(main, list(args), obj=CliSeam(), catch_exceptions=False)


def test_https_settings_that_cannot_work_are_one_typed_error_before_it_listens(
    copilot_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gateway's own HTTPS client (no test transport here) cannot be built: one JSON
    error event and one stderr line, exit 1, no key file left, and no server traceback."""
    with GitHubEmulator() as emulator:
        transport = emulator.async_transport()  # made before the setting breaks TLS
        seam = CliSeam(
            async_host_factory=lambda *, store, clock: AsyncGitHubCopilotHost(
                store=store, transport=transport
            )
        )
        monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
        result = CliRunner().invoke(
            main, ["serve", "--port", "0", "--json"], obj=seam, catch_exceptions=False
        )
    assert result.exit_code == 1
    event = json.loads(result.stdout)
    assert (event["event"], event["code"], event["retryable"]) == ("error", "network_config", False)
    assert "SSL_CERT_FILE" in event["message"]
    assert result.stderr.startswith("error: the gateway could not set up its HTTPS client")
    assert "Traceback" not in result.stderr
    assert not list(copilot_home.glob("gateway-*.key"))


@pytest.mark.parametrize("address", ["0.0.0.0", "::", "192.168.1.10", "example.com", "127.0.0.2"])
def test_an_address_that_is_not_loopback_is_a_usage_error(address: str) -> None:
    result = _run("serve", "--host", address)
    assert result.exit_code == 2
    assert "not a loopback address" in result.stderr
    assert "127.0.0.1, ::1 or localhost" in result.stderr
    assert result.stdout == ""


def test_a_port_in_use_fails_before_anything_is_written(copilot_home: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = _run("serve", "--port", str(port), "--json")
    assert result.exit_code == 1
    event = json.loads(result.stdout)
    assert (event["v"], event["event"], event["code"]) == (1, "error", "port_in_use")
    assert "--port 0" in event["message"]
    assert not list(copilot_home.glob("gateway-*.key"))


def test_a_key_file_held_by_a_running_gateway_is_left_alone(copilot_home: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    held = copilot_home / f"gateway-{port}.key"
    held.write_text("cph_the-other-gateways-key\n")
    held.chmod(0o600)
    lock = copilot_home / f"gateway-{port}.lock"
    lock.touch(mode=0o600)
    with lock.open("rb") as other:
        fcntl.flock(other, fcntl.LOCK_EX)  # what a running gateway holds: the port's lock
        result = _run("serve", "--port", str(port))
    assert result.exit_code == 1
    assert "another copilot-host serve" in result.stderr
    assert held.read_text() == "cph_the-other-gateways-key\n"


def test_help_has_examples_and_the_json_line() -> None:
    result = _run("serve", "--help")
    assert result.exit_code == 0
    assert "copilot-host serve --port 0 --json" in result.stdout
    assert '{"v": 1, "event": "listening"' in result.stdout
    assert "4141" in result.stdout
    listing = _run("--help")
    assert "serve" in listing.stdout


@pytest.mark.parametrize(("family", "address"), [(socket.AF_INET, "127.0.0.1")])
def test_the_listening_socket_says_it_is_tcp(family: socket.AddressFamily, address: str) -> None:
    """asyncio turns Nagle's algorithm off only on sockets whose protocol is IPPROTO_TCP;
    a socket made with protocol 0 left it on, and every answer waited ~40 ms for the
    client's delayed ACK."""
    from copilot_host.gateway._server import bind

    listener = bind(address, 0)
    try:
        assert listener.proto == socket.IPPROTO_TCP
    finally:
        listener.close()


# -- README's "Use it from any language", as written -------------------------------------------

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
SECTION = README.split("## Use it from any language\n", 1)[1].split("\n## ", 1)[0]
BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```\n", SECTION, re.S | re.M)


def test_readme_gateway_commands_listen(serve: Any) -> None:
    commands = [
        shlex.split(line)
        for language, body in BLOCKS
        if language == "sh"
        for line in body.splitlines()
        if line.startswith("copilot-host serve")
    ]
    assert ["copilot-host", "serve"] in commands and len(commands) >= 3
    for words in commands:
        options = words[2:]
        ipv6 = "--host" in options and options[options.index("--host") + 1] == "::1"
        if ipv6 and not _ipv6_loopback():
            continue
        # The default port may be taken on a test machine: a free one instead.
        if "--port" not in options:
            options += ["--port", "0"]
        if "--json" not in options:
            options.append("--json")
        served = serve(*options)
        assert json.loads(served.out.wait_for("listening"))["event"] == "listening"
        assert served.stop(signal.SIGTERM)[0] == 143


def test_readme_gateway_snippets_run_as_written(serve: Any, tmp_path: Path) -> None:
    """The Python and curl examples, against a real serve whose port replaces 4141."""
    served = serve("--port", "0", "--json")
    _listening(served)
    port = str(_port(served))
    env = {**_env(served.home), "HOME": str(served.home)}
    # The section's third Python block serves the gateway itself (create_app + serve); its
    # own test is tests/gateway/test_readme_serving.py: here only the clients of a serve.
    python = [
        body for language, body in BLOCKS if language == "python" and "create_app" not in body
    ]
    assert len(python) == 2
    for snippet in python:
        done = subprocess.run(
            [sys.executable, "-c", snippet.replace("4141", port)],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
        assert (done.returncode, done.stdout) == (0, "echo: Hello\n"), done.stderr
    (curl,) = [body for language, body in BLOCKS if language == "sh" and "curl" in body]
    recording, args = _recording_curl(tmp_path / "bin")
    done = subprocess.run(
        ["bash", "-c", f"set -e\n{curl.replace('4141', port)}"],
        capture_output=True,
        text=True,
        env={**env, **recording},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert '"gpt-4.1"' in done.stdout and "echo: Hello" in done.stdout
    assert args.read_text().count("\n") == 2  # both commands went through the wrapper
    assert served.key not in args.read_text()  # curl read the key on stdin
    assert served.stop(signal.SIGTERM)[0] == 143


def test_a_plan_that_can_use_only_auto_is_said_once_at_start(serve: Any) -> None:
    served = serve("--port", "0", scenario=Scenario(usage=Usage(usage_plan="free")))
    served.err.wait_for("Ctrl-C")
    code, _stdout, stderr = served.stop(signal.SIGINT)
    assert code == 130
    line = (
        "copilot-host serve: this plan (free) can use only Auto model selection; requests "
        "that name a model are refused: use the model auto"
    )
    assert stderr.splitlines().count(line) == 1
    # Said before the banner, so it is not lost among the access lines.
    assert stderr.index(line) < stderr.index("listening on")


def test_other_plans_start_without_it(serve: Any) -> None:
    served = serve("--port", "0")
    served.err.wait_for("Ctrl-C")
    _code, _stdout, stderr = served.stop(signal.SIGINT)
    assert "Auto model selection" not in stderr


def test_started_logged_out_it_says_so_at_the_first_registration(serve: Any) -> None:
    served = serve(
        "--port", "0", "--json", logged_in=False, scenario=Scenario(usage=Usage(usage_plan="free"))
    )
    _listening(served)
    _login(served.emulator, served.home)
    with httpx2.Client(timeout=BOUND) as client:
        answer = client.get(
            f"{served.base_url}/models", headers={"Authorization": f"Bearer {served.key}"}
        )
    assert answer.status_code == 200
    served.err.wait_for("can use only Auto model selection")
    _code, _stdout, stderr = served.stop(signal.SIGTERM)
    assert stderr.count("copilot-host serve: this plan (free) can use only Auto") == 1
