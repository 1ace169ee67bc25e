"""``Scenario``'s groups: a test scripts by concern; the flat keywords of 0.3.0 still work in
0.4.0 with a DeprecationWarning."""

from __future__ import annotations

import dataclasses

import httpx2
import pytest

from copilot_host.testing import (
    DeviceFlow,
    Faults,
    GitHubEmulator,
    Inventory,
    RateWindow,
    RawAnswer,
    Replies,
    Scenario,
    Session,
    ToolCall,
    Usage,
    minimal_models,
)
from copilot_host.testing._groups import GROUPS
from tests.testing._support import body, copilot

GROUP_TYPES = [kind for _, kind in GROUPS]


def _default(member: dataclasses.Field[object]) -> object:
    if member.default is not dataclasses.MISSING:
        return member.default
    factory = member.default_factory
    assert callable(factory)
    return factory()


def test_every_flat_field_is_in_exactly_one_group_with_the_same_default() -> None:
    flat = {f.name: f for f in dataclasses.fields(Scenario)}
    seen: list[str] = []
    for name, kind in GROUPS:
        factory: object = flat[name].default_factory
        assert factory is kind  # the group keyword itself
        for member in dataclasses.fields(kind):
            seen.append(member.name)
            here, there = flat[member.name], member
            default, theirs = _default(here), _default(there)
            assert default == theirs, member.name
    assert len(seen) == len(set(seen))
    assert set(flat) - set(seen) - {name for name, _ in GROUPS} == {"lenient"}


def test_groups_script_the_emulator_without_a_warning(recwarn: pytest.WarningsRecorder) -> None:
    scenario = Scenario(
        login=DeviceFlow(account="mona"),
        session=Session(session_lifetime=900),
        inventory=Inventory(models=minimal_models()),
        replies=Replies(stream_events=2, tool_calls=False),
        usage=Usage(usage_plan="requests", quota_entitlement=300),
        faults=Faults(answers={"user": RawAnswer(status=503)}),
    )
    assert not [w for w in recwarn if issubclass(w.category, DeprecationWarning)]
    assert (scenario.account, scenario.session_lifetime, scenario.stream_events) == ("mona", 900, 2)
    assert scenario.usage_plan == "requests" and scenario.usage.quota_entitlement == 300
    with GitHubEmulator(scenario) as emu, httpx2.Client(transport=emu.transport()) as client:
        user = client.get(
            "https://api.github.com/user", headers={"Authorization": f"token {emu.github_token}"}
        )
        origin, headers = copilot(emu, client)
        answer = client.post(
            f"{origin}/chat/completions", json=body("chat", "gpt-4.1"), headers=headers
        )
    assert user.status_code == 503
    assert answer.json()["choices"][0]["message"]["content"] == "echo: hi"


def test_flat_keywords_still_work_with_a_deprecation_warning() -> None:
    with pytest.warns(DeprecationWarning, match=r"give stream_events, usage_plan in the groups"):
        scenario = Scenario(stream_events=3, usage_plan="free")
    assert (scenario.replies.stream_events, scenario.usage.usage_plan) == (3, "free")
    with pytest.warns(DeprecationWarning, match="give tool_script in the groups"):
        Scenario(tool_script=(ToolCall(name="x"),))


def test_a_scenario_is_read_through_its_groups_however_it_was_made() -> None:
    grouped = Scenario(usage=Usage(weekly_window=RateWindow(remaining=5.0)))
    assert grouped.usage.weekly_window == RateWindow(remaining=5.0)
    assert grouped.login == DeviceFlow() and grouped.faults == Faults()
    # The groups hold the checked, frozen values: a dict given is not the one kept.
    given = {"user": 0.5}
    slow = Scenario(faults=Faults(slow=given))
    given["user"] = 9.0
    assert slow.faults.slow == {"user": 0.5} == slow.slow


def test_replace_changes_one_field_of_a_grouped_scenario() -> None:
    base = Scenario(usage=Usage(usage_plan="free"))
    with pytest.warns(DeprecationWarning, match="give slow in"):
        changed = dataclasses.replace(base, slow={"user": 1.0})
    assert changed.faults.slow == {"user": 1.0} and changed.usage_plan == "free"


def test_groups_are_checked_like_flat_fields() -> None:
    with pytest.raises(ValueError, match="usage_plan"):
        Scenario(usage=Usage(usage_plan="gold"))
    with pytest.raises(TypeError, match="Usage"):
        Scenario(usage=Replies())  # type: ignore[arg-type]
    assert [DeviceFlow, Session, Inventory, Replies, Usage, Faults] == GROUP_TYPES
