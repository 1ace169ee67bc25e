"""The one reading of the two refusals by policy (``_sessions/_refusals.py``): what it
recognises, what it leaves alone, and that no answer makes it raise."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from copilot_host._sessions._refusals import identity_name, refusal_of

POLICY = b"unauthorized: not authorized to use this Copilot feature\n"


def _integrator(message: str, code: str | None = "model_not_available_for_integrator") -> bytes:
    error: dict[str, str] = {"message": message}
    if code is not None:
        error["code"] = code
    return json.dumps({"error": error}).encode()


def test_the_policy_refusal_is_a_403_with_its_words() -> None:
    found = refusal_of(403, POLICY)
    assert found is not None
    assert (found.code, found.status) == ("policy_refused", 403)
    # The words on another status, or another 403, are not it.
    assert refusal_of(401, POLICY) is None
    assert refusal_of(403, b"forbidden\n") is None
    assert refusal_of(403, b"403 Forbidden: " + POLICY) is not None


def test_the_integrator_refusal_names_the_app_and_lists_its_models() -> None:
    body = _integrator(
        'The requested model is not available for integrator "copilot-language-server". '
        "Available models: [gpt-4.1 claude-opus-4.7 gpt-5.5]. Verify the correct "
        "Copilot-Integration-Id header is being sent."
    )
    found = refusal_of(400, body)
    assert found is not None
    assert (found.code, found.integrator) == ("integrator_refused", "copilot-language-server")
    assert found.available == ("gpt-4.1", "claude-opus-4.7", "gpt-5.5")
    message = found.message()
    assert 'integrator "copilot-language-server"' in message
    assert "it serves gpt-4.1, claude-opus-4.7, gpt-5.5;" in message


def test_the_integrator_refusal_without_its_code_is_known_by_its_words() -> None:
    """The houston report: the message alone, at the top level."""
    body = json.dumps(
        {
            "message": 'The requested model is not available for integrator "vscode-chat". '
            "Available models: [gpt-4.1]"
        }
    ).encode()
    found = refusal_of(400, body)
    assert found is not None
    assert (found.integrator, found.available) == ("vscode-chat", ("gpt-4.1",))


def test_other_400s_are_not_refusals_by_policy() -> None:
    not_supported = _integrator("The requested model is not supported.", "model_not_supported")
    assert refusal_of(400, not_supported) is None
    assert refusal_of(400, b"bad request: missing Editor-Version header for IDE auth\n") is None


def test_a_listed_id_that_is_not_a_model_id_is_left_out() -> None:
    body = _integrator(
        'not available for integrator "x". Available models: [ok-1 \x1b[31m <b> ok-2]'
    )
    found = refusal_of(400, body)
    assert found is not None
    assert found.available == ("ok-1", "ok-2")


@pytest.mark.parametrize(
    ("identities", "named"),
    [
        ((), "this Copilot client"),
        (("vscode-chat",), "VS Code's Copilot Chat (vscode-chat)"),
        (
            ("vscode-chat", "copilot-developer-cli"),
            "either client identity copilot-host presents (VS Code's Copilot Chat "
            "(vscode-chat) and the Copilot CLI (copilot-developer-cli))",
        ),
    ],
)
def test_the_policy_words_name_the_identities_refused(
    identities: tuple[str, ...], named: str
) -> None:
    found = refusal_of(403, POLICY)
    assert found is not None
    assert f"does not allow {named} (GitHub:" in found.message(identities)
    error = found.error("Copilot model discovery", identities)
    assert (error.code, error.message.startswith("Copilot model discovery was refused: ")) == (
        "policy_refused",
        True,
    )


def test_an_unknown_identity_is_shown_inert() -> None:
    assert identity_name("odd\nid") == "the client 'odd id'"


@given(st.integers(min_value=100, max_value=599), st.binary(max_size=4096))
def test_no_answer_makes_it_raise(status: int, body: bytes) -> None:
    found = refusal_of(status, body)
    if found is not None:
        assert found.code in ("policy_refused", "integrator_refused")
        assert "\n" not in found.error("x").message


def test_a_deeply_nested_answer_is_no_refusal() -> None:
    assert refusal_of(400, b"[" * 100_000) is None
