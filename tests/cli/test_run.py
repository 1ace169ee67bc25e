"""``copilot-host run``: the installed command, over the built-in emulator, running a small
Python program (tests/cli/run_child.py) as its command: the environment the command sees,
where the key is (only there), exit statuses, signals, stdin, and the gateway's lifetime."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import Proc, child_env, console_script

CHILD = Path(__file__).resolve().parent / "run_child.py"
BOUND = 60.0


# What run's Codex profile adds for the emulator's account: the newest Responses model
# Codex ships metadata for, its window, and compaction at 90% of its prompt limit (922k of
# 1,050k).
CODEX_MODEL_ARGS = [
    "-c",
    'model="gpt-5.6-luna"',
    "-c",
    "model_context_window=1050000",
    "-c",
    "model_auto_compact_token_limit=829800",
]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A HOME for the command, holding everything run may write (TMPDIR included)."""
    folder = tmp_path / "home"
    (folder / "tmp").mkdir(parents=True)
    return folder


def _env(home: Path, **extra: str) -> dict[str, str]:
    return child_env(
        {
            "HOME": str(home),
            "TMPDIR": str(home / "tmp"),
            "COPILOT_HOST_HOME": str(home / "copilot-host"),
            **extra,
        }
    )


def _run(proc: Proc, home: Path, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    env = _env(home, **kwargs.pop("env", {}))
    return proc.script("run", *args, env=env, timeout=BOUND, **kwargs)


def _child(*args: str) -> list[str]:
    return ["--", sys.executable, str(CHILD), *args]


def test_the_command_sees_the_gateway_and_the_key_is_nowhere_else(proc: Proc, home: Path) -> None:
    log = home / "gateway.log"
    done = _run(
        proc,
        home,
        "--emulator",
        "--log",
        str(log),
        *_child("look"),
        env={
            "ANTHROPIC_API_KEY": "sk-ant-real-secret-canary",
            "CLAUDE_CODE_USE_BEDROCK": "1",
            "CLAUDE_CODE_USE_VERTEX": "1",
            "KEPT": "yes",
        },
    )
    assert done.returncode == 0, done.stderr
    # Nothing from run on the terminal once the command started, access lines included.
    assert done.stderr == ""
    seen = json.loads(done.stdout)
    env = seen["env"]
    key = env["COPILOT_HOST_API_KEY"]
    assert key.startswith("cph_") and len(key) == 47
    assert env["OPENAI_API_KEY"] == env["ANTHROPIC_AUTH_TOKEN"] == key
    base_url = env["OPENAI_BASE_URL"]
    assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
    assert env["OPENAI_API_BASE"] == env["COPILOT_HOST_BASE_URL"] == base_url
    assert env["ANTHROPIC_BASE_URL"] == base_url.removesuffix("/v1")
    for removed in ("ANTHROPIC_API_KEY", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX"):
        assert env[removed] is None
    assert env["KEPT"] == "yes"
    assert seen["status"] == 200
    # Not on any command line, not in any file under HOME (the log file and the emulator's
    # throwaway folder included): only in the environment.
    assert seen["key_found_in"] == []
    logged = log.read_text()
    assert " GET /v1/models model=- status=200 " in logged
    assert logged.endswith(
        "copilot-host gateway (emulator) stopped after 1 request; "
        "0 model requests, credits none reported\n"
    )
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert key not in logged
    # The emulated login's folder is gone, and the real home folder was never made.
    assert list((home / "tmp").iterdir()) == []
    assert not (home / "copilot-host").exists()


@pytest.mark.parametrize("status", [0, 7])
def test_the_exit_status_is_the_commands(proc: Proc, home: Path, status: int) -> None:
    done = _run(proc, home, "--emulator", *_child("look", str(status)))
    assert done.returncode == status, done.stderr


def test_a_command_not_found_is_127_and_one_that_cannot_run_126(proc: Proc, home: Path) -> None:
    missing = _run(proc, home, "--emulator", "--", "copilot-host-no-such-command")
    assert missing.returncode == 127
    assert missing.stderr == "error: copilot-host-no-such-command: command not found\n"
    plain = home / "plain.txt"
    plain.write_text("not a program\n")
    for target, why in ((plain, "permission denied"), (home, "is a directory")):
        refused = _run(proc, home, "--emulator", "--", str(target))
        assert refused.returncode == 126
        assert refused.stderr == f"error: {target}: {why}\n"
    # Looked up before the gateway starts: no emulated login was made for them.
    assert list((home / "tmp").iterdir()) == []
    # Executable, but no program the kernel can run.
    garbage = home / "garbage"
    garbage.write_bytes(b"\x7fELF not really")
    garbage.chmod(0o755)
    refused = _run(proc, home, "--emulator", "--", str(garbage))
    assert refused.returncode == 126
    assert refused.stderr == f"error: {garbage}: cannot run it (Exec format error)\n"


def test_stdin_is_the_commands(proc: Proc, home: Path) -> None:
    done = _run(proc, home, "--emulator", *_child("stdin"), input="line one\nline two\n")
    assert done.returncode == 0
    assert json.loads(done.stdout) == {"stdin": "line one\nline two\n"}


def test_the_gateway_is_gone_once_the_command_exits(proc: Proc, home: Path) -> None:
    done = _run(proc, home, "--emulator", *_child("port"))
    assert done.returncode == 0
    port = json.loads(done.stdout)["port"]
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


def _read_line(child: subprocess.Popen[bytes], timeout: float = BOUND) -> dict[str, Any]:
    assert child.stdout is not None
    readable, _, _ = select.select([child.stdout], [], [], timeout)
    assert readable, "the command said nothing"
    line = child.stdout.readline()
    assert line, "the command ended"
    document: dict[str, Any] = json.loads(line)
    return document


def _run_waiting(
    home: Path, prefix: list[str] | None = None, *, cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """``run --emulator`` of a command that says it is ready, then waits for a signal (its
    lines on run's stdout, a pipe); behind ``prefix`` when given."""
    return subprocess.Popen(
        [*(prefix or []), str(console_script()), "run", "--emulator", *_child("wait")],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(home),
        cwd=cwd,
    )


def test_sigint_is_left_to_the_command_and_sigterm_is_passed_to_it(home: Path) -> None:
    run = _run_waiting(home)
    try:
        ready = _read_line(run)
        command = ready["ready"]
        # Ctrl-C goes to the terminal's whole foreground group; sent to run alone, it
        # shows run leaves it to the command (which here ignores nothing and got nothing).
        run.send_signal(signal.SIGINT)
        run.send_signal(signal.SIGTERM)
        assert _read_line(run) == {"got": "SIGTERM"}
        code = run.wait(BOUND)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.stderr is not None and run.stdout is not None
    stderr = run.stderr.read()
    run.stdout.close()
    run.stderr.close()
    assert code == 143
    assert stderr == b""
    with pytest.raises(ProcessLookupError):
        os.kill(command, 0)


def _ended(pid: int) -> bool:
    """Whether process ``pid`` has ended: gone, or a zombie its new parent has yet to reap
    (an orphan's parent is init or a subreaper, which may reap late)."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat_line.rpartition(")")[2].split()[0] in ("Z", "X")


@pytest.mark.skipif(
    not sys.platform.startswith("linux"),
    reason="PR_SET_PDEATHSIG is Linux's: elsewhere the command keeps running (README says so)",
)
@pytest.mark.parametrize(
    "signum",
    [signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT],
    ids=["SIGKILL", "SIGSEGV", "SIGABRT"],
)
def test_a_run_killed_by_a_signal_it_cannot_pass_on_leaves_its_command_a_sigterm(
    home: Path, signum: int
) -> None:
    """run dies without a word to its command (its gateway thread serving meanwhile):
    the kernel sends the command SIGTERM, as run itself would have (0.4.0: the command ran
    on, with a key to a gateway that was gone)."""
    run = _run_waiting(home)
    command: int | None = None
    try:
        command = _read_line(run)["ready"]
        run.send_signal(signum)
        assert run.wait(BOUND) == -signum
        # The command still writes to the pipe run shared with it.
        assert _read_line(run, timeout=10) == {"got": "SIGTERM"}
        deadline = time.monotonic() + 10
        while not _ended(command):
            assert time.monotonic() < deadline, "the command outlived run by 10 s"
            time.sleep(0.02)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        if command is not None and not _ended(command):
            os.kill(command, signal.SIGKILL)  # left running (0.4.0): not past this test
        assert run.stdout is not None and run.stderr is not None
        run.stdout.close()
        run.stderr.close()


def test_without_a_login_it_says_to_log_in(proc: Proc, home: Path) -> None:
    done = _run(proc, home, *_child("look"))
    assert done.returncode == 1
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert "copilot-host login" in line


def test_codex_gets_a_provider_at_the_gateway_and_a_model(proc: Proc, home: Path) -> None:
    """A stand-in named codex prints the arguments it got."""
    bin_dir = home / "bin"
    bin_dir.mkdir()
    codex = bin_dir / "codex"
    codex.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        "print(json.dumps({'argv': sys.argv[1:], 'base': os.environ['OPENAI_BASE_URL']}))\n"
    )
    codex.chmod(0o755)
    path = f"{bin_dir}:{os.environ['PATH']}"

    def codex_args(*args: str) -> tuple[list[str], str]:
        done = _run(proc, home, "--emulator", *args, env={"PATH": path})
        assert done.returncode == 0, done.stderr
        seen = json.loads(done.stdout)
        return seen["argv"], seen["base"]

    argv, base = codex_args("--", "codex", "exec", "hi")
    provider = "model_providers.copilot-host"
    assert argv == [
        "-c",
        f'{provider}.name="copilot-host"',
        "-c",
        f'{provider}.base_url="{base}"',
        "-c",
        f'{provider}.wire_api="responses"',
        "-c",
        f'{provider}.env_key="COPILOT_HOST_API_KEY"',
        "-c",
        f"{provider}.supports_websockets=true",
        "-c",
        'model_provider="copilot-host"',
        *CODEX_MODEL_ARGS,
        "exec",
        "hi",
    ]
    argv, _base = codex_args("--", "codex", "exec", "-m", "gpt-5.5", "hi")
    assert argv[-4:] == ["exec", "-m", "gpt-5.5", "hi"] and 'model="gpt-5.6-luna"' not in argv
    argv, _base = codex_args("--default-model", "gpt-5.4", "--", "codex", "exec", "hi")
    assert 'model="gpt-5.4"' in argv
    # Another program of another name gets its arguments as given.
    done = _run(proc, home, "--emulator", *_child("port"))
    assert done.returncode == 0


def test_readmes_run_commands_work_as_written(proc: Proc, home: Path) -> None:
    """Each ``copilot-host run`` line of README, with --emulator added and stand-ins of the
    agents (each prints the arguments it got and whether the gateway answers its key)."""
    import shlex

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Use it with coding agents\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("copilot-host run ")]
    assert len(lines) == 6
    bin_dir = home / "bin"
    bin_dir.mkdir()
    for name in ("claude", "codex", "aider", "opencode", "copilot"):
        stand_in = bin_dir / name
        stand_in.write_text(
            f"#!{sys.executable}\nimport json, os, sys, urllib.request\n"
            "r = urllib.request.Request(os.environ['OPENAI_BASE_URL'] + '/models', "
            "headers={'Authorization': 'Bearer ' + os.environ['OPENAI_API_KEY']})\n"
            "status = urllib.request.urlopen(r, timeout=30).status\n"
            "print(json.dumps({'argv': sys.argv[1:], 'status': status}))\n"
        )
        stand_in.chmod(0o755)
    path = f"{bin_dir}:{os.environ['PATH']}"
    for line in lines:
        words = shlex.split(line)
        assert words[:2] == ["copilot-host", "run"]
        options = words[2:]
        if "--emulator" not in options:
            options.insert(0, "--emulator")
        done = _run(proc, home, *options, env={"PATH": path})
        assert done.returncode == 0, (line, done.stderr)
        seen = json.loads(done.stdout)
        assert seen["status"] == 200
        given = words[words.index("--") + 2 :]
        assert seen["argv"][len(seen["argv"]) - len(given) :] == given


def test_an_alias_to_a_model_the_account_lacks_is_a_usage_error_before_the_command(
    proc: Proc, home: Path
) -> None:
    done = _run(proc, home, "--emulator", "--model-alias", "fast=gpt-9", *_child("look"))
    assert done.returncode == 2
    assert "--model-alias fast=gpt-9: this account has no model 'gpt-9'" in done.stderr
    assert done.stdout == ""  # the command never ran
    assert list((home / "tmp").iterdir()) == []


def test_a_gateway_that_fails_while_the_command_runs_ends_it_with_one_line(
    home: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The foreground half of run, in this process: the gateway's thread reports a failure
    once the command is running; the command gets SIGTERM and one line says why."""
    import threading
    import time

    from copilot_host_cli._run import _foreground

    class FailingGateway:
        on_failure: Any = None

    gateway = FailingGateway()
    ready = home / "ready"
    script = (
        "import pathlib, signal, sys, time\n"
        "def on_term(signum, frame):\n"
        "    print('got SIGTERM', flush=True)\n"
        "    signal.signal(signum, signal.SIG_DFL)\n"
        "    signal.raise_signal(signum)\n"
        "signal.signal(signal.SIGTERM, on_term)\n"
        f"pathlib.Path({str(ready)!r}).touch()\n"
        "time.sleep(30)\n"
    )

    def fail_once_running() -> None:
        deadline = time.monotonic() + BOUND
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        gateway.on_failure(RuntimeError("boom"))

    before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    failing = threading.Thread(target=fail_once_running)
    failing.start()
    started = time.monotonic()
    code = _foreground([sys.executable, "-c", script], dict(os.environ), gateway)  # type: ignore[arg-type]
    failing.join()
    assert code == 143
    assert time.monotonic() - started < BOUND / 2
    out, err = capfd.readouterr()
    assert out == "got SIGTERM\n"
    assert err == "copilot-host run: the gateway stopped (RuntimeError); ending the command\n"
    # The handlers the test process had are back.
    assert {signum: signal.getsignal(signum) for signum in before} == before


def test_a_budget_refuses_the_commands_model_requests_once_reached(proc: Proc, home: Path) -> None:
    """The emulator reports 0.0425 credits per answer: the third reaches 0.1, the fourth
    request is refused; the log file says when the budget was reached and what was spent."""
    log = home / "gateway.log"
    done = _run(
        proc, home, "--emulator", "--max-credits", "0.1", "--log", str(log), *_child("spend", "4")
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # the budget's line is for the log file only
    answers = json.loads(done.stdout)["answers"]
    assert answers == [[200, None], [200, None], [200, None], [429, "budget_exhausted"]]
    lines = log.read_text().splitlines()
    (budget,) = [line for line in lines if "budget reached" in line]
    assert budget.endswith(
        "budget reached: 0.1275 of 0.1 AI credits reported; "
        "further model requests get 429 budget_exhausted"
    )
    refused = [line for line in lines if " status=429 " in line]
    assert len(refused) == 1 and " POST /v1/chat/completions model=gpt-4.1 " in refused[0]
    # The refused request was answered by the gateway, not relayed: three model requests.
    assert lines[-1] == (
        "copilot-host gateway (emulator) stopped after 4 requests; 3 model requests, "
        "credits 0.1275 (by model, requests/credits: gpt-4.1 3/0.1275)"
    )


# -- no core files -------------------------------------------------------------------------------


# Cores as large as they come (as many systems set), for the program that follows.
_CORES_UNLIMITED = ["sh", "-c", 'ulimit -c unlimited && exec "$@"', "sh"]


def _cores_are_observable(folder: Path) -> None:
    """Skip unless a process killed by SIGSEGV here leaves a core file in ``folder``: the
    kernel's ``core_pattern`` must name a file (``core``, ``core.%p``), not a pipe to a
    handler, and the hard limit must allow one. Checked with a plain Python child, so the
    test below can fail."""
    import resource

    pattern = Path("/proc/sys/kernel/core_pattern")
    if not pattern.exists() or pattern.read_text().startswith("|"):
        pytest.skip("core_pattern pipes cores to a handler: no core file to look for")
    if resource.getrlimit(resource.RLIMIT_CORE)[1] == 0:
        pytest.skip("the hard RLIMIT_CORE is 0 here")
    probe = folder / "probe"
    probe.mkdir()
    subprocess.run(
        [
            *_CORES_UNLIMITED,
            sys.executable,
            "-c",
            "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)",
        ],
        cwd=probe,
        check=False,
    )
    if not any(probe.iterdir()):
        pytest.skip("a crashing process leaves no core file in its folder here")


@pytest.mark.parametrize("signum", [signal.SIGQUIT, signal.SIGSEGV], ids=["SIGQUIT", "SIGSEGV"])
def test_run_writes_no_core_and_passes_sigquit_on(home: Path, tmp_path: Path, signum: int) -> None:
    _cores_are_observable(tmp_path)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    run = _run_waiting(home, _CORES_UNLIMITED, cwd=cwd)
    command: int | None = None
    try:
        command = _read_line(run)["ready"]
        run.send_signal(signum)
        if signum == signal.SIGQUIT:
            # Passed to the command like SIGTERM; run ends with the command's 128+3.
            assert _read_line(run) == {"got": "SIGQUIT"}
        code = run.wait(BOUND)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        if command is not None and signum == signal.SIGSEGV:
            with contextlib.suppress(ProcessLookupError):
                os.kill(command, signal.SIGKILL)
    assert run.stdout is not None and run.stderr is not None
    run.stdout.close()
    run.stderr.close()
    assert code == (131 if signum == signal.SIGQUIT else -signal.SIGSEGV)
    # Neither run nor the command (which inherits run's core limit) left a core.
    assert sorted(path.name for path in cwd.iterdir()) == []


# -- proxies -------------------------------------------------------------------------------------


class _RecordingProxy:
    """A loopback "proxy" that records what reaches it and answers nothing useful."""

    def __init__(self) -> None:
        import threading

        self.seen: list[bytes] = []
        self._socket = socket.create_server(("127.0.0.1", 0))
        self._socket.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._socket.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(2)
                try:
                    self.seen.append(connection.recv(65536) or b"(connected)")
                    connection.sendall(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
                except OSError:
                    self.seen.append(b"(connected)")

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._socket.close()


_OPENAI_AGENT = """\
import json, os, sys
import openai
client = openai.OpenAI(max_retries=0, timeout=30)
answer = client.chat.completions.create(
    model="gpt-4.1", messages=[{"role": "user", "content": "hi"}]
)
print(json.dumps({
    "argv": sys.argv[1:],
    "text": answer.choices[0].message.content,
    "no_proxy": [os.environ.get("NO_PROXY"), os.environ.get("no_proxy")],
}))
"""


def test_with_proxy_variables_set_no_request_to_the_gateway_reaches_the_proxy(
    proc: Proc, home: Path
) -> None:
    """An agent on the OpenAI SDK (which honours HTTP_PROXY/ALL_PROXY), named codex so that
    run also chooses its model: neither run's own lookup nor the agent goes to the proxy."""
    bin_dir = home / "bin"
    bin_dir.mkdir()
    codex = bin_dir / "codex"
    codex.write_text(f"#!{sys.executable}\n{_OPENAI_AGENT}")
    codex.chmod(0o755)
    proxy = _RecordingProxy()
    try:
        variables = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy")
        done = _run(
            proc,
            home,
            "--emulator",
            "--",
            "codex",
            "exec",
            "hi",
            env={
                "PATH": f"{bin_dir}:{os.environ['PATH']}",
                **dict.fromkeys(variables, proxy.url),
                "NO_PROXY": "example.internal",
            },
        )
    finally:
        proxy.close()
    assert proxy.seen == []
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["text"] == "echo: hi"
    assert 'model="gpt-5.6-luna"' in seen["argv"]  # run's lookup got its answer in-process
    # What the user had is kept; both spellings gain the gateway's names.
    assert seen["no_proxy"] == [
        "example.internal,127.0.0.1,localhost,::1",
        "127.0.0.1,localhost,::1",
    ]


# -- the log file --------------------------------------------------------------------------------


def test_log_refuses_a_fifo_without_blocking_and_a_hard_link(proc: Proc, home: Path) -> None:
    python = ["--", sys.executable, "-c", "pass"]
    fifo = home / "fifo"
    os.mkfifo(fifo)
    # Nobody reads the FIFO: an open that blocked would hold run (and serve) before they
    # start, until the timeout fails the test.
    for command in ("run", "serve"):
        args = python if command == "run" else ["--port", "0"]
        done = proc.script(
            command, "--emulator", "--log", str(fifo), *args, env=_env(home), timeout=BOUND
        )
        assert done.returncode == 1
        assert "is not a regular file of yours with one name" in done.stderr
    # A FIFO somebody reads is refused as well.
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        done = _run(proc, home, "--emulator", "--log", str(fifo), *python)
    finally:
        os.close(reader)
    assert done.returncode == 1 and "with one name" in done.stderr
    # A second name of another of the user's files: neither appended to nor made 0600.
    other = home / "notes.txt"
    other.write_text("mine\n")
    other.chmod(0o644)
    link = home / "gateway.log"
    os.link(other, link)
    done = _run(proc, home, "--emulator", "--log", str(link), *python)
    assert done.returncode == 1 and "with one name" in done.stderr
    assert other.read_text() == "mine\n"
    assert stat.S_IMODE(other.stat().st_mode) == 0o644
    # A regular file of the user's with one name is still used, and made 0600.
    link.unlink()
    done = _run(proc, home, "--emulator", "--log", str(other), *python)
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(other.stat().st_mode) == 0o600
    assert other.read_text().startswith("mine\n") and "stopped after" in other.read_text()


def _stand_ins(home: Path, *names: str) -> str:
    """Programs named like the agents that print their arguments and environment as JSON
    (and leave a mark that they ran); the PATH that finds them first."""
    bin_dir = home / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in names:
        program = bin_dir / name
        program.write_text(
            f"#!{sys.executable}\nimport json, os, pathlib, sys\n"
            f"pathlib.Path({str(home / 'ran')!r}).touch()\n"
            "print(json.dumps({'argv': sys.argv[1:], 'env': dict(os.environ)}))\n"
        )
        program.chmod(0o755)
    return f"{bin_dir}:{os.environ['PATH']}"


AGENTS = ("claude", "codex", "opencode", "aider", "copilot")


@pytest.mark.parametrize("agent", AGENTS)
def test_no_profile_puts_the_key_on_a_command_line_or_in_a_file(
    proc: Proc, home: Path, agent: str
) -> None:
    path = _stand_ins(home, agent)
    before = set(home.rglob("*"))
    done = _run(proc, home, "--emulator", "--", agent, "hi", env={"PATH": path})
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    key = seen["env"]["COPILOT_HOST_API_KEY"]
    assert not any(key in arg for arg in seen["argv"])
    assert seen["argv"][-1] == "hi"
    # Only the key variables hold it.
    holding = {name for name, value in seen["env"].items() if key in value}
    assert holding <= {
        "OPENAI_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "COPILOT_HOST_API_KEY",
        "COPILOT_PROVIDER_API_KEY",
    }
    for found in home.rglob("*"):
        if found.is_file() and found not in before:
            assert key.encode() not in found.read_bytes(), found
    # What each profile added reached the agent.
    env, argv = seen["env"], seen["argv"]
    if agent == "claude":
        assert env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] == "936000"
    elif agent == "codex":
        assert "model_context_window=1050000" in argv
    elif agent == "opencode":
        assert "copilot-host" in json.loads(env["OPENCODE_CONFIG_CONTENT"])["provider"]
    elif agent == "aider":
        assert argv[:2] == ["--model", "openai/gpt-5-mini"]  # the inventory's chat default
    else:
        assert env["COPILOT_PROVIDER_API_KEY"] == key


def test_print_profile_prints_the_settings_with_the_key_as_KEY_and_runs_nothing(
    proc: Proc, home: Path
) -> None:
    path = _stand_ins(home, "copilot")
    done = _run(
        proc,
        home,
        "--emulator",
        "--print-profile",
        "--",
        "copilot",
        "-p",
        "hi there",
        env={"PATH": path, "COPILOT_MODEL": "gpt-4.1"},
    )
    assert done.returncode == 0, done.stderr
    assert not (home / "ran").exists()
    *variables, command = done.stdout.splitlines()
    settings = dict(line.split("=", 1) for line in variables)
    assert settings["COPILOT_PROVIDER_API_KEY"] == settings["OPENAI_API_KEY"] == "KEY"
    assert settings["COPILOT_PROVIDER_TYPE"] == "openai"
    assert settings["COPILOT_PROVIDER_BASE_URL"] == settings["OPENAI_BASE_URL"]
    assert "COPILOT_MODEL" not in settings  # the user's own stands
    assert command == f"{home / 'bin' / 'copilot'} -p 'hi there'"
    assert "cph_" not in done.stdout + done.stderr
    # An agent that is not installed here can still be printed for.
    done = _run(proc, home, "--emulator", "--print-profile", "--", "aider", env={"PATH": path})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].startswith("aider --model openai/")
