"""The agents' modules (copilot_host/gateway/_agents): each profile of ``copilot-host run``
as a pure function, and how a request's sender is told."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from copilot_host import ApiProtocol, ModelBilling, ModelSpec, TokenPrices
from copilot_host.gateway._agents import AGENTS, agent_for
from copilot_host.gateway._agents._claude_code import CLAUDE_DEFAULT_MODEL
from copilot_host.gateway._agents._codex import (
    CODEX_BUNDLED,
    codex_model,
    migrations_flag,
    names_a_model,
)
from copilot_host.gateway._agents._configs import deep_merge, strip_jsonc
from copilot_host.gateway._agents._profile import (
    Facts,
    Profile,
    Request,
    Setup,
    cheapest_chat_model,
    default_chat_model,
)
from copilot_host.gateway._protocols import Api

BASE = "http://127.0.0.1:4141/v1"


@pytest.mark.parametrize(
    "args",
    [
        ["-m", "gpt-5.5"],
        ["exec", "--model", "gpt-5.5", "hi"],
        ["exec", "--model=gpt-5.5"],
        ["-p", "work"],
        ["--profile", "work"],
        ["--profile=work"],
        ["-c", "model=gpt-5.5"],
        ["-c", ' model = "gpt-5.5"'],
        ["--config", "model=gpt-5.5"],
        ["--config=model=gpt-5.5"],
        ["-cmodel=gpt-5.5"],
    ],
)
def test_arguments_that_name_a_model(args: list[str]) -> None:
    assert names_a_model(args)


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["exec", "--skip-git-repo-check", "hi"],
        ["-c", "model_reasoning_effort=high"],
        ["-c"],
        ["--config=sandbox=read-only"],
        ["exec", "--", "-m", "is the prompt"],
        ["-cmodel_provider=x"],
    ],
)
def test_arguments_that_do_not(args: list[str]) -> None:
    assert not names_a_model(args)


def test_the_model_codex_gets() -> None:
    models = [
        ("gpt-4.1", ["/v1/chat/completions"]),
        ("gpt-5.10", ["/v1/responses"]),
        ("gpt-5.9", ["/v1/responses"]),
        ("gpt-5.3-codex", ["/v1/responses"]),
        ("gpt-5.4-codex-max", ["/v1/responses"]),
        ("gpt-5.6-codex", ["/v1/chat/completions"]),  # does not speak Responses
    ]
    assert codex_model(models, None) == "gpt-5.4-codex-max"
    assert codex_model(models, "gpt-4.1") == "gpt-4.1"
    # No codex model: the newest gpt- one, numbers compared as numbers.
    assert codex_model(models[:3], None) == "gpt-5.10"
    # Equals: the first listed.
    assert codex_model(
        [("gpt-5.1-a", ["/v1/responses"]), ("gpt-5.1-b", ["/v1/responses"])], None
    ) == ("gpt-5.1-a")
    assert codex_model([("claude-opus-5", ["/v1/messages"])], None) is None
    assert codex_model([], None) is None


def test_codex_prefers_a_model_it_ships_metadata_for_when_asked_to() -> None:
    models = [
        ("gpt-5.3-codex", ["/v1/responses"]),
        ("gpt-5.5", ["/v1/responses"]),
        ("gpt-6.1-sol", ["/v1/chat/completions"]),  # bundled, but no Responses here
    ]
    assert codex_model(models, None) == "gpt-5.3-codex"
    assert codex_model(models, None, CODEX_BUNDLED) == "gpt-5.5"


# -- the profiles, as pure functions of what the catalog says -------------------------------

CHAT, RESPONSES, MESSAGES = (
    ApiProtocol.OPENAI_CHAT,
    ApiProtocol.OPENAI_RESPONSES,
    ApiProtocol.ANTHROPIC_MESSAGES,
)


def _spec(
    model_id: str,
    *protocols: ApiProtocol,
    window: int | None = 128_000,
    prompt: int | None = None,
    output: int | None = 16_384,
    price: float | None = None,
    multiplier: float | None = None,
    chat_default: bool = False,
) -> ModelSpec:
    prices = None if price is None else TokenPrices(batch_size=1_000_000, output=price)
    billing = (
        None
        if prices is None and multiplier is None
        else ModelBilling(multiplier=multiplier, prices=prices)
    )
    return ModelSpec(
        model_id=model_id,
        display_name=model_id.upper(),
        protocol=protocols[0],
        protocols=frozenset(protocols),
        context_window=window,
        max_prompt_tokens=prompt,
        max_output_tokens=output,
        billing=billing,
        chat_default=chat_default,
    )


MODELS = (
    _spec("gpt-4.1", CHAT, price=800, multiplier=0),
    _spec("gpt-5.4", CHAT, RESPONSES, window=400_000, prompt=272_000, output=128_000, price=1500),
    _spec("gpt-5.3-codex", RESPONSES, window=400_000, prompt=272_000, chat_default=True),
    _spec("gpt-5-mini", CHAT, RESPONSES, price=200, multiplier=0),
    _spec("claude-opus-5", CHAT, MESSAGES, window=1_000_000, prompt=936_000, output=64_000),
    _spec("claude-haiku-4.5", CHAT, MESSAGES, window=200_000, prompt=128_000, price=500),
)


def _resolve(name: str, api: Api | None) -> ModelSpec | None:
    """The gateway's rules, as far as these tests need them."""
    served = {
        "opus": "claude-opus-5",
        CLAUDE_DEFAULT_MODEL: "claude-opus-5",
        "haiku": "claude-haiku-4.5",
    }
    wanted = served.get(name, name)
    for model in MODELS:
        if model.model_id == wanted and (api is None or api.speaks(model)):
            return model
    return None


FACTS = Facts(models=MODELS, resolve=_resolve)
LOGGED_OUT = Facts(missing="not logged in")


def _setup(
    program: str,
    *args: str,
    env: Mapping[str, str] | None = None,
    facts: Facts = FACTS,
    where: Path | None = None,
) -> Setup:
    folder = where if where is not None else Path("/nonexistent-copilot-host-test")
    agent = agent_for(program)
    assert agent is not None
    return agent.profile.build(
        Request(
            args=args,
            env=dict(env or {}),
            base_url=BASE,
            facts=facts,
            cwd=folder / "work",
            home=folder,
        )
    )


def _profile(command: str) -> Profile | None:
    agent = agent_for(command)
    return agent.profile if agent is not None else None


def test_profiles_are_chosen_by_the_commands_file_name() -> None:
    assert _profile("codex") is _profile("/usr/local/bin/codex") is not None
    assert _profile("/opt/agents/node_modules/.bin/opencode") is agent_for("opencode").profile  # type: ignore[union-attr]
    programs = {program for agent in AGENTS for program in agent.programs}
    assert programs == {"claude", "codex", "opencode", "aider", "copilot", "qwen"}
    assert _profile("codex-wrapper") is None
    assert _profile("gemini") is None
    # Each is declarative: what it adds, its sources and its precedence table.
    for agent in AGENTS:
        profile = agent.profile
        assert profile.adds and profile.sources and profile.precedence


def test_the_default_chat_model() -> None:
    # The inventory's chat default does not serve Chat Completions: the newest gpt- that does.
    assert default_chat_model(FACTS) is MODELS[1]
    marked = Facts(models=(*MODELS[:2], _spec("gpt-4.1-x", CHAT, chat_default=True)))
    assert default_chat_model(marked).model_id == "gpt-4.1-x"  # type: ignore[union-attr]
    given = Facts(models=MODELS, default="gpt-4.1")
    assert default_chat_model(given) is MODELS[0]
    assert default_chat_model(Facts(models=(MODELS[2],))) is None
    assert default_chat_model(LOGGED_OUT) is None


def test_the_cheapest_chat_model() -> None:
    assert cheapest_chat_model(FACTS).model_id == "gpt-5-mini"  # type: ignore[union-attr]
    unpriced = tuple(
        _spec(m.model_id, *sorted(m.protocols, key=str), multiplier=x)
        for m, x in zip(MODELS[:2], (1.0, 0.33), strict=True)
    )
    assert cheapest_chat_model(Facts(models=unpriced)).model_id == "gpt-5.4"  # type: ignore[union-attr]
    assert cheapest_chat_model(LOGGED_OUT) is None


def test_claude_gets_the_prompt_limit_of_the_model_that_serves_its_main_model() -> None:
    setup = _setup("claude", "-p", "hi")
    assert setup.env == {
        "CLAUDE_CODE_AUTO_COMPACT_WINDOW": "936000",  # claude-opus-5's prompt limit
        "CLAUDE_CODE_ATTRIBUTION_HEADER": "0",
        # The cheapest Claude model (priced), for the background calls and the haiku alias.
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": "claude-haiku-4.5",
        "ANTHROPIC_SMALL_FAST_MODEL": "claude-haiku-4.5",
        "CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY": "1",
    }
    assert setup.args == ("-p", "hi") and not setup.notes
    assert _setup("claude", "--model", "haiku").env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] == "128000"
    assert _setup("claude", "--model=haiku").env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] == "128000"
    # ANTHROPIC_MODEL is the main model when set.
    env = {"ANTHROPIC_MODEL": "haiku"}
    assert (
        _setup("claude", "--model", "opus", env=env).env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"]
        == "128000"
    )


def test_claude_leaves_what_the_user_set_and_says_what_it_cannot_know() -> None:
    env = {
        "CLAUDE_CODE_AUTO_COMPACT_WINDOW": "50000",
        "CLAUDE_CODE_ATTRIBUTION_HEADER": "1",
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": "mine",
        "ANTHROPIC_SMALL_FAST_MODEL": "mine",
        "CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY": "0",
    }
    assert _setup("claude", env=env).env == {}
    setup = _setup("claude", facts=LOGGED_OUT)
    assert setup.env == {
        "CLAUDE_CODE_ATTRIBUTION_HEADER": "0",
        "CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY": "1",
    }
    # No Claude model on Messages: no background model named (gpt-4.1 is not Claude).
    gpt_only = Facts(models=(MODELS[0], MODELS[1]), resolve=_resolve)
    assert "ANTHROPIC_SMALL_FAST_MODEL" not in _setup("claude", facts=gpt_only).env
    assert setup.notes == ("Claude Code's compaction window not set: not logged in",)
    (note,) = _setup("claude", "--model", "gpt-4.1").notes  # not served on /v1/messages
    assert "no model serves 'gpt-4.1'" in note


def _overrides(args: tuple[str, ...]) -> list[str]:
    return [args[i + 1] for i, arg in enumerate(args) if arg == "-c"]


def test_codex_gets_the_limits_of_its_model_and_the_review_alias() -> None:
    setup = _setup("codex", "exec", "hi")
    overrides = _overrides(setup.args)
    assert setup.args[-2:] == ("exec", "hi")
    assert overrides[-4:] == [
        'model="gpt-5.3-codex"',
        "model_context_window=400000",
        "model_auto_compact_token_limit=244800",  # 90% of 272k
        # No migration target is on this account: every migration screen is hidden.
        'notice.model_migrations={"gpt-5.5"="gpt-6-sol","gpt-5.6-sol"="gpt-6-sol",'
        '"gpt-5.6-terra"="gpt-6-sol","gpt-5.6-luna"="gpt-6-luna"}',
    ]
    assert "analytics.enabled=false" in overrides
    # No model_max_output_tokens: Codex 0.171.0 ignores it, with a warning on every run.
    assert not any("max_output" in o for o in overrides)
    assert setup.aliases == {"codex-auto-review": "gpt-5.3-codex"}
    # A model named by the user gets its own limits, and the alias.
    setup = _setup("codex", "exec", "-m", "gpt-5.4", "hi")
    assert 'model="gpt-5.3-codex"' not in _overrides(setup.args)
    assert setup.aliases == {"codex-auto-review": "gpt-5.4"}


def test_codex_leaves_the_settings_the_user_gave() -> None:
    setup = _setup(
        "codex", "-c", "model_context_window=1000", "-cmodel_auto_compact_token_limit=900", "exec"
    )
    overrides = _overrides(setup.args)
    assert overrides.count("model_context_window=1000") == 1
    assert not any(o.startswith("model_context_window=400000") for o in overrides)
    assert not any(o.startswith("model_auto_compact_token_limit=244800") for o in overrides)
    setup = _setup("codex", "--profile", "work", "exec")
    assert not any(o.startswith(("model=", "model_context")) for o in _overrides(setup.args))
    assert setup.aliases == {}
    setup = _setup("codex", "exec", facts=LOGGED_OUT)
    assert setup.notes == ("Codex's model and limits not set: not logged in",)
    assert _overrides(setup.args)[-3:] == [
        'model_provider="copilot-host"',
        "analytics.enabled=false",
        migrations_flag(()),
    ]
    # Their own notice and analytics settings: none of ours.
    setup = _setup("codex", "-c", "notice.hide_full_access_warning=true", "-canalytics.enabled=1")
    assert not any(o.startswith(("notice.model", "analytics")) for o in _overrides(setup.args))


def test_codex_migration_screens_hidden_only_for_targets_the_account_lacks() -> None:
    sol = _spec("gpt-6-sol", RESPONSES, window=272_000)
    luna_chat_only = _spec("gpt-6-luna", CHAT)
    flag = migrations_flag((*MODELS, sol, luna_chat_only))
    # gpt-6-sol is served on Responses: its three screens stay (their offer works).
    assert flag == 'notice.model_migrations={"gpt-5.6-luna"="gpt-6-luna"}'
    everything = (sol, _spec("gpt-6-luna", RESPONSES))
    assert migrations_flag(everything) is None
    assert migrations_flag((), {"a": "b"}) == 'notice.model_migrations={"a"="b"}'
    # The profile's own choice is then the target itself (newer than what would migrate).
    facts = Facts(models=(*MODELS, _spec("gpt-5.5", RESPONSES), sol), resolve=_resolve)
    overrides = _overrides(_setup("codex", facts=facts).args)
    assert 'model="gpt-6-sol"' in overrides
    assert overrides[-1] == 'notice.model_migrations={"gpt-5.6-luna"="gpt-6-luna"}'


def _content(setup: Setup) -> dict[str, object]:
    value = json.loads(setup.env["OPENCODE_CONFIG_CONTENT"])
    assert isinstance(value, dict)
    return value


def test_opencode_gets_a_provider_with_the_accounts_chat_models_and_limits(tmp_path: Path) -> None:
    setup = _setup("opencode", "run", "hi", where=tmp_path)
    content = _content(setup)
    provider = content["provider"]["copilot-host"]  # type: ignore[index]
    assert provider["npm"] == "@ai-sdk/openai-compatible"
    # By reference: the value holds neither the address nor the key.
    assert provider["options"] == {
        "baseURL": "{env:COPILOT_HOST_BASE_URL}",
        "apiKey": "{env:COPILOT_HOST_API_KEY}",
    }
    models = provider["models"]
    assert "gpt-5.3-codex" not in models  # Responses only: not on Chat Completions
    assert models["claude-opus-5"]["limit"] == {"context": 936_000, "output": 64_000}
    assert models["gpt-4.1"]["limit"] == {"context": 128_000, "output": 16_384}
    # Every model listed has both limits; one without them is no model to chat with.
    assert all(set(entry["limit"]) == {"context", "output"} for entry in models.values())
    odd = (*MODELS, _spec("trajectory-compaction", CHAT, output=0), _spec("x", CHAT, window=None))
    listed = _content(_setup("opencode", facts=Facts(models=odd), where=tmp_path))
    assert listed["provider"]["copilot-host"]["models"].keys() == models.keys()  # type: ignore[index]
    assert content["model"] == "copilot-host/gpt-5.4"
    assert setup.args == ("run", "hi")
    assert "model" not in _content(_setup("opencode", "run", "-m", "x/y", "hi", where=tmp_path))


def test_opencode_merges_the_users_own_files_and_value_theirs_winning(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "opencode.jsonc").write_text(
        '{\n  // their own\n  "model": "copilot-host/gpt-4.1",\n'
        '  "provider": {"copilot-host": {"models": {"gpt-4.1": {"limit": {"context": 5}}},},},\n}'
    )
    content = _content(_setup("opencode", "run", where=tmp_path))
    assert "model" not in content  # theirs, from the file, stands
    models = content["provider"]["copilot-host"]["models"]  # type: ignore[index]
    assert models["gpt-4.1"]["limit"] == {"output": 16_384}  # their context stands
    assert models["gpt-4.1"]["name"] == "GPT-4.1"
    theirs = {"theme": "dark", "provider": {"copilot-host": {"options": {"timeout": 5}}}}
    content = _content(
        _setup("opencode", env={"OPENCODE_CONFIG_CONTENT": json.dumps(theirs)}, where=tmp_path)
    )
    assert content["theme"] == "dark"
    options = content["provider"]["copilot-host"]["options"]  # type: ignore[index]
    assert options["timeout"] == 5 and options["apiKey"] == "{env:COPILOT_HOST_API_KEY}"


def test_opencode_leaves_a_value_that_is_not_json_alone(tmp_path: Path) -> None:
    setup = _setup("opencode", env={"OPENCODE_CONFIG_CONTENT": "{nope"}, where=tmp_path)
    assert setup.env == {}
    assert setup.notes == ("OPENCODE_CONFIG_CONTENT left as it is: it is not a JSON object",)
    setup = _setup("opencode", facts=LOGGED_OUT, where=tmp_path)
    assert setup.env == {} and setup.notes == ("opencode's provider not set: not logged in",)


def test_jsonc_and_deep_merge() -> None:
    text = '{"a": "// not a comment", /* gone */ "b": [1, 2,], // gone\n "c": {"d": 1,},}'
    assert json.loads(strip_jsonc(text)) == {"a": "// not a comment", "b": [1, 2], "c": {"d": 1}}
    assert deep_merge({"a": {"b": 1, "c": 2}, "d": 1}, {"a": {"b": 3}, "d": {"e": 1}}) == {
        "a": {"b": 3, "c": 2},
        "d": {"e": 1},
    }


def test_aider_gets_a_model_and_a_weak_model(tmp_path: Path) -> None:
    setup = _setup("aider", "--message", "hi", where=tmp_path)
    assert setup.args == (
        "--model",
        "openai/gpt-5.4",
        "--weak-model",
        "openai/gpt-5-mini",  # the lowest output price
        "--message",
        "hi",
    )
    # A cheaper model aider does not know the window of is passed over (aider would warn).
    cheap = Facts(models=(*MODELS, _spec("gemini-9-flash", CHAT, price=1)), resolve=_resolve)
    setup = _setup("aider", facts=cheap, where=tmp_path)
    assert setup.args[2:4] == ("--weak-model", "openai/gpt-5-mini")
    assert _setup("aider", facts=LOGGED_OUT, where=tmp_path).notes == (
        "aider's --model not set: not logged in",
        "aider's --weak-model not set: not logged in",
    )


@pytest.mark.parametrize(
    ("args", "env", "file", "text"),
    [
        (("--model", "openai/x"), {}, None, ""),
        (("--model=openai/x",), {}, None, ""),
        ((), {"AIDER_MODEL": "openai/x"}, None, ""),
        ((), {}, ".aider.conf.yml", "model: openai/x\n"),
        ((), {}, "work/.aider.conf.yml", "  model: openai/x\n"),
        ((), {}, "work/.env", "AIDER_MODEL=openai/x\n"),
        (("--config", "mine.yml"), {}, "work/mine.yml", "model: openai/x\n"),
    ],
)
def test_aider_leaves_a_model_the_user_set(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str], file: str | None, text: str
) -> None:
    (tmp_path / "work").mkdir()
    if file is not None:
        (tmp_path / file).write_text(text)
    setup = _setup("aider", *args, env=env, where=tmp_path)
    assert "openai/gpt-5.4" not in setup.args
    assert setup.args[:2] == ("--weak-model", "openai/gpt-5-mini")


def test_qwen_code_gets_a_model_and_its_output_limit() -> None:
    setup = _setup("qwen", "-p", "hi")
    assert setup.env == {
        "OPENAI_MODEL": "gpt-5.4",  # the default chat model
        "QWEN_CODE_MAX_OUTPUT_TOKENS": "128000",
        "QWEN_USAGE_STATISTICS_ENABLED": "false",
    }
    assert setup.args == ("-p", "hi") and not setup.notes
    # A model the arguments or the variable name: its own limit, and no OPENAI_MODEL of ours.
    assert _setup("qwen", "-m", "gpt-4.1").env["QWEN_CODE_MAX_OUTPUT_TOKENS"] == "16384"
    mine = _setup("qwen", env={"OPENAI_MODEL": "gpt-4.1", "QWEN_USAGE_STATISTICS_ENABLED": "1"})
    assert mine.env == {"QWEN_CODE_MAX_OUTPUT_TOKENS": "16384"}
    assert _setup("qwen", env={"QWEN_CODE_MAX_OUTPUT_TOKENS": "99"}).env.keys() == {
        "OPENAI_MODEL",
        "QWEN_USAGE_STATISTICS_ENABLED",
    }
    assert _setup("qwen", facts=LOGGED_OUT).notes == (
        "OPENAI_MODEL not set for Qwen Code: not logged in",
    )


def test_copilot_cli_gets_its_own_byok_variables() -> None:
    setup = _setup("copilot", "-p", "hi")
    assert setup.env == {
        "COPILOT_PROVIDER_BASE_URL": BASE,
        "COPILOT_PROVIDER_TYPE": "openai",
        "COPILOT_OFFLINE": "true",
        "COPILOT_MODEL": "gpt-5.4",
        # gpt-5.4 speaks Responses: spoken to there, with its limits.
        "COPILOT_PROVIDER_WIRE_API": "responses",
        "COPILOT_PROVIDER_MAX_PROMPT_TOKENS": "272000",
        "COPILOT_PROVIDER_MAX_OUTPUT_TOKENS": "128000",
    }
    assert setup.key_env == ("COPILOT_PROVIDER_API_KEY",)
    assert setup.args == ("-p", "hi")
    mine = {
        "COPILOT_PROVIDER_TYPE": "anthropic",
        "COPILOT_PROVIDER_API_KEY": "x",
        "COPILOT_MODEL": "m",
    }
    setup = _setup("copilot", env=mine)
    assert set(setup.env) == {"COPILOT_PROVIDER_BASE_URL", "COPILOT_OFFLINE"}
    assert setup.key_env == ()
    # A model of theirs that speaks Chat Completions only: its limits, no wire API.
    named = _setup("copilot", "--model", "gpt-4.1").env
    assert "COPILOT_MODEL" not in named and "COPILOT_PROVIDER_WIRE_API" not in named
    assert named["COPILOT_PROVIDER_MAX_OUTPUT_TOKENS"] == "16384"
    theirs = {"COPILOT_PROVIDER_TYPE": "anthropic", "COPILOT_PROVIDER_MAX_PROMPT_TOKENS": "9"}
    setup = _setup("copilot", env=theirs)
    assert "COPILOT_PROVIDER_WIRE_API" not in setup.env
    assert "COPILOT_PROVIDER_MAX_PROMPT_TOKENS" not in setup.env
    assert _setup("copilot", facts=LOGGED_OUT).notes == ("COPILOT_MODEL not set: not logged in",)
