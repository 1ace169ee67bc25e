"""An ``httpx2.AsyncBaseTransport`` over aiohttp: httpx2's API above, aiohttp's HTTP/1.1 below.

httpx2's own transport (httpcore2, h11 and anyio) costs the gateway about half a
millisecond of CPU per relayed request more than aiohttp's client does (docs/ARCHITECTURE.md
has the figures), while the client layer above it costs little. So the clients stay
``httpx2.AsyncClient`` (``route.auth``, timeouts, the tests' mock transports), and only the
transport under them changes. It sends what the ``httpx2.Request`` says and nothing else:

* the headers in their order and spelling (aiohttp adds no ``User-Agent``, ``Accept``,
  ``Accept-Encoding`` or ``Content-Type`` of its own; a name repeated in another case
  is sent in the spelling of its first occurrence, since aiohttp merges by exact
  spelling); a header value that is not UTF-8 (aiohttp writes text as UTF-8) goes
  through httpx2's own transport instead, byte for byte;
* the body as given, with the request's ``Content-Length`` (a streamed body of unknown
  length is chunked, its ``Transfer-Encoding`` header then last);
* no redirect is followed, no cookie is kept, nothing is decompressed (httpx2 decodes
  ``Content-Encoding`` above, as it does over its own transport), no proxy or ``.netrc``
  is read from the environment (the caller decides on proxies: :mod:`._stack`);
* the request's ``timeout`` extension: ``connect`` and ``read`` as aiohttp's
  ``sock_connect`` and ``sock_read``; ``pool`` as the wait for one of
  ``limits.max_connections`` slots; ``write`` as the longest wait for one slice of a body
  over 64 KiB to be taken by the socket (a smaller one fits in the socket's buffer), kept
  by an ``asyncio.timeout`` around the request that each slice reschedules.

aiohttp's errors become the httpx2 exceptions httpx2's own transport raises in the same
case (:mod:`._aioerrors`).
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import Any

import aiohttp
import httpx2
import yarl

from copilot_host import mask_secrets

from ._aioerrors import mapped_error, where_of

__all__ = ["AiohttpTransport"]

# What aiohttp would add on its own when the request lacks it.
_SKIP_AUTO = ("Accept", "Accept-Encoding", "User-Agent", "Content-Type")
# A body above this size is written in slices, each timed by the write timeout; below it
# the body fits the transport's buffer and is written at once (aiohttp warns above 1 MiB).
_WATCHED_BODY = 64 * 1024
_SLICE = 256 * 1024
# Response header lines up to this long (h11's bound is 16 KiB for a whole head; aiohttp's
# default for one line, 8 KiB, would refuse answers httpx2's own transport takes).
_MAX_LINE = 16 * 1024
_DEFAULT_LIMITS = httpx2.Limits(max_connections=100, max_keepalive_connections=20)


@functools.lru_cache(maxsize=64)
def _target(url: str) -> yarl.URL:
    # Parsed once per URL (a gateway sends to a handful), taken as already encoded so
    # that aiohttp sends the path and query as httpx2 encoded them.
    return yarl.URL(url, encoded=True)


@functools.lru_cache(maxsize=8)
def _version(major: int, minor: int) -> bytes:
    return f"HTTP/{major}.{minor}".encode("ascii")


# Headers as aiohttp takes them, by their bytes. Most of a relayed request's headers are
# the same every time (the integration's, the editor's, the content type), and decoding a
# name and a value cost more than one lookup. Emptied when full (a few values change per
# request). A credential is never kept here: not a header that carries one by its name,
# nor a value holding a secret this process knows (under any name).
_DECODED: dict[tuple[bytes, bytes], tuple[str, str]] = {}
_DECODED_KEPT = 256
_NOT_KEPT = frozenset({"authorization", "proxy-authorization", "cookie", "x-api-key", "api-key"})


def _decoded(entry: tuple[bytes, bytes]) -> tuple[str, str]:
    found = (entry[0].decode("ascii"), entry[1].decode("utf-8"))
    if found[0].lower() not in _NOT_KEPT and mask_secrets(entry[1]) == entry[1]:
        if len(_DECODED) >= _DECODED_KEPT:
            _DECODED.clear()
        _DECODED[entry] = found
    return found


def _headers(raw: list[tuple[bytes, bytes]]) -> tuple[list[tuple[str, str]], set[str]] | None:
    """The request's headers as aiohttp takes them (a name sent in two spellings goes in
    its first), and their names in lower case; None when a value is not UTF-8. Made with
    comprehensions: this runs for every request, and a loop per header cost three times
    as much."""
    known = _DECODED.get
    try:
        out = [known(entry) or _decoded(entry) for entry in raw]
    except UnicodeDecodeError:
        return None
    names = {name.lower() for name, _ in out}
    if len(names) < len(out):
        spelling: dict[str, str] = {}
        out = [(spelling.setdefault(name.lower(), name), value) for name, value in out]
    return out, names


class _Sending:
    """A request being sent: the deadline a stalled body write moves to now.

    The deadline is the caller's own ``asyncio.timeout`` around the request, so a stall
    ends the request the way any timeout does (the caller's task is never cancelled from
    outside); aiohttp writes the body from its own task, which only reschedules it."""

    __slots__ = ("deadline", "sending")

    def __init__(self) -> None:
        self.deadline: asyncio.Timeout | None = None
        self.sending = True

    def arm(self, seconds: float | None) -> None:
        # Only while the answer's head is awaited: later, the read timeout governs.
        deadline = self.deadline
        if self.sending and deadline is not None:
            deadline.reschedule(
                None if seconds is None else asyncio.get_running_loop().time() + seconds
            )

    def stalled(self) -> bool:
        deadline = self.deadline
        return deadline is not None and deadline.expired()


async def _timed(
    pieces: AsyncIterable[bytes], write: float | None, watch: _Sending
) -> AsyncIterator[bytes]:
    """``pieces``, each given ``write`` seconds to be taken by aiohttp's writer (which
    asks for the next only once the socket took the last)."""
    async for piece in pieces:
        watch.arm(write)
        try:
            yield piece
        finally:
            watch.arm(None)


async def _slices(data: bytes) -> AsyncIterator[bytes]:
    view = memoryview(data)
    for start in range(0, len(view), _SLICE):
        yield bytes(view[start : start + _SLICE])


class _Body(httpx2.AsyncByteStream):
    """An answer's body as aiohttp receives it, piece by piece; closing it closes the
    aiohttp response (its connection goes back to the pool only when the body was read
    to its end) and frees the pool slot."""

    __slots__ = ("_free", "_request", "_response")

    def __init__(
        self,
        response: aiohttp.ClientResponse,
        free: Callable[[], None] | None,
        request: httpx2.Request,
    ) -> None:
        self._response: aiohttp.ClientResponse | None = response
        self._free = free
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        response = self._response
        if response is None:
            return
        try:
            async for piece in response.content.iter_any():
                yield piece
        except (aiohttp.ClientError, TimeoutError) as exc:
            self._close()
            raise mapped_error(exc, self._request) from None
        self._close()

    async def aclose(self) -> None:
        self._close()

    def _close(self) -> None:
        # Synchronous, so that it completes inside a cancelled task's cleanup too.
        response, self._response = self._response, None
        if response is None:
            return
        if response.content.at_eof():
            response.release()
        else:
            response.close()
        free, self._free = self._free, None
        if free is not None:
            free()


class AiohttpTransport(httpx2.AsyncBaseTransport):
    """See the module docstring. ``limits`` bounds the connections (httpx2's default
    otherwise); idle ones close after ``keepalive_expiry`` (aiohttp keeps no separate
    count of idle ones); ``max_keepalive_connections=0`` closes each after its request.
    ``ssl_context`` is built as httpx2 builds its own when not given
    (``httpx2.create_ssl_context()``: ``SSL_CERT_FILE``/``SSL_CERT_DIR``, else the system
    store), at once, so that unusable settings fail here."""

    def __init__(
        self,
        *,
        limits: httpx2.Limits | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._limits = limits or _DEFAULT_LIMITS
        if ssl_context is None:
            ssl_context = httpx2.create_ssl_context()
            # As httpx2's own transport offers it: the ClientHello names HTTP/1.1.
            ssl_context.set_alpn_protocols(["http/1.1"])
        self._ssl = ssl_context
        bound = self._limits.max_connections
        self._slots = asyncio.Semaphore(bound) if bound is not None else None
        self._session: aiohttp.ClientSession | None = None
        self._fallback: httpx2.AsyncHTTPTransport | None = None
        self._timeouts: dict[tuple[float | None, float | None], aiohttp.ClientTimeout] = {}
        self._closed = False

    def __repr__(self) -> str:
        return f"AiohttpTransport(max_connections={self._limits.max_connections})"

    def _open(self) -> aiohttp.ClientSession:
        if self._closed:
            raise RuntimeError("the transport is closed")
        limits = self._limits
        connector = aiohttp.TCPConnector(
            # Unbounded here: the slots of _slot bound the connections in use, once (a
            # connection is opened only by a request holding a slot).
            limit=0,
            limit_per_host=0,
            keepalive_timeout=limits.keepalive_expiry,
            force_close=limits.max_keepalive_connections == 0,
            ssl=self._ssl,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),
            skip_auto_headers=_SKIP_AUTO,
            auto_decompress=False,
            trust_env=False,
            timeout=aiohttp.ClientTimeout(total=None),
            max_line_size=_MAX_LINE,
            max_field_size=_MAX_LINE,
        )
        return self._session

    def _timeout(self, given: Any) -> aiohttp.ClientTimeout:
        connect = read = None
        if isinstance(given, dict):
            connect, read = given.get("connect"), given.get("read")
        key = (connect, read)
        timeout = self._timeouts.get(key)
        if timeout is None:
            timeout = self._timeouts[key] = aiohttp.ClientTimeout(
                total=None, sock_connect=connect, sock_read=read
            )
        return timeout

    async def _slot(self, request: httpx2.Request, given: Any) -> Callable[[], None] | None:
        slots = self._slots
        if slots is None:
            return None
        pool = given.get("pool") if isinstance(given, dict) else None
        if pool is None or not slots.locked():
            await slots.acquire()
        else:
            try:
                async with asyncio.timeout(pool):
                    await slots.acquire()
            except TimeoutError:
                raise httpx2.PoolTimeout(
                    f"timed out waiting for a connection to {where_of(request)}", request=request
                ) from None
        return slots.release

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        if url.scheme not in ("http", "https"):
            raise httpx2.UnsupportedProtocol(
                f"Request URL has an unsupported protocol '{url.scheme}://'.", request=request
            )
        converted = _headers(request.headers.raw)
        if converted is None:
            return await self._bytewise().handle_async_request(request)
        headers, names = converted
        session = self._session or self._open()
        given = request.extensions.get("timeout")
        watch: _Sending | None = None
        chunked: bool | None = None
        data: bytes | AsyncIterator[bytes] | None
        try:
            data = request.content
        except httpx2.RequestNotRead:
            watch = _Sending()
            assert isinstance(request.stream, AsyncIterable)
            data = _timed(request.stream, _write(given), watch)
            if "transfer-encoding" in names:
                # aiohttp frames it and writes the header itself.
                headers = [(n, v) for n, v in headers if n.lower() != "transfer-encoding"]
                chunked = True
        else:
            if len(data) > _WATCHED_BODY:
                watch = _Sending()
                data = _timed(_slices(data), _write(given), watch)
            elif not data:
                data = None
        if url.userinfo:
            # httpx2 made it an Authorization header already; aiohttp would add another.
            url = url.copy_with(userinfo=None)
        free = await self._slot(request, given)
        try:
            async with asyncio.timeout(None) as deadline:
                if watch is not None:
                    watch.deadline = deadline
                try:
                    response = await session.request(
                        request.method,
                        _target(str(url)),
                        headers=headers,
                        data=data,
                        chunked=chunked,
                        allow_redirects=False,
                        timeout=self._timeout(given),
                    )
                finally:
                    # From here on a body write left pending must not move the deadline
                    # (it is left behind with this block).
                    if watch is not None:
                        watch.sending = False
        except BaseException as exc:
            if free is not None:
                free()
            if isinstance(exc, TimeoutError) and watch is not None and watch.stalled():
                raise httpx2.WriteTimeout(
                    f"timed out writing to {where_of(request)}", request=request
                ) from None
            if isinstance(exc, (aiohttp.ClientError, TimeoutError, ValueError)):
                raise mapped_error(exc, request) from None
            raise
        _check_final(response, free, request)
        version = response.version or aiohttp.HttpVersion11
        return httpx2.Response(
            response.status,
            headers=response.raw_headers,
            stream=_Body(response, free, request),
            extensions={
                "http_version": _version(version.major, version.minor),
                "reason_phrase": (response.reason or "").encode("latin-1", "replace"),
            },
        )

    def _bytewise(self) -> httpx2.AsyncHTTPTransport:
        if self._fallback is None:
            self._fallback = httpx2.AsyncHTTPTransport(verify=self._ssl, limits=self._limits)
        return self._fallback

    async def aclose(self) -> None:
        self._closed = True
        session, self._session = self._session, None
        fallback, self._fallback = self._fallback, None
        if session is not None:
            await session.close()
        if fallback is not None:
            await fallback.aclose()


def _check_final(
    response: aiohttp.ClientResponse, free: Callable[[], None] | None, request: httpx2.Request
) -> None:
    """Raise for a final answer below 200 (aiohttp hands an upstream 101 up as one, and
    its connection then speaks the other protocol): a protocol error, as httpx2's own
    transport has it; the connection is not used again."""
    if response.status >= 200:
        return
    response.close()
    if free is not None:
        free()
    raise httpx2.RemoteProtocolError(
        f"{where_of(request)} answered with status {response.status}, which is not a final "
        "HTTP answer",
        request=request,
    ) from None


def _write(given: Any) -> float | None:
    return given.get("write") if isinstance(given, dict) else None
