"""``tune_malloc``: asyncio's 256 KiB socket read buffers come from glibc's heap, not from
a mapping made and unmapped for each read (gateway/_malloc.py says why).

Each check runs in a child process of its own, since malloc's thresholds are the whole
process's; glibc's ``mallinfo2()`` counts the blocks served by a mapping (``hblks``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from copilot_host.gateway._server._malloc import MMAP_THRESHOLD, tune_malloc

glibc_only = pytest.mark.skipif(
    not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"),
    reason="malloc's thresholds are glibc's; elsewhere tune_malloc changes nothing",
)

_MAPPED = textwrap.dedent(
    """
    import ctypes

    class _Info(ctypes.Structure):
        _fields_ = [
            (name, ctypes.c_size_t)
            for name in (
                "arena", "ordblks", "smblks", "hblks", "hblkhd",
                "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost",
            )
        ]

    _libc = ctypes.CDLL(None)
    _libc.mallinfo2.restype = _Info

    def mapped_while_holding(size):
        '''How many more blocks are mapped while a bytearray of size is held.'''
        before = _libc.mallinfo2().hblks
        block = bytearray(size)
        during = _libc.mallinfo2().hblks
        del block
        return during - before
    """
)

# One byte over asyncio's read buffer, which is what each socket read allocates.
_READ_BUFFER = 256 * 1024 + 1


def _child(body: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _MAPPED + textwrap.dedent(body)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@glibc_only
def test_after_tune_malloc_a_read_buffer_is_not_mapped_and_a_large_block_still_is() -> None:
    said = _child(
        f"""
        from copilot_host.gateway._server._malloc import tune_malloc

        tuned = tune_malloc()
        print(tuned, mapped_while_holding({_READ_BUFFER}), mapped_while_holding({8 * MMAP_THRESHOLD}))
        """
    )
    # The 8 MiB block shows the count sees a mapping when there is one.
    assert said == "True 0 1"


@glibc_only
def test_without_tuning_a_fresh_process_maps_each_read_buffer() -> None:
    # The default this module changes: glibc's 128 KiB threshold, in a process whose heap
    # never freed a mapped block that large.
    assert _child(f"print(mapped_while_holding({_READ_BUFFER}))") == "1"


@glibc_only
def test_a_gateway_server_asked_to_tunes_malloc_before_it_accepts() -> None:
    said = _child(
        f"""
        import asyncio

        from copilot_host.gateway import GatewayServer

        async def app(scope, receive, send):
            if scope["type"] == "lifespan":
                while True:
                    message = await receive()
                    await send({{"type": message["type"] + ".complete"}})
                    if message["type"].endswith("shutdown"):
                        return

        seen = []

        def started():
            seen.append(mapped_while_holding({_READ_BUFFER}))
            server.stop()

        server = GatewayServer(tune_malloc=True, on_started=started)
        asyncio.run(server.serve(app))
        print(seen)
        """
    )
    assert said == "[0]"


def _no_libc(*_args: Any) -> Any:
    raise AssertionError("the C library was opened")


def _unknown_name(_name: str) -> str:
    raise ValueError("unrecognized configuration name")


@pytest.mark.parametrize(
    "confstr",
    [lambda _name: None, lambda _name: "musl 1.2", _unknown_name],
    ids=["no answer", "another C library", "no such name"],
)
def test_on_another_c_library_nothing_is_touched(
    monkeypatch: pytest.MonkeyPatch, confstr: Any
) -> None:
    import ctypes

    monkeypatch.setattr(os, "confstr", confstr)
    monkeypatch.setattr(ctypes, "CDLL", _no_libc)
    assert tune_malloc() is False


def test_a_c_library_that_cannot_be_opened_is_a_false_answer_not_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ctypes

    def refuse(*_args: Any) -> Any:
        raise OSError("no such library")

    monkeypatch.setattr(os, "confstr", lambda _name: "glibc 2.36")
    monkeypatch.setattr(ctypes, "CDLL", refuse)
    assert tune_malloc() is False
