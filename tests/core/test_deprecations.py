"""Names renamed in 0.2.0 kept working for one minor version; 0.3.0 removes them as
announced, and a name the root no longer exports still resolves, with a warning."""

from __future__ import annotations

import pytest

import copilot_host as ch
from tests.sessions._hosts import ENDPOINT, canary, identity

NEW = {
    "received_monotonic": 10.0,
    "refresh_monotonic": 20.0,
    "expires_monotonic": 30.0,
    "expires_wall": 1_700_000_030.0,
}
OLD = {
    "received_at": 10.0,
    "refresh_at": 20.0,
    "expires_at": 30.0,
    "expires_at_wall": 1_700_000_030.0,
}


def _session(**times: float) -> ch.CopilotSession:
    # The old and the unknown names are passed on purpose: mypy rightly sees no such
    # parameters.
    return ch.CopilotSession(
        token=ch.Secret(canary()),
        identity=identity(),
        endpoint=ENDPOINT,
        **times,  # type: ignore[arg-type]
    )


def test_the_session_times_say_which_clock_they_are_on() -> None:
    session = _session(**NEW)
    assert (session.received_monotonic, session.expires_monotonic) == (10.0, 30.0)


def test_the_old_session_names_are_gone_as_announced() -> None:
    with pytest.raises(TypeError, match="received_at"):
        _session(**OLD)
    session = _session(**NEW)
    for old in OLD:
        assert not hasattr(session, old)


def test_the_emulators_default_models_alias_is_gone_as_announced() -> None:
    from copilot_host import testing

    assert not hasattr(testing, "default_models")


def test_a_session_missing_a_time_or_given_an_unknown_one_is_refused() -> None:
    with pytest.raises(TypeError, match="expires_wall"):
        _session(received_monotonic=1.0, refresh_monotonic=2.0, expires_monotonic=3.0)
    with pytest.raises(TypeError, match="expires_soon"):
        _session(**NEW, expires_soon=1.0)


@pytest.mark.parametrize("kind", ["blocking", "async"])
def test_the_hosts_key_file_argument_is_gone_as_announced(kind: str) -> None:
    from copilot_host.github import AsyncGitHubCopilotHost, GitHubCopilotHost

    host = GitHubCopilotHost if kind == "blocking" else AsyncGitHubCopilotHost
    with pytest.raises(TypeError, match="key_file"):
        host(key_file=True)  # type: ignore[call-arg]


@pytest.mark.parametrize("name", ["SystemClock", "redact"])
def test_the_names_03_deprecated_are_gone_from_the_root_as_announced(name: str) -> None:
    # 0.3.0 said they would go in 0.4.0: no attribute now, not even with a warning.
    with pytest.raises(AttributeError, match=name):
        getattr(ch, name)
    assert name not in dir(ch)
