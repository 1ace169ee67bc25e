"""``Scenario``'s groups: a test scripts by concern; the flat keywords of 0.3.0 (deprecated
in 0.4.0) are gone in 0.5.0 and name the group each went to."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import httpx2
import pytest

from copilot_host.testing import (
    Auto,
    DeviceFlow,
    Faults,
    GitHubEmulator,
    Inventory,
    RateWindow,
    RawAnswer,
    Replies,
    Scenario,
    Session,
    Sockets,
    ToolCall,
    Usage,
    minimal_models,
)
from copilot_host.testing._groups import GROUPS
from tests.testing._support import body, copilot

GROUP_TYPES = [kind for _, kind in GROUPS]


def test_a_scenario_holds_only_the_groups_and_lenient() -> None:
    fields = [f.name for f in dataclasses.fields(Scenario)]
    assert fields == [*(name for name, _ in GROUPS), "lenient"]
    names = [member.name for kind in GROUP_TYPES for member in dataclasses.fields(kind)]
    assert len(names) == len(set(names))  # each setting in exactly one group


def test_groups_script_the_emulator(recwarn: pytest.WarningsRecorder) -> None:
    scenario = Scenario(
        login=DeviceFlow(account="mona"),
        session=Session(session_lifetime=900),
        inventory=Inventory(models=minimal_models()),
        replies=Replies(stream_events=2, tool_calls=False),
        usage=Usage(usage_plan="requests", quota_entitlement=300),
        faults=Faults(answers={"user": RawAnswer(status=503)}),
    )
    assert not recwarn.list
    assert (scenario.login.account, scenario.session.session_lifetime) == ("mona", 900)
    assert scenario.usage.usage_plan == "requests" and scenario.usage.quota_entitlement == 300
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


@pytest.mark.parametrize(
    ("flat", "where"),
    [
        ({"tool_calls": False}, r"Scenario\(replies=Replies\(tool_calls=\.\.\.\)\)"),
        ({"usage_plan": "free"}, r"Scenario\(usage=Usage\(usage_plan=\.\.\.\)\)"),
        ({"auto_approve": False}, r"Scenario\(login=DeviceFlow\(auto_approve=\.\.\.\)\)"),
        ({"slow": {"user": 1.0}}, r"Scenario\(faults=Faults\(slow=\.\.\.\)\)"),
    ],
)
def test_a_flat_keyword_is_a_type_error_naming_its_group(
    flat: dict[str, object], where: str
) -> None:
    with pytest.raises(TypeError, match=where):
        Scenario(**flat)  # type: ignore[arg-type]


def test_every_former_flat_keyword_is_refused() -> None:
    for name, kind in GROUPS:
        for member in dataclasses.fields(kind):
            with pytest.raises(TypeError, match=f"{member.name}= in its group"):
                Scenario(**{member.name: None})  # type: ignore[arg-type]
            assert not hasattr(Scenario(), member.name), f"{name}.{member.name}"


# The groups 0.4.0's flat keywords went to (Auto and Sockets came after them), and group
# fields that were never flat keywords: added in 0.5.0 (CHANGELOG's "Added").
FLAT_GROUPS = [(name, kind) for name, kind in GROUPS if kind not in (Auto, Sockets)]
NEW_IN_0_5 = frozenset(
    {
        "chat_enabled",
        "organization_list",
        "enterprise_list",
        "min_cli_version",
        "integrator_models",
    }
)


def test_the_changelog_says_where_each_flat_keyword_went() -> None:
    changelog = Path(__file__).resolve().parents[2] / "CHANGELOG.md"
    rows = re.findall(
        r"^  \| (`\w+`(?:, `\w+`)*) \| `(\w+)=(\w+)\(\.\.\.\)` \|$",
        changelog.read_text(encoding="utf-8"),
        re.M,
    )
    told = {
        name: (group, kind) for names, group, kind in rows for name in re.findall(r"\w+", names)
    }
    assert told == {
        member.name: (group, kind.__name__)
        for group, kind in FLAT_GROUPS
        for member in dataclasses.fields(kind)
        if member.name not in NEW_IN_0_5
    }


def test_a_scenario_is_read_through_its_groups() -> None:
    grouped = Scenario(usage=Usage(weekly_window=RateWindow(remaining=5.0)))
    assert grouped.usage.weekly_window == RateWindow(remaining=5.0)
    assert grouped.login == DeviceFlow() and grouped.faults == Faults()
    # The groups hold the checked, frozen values: a dict given is not the one kept.
    given = {"user": 0.5}
    slow = Scenario(faults=Faults(slow=given))
    given["user"] = 9.0
    assert slow.faults.slow == {"user": 0.5}
    with pytest.raises(TypeError):
        slow.faults.slow["user"] = 1.0  # type: ignore[index]


def test_replace_changes_one_group_and_keeps_the_others() -> None:
    base = Scenario(usage=Usage(usage_plan="free"), faults=Faults(slow={"models": 2.0}))
    faults = dataclasses.replace(base.faults, slow={**base.faults.slow, "user": 1.0})
    changed = dataclasses.replace(base, faults=faults)
    assert changed.faults.slow == {"models": 2.0, "user": 1.0}
    assert changed.usage.usage_plan == "free" and base.faults.slow == {"models": 2.0}
    # A replaced group is checked like a given one.
    with pytest.raises(ValueError, match="unknown emulated endpoint"):
        dataclasses.replace(base, faults=Faults(slow={"nowhere": 1.0}))


def test_groups_are_checked() -> None:
    with pytest.raises(ValueError, match="usage_plan"):
        Scenario(usage=Usage(usage_plan="gold"))
    with pytest.raises(TypeError, match="Usage"):
        Scenario(usage=Replies())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ToolCall"):
        Scenario(replies=Replies(tool_script=("Read",)))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown emulated endpoint"):
        Scenario(usage=Usage(quota_exceeded_on=frozenset({"nowhere"})))
    assert [DeviceFlow, Session, Inventory, Replies, Usage, Faults, Auto, Sockets] == GROUP_TYPES
    with pytest.raises(ValueError, match="gated"):
        Auto(gated=frozenset({"everything"}))
    with pytest.raises(ValueError, match="fraction"):
        Auto(discounts={"gpt-4.1": 1.5})
    with pytest.raises(ValueError, match="pool"):
        Auto(pool="gpt-4.1")  # type: ignore[arg-type]
    listed: Any = [ToolCall(name="x")]  # a list is kept as a tuple
    assert Scenario(replies=Replies(tool_script=listed)).replies.tool_script == tuple(listed)
