"""Fuzz targets the other suites do not already run at the CI budget (2,000 examples each
under CI=true; ``HYPOTHESIS_PROFILE=long`` runs 20,000).

Already fuzzed elsewhere, and not repeated here: the origin parser
(tests/core/test_origin.py), the device-code, poll, exchange, user and models parsers
(tests/github/test_github_fuzz.py), random rewrites of a sealed record
(tests/store/test_tamper.py::test_random_rewrites_never_yield_another_token).

Added here: the record reader as ``status`` and ``load`` meet it on disk (arbitrary bytes
and well-framed records with hostile headers), the unauthenticated header parser that
``status`` shows, and the terminal sanitizer every server text goes through.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import tempfile
import unicodedata
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import copilot_host as ch
from copilot_host._safety._text import clean
from copilot_host.store import CredentialStore
from copilot_host.store._record import MAGIC, parse
from tests._json_strategies import json_scalars, json_values
from tests.store._support import canary_token

# A hang is a failure: no single example may take seconds (the slowest take milliseconds).
FUZZ = settings(
    deadline=timedelta(seconds=5),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

any_json = json_values(json_scalars(big=2**70, text=40))
GOOD_HEADER: dict[str, Any] = {
    "account": "octocat",
    "created_at": 1_700_000_000.5,
    "login_id": "ab" * 16,
    "protection": {"backend": "Secret Service", "kind": "keyring"},
}
hostile_text = st.text(
    alphabet=st.characters(codec="utf-8") | st.sampled_from("\x1b\x07\r\n\u202e\u200b\ufeff"),
    max_size=40,
)


def _header_bodies() -> st.SearchStrategy[dict[str, Any]]:
    """The good header with a few of its fields replaced (by hostile text or any JSON) or
    removed; often none or one, so accepted headers are common enough to check."""
    missing = object()
    replacements: dict[str, st.SearchStrategy[Any]] = {
        "account": hostile_text | any_json | st.just(missing),
        "created_at": any_json | st.just(missing),
        "login_id": st.text("0123456789abcdefABCDEF", min_size=30, max_size=34)
        | any_json
        | st.just(missing),
        "protection": st.fixed_dictionaries(
            {
                "backend": hostile_text | any_json,
                "kind": st.sampled_from(["keyring", "key-file", "KEYRING", ""]) | any_json,
            }
        )
        | any_json
        | st.just(missing),
    }

    @st.composite
    def bodies(draw: st.DrawFn) -> dict[str, Any]:
        body = dict(GOOD_HEADER)
        for name in draw(st.lists(st.sampled_from(sorted(replacements)), max_size=2)):
            body[name] = draw(replacements[name])
        return {k: v for k, v in body.items() if v is not missing}

    return bodies()


def _frame(header: bytes, version: int, tail: bytes, length: int | None = None) -> bytes:
    size = len(header) if length is None else length
    return MAGIC + struct.pack(">BH", version, size) + header + tail


frames = st.builds(
    _frame,
    _header_bodies().map(lambda h: json.dumps(h, allow_nan=True).encode()),
    st.sampled_from([1, 1, 1, 1, 1, 0, 2, 255]),
    # A nonce and tag need 28 bytes: mostly enough, sometimes too few.
    st.binary(min_size=28, max_size=80) | st.binary(max_size=27),
    st.one_of(st.none(), st.none(), st.none(), st.integers(0, 0xFFFF)),
)
# Headers alone, in an otherwise valid frame: what status would show unauthenticated.
headers_framed = st.builds(
    _frame,
    _header_bodies().map(lambda h: json.dumps(h, allow_nan=True).encode()),
    st.just(1),
    st.binary(min_size=28, max_size=60),
)
# Well-framed records get most of the budget: random bytes fail at the magic at once.
records = st.one_of(
    headers_framed,
    frames,
    frames,
    st.binary(max_size=300),
    st.binary(max_size=200).map(lambda rest: MAGIC + rest),
)


def _check_header(header: Any) -> None:
    """Whatever the unauthenticated reader accepts is safe to show as it is."""
    assert len(header.login_id) == 32 and set(header.login_id) <= set("0123456789abcdef")
    assert header.account and clean(header.account, limit=256) == header.account
    assert clean(header.protection.backend, limit=8192) == header.protection.backend
    assert header.protection.kind in ("keyring", "key-file")


@FUZZ
@given(records)
def test_fuzz_record_format_parser(data: bytes) -> None:
    try:
        record = parse(data)
    except (ch.StoreCorruptError, ch.StoreVersionError) as error:
        message = error.message
    else:
        event("a header was accepted")
        _check_header(record.header)
        return
    assert message and "\n" not in message


@pytest.fixture(scope="module")
def fuzz_home() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="copilot-fuzz-"))
    folder.chmod(0o700)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@FUZZ
@given(data=records)
def test_fuzz_record_reader_on_disk(data: bytes, fuzz_home: Path) -> None:
    """``status`` (header), ``availability`` and ``load`` on whatever bytes the record
    file holds: a typed error or a clean header, and no partial state: a record that fails
    to authenticate is moved aside whole and nothing else in the folder changes."""
    for name in os.listdir(fuzz_home):
        os.unlink(fuzz_home / name)
    record = fuzz_home / "credential"
    record.write_bytes(data)
    record.chmod(0o600)
    store = CredentialStore(fuzz_home, keyring_timeout=1.0)

    for which in ("header", "availability"):
        code = None
        try:
            result = store.header() if which == "header" else store.availability()
        except ch.StoreError as error:
            code = error.code
        else:
            assert result is not None
            if which == "header":
                event("status would show a header")
                _check_header(result)
        assert code in (None, "store_corrupt", "store_version")
    with pytest.raises(ch.StoreError) as caught:  # nothing on disk can decrypt: no key
        store.load()
    names = set(os.listdir(fuzz_home)) - {"credential.lock"}
    if caught.value.code == "store_corrupt":
        (aside,) = store.set_aside()
        assert names == {aside.name}
        assert aside.read_bytes() == data
    else:
        assert caught.value.code in ("store_version", "keyring_entry_missing", "key_file_missing")
        assert names == {"credential"} and record.read_bytes() == data


@FUZZ
@given(st.text(max_size=400) | hostile_text)
def test_fuzz_terminal_sanitizer(text: str) -> None:
    """Whatever a server sends, what reaches a terminal is one bounded line with no
    control, format (bidi, zero-width), separator or private-use character."""
    shown = clean(text)
    assert len(shown) <= 300
    assert shown == shown.strip()
    assert not any(
        unicodedata.category(c) in {"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"} for c in shown
    )
    assert clean(shown) == shown  # idempotent: cleaning twice changes nothing


def test_a_real_record_still_round_trips_after_the_fuzzing(fuzz_home: Path) -> None:
    """The on-disk target above never had a key; a genuine record in the same folder is
    read back (so the reader was not simply failing everything)."""
    for name in os.listdir(fuzz_home):
        os.unlink(fuzz_home / name)
    store = CredentialStore(fuzz_home)
    token = canary_token()
    who = store.save("octocat", token).identity
    assert store.load() == (who, token)
