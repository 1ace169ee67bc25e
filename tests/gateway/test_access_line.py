"""Where a request's access line goes: the access logger (an INFO record, as logging's
``.info`` would make it), or ``create_app(access_line=...)``, which takes the same text
and leaves the logger without it."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from copilot_host.gateway import ACCESS_LOGGER
from copilot_host.testing import GitHubEmulator
from tests.gateway._support import running_gateway

CHAT = {"model": "github-copilot/gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}
LINE = re.compile(
    r"POST /v1/chat/completions model=github-copilot/gpt-4\.1->gpt-4\.1 status=200 "
    r"bytes=\d+ \d+\.\dms credits=0\.0425"
)


def test_the_access_logger_gets_one_info_record_per_request(
    emulator: GitHubEmulator, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    with running_gateway(emulator, tmp_path / "home") as gateway:
        status, _headers, _body = gateway.post("/v1/chat/completions", CHAT)
        assert status == 200
        status, _headers, _body = gateway.get("/v1/models")
        assert status == 200
    records = [r for r in caplog.records if r.name == ACCESS_LOGGER]
    assert [r.levelno for r in records] == [logging.INFO, logging.INFO]
    assert LINE.fullmatch(records[0].getMessage()), records[0].getMessage()
    assert records[1].getMessage().startswith("GET /v1/models model=- status=200 ")
    # A record like .info() makes, but for the caller's place, which it does not look up.
    assert (records[0].funcName, records[0].args) == ("log", ())


def test_an_access_line_callable_takes_the_same_text_instead_of_the_logger(
    emulator: GitHubEmulator, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    taken: list[str] = []
    with running_gateway(emulator, tmp_path / "home", access_line=taken.append) as gateway:
        status, _headers, _body = gateway.post("/v1/chat/completions", CHAT)
        assert status == 200
        status, _headers, _body = gateway.post("/v1/chat/completions", {"model": "nope"})
        assert status == 404
    assert len(taken) == 2
    assert LINE.fullmatch(taken[0]), taken[0]
    assert taken[1].startswith("POST /v1/chat/completions model=nope status=404 ")
    assert not [r for r in caplog.records if r.name == ACCESS_LOGGER]
    assert gateway.access.lines == []
