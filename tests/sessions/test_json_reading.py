"""The one reading of a request body (``read_json_body``): orjson when installed, ``json``
otherwise, and the same documents accepted either way."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests._extras import require

require("orjson")

import orjson  # noqa: E402

from copilot_host import _accel  # noqa: E402
from copilot_host._accel import PURE_PYTHON_ENV  # noqa: E402
from copilot_host._sessions._inspect import read_json_body  # noqa: E402


def _read_with(parser: Any, body: bytes) -> Any:
    kept = _accel.orjson
    _accel.orjson = parser
    try:
        return read_json_body(body)
    finally:
        _accel.orjson = kept


def pure(body: bytes) -> Any:
    """``read_json_body`` with the acceleration off."""
    return _read_with(None, body)


def fast(body: bytes) -> Any:
    """``read_json_body`` with orjson (whatever the environment says)."""
    return _read_with(orjson, body)


def outcome(read: Any, body: bytes) -> tuple[str, str]:
    """What a reader made of ``body``: the document (NaN and all, as ``json`` writes it), or
    that it was refused."""
    try:
        value = read(body)
    except ValueError:
        return ("refused", "")
    return ("read", json.dumps(value, sort_keys=True))


def test_orjson_reads_bodies_unless_the_pure_python_variable_is_set() -> None:
    script = "from copilot_host import _accel; print(_accel.orjson is None)"
    for value, off in (("1", "True"), ("0", "False"), ("", "False")):
        env = {**os.environ, PURE_PYTHON_ENV: value}
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        )
        assert done.stdout.strip() == off, value


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # orjson refuses these; json reads them, so the reading does too.
        (b'{"a": NaN}', ("read", '{"a": NaN}')),
        (b'{"a": -Infinity}', ("read", '{"a": -Infinity}')),
        (b'{"text": "cut \\ud83d"}', ("read", '{"text": "cut \\ud83d"}')),
        # Both refuse these.
        (b"\xef\xbb\xbf{}", ("refused", "")),
        ('{"a": 1}'.encode("utf-16"), ("refused", "")),
        (b'{"a": "\xff"}', ("refused", "")),
        (b'{"a": "\x00"}', ("refused", "")),
        (b"[" * 5000 + b"]" * 5000, ("refused", "")),
        (b'{"a": 1,}', ("refused", "")),
        (b"", ("refused", "")),
    ],
)
def test_both_readers_take_what_json_takes(body: bytes, expected: tuple[str, str]) -> None:
    assert outcome(fast, body) == expected
    assert outcome(pure, body) == expected


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text()
)
_DOCUMENTS = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(_DOCUMENTS, st.booleans())
def test_every_json_document_reads_the_same_both_ways(value: Any, ascii_only: bool) -> None:
    body = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8")
    assert outcome(fast, body) == outcome(pure, body) == ("read", json.dumps(value, sort_keys=True))


def _mangled() -> st.SearchStrategy[bytes]:
    """Bodies near JSON: a document with bytes cut, doubled or replaced."""

    def mangle(data: tuple[bytes, int, bytes]) -> bytes:
        body, at, junk = data
        at = at % (len(body) + 1)
        return body[:at] + junk + body[at + 1 :]

    documents = _DOCUMENTS.map(lambda v: json.dumps(v).encode("utf-8"))
    junk = st.sampled_from([b"", b",", b"\\", b'"', b"\xff", b"\\ud800", b"]", b"NaN", b"\x00"])
    return st.tuples(documents, st.integers(min_value=0), junk).map(mangle)


@given(_mangled() | st.binary(max_size=64))
def test_damaged_bodies_are_refused_or_read_alike(body: bytes) -> None:
    assert outcome(fast, body) == outcome(pure, body)


def test_a_huge_integer_is_read_either_way() -> None:
    # The one documented difference: beyond 64 bits orjson reads a float, json an int.
    body = b'{"n": 100000000000000000000000000000}'
    assert math.isclose(fast(body)["n"], pure(body)["n"])
