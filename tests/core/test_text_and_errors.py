from __future__ import annotations

import pickle

import pytest

import copilot_host as ch
from copilot_host._errors import __all__ as error_names
from copilot_host._safety._text import clean

HOSTILE = [
    ("\x1b[31mred\x1b[0m", "[31mred[0m"),
    ("bell\x07", "bell"),
    ("line1\r\nInjected: header", "line1 Injected: header"),
    ("abc\u202edcba", "abcdcba"),
    ("zero\u200bwidth\u200d", "zerowidth"),
    ("bom\ufeff", "bom"),
    ("sep\u2028para\u2029", "seppara"),
    ("  many   spaces\t\tand tabs  ", "many spaces and tabs"),
]


@pytest.mark.parametrize(("raw", "shown"), HOSTILE)
def test_clean_strips_terminal_tricks(raw: str, shown: str) -> None:
    assert clean(raw) == shown


def test_clean_bounds_length() -> None:
    assert len(clean("x" * 10_000, limit=50)) == 50


def test_every_error_is_a_copilot_host_error_with_code_and_flag() -> None:
    codes = set()
    for name in error_names:
        cls = getattr(ch, name)
        assert issubclass(cls, ch.CopilotHostError)
        assert isinstance(cls.code, str) and cls.code
        assert isinstance(cls.retryable, bool)
        codes.add(cls.code)
    for code in (
        "access_denied",
        "expired_token",
        "not_logged_in",
        "store_corrupt",
        "keyring_unavailable",
        "invalid_origin",
    ):
        assert code in codes


def test_error_messages_are_one_clean_line_and_survive_pickling() -> None:
    err = ch.ServerError("upstream said \x1b]0;pwned\x07 no\r\nmore", code="rate_limited")
    assert err.message == "upstream said ]0;pwned no more"
    assert err.code == "rate_limited" and err.retryable
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is ch.ServerError
    assert (again.code, again.retryable, again.message) == ("rate_limited", True, err.message)
    assert repr(err).startswith("ServerError(code='rate_limited'")


def test_origin_error_is_also_a_value_error() -> None:
    assert issubclass(ch.OriginError, ValueError)


def test_invisible_is_defined_once_and_the_log_filter_uses_it() -> None:
    """Every format character and line/paragraph separator is invisible, by category: the
    log filter removes the same ones cleaning does, not a hand-made list of some."""
    import logging
    import sys
    import unicodedata

    from copilot_host._safety._text import INVISIBLE_CATEGORIES, drop_invisible

    invisible = [
        chr(code)
        for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)) in INVISIBLE_CATEGORIES
    ]
    assert "\u200b" in invisible and "\u2028" in invisible and "\U000e0001" in invisible
    assert drop_invisible("a" + "".join(invisible) + "b\n\t") == "ab\n\t"
    secret = ch.Secret("tid=" + "f" * 40)
    ch.register_secret(secret)
    # A tag character (U+E0001) was missing from the hand-made list: the token split by it
    # went unmasked.
    split = "tid=" + "f" * 20 + "\U000e0001" + "f" * 20
    record = logging.LogRecord("t", logging.INFO, "", 0, "token %s", (split,), None)
    ch.RedactingFilter().filter(record)
    assert secret.reveal() not in record.getMessage()
    assert "f" * 40 not in record.getMessage()
