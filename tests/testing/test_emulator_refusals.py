"""The emulator refuses what the real Copilot service refuses, in the service's own words."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from copilot_host.testing import (
    CHECKS,
    Faults,
    GitHubEmulator,
    Inventory,
    Replies,
    Scenario,
    Session,
    chat_model,
    minimal_models,
)
from tests.testing._support import EXCHANGE, PATH, PLAIN, body, copilot, session

ALL = ("/chat/completions", "/responses", "/v1/messages")


def _error(answer: httpx2.Response) -> dict[str, Any]:
    assert answer.headers["content-type"] == PLAIN
    assert answer.text.endswith("}\n")
    value: dict[str, Any] = json.loads(answer.text)["error"]
    return value


@pytest.mark.parametrize(
    ("missing", "text"),
    [
        ("Editor-Version", "bad request: missing Editor-Version header for IDE auth\n"),
        ("Copilot-Integration-Id", "bad request: missing required Copilot-Integration-Id header\n"),
    ],
)
@pytest.mark.parametrize("where", ["models", "chat"])
def test_a_copilot_request_without_an_editor_header_is_refused(
    missing: str, text: str, where: str
) -> None:
    with GitHubEmulator() as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        del headers[missing]
        if where == "models":
            answer = client.get(f"{origin}/models", headers=headers)
        else:
            answer = client.post(
                f"{origin}/chat/completions", json=body("chat", "gpt-4.1"), headers=headers
            )
    assert (answer.status_code, answer.headers["content-type"], answer.text) == (400, PLAIN, text)
    assert answer.headers["x-content-type-options"] == "nosniff"


def test_lenient_checks_can_be_switched_off_one_by_one() -> None:
    scenario = Scenario(lenient=frozenset({"editor_version", "integration_id"}))
    with GitHubEmulator(scenario) as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, token = session(emu, client)
        answer = client.get(f"{origin}/models", headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200
    with pytest.raises(ValueError, match="unknown check"):
        Scenario(lenient=frozenset({"everything"}))
    assert {"vision_header", "model_endpoint", "copilot_client_id"} <= CHECKS


IMAGE = {"url": "data:image/png;base64,iVBORw0KGgo="}
IMAGES: dict[str, tuple[str, dict[str, Any]]] = {
    "chat-user": (
        "chat",
        {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": IMAGE}]}]},
    ),
    "chat-tool": (
        "chat",
        {
            "messages": [
                {"role": "user", "content": "look"},
                {
                    "role": "tool",
                    "tool_call_id": "c",
                    "content": [{"type": "image_url", "image_url": IMAGE}],
                },
            ]
        },
    ),
    "responses-message": (
        "responses",
        {
            "input": [
                {"role": "user", "content": [{"type": "input_image", "image_url": IMAGE["url"]}]}
            ]
        },
    ),
    "responses-bare-item": (
        "responses",
        {"input": [{"type": "input_image", "image_url": IMAGE["url"]}]},
    ),
    "responses-tool-output": (
        "responses",
        {
            "input": [
                {
                    "type": "function_call_output",
                    "call_id": "c",
                    "output": [{"type": "input_image", "image_url": IMAGE["url"]}],
                }
            ]
        },
    ),
    "messages-user": (
        "messages",
        {
            "max_tokens": 8,
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"},
                        }
                    ],
                }
            ],
        },
    ),
    "messages-tool-result": (
        "messages",
        {
            "max_tokens": 8,
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t",
                            "content": [
                                {
                                    "type": "image",
                                    "source": {
                                        "type": "base64",
                                        "media_type": "image/png",
                                        "data": "iVBO",
                                    },
                                }
                            ],
                        }
                    ],
                }
            ],
        },
    ),
}


@pytest.mark.parametrize("case", sorted(IMAGES))
def test_image_input_needs_the_vision_header(case: str) -> None:
    protocol, shape = IMAGES[case]
    scenario = Scenario(
        inventory=Inventory(models=(chat_model("eyes", endpoints=ALL, vision=True),))
    )
    with GitHubEmulator(scenario) as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        url, request = f"{origin}{PATH[protocol]}", {"model": "eyes", **shape}
        refused = client.post(url, json=request, headers=headers)
        served = client.post(
            url, json=request, headers={**headers, "Copilot-Vision-Request": "true"}
        )
        first, second = emu.requests_to(protocol)
    assert refused.status_code == 400
    assert refused.text == (
        '{"error":{"message":"missing required Copilot-Vision-Request header for vision '
        'requests","code":""}}\n'
    )
    assert _error(refused)["code"] == ""
    assert served.status_code == 200
    assert (first.vision, second.vision) == (False, True)


def test_vision_is_judged_by_structure_not_by_a_substring() -> None:
    mention = 'please explain {"type": "image_url"} and input_image'
    with GitHubEmulator() as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        answer = client.post(
            f"{origin}/chat/completions", json=body("chat", "gpt-4.1", mention), headers=headers
        )
    assert answer.status_code == 200


def test_the_vision_check_can_be_relaxed() -> None:
    _, shape = IMAGES["chat-user"]
    scenario = Scenario(lenient=frozenset({"vision_header"}))
    with GitHubEmulator(scenario) as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        answer = client.post(
            f"{origin}/chat/completions", json={"model": "gpt-4.1", **shape}, headers=headers
        )
    assert answer.status_code == 200


def test_a_model_newer_than_the_editor_is_refused_on_any_path() -> None:
    scenario = Scenario(
        inventory=Inventory(
            models=(chat_model("gpt-5-codex", endpoints=("/responses",)),),
            min_editor_version={"gpt-5-codex": "1.104.1"},
        )
    )
    with GitHubEmulator(scenario) as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        old = {**headers, "Editor-Version": "vscode/1.98.1"}
        too_old = client.post(
            f"{origin}/responses", json=body("responses", "gpt-5-codex"), headers=old
        )
        # The version gate comes before the endpoint check, as the service's answers show.
        wrong_path = client.post(
            f"{origin}/chat/completions", json=body("chat", "gpt-5-codex"), headers=old
        )
        at_floor = client.post(
            f"{origin}/responses", json=body("responses", "gpt-5-codex"), headers=headers
        )
        newer = {**headers, "Editor-Version": "vscode/1.110.0-insider"}
        beyond = client.post(
            f"{origin}/responses", json=body("responses", "gpt-5-codex"), headers=newer
        )
    assert too_old.status_code == wrong_path.status_code == 400
    assert (
        too_old.text
        == wrong_path.text
        == (
            '{"error":{"message":"model gpt-5-codex is not supported in this VS Code version. '
            'Please update it to version 1.104.1 or newer","code":"model_not_supported_in_version"}}\n'
        )
    )
    assert (at_floor.status_code, beyond.status_code) == (200, 200)


def test_an_unsupported_api_version_answers_466_in_plain_text() -> None:
    scenario = Scenario(inventory=Inventory(min_api_version="2025-05-01"))
    with GitHubEmulator(scenario) as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        old = client.get(
            f"{origin}/models", headers={**headers, "X-GitHub-Api-Version": "2025-04-01"}
        )
        current = client.get(f"{origin}/models", headers=headers)
        absent = {k: v for k, v in headers.items() if k != "X-GitHub-Api-Version"}
        none = client.get(f"{origin}/models", headers=absent)
    assert (old.status_code, old.headers["content-type"]) == (466, PLAIN)
    assert old.text == (
        "bad request: the specified API version is no longer supported. "
        "You may need to update your client to a newer version.\n"
    )
    # Clients that send no version at all are served (several real ones do not).
    assert (current.status_code, none.status_code) == (200, 200)


def test_an_outdated_editor_answers_466_for_every_request() -> None:
    with (
        GitHubEmulator(Scenario(inventory=Inventory(min_client_version="1.109.2"))) as emu,
        httpx2.Client(transport=emu.transport()) as client,
    ):
        origin, headers = copilot(emu, client)
        answer = client.get(
            f"{origin}/models", headers={**headers, "Editor-Version": "vscode/1.109.0"}
        )
        fresh = client.get(
            f"{origin}/models", headers={**headers, "Editor-Version": "vscode/1.109.3"}
        )
    assert (answer.status_code, answer.headers["content-type"]) == (466, PLAIN)
    assert answer.text == (
        "bad request: the VS Code version you are using is no longer supported. "
        "Please upgrade VS Code to version 1.109.2+.\n"
    )
    assert fresh.status_code == 200


WRONG = [
    (
        "only-responses",
        ("/responses",),
        "chat",
        'model \\"only-responses\\" is not accessible via the /chat/completions endpoint',
    ),
    (
        "only-chat",
        ("/chat/completions",),
        "responses",
        "model only-chat is not supported via Responses API.",
    ),
    ("no-list", None, "responses", "model no-list is not supported via Responses API."),
    ("no-list", None, "messages", "no model endpoints available given user constraints"),
    (
        "websocket",
        ("ws:/responses",),
        "responses",
        "model websocket is not supported via Responses API.",
    ),
    (
        "claude",
        ("/v1/messages",),
        "chat",
        'model \\"claude\\" is not accessible via the /chat/completions endpoint',
    ),
]


@pytest.mark.parametrize(("model", "endpoints", "protocol", "message"), WRONG)
def test_a_model_on_a_path_its_entry_does_not_list_is_unsupported_api_for_model(
    model: str, endpoints: tuple[str, ...] | None, protocol: str, message: str
) -> None:
    scenario = Scenario(inventory=Inventory(models=(chat_model(model, endpoints=endpoints),)))
    with GitHubEmulator(scenario) as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        answer = client.post(
            f"{origin}{PATH[protocol]}", json=body(protocol, model), headers=headers
        )
    assert answer.status_code == 400
    assert (
        answer.text == f'{{"error":{{"message":"{message}","code":"unsupported_api_for_model"}}}}\n'
    )


def test_an_entry_without_supported_endpoints_is_served_on_chat_completions() -> None:
    scenario = Scenario(inventory=Inventory(models=(chat_model("legacy", endpoints=None),)))
    with GitHubEmulator(scenario) as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        answer = client.post(
            f"{origin}/chat/completions", json=body("chat", "legacy"), headers=headers
        )
    assert answer.json()["choices"][0]["message"]["content"] == "echo: hi"


def test_an_unknown_model_gets_the_services_138_byte_refusal() -> None:
    with GitHubEmulator() as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        answer = client.post(
            f"{origin}/chat/completions", json=body("chat", "nope"), headers=headers
        )
    assert answer.status_code == 400
    assert len(answer.content) == 138  # the Content-Length a real answer of this kind had
    assert _error(answer) == {
        "message": "The requested model is not supported.",
        "code": "model_not_supported",
        "param": "model",
        "type": "invalid_request_error",
    }


@pytest.mark.parametrize(
    "entry",
    [
        chat_model("m", policy="disabled"),
        chat_model("m", policy="unconfigured"),
        chat_model("m", kind="embeddings", endpoints=None),
        chat_model("m", kind="completion", endpoints=None),
    ],
    ids=["disabled", "unconfigured", "embeddings", "completion"],
)
def test_a_listed_model_the_service_does_not_serve_is_model_not_supported(
    entry: dict[str, object],
) -> None:
    scenario = Scenario(inventory=Inventory(models=(entry, chat_model("ok", policy=None))))
    with GitHubEmulator(scenario) as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        refused = client.post(f"{origin}/chat/completions", json=body("chat", "m"), headers=headers)
        served = client.post(f"{origin}/chat/completions", json=body("chat", "ok"), headers=headers)
    assert refused.status_code == 400
    assert _error(refused)["code"] == "model_not_supported"
    assert served.status_code == 200  # no policy at all is enabled


@pytest.mark.parametrize("protocol", ["chat", "responses", "messages"])
def test_an_organisation_lists_a_model_to_an_identity_it_does_not_serve(protocol: str) -> None:
    # oh-my-pi pull request #11670: an enterprise endpoint answered the chat identity 400
    # model_not_supported for models its discovery listed, and served the Copilot CLI's.
    cli = "copilot-developer-cli"
    model = {"chat": "gpt-4.1", "responses": "gpt-5-mini", "messages": "claude-messages-only"}[
        protocol
    ]
    scenario = Scenario(
        inventory=Inventory(
            models=minimal_models(), unserved_models={"vscode-chat": frozenset({model})}
        )
    )
    with GitHubEmulator(scenario) as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        listed = client.get(f"{origin}/models", headers=headers)
        url = f"{origin}{PATH[protocol]}"
        refused = client.post(url, json=body(protocol, model), headers=headers)
        served = client.post(
            url, json=body(protocol, model), headers={**headers, "Copilot-Integration-Id": cli}
        )
        other = client.post(
            f"{origin}/chat/completions", json=body("chat", "claude-sonnet-4"), headers=headers
        )
    assert model in {entry["id"] for entry in listed.json()["data"]}
    assert refused.status_code == 400
    assert refused.headers["x-content-type-options"] == "nosniff"
    assert len(refused.content) == 138  # the very answer for a model the account lacks
    assert _error(refused) == {
        "message": "The requested model is not supported.",
        "code": "model_not_supported",
        "param": "model",
        "type": "invalid_request_error",
    }
    assert (served.status_code, other.status_code) == (200, 200)


def test_unserved_models_star_refuses_every_model_and_a_bare_string_is_refused() -> None:
    scenario = Scenario(
        inventory=Inventory(
            models=minimal_models(), unserved_models={"vscode-chat": frozenset({"*"})}
        )
    )
    with GitHubEmulator(scenario) as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        answers = [
            client.post(f"{origin}/chat/completions", json=body("chat", m), headers=headers)
            for m in ("gpt-4.1", "claude-sonnet-4")
        ]
    assert [a.status_code for a in answers] == [400, 400]
    assert {_error(a)["code"] for a in answers} == {"model_not_supported"}
    with pytest.raises(ValueError, match="unserved_models"):
        Scenario(inventory=Inventory(unserved_models={"vscode-chat": "gpt-4.1"}))  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="unserved_models"):
        Scenario(inventory=Inventory(unserved_models={"": frozenset({"*"})}))


def test_a_deeply_nested_body_is_an_answer_not_a_dropped_connection() -> None:
    with GitHubEmulator() as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        nested = b"[" * 100_000 + b"]" * 100_000
        answer = client.post(
            f"{origin}/chat/completions",
            content=nested,
            headers={**headers, "Content-Type": "application/json"},
        )
    assert answer.status_code == 400
    assert _error(answer)["code"] == "invalid_request_body"


@pytest.mark.parametrize(
    ("api", "stale"),
    [
        ("https://api.individual.githubcopilot.com", (401, "unauthorized: token expired\n")),
        ("https://api.enterprise.githubcopilot.com", (403, "forbidden\n")),
    ],
)
def test_a_stale_session_is_401_but_403_on_the_enterprise_host(
    api: str, stale: tuple[int, str]
) -> None:
    with (
        GitHubEmulator(Scenario(session=Session(api_endpoint=api))) as emu,
        httpx2.Client(transport=emu.transport()) as client,
    ):
        origin, headers = copilot(emu, client)
        assert client.get(f"{origin}/models", headers=headers).status_code == 200
        emu.revoke_sessions()
        answer = client.get(f"{origin}/models", headers=headers)
        forged = client.get(
            f"{origin}/models", headers={**headers, "Authorization": "Bearer tid=x"}
        )
    assert (answer.status_code, answer.text) == stale
    assert answer.headers["content-type"] == PLAIN
    # A token the service never issued is not a stale session: 401 on every host.
    assert (forged.status_code, forged.text) == (401, "unauthorized: token expired\n")


def _login(client: httpx2.Client, client_id: str) -> None:
    accept = {"Accept": "application/json"}
    code = client.post(
        "https://github.com/login/device/code", data={"client_id": client_id}, headers=accept
    ).json()["device_code"]
    form = {
        "client_id": client_id,
        "device_code": code,
        "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
    }
    answer = client.post("https://github.com/login/oauth/access_token", data=form, headers=accept)
    assert "access_token" in answer.json()


def test_the_exchange_refuses_a_token_of_an_app_not_enabled_for_copilot() -> None:
    with GitHubEmulator() as emu, httpx2.Client(transport=emu.transport()) as client:
        auth = {"Authorization": f"token {emu.github_token}"}
        assert client.get(EXCHANGE, headers=auth).status_code == 200  # VS Code's app
        _login(client, "Ov23liOwnApp")
        refused = client.get(EXCHANGE, headers=auth)
    assert (refused.status_code, refused.headers["content-type"]) == (
        404,
        "application/json; charset=utf-8",
    )
    assert refused.json() == {
        "message": "Not Found",
        "documentation_url": "https://docs.github.com/rest",
        "status": "404",
    }
    enabled = Scenario(session=Session(copilot_client_ids=frozenset({"Ov23liOwnApp"})))
    with GitHubEmulator(enabled) as emu, httpx2.Client(transport=emu.transport()) as client:
        _login(client, "Ov23liOwnApp")
        assert (
            client.get(EXCHANGE, headers={"Authorization": f"token {emu.github_token}"}).status_code
            == 200
        )


@pytest.mark.parametrize("prefix", ["ghp_", "github_pat_"])
def test_the_exchange_refuses_personal_access_tokens(prefix: str) -> None:
    with GitHubEmulator() as emu, httpx2.Client(transport=emu.transport()) as client:
        answer = client.get(EXCHANGE, headers={"Authorization": f"token {prefix}{'a' * 36}"})
    assert answer.status_code == 403
    assert answer.json()["message"] == "Resource not accessible by personal access token"


@pytest.mark.parametrize(
    ("notification", "message"),
    [
        (
            "not_signed_up",
            "No access to GitHub Copilot found. You are currently logged in as octocat.",
        ),
        (
            "no_copilot_access",
            "No access to GitHub Copilot found. You are currently logged in as octocat.",
        ),
        (
            "subscription_ended",
            "Thank you for using GitHub Copilot. Your subscription has ended. You are currently logged in as octocat.",
        ),
        ("billing_locked", "Contact Support. You are currently logged in as octocat."),
    ],
)
def test_an_entitlement_refusal_has_the_real_envelope(notification: str, message: str) -> None:
    with (
        GitHubEmulator(Scenario(session=Session(entitlement=notification))) as emu,
        httpx2.Client(transport=emu.transport()) as client,
    ):
        answer = client.get(EXCHANGE, headers={"Authorization": f"token {emu.github_token}"})
    assert answer.status_code == 403
    value = answer.json()
    assert value["message"] == "Resource not accessible by integration"
    assert value["error_details"]["notification_id"] == notification
    assert value["error_details"]["message"] == message
    assert set(value["error_details"]) == {"message", "notification_id", "title", "url"}


@pytest.mark.parametrize(
    "bad",
    [
        lambda: Inventory(min_editor_version={"m": "new"}),
        lambda: Inventory(min_client_version="v1"),
        lambda: Inventory(min_api_version="May 2025"),
        lambda: Replies(stream_events=0),
        lambda: Faults(drip={"user": 0}),
        lambda: Scenario(faults=Faults(drip={"nowhere": 0.1})),
    ],
)
def test_new_knobs_are_checked(bad: Callable[[], object]) -> None:
    with pytest.raises(ValueError):
        bad()
