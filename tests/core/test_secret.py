from __future__ import annotations

import copy
import logging
import pickle
import secrets

import pytest
from hypothesis import given
from hypothesis import strategies as st

from copilot_host import Secret
from copilot_host._safety._redact import (
    REDACTED,
    RedactingFilter,
    install_redaction,
    redact,
    register_secret,
)

_values = st.text(min_size=1, max_size=80).filter(lambda v: v not in "Secret('**********')")


@given(_values, st.sampled_from(["", "s", "r", ">40", "^10", "x" * 0]))
def test_secret_never_shows_its_value(value: str, spec: str) -> None:
    secret = Secret(value)
    shown = [repr(secret), str(secret), f"{secret}", format(secret, spec), "%s" % secret]
    shown.append(repr([secret, {"k": secret}]))
    for text in shown:
        assert text == "Secret('**********')" or "Secret('**********')" in text
        if len(value) >= 3:
            assert value not in text.replace("Secret('**********')", "")
    assert secret.reveal() == value


@given(_values)
def test_logging_a_secret_never_shows_it(value: str) -> None:
    record = logging.LogRecord(
        "t", logging.INFO, __file__, 1, "v=%s %r", (Secret(value),) * 2, None
    )
    message = record.getMessage()
    assert message == "v=Secret('**********') Secret('**********')"


def test_secret_refuses_pickling_and_plain_comparison() -> None:
    secret = Secret("gho_" + secrets.token_hex(18))
    with pytest.raises(TypeError):
        pickle.dumps(secret)
    with pytest.raises(TypeError):
        pickle.dumps({"nested": [secret]})
    assert (secret == secret.reveal()) is False
    assert secret != secret.reveal()
    assert secret == Secret(secret.reveal())
    assert secret != Secret(secret.reveal() + "x")
    assert copy.deepcopy(secret) is secret
    assert not hasattr(secret, "__dict__")
    with pytest.raises(TypeError):
        Secret(b"bytes")  # type: ignore[arg-type]


def test_redact_masks_registered_values_and_token_shapes() -> None:
    registered = Secret("canary-" + secrets.token_hex(8))
    register_secret(registered)
    gho = "gho_" + secrets.token_hex(18)
    session = f"tid={secrets.token_hex(8)};exp=1;sku=x;8kp=1:{secrets.token_hex(16)}"
    text = f"a {registered.reveal()} b {gho} c {session} d Bearer {secrets.token_hex(12)} e"
    out = redact(text)
    assert registered.reveal() not in out and gho not in out and session not in out
    assert out.count(REDACTED) == 4
    assert redact("nothing to hide here") == "nothing to hide here"


def test_redacting_filter_scrubs_message_args_and_tracebacks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    gho = "gho_" + secrets.token_hex(18)
    logger = logging.getLogger("copilot_host.test.redact")
    flt = RedactingFilter()
    logger.addFilter(flt)
    try:
        with caplog.at_level(logging.DEBUG, logger=logger.name):
            logger.debug("token %s", gho)
            try:
                raise RuntimeError(f"boom {gho}")
            except RuntimeError:
                logger.exception("failed")
    finally:
        logger.removeFilter(flt)
    assert caplog.records
    assert gho not in caplog.text
    assert REDACTED in caplog.text
    assert "RuntimeError" in caplog.text


def test_install_redaction_is_idempotent() -> None:
    logger = logging.getLogger("copilot_host.test.install")
    handler = logging.NullHandler()
    logger.addHandler(handler)
    try:
        first = install_redaction(logger)
        second = install_redaction(logger)
        assert first is second
        assert logger.filters.count(first) == 1
        assert handler.filters == [first]
    finally:
        logger.removeHandler(handler)
        logger.removeFilter(first)


def test_equal_secrets_hash_equal_without_revealing_anything() -> None:
    a, b = Secret("same-" + secrets.token_hex(8)), Secret("x")
    twin = Secret(a.reveal())
    assert a == twin
    assert hash(a) == hash(twin)
    assert hash(a) == hash(b)  # the hash says nothing about the value
    assert len({a, twin, b}) == 2
