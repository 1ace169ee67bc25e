"""Agents' own configuration files made hostile, as a repository a person checks out can
make them (DESIGN, hardening round 4, N5): a FIFO, a device, a folder, a symbolic-link loop,
a link to ``/proc/self/mem``, a file of gigabytes, bytes that are not UTF-8, and JSON nested
deeper than any parser should follow or that is no object. Each file is skipped (or, for
JSON, left out) at once, and the profile then adds nothing that file could have set
(tests/cli/test_run_edges.py shows ``run --print-profile`` saying which and why)."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from copilot_host.gateway._agents._configs import MAX_CONFIG_BYTES
from tests.gateway.test_agents import _setup

AIDER_ADDS = ("--model", "openai/gpt-5.4", "--weak-model", "openai/gpt-5-mini")
PROC_MEM = Path("/proc/self/mem")


def _fifo(path: Path) -> None:
    os.mkfifo(path)  # nobody writes it: an open that waited would hang the profile


def _device(path: Path) -> None:
    path.symlink_to("/dev/zero")  # endless: a read to its end would never finish


def _folder(path: Path) -> None:
    path.mkdir()


def _loop(path: Path) -> None:
    path.symlink_to(path.name)  # a link to itself


def _huge(path: Path) -> None:
    with path.open("wb") as file:
        file.truncate(2 * MAX_CONFIG_BYTES)  # sparse: two MiB read as zeros


def _not_utf8(path: Path) -> None:
    path.write_bytes(b"model: openai/x\n\xff\xfe\n")


def _memory(path: Path) -> None:
    path.symlink_to(PROC_MEM)  # a "regular file" whose first page is no memory at all


HOSTILE: list[tuple[str, Callable[[Path], None], str]] = [
    ("fifo", _fifo, "not a regular file"),
    ("device", _device, "not a regular file"),
    ("folder", _folder, "not a regular file"),
    ("loop", _loop, "Too many levels of symbolic links"),
    ("huge", _huge, "over 1024 KiB"),
    ("not-utf8", _not_utf8, "not UTF-8 text"),
    ("proc-mem", _memory, "Input/output error"),
]


def _hostile(make: Callable[[Path], None]) -> None:
    if make is _memory and not PROC_MEM.exists():
        pytest.skip("/proc/self/mem is Linux's")


# Each agent whose profile reads a file: the file, what its command line keeps, and what
# run says of a skipped file (the notes name it).
AGENTS = [
    ("aider", ".aider.conf.yml", ("--message", "hi"), ("aider's --model", "aider's --weak-model")),
    ("opencode", "opencode.json", ("run", "hi"), ("opencode's provider",)),
]


@pytest.mark.parametrize(("program", "name", "args", "unset"), AGENTS, ids=[a[0] for a in AGENTS])
@pytest.mark.parametrize(
    ("make", "reason"), [(m, r) for _, m, r in HOSTILE], ids=[i for i, _, _ in HOSTILE]
)
def test_a_hostile_config_file_is_skipped_and_the_profile_adds_nothing(
    tmp_path: Path,
    make: Callable[[Path], None],
    reason: str,
    program: str,
    name: str,
    args: tuple[str, ...],
    unset: tuple[str, ...],
) -> None:
    _hostile(make)
    work = tmp_path / "work"
    work.mkdir()
    path = work / name
    make(path)
    setup = _setup(program, *args, where=tmp_path)
    # The file could have set the model: run sets none, and says why.
    assert (setup.args, setup.env) == (args, {})
    assert setup.notes == tuple(f"{what} not set: {path} skipped ({reason})" for what in unset)


def test_a_link_to_nothing_is_no_file_at_all(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / ".aider.conf.yml").symlink_to(tmp_path / "gone")
    (work / ".env").symlink_to(tmp_path / "gone")
    setup = _setup("aider", where=tmp_path)
    assert setup.args == AIDER_ADDS and setup.notes == ()


def _deep(levels: int) -> str:
    return '{"theme": ' + "[" * levels + "]" * levels + "}"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        # Past the 256 levels the gateway reads, yet within what json.loads follows.
        (_deep(300), "nests too deep"),
        # Past what json.loads follows at all (it raises RecursionError).
        (_deep(200_000), "nests too deep"),
        ('["copilot-host/gpt-4.1"]', "is not a JSON object"),
    ],
    ids=["deeper-than-the-limit", "deeper-than-the-parser", "a-list"],
)
def test_opencode_json_that_is_no_usable_object_is_left_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, text: str, said: str
) -> None:
    """As opencode would refuse the file, it counts as not there: the provider is set, and
    one DEBUG line names the file."""
    work = tmp_path / "work"
    work.mkdir()
    path = work / "opencode.json"
    path.write_text(text)
    with caplog.at_level(logging.DEBUG, logger="copilot_host.gateway"):
        setup = _setup("opencode", "run", where=tmp_path)
    content = json.loads(setup.env["OPENCODE_CONFIG_CONTENT"])
    assert content["model"] == "copilot-host/gpt-5.4"
    assert "theme" not in content
    lines = [r.getMessage() for r in caplog.records if r.name == "copilot_host.gateway"]
    assert lines == [f"{path} {said}: left out"]
