"""Helpers of the security suites: a raw DEBUG capture, canary searches, a CLI runner on the
emulator, and transports that fail on purpose."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from click.testing import CliRunner, Result
from copilot_host_cli import main
from copilot_host_cli._context import CliSeam

from copilot_host.github import GitHubCopilotHost
from copilot_host.testing import GitHubEmulator

# Shapes no captured text may contain, whatever the canary list says (the library and CLI
# never print a token of any kind, not only the ones this run issued).
TOKEN_SHAPES = re.compile(r"gh[oupsr]_[A-Za-z0-9_]{16,}|github_pat_[A-Za-z0-9_]{8,}|\btid=")


class RawCapture(logging.Handler):
    """Every log record at DEBUG, formatted with its traceback, and *never* redacted.

    The CLI attaches its redaction filter to every handler on the root logger; this one
    refuses filters, and sits first among the root's handlers (filters rewrite records in
    place, so a redacting handler ahead of it would hide a leak from it).
    """

    def __init__(self, ignore: str | None = None) -> None:
        super().__init__(logging.DEBUG)
        self.ignore = ignore
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        self.lines: list[str] = []
        self.refused_filters = 0

    def addFilter(self, filter: Any) -> None:
        self.refused_filters += 1

    def emit(self, record: logging.LogRecord) -> None:
        if record.name == self.ignore:
            return
        self.lines.append(self.format(record))


@contextmanager
def raw_capture(ignore: str | None = None) -> Iterator[RawCapture]:
    """Install a :class:`RawCapture` first on the root logger, at DEBUG, for a block
    (``ignore``: the one logger a test plants a secret in on purpose)."""
    handler = RawCapture(ignore)
    root = logging.getLogger()
    level = root.level
    root.handlers.insert(0, handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def error_texts(error: BaseException) -> list[str]:
    """str, repr, args and the formatted traceback of an error and of its whole chain."""
    texts = ["".join(traceback.format_exception(error))]
    seen: set[int] = set()
    stack = [error]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        texts += [str(current), repr(current), repr(current.args)]
        texts += [str(note) for note in getattr(current, "__notes__", ())]
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                stack.append(linked)
    return texts


def fragments(canary: str) -> tuple[str, ...]:
    """The canary and pieces of it: a token cut by a formatter is still a leak."""
    pieces = {canary, canary[:16], canary[-16:]}
    middle = len(canary) // 2
    pieces.add(canary[middle - 8 : middle + 8])
    return tuple(p for p in pieces if len(p) >= 12)


def files_under(root: Path) -> list[tuple[str, bytes]]:
    found = []
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            if path.is_file() and not path.is_symlink():
                found.append((f"file {path}", path.read_bytes()))
    return found


@dataclass
class CliRun:
    """Runs ``copilot-host`` in-process (CliRunner) with the emulator behind the seam."""

    seen: list[tuple[str, str]] = field(default_factory=list)

    def __call__(
        self,
        emulator: GitHubEmulator,
        home: Path,
        *args: str,
        host_kw: dict[str, Any] | None = None,
    ) -> Result:
        extra = host_kw or {}

        def factory(*, store: Any, clock: Any) -> GitHubCopilotHost:
            return GitHubCopilotHost(
                store=store,
                transport=emulator.transport(),
                sleep=lambda _s: None,
                **extra,
            )

        seam = CliSeam(host_factory=factory, sleep=lambda _s: None, open_browser=lambda _url: False)
        result = CliRunner().invoke(
            main,
            list(args),
            obj=seam,
            env={"COPILOT_HOST_HOME": str(home)},
            prog_name="copilot-host",
            catch_exceptions=False,
        )
        label = "copilot-host " + " ".join(args)
        self.seen.append((f"{label} (stdout)", result.stdout))
        self.seen.append((f"{label} (stderr)", result.stderr))
        return result


# -- transports that fail on purpose -------------------------------------------------------

Decide = Callable[[httpx2.Request], bool]


class FailingTransport(httpx2.BaseTransport):
    """Delegates to ``inner`` but, for requests ``matches`` picks, raises ``error``, answers
    ``status`` itself, or cuts the real answer's body short (``truncate``)."""

    def __init__(
        self,
        inner: httpx2.BaseTransport,
        matches: Decide,
        error: Exception | None = None,
        *,
        truncate: bool = False,
        status: int | None = None,
    ) -> None:
        self._inner = inner
        self._matches = matches
        self._error = error
        self._truncate = truncate
        self._status = status
        self.failed = 0

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        if not self._matches(request):
            return self._inner.handle_request(request)
        self.failed += 1
        if self._error is not None:
            raise self._error
        if self._status is not None:  # a gateway's answer: the request never arrived
            return httpx2.Response(self._status, text="<html>Bad Gateway</html>")
        response = self._inner.handle_request(request)
        body = response.read()
        response.close()
        return httpx2.Response(
            response.status_code,
            headers=[(k, v) for k, v in response.headers.items() if k.lower() != "content-length"]
            + [("content-length", str(len(body)))],
            stream=_CutStream(body[: len(body) // 2]),
        )

    def close(self) -> None:
        self._inner.close()


class AsyncFailingTransport(httpx2.AsyncBaseTransport):
    def __init__(
        self,
        inner: httpx2.AsyncBaseTransport,
        matches: Decide,
        error: Exception | None = None,
        *,
        truncate: bool = False,
    ) -> None:
        self._inner = inner
        self._matches = matches
        self._error = error
        self._truncate = truncate
        self.failed = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if not self._matches(request):
            return await self._inner.handle_async_request(request)
        self.failed += 1
        if self._error is not None:
            raise self._error
        response = await self._inner.handle_async_request(request)
        body = await response.aread()
        await response.aclose()
        return httpx2.Response(
            response.status_code,
            headers=[(k, v) for k, v in response.headers.items() if k.lower() != "content-length"]
            + [("content-length", str(len(body)))],
            stream=_CutStream(body[: len(body) // 2]),
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class _CutStream(httpx2.SyncByteStream, httpx2.AsyncByteStream):
    """Half a body, then the peer goes away: what httpcore2 reports for a cut connection."""

    def __init__(self, part: bytes) -> None:
        self._part = part

    def _fail(self) -> httpx2.RemoteProtocolError:
        return httpx2.RemoteProtocolError(
            "peer closed connection without sending complete message body"
        )

    def __iter__(self) -> Iterator[bytes]:
        yield self._part
        raise self._fail()

    async def __aiter__(self) -> Any:
        yield self._part
        await asyncio.sleep(0)
        raise self._fail()
