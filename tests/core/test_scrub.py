"""Secrets split by invisible characters are masked before the characters are removed."""

from __future__ import annotations

import json
import logging
import secrets

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from copilot_host import Secret
from copilot_host._safety._redact import RedactingFilter, register_secret, scrub
from copilot_host.github._status import status_error
from copilot_host.github._wire import WireResponse

SPLITTERS = ["\u200b", "\u200d", "\u2060", "\ufeff", "\u202e", "\u00ad", "\u2028"]


def _split(token: str, splitter: str) -> str:
    return token[:9] + splitter + token[9:20] + splitter + token[20:]


@pytest.mark.parametrize("splitter", SPLITTERS)
def test_scrub_masks_a_split_registered_secret(splitter: str) -> None:
    registered = Secret("opaque-" + secrets.token_hex(12))  # no token shape: exact value only
    register_secret(registered)
    shaped = "gho_" + secrets.token_hex(18)
    for token in (registered.reveal(), shaped):
        shown = scrub(f"bad credentials {_split(token, splitter)} here")
        assert token not in shown
        assert "[REDACTED]" in shown


@pytest.mark.parametrize("splitter", SPLITTERS)
def test_a_server_error_echoing_a_split_token_does_not_reassemble_it(splitter: str) -> None:
    token = Secret("gho_" + secrets.token_hex(18))
    register_secret(token)
    body = json.dumps({"message": f"bad credentials {_split(token.reveal(), splitter)}"})
    error = status_error(WireResponse(500, {}, body.encode(), 0.0, 0.0), "GitHub's test step")
    assert token.reveal() not in str(error)


@pytest.mark.parametrize("splitter", SPLITTERS)
def test_log_records_lose_invisible_characters_before_masking(splitter: str) -> None:
    token = Secret("opaque-" + secrets.token_hex(12))
    register_secret(token)
    record = logging.LogRecord(
        "t", logging.DEBUG, __file__, 1, "got %s", (_split(token.reveal(), splitter),), None
    )
    RedactingFilter().filter(record)
    assert token.reveal() not in str(record.msg)


class _JsonFormatter(logging.Formatter):
    """What structured-logging setups do: every ``extra=`` field becomes a JSON field."""

    def format(self, record: logging.LogRecord) -> str:
        standard = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}
        fields = {k: v for k, v in vars(record).items() if k not in standard}
        return json.dumps({"msg": record.getMessage(), **fields}, default=repr)


class _Holder:
    def __init__(self, token: str) -> None:
        self.token = token

    def __repr__(self) -> str:
        return f"_Holder(token={self.token!r})"


def test_fields_passed_with_extra_are_redacted_too() -> None:
    registered = Secret("opaque-" + secrets.token_hex(12))  # no token shape: exact value only
    register_secret(registered)
    shaped = "tid=" + secrets.token_hex(16)
    raw = registered.reveal()
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(self.format(record))

    handler = Collect()
    handler.setFormatter(_JsonFormatter())
    handler.addFilter(RedactingFilter())
    logger = logging.getLogger("tests.structured")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        logger.debug(
            "request sent",
            extra={
                "headers": {"Authorization": f"Bearer {raw}", "X-Trace": "abc"},
                "token": shaped,
                "history": [("authorization", raw), {"nested": {"deep": [raw]}}],
                "holder": _Holder(raw),
                "count": 3,
                "ok": True,
            },
        )
    finally:
        logger.removeHandler(handler)
    (line,) = lines
    assert raw not in line
    assert shaped not in line
    document = json.loads(line)
    assert document["headers"]["X-Trace"] == "abc"  # the shape and the harmless values stay
    assert document["count"] == 3 and document["ok"] is True
    assert "[REDACTED]" in document["token"]
    assert "[REDACTED]" in document["holder"]


def test_extra_mappings_keep_keys_that_are_not_text() -> None:
    raw = "opaque-" + secrets.token_hex(12)
    register_secret(secret := Secret(raw))
    record = logging.makeLogRecord({"msg": "x", "by_pair": {("a", 1): raw, "k": [raw]}})
    assert RedactingFilter().filter(record)
    assert vars(record)["by_pair"] == {("a", 1): "[REDACTED]", "k": ["[REDACTED]"]}
    assert secret.reveal() == raw


def test_mask_secrets_masks_exact_values_only_in_text_and_bytes() -> None:
    from copilot_host import mask_secrets

    raw = "opaque-" + secrets.token_hex(12)
    register_secret(secret := Secret(raw))
    shaped_but_unknown = "gho_" + secrets.token_hex(18)
    text = f"a {raw} b {shaped_but_unknown}"
    assert mask_secrets(text) == f"a [REDACTED] b {shaped_but_unknown}"
    assert mask_secrets(text.encode()) == f"a [REDACTED] b {shaped_but_unknown}".encode()
    assert mask_secrets(b"nothing here") == b"nothing here"
    assert secret.reveal() == raw


def _json_spelling(value: str, escaped: list[bool], upper: list[bool]) -> str:
    """``value`` as a JSON string body may spell it: the chosen characters as \\uXXXX
    escapes (hex in the chosen case; surrogate pairs outside the BMP), the rest literal
    (``"`` and ``\\`` short-escaped, as they must be)."""
    out = []
    for index, char in enumerate(value):
        if escaped[index % len(escaped)]:
            code = ord(char)
            units = (
                [code]
                if code < 0x10000
                else [0xD800 + ((code - 0x10000) >> 10), 0xDC00 + (code & 0x3FF)]
            )
            for unit in units:
                digits = f"{unit:04x}"
                out.append("\\u" + (digits.upper() if upper[index % len(upper)] else digits))
        elif char in '"\\':
            out.append("\\" + char)
        elif char == "/" and upper[index % len(upper)]:
            out.append("\\/")
        else:
            out.append(char)
    return "".join(out)


@settings(max_examples=200, deadline=None)
@given(
    escaped=st.lists(st.booleans(), min_size=1, max_size=16),
    upper=st.lists(st.booleans(), min_size=1, max_size=16),
    tail=st.sampled_from(["", "/x", '"q', "\\b", "é", "😀"]),
)
def test_mask_secrets_masks_every_json_escaped_spelling_in_text_and_bytes(
    escaped: list[bool], upper: list[bool], tail: str
) -> None:
    from copilot_host import mask_secrets

    raw = "tid=" + secrets.token_hex(8) + ";exp=1" + tail
    register_secret(secret := Secret(raw))
    spelled = _json_spelling(raw, escaped, upper)
    document = '{"content": "before ' + spelled + ' after"}'
    assert json.loads(document)["content"] == f"before {raw} after"  # a real spelling
    for masked in (mask_secrets(document), mask_secrets(document.encode()).decode()):
        assert json.loads(masked)["content"] == "before [REDACTED] after"
    assert secret.reveal() == raw


def test_mask_secrets_leaves_other_escapes_and_other_encodings_alone() -> None:
    import base64

    from copilot_host import mask_secrets

    raw = "opaque-" + secrets.token_hex(12)
    register_secret(secret := Secret(raw))
    plain = '{"a": "caf\\u00e9 \\u003c \\n \\"x\\""}'
    assert mask_secrets(plain) == plain
    # Documented as not masked: another encoding, or a value cut in two.
    encoded = base64.b64encode(raw.encode()).decode()
    assert mask_secrets(encoded) == encoded
    assert mask_secrets(raw[:10]) == raw[:10]
    assert secret.reveal() == raw


# Characters the token shapes' case-insensitive part treats as letters of "bearer" and
# "token" (the Kelvin sign is a k to re's IGNORECASE), and the pieces of every shape.
_SHAPE_PIECES = st.sampled_from(
    [
        "gh",
        "o",
        "u",
        "p",
        "s",
        "r",
        "_",
        "github",
        "_pat_",
        "tid",
        "=",
        "BEARER",
        "Bearer",
        "TOKEN",
        "To\u212aen",
        "token",
        " ",
        "\t",
        "x" * 8,
        "A1b2C3d4",
        ";",
        "é",
        "\u0130",
        "-",
    ]
)


@settings(max_examples=500, deadline=None)
@given(pieces=st.lists(_SHAPE_PIECES | st.text(max_size=4), max_size=24))
def test_the_token_shape_prefilter_never_skips_text_the_shapes_would_match(
    pieces: list[str],
) -> None:
    from copilot_host import mask_secrets
    from copilot_host._safety._redact import TOKEN_SHAPES, may_hold_token_shape, redact

    text = "".join(pieces)
    if TOKEN_SHAPES.search(text):
        assert may_hold_token_shape(text)
    # The same result as the expression alone, as before the prefilter.
    assert redact(text) == TOKEN_SHAPES.sub("[REDACTED]", mask_secrets(text))


def test_the_prefilter_passes_the_usual_access_line_by() -> None:
    from copilot_host._safety._redact import may_hold_token_shape

    line = "POST /v1/chat/completions model=gpt-4.1 status=200 bytes=345 1.2ms"
    assert not may_hold_token_shape(line)
    assert may_hold_token_shape(line + " Authorization: Bearer abcdefgh12")


def test_a_collected_secret_is_no_longer_masked_and_a_new_one_is_at_once() -> None:
    import gc

    from copilot_host import mask_secrets
    from copilot_host._safety._redact import known_values

    first = "first-" + secrets.token_hex(8)
    secret: Secret | None = Secret(first)
    register_secret(secret)  # type: ignore[arg-type]
    assert first in known_values()
    assert mask_secrets(first.encode()) == b"[REDACTED]"
    secret = None
    gc.collect()
    assert first not in known_values()  # nothing keeps a dropped secret's value
    assert mask_secrets(first.encode()) == first.encode()
    second = "second-" + secrets.token_hex(8)
    register_secret(kept := Secret(second))
    assert mask_secrets(f"a {second} b") == "a [REDACTED] b"
    assert kept.reveal() == second


def test_a_value_stays_masked_while_any_registered_copy_of_it_lives() -> None:
    """The same token read twice (the GitHub host keeps only its latest read): dropping the
    first copy leaves the value masked, as long as the second lives (0.4.0 kept one object
    per value, the first, and the value went unmasked when it was collected)."""
    import gc

    from copilot_host import mask_secrets
    from copilot_host._safety._redact import known_values

    value = "copied-" + secrets.token_hex(8)
    first: Secret | None = Secret(value)
    register_secret(first)  # type: ignore[arg-type]
    register_secret(second := Secret(value))
    assert known_values().count(value) == 1  # masked once, however many copies
    first = None
    gc.collect()
    assert mask_secrets(f"a {value} b") == "a [REDACTED] b"
    assert second.reveal() == value
