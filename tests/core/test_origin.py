from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from copilot_host import CopilotEndpoint, OriginAllowlist, OriginError, default_allowlist

# Malformed: `parse` itself refuses these.
MALFORMED = [
    "",
    "api.githubcopilot.com",
    "//api.githubcopilot.com",
    "HTTPS://api.githubcopilot.com",
    "Https://api.githubcopilot.com",
    "ftp://api.githubcopilot.com",
    "javascript:alert(1)",
    "http://api.githubcopilot.com",
    "http://localhost:8080",
    "http://127.0.0.1:8080",  # loopback http needs the explicit test flag
    "https://user@api.githubcopilot.com",
    "https://user:pw@api.githubcopilot.com",
    "https://api.githubcopilot.com@evil.com",
    "https://api.githubcopilot.com/v1",
    "https://api.githubcopilot.com//",
    "https://api.githubcopilot.com/chat/completions",
    "https://api.githubcopilot.com?x=1",
    "https://api.githubcopilot.com/?x=1",
    "https://api.githubcopilot.com#frag",
    "https://api.githubcopilot.com/#",
    "https://api.githubcopilot.com.",
    "https://api.githubcopilot.com:0",
    "https://api.githubcopilot.com:65536",
    "https://api.githubcopilot.com:-1",
    "https://api.githubcopilot.com:",
    "https://api.githubcopilot.com:44a",
    "https://api.githubcopilot.com:+443",
    " https://api.githubcopilot.com",
    "https://api.githubcopilot.com ",
    "https://api.github copilot.com",
    "https://api.githubcopilot.com\n",
    "https://api.githubcopilot.com\r\nX: y",
    "https://api.githubcopilot.com\x00",
    "https://api.githubcopilot.com\t",
    "https:\\\\api.githubcopilot.com",
    "https://api.githubcopilot.com\\@evil.com",
    "https://api%2egithubcopilot.com",
    "https://%61pi.githubcopilot.com",
    "https://api.githubcopilot.com\u202e",
    "https://api.github\u200bcopilot.com",
    "https://api..githubcopilot.com",
    "https://-api.githubcopilot.com",
    "https://api-.githubcopilot.com",
    "https://_api.githubcopilot.com",
    "https://[::1",
    "https://[::1]x",
    "https://[fe80::1%25eth0]",
    "https://[not-an-ip]",
    "https://0x7f.0.0.1",
    "https://127.1",
    "https://999.1.1.1",
    "https://" + "a" * 64 + ".com",
    "https://" + ".".join(["abcdefghij"] * 30),
    "https://xn--.com",
    "https://\u2100.com",
    # Look-alikes are not even parsed: hosts are plain ASCII.
    "https://аpi.githubcopilot.com",  # Cyrillic a
    "https://api.githubcоpilot.com",  # Cyrillic o
]

# Well-formed but foreign: the allowlist refuses these (code origin_not_allowed).
FOREIGN = [
    "https://api.githubcopilot.com.evil.com",
    "https://evil.com",
    "https://githubcopilot.com",
    "https://copilot-proxy.githubusercontent.com",
    "https://api.githubcopilot.co",
    "https://xapi.githubcopilot.com",
    "https://api.githubcopi1ot.com",
    "https://api.githubcopilot.com:8443",
    "https://api.githubcopilot.com.",  # never reaches the allowlist: trailing dot
    "https://127.0.0.1",
    "https://[::1]",
    "https://api.evil.githubcopilot.com",
    "https://foo.api.githubcopilot.com",
]


@pytest.mark.parametrize("url", MALFORMED)
def test_malformed_origins_are_refused_by_parse(url: str) -> None:
    with pytest.raises(OriginError) as info:
        CopilotEndpoint.parse(url)
    assert info.value.code == "invalid_origin"
    # The message is one clean line whatever the input carried.
    assert "\n" not in str(info.value) and "\r" not in str(info.value)
    assert "\u202e" not in str(info.value) and "\x00" not in str(info.value)


@pytest.mark.parametrize("url", FOREIGN)
def test_foreign_origins_are_refused_by_the_allowlist(url: str) -> None:
    with pytest.raises(OriginError) as info:
        default_allowlist().vet(url)
    assert info.value.code in {"origin_not_allowed", "invalid_origin"}
    if not url.endswith("."):
        assert info.value.code == "origin_not_allowed"


def test_there_are_at_least_forty_hostile_inputs() -> None:
    assert len(MALFORMED) + len(FOREIGN) >= 40


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://api.githubcopilot.com", "https://api.githubcopilot.com"),
        ("https://api.githubcopilot.com/", "https://api.githubcopilot.com"),
        ("https://API.GithubCopilot.COM", "https://api.githubcopilot.com"),
        ("https://api.githubcopilot.com:443", "https://api.githubcopilot.com"),
        ("https://api.githubcopilot.com:8443/", "https://api.githubcopilot.com:8443"),
        ("https://xn--bcher-kva.example", "https://xn--bcher-kva.example"),
        ("https://[2001:DB8::0:1]:444", "https://[2001:db8::1]:444"),
        ("https://10.0.0.1", "https://10.0.0.1"),
    ],
)
def test_good_forms_are_normalized(url: str, origin: str) -> None:
    endpoint = CopilotEndpoint.parse(url)
    assert endpoint.origin == origin
    assert str(endpoint) == origin
    # Normalization is idempotent.
    assert CopilotEndpoint.parse(endpoint.origin) == endpoint


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080", "http://[::1]:9", "http://127.0.0.1"])
def test_loopback_http_only_with_the_explicit_flag(url: str) -> None:
    with pytest.raises(OriginError):
        CopilotEndpoint.parse(url)
    endpoint = CopilotEndpoint.parse(url, allow_loopback_http=True)
    assert endpoint.scheme == "http"


@pytest.mark.parametrize("url", ["http://localhost:8080", "http://127.0.0.2", "http://10.0.0.1"])
def test_loopback_http_flag_covers_only_literal_loopback_ips(url: str) -> None:
    with pytest.raises(OriginError):
        CopilotEndpoint.parse(url, allow_loopback_http=True)


def test_the_shipped_allowlist_is_exact() -> None:
    allow = default_allowlist()
    assert allow.origins == {
        "https://api.githubcopilot.com",
        "https://api.individual.githubcopilot.com",
        "https://api.business.githubcopilot.com",
        "https://api.enterprise.githubcopilot.com",
    }
    for origin in allow.origins:
        assert allow.vet(origin + "/") == CopilotEndpoint.parse(origin)
    assert "https://api.githubcopilot.com" not in allow  # only endpoints, never strings


def test_allowlist_from_text_ignores_comments_and_normalizes() -> None:
    allow = OriginAllowlist.from_text("# comment\n\nhttps://X.example/  # trailing\n")
    assert allow.origins == {"https://x.example"}
    # The scheme in the file must be exact too: upper case is refused, not folded.
    with pytest.raises(OriginError):
        OriginAllowlist.from_text("HTTPS://x.example/\n")


def test_allowlist_from_text_refuses_malformed_entries() -> None:
    with pytest.raises(OriginError):
        OriginAllowlist.from_text("https://x.example/path\n")
    assert OriginAllowlist.from_text("https://X.example/\n").origins == {"https://x.example"}


def test_endpoint_url_joins_paths() -> None:
    endpoint = CopilotEndpoint.parse("https://api.githubcopilot.com")
    assert endpoint.url("/models") == "https://api.githubcopilot.com/models"
    with pytest.raises(ValueError):
        endpoint.url("models")


def test_parse_refuses_non_strings() -> None:
    with pytest.raises(OriginError):
        CopilotEndpoint.parse(b"https://api.githubcopilot.com")  # type: ignore[arg-type]


@given(st.text(max_size=200))
def test_parse_raises_only_origin_error_on_arbitrary_text(text: str) -> None:
    try:
        endpoint = CopilotEndpoint.parse(text)
    except OriginError:
        return
    # Whatever parses is already normalized.
    assert CopilotEndpoint.parse(endpoint.origin) == endpoint


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=60))
def test_parse_of_url_shaped_text_raises_only_origin_error(host: str) -> None:
    for url in (f"https://{host}", f"https://{host}/", f"http://{host}"):
        try:
            CopilotEndpoint.parse(url, allow_loopback_http=True)
        except OriginError:
            pass


@pytest.mark.parametrize(
    "url",
    [
        # Full-width letters: IDNA mapping (UTS 46) would turn these into the allowlisted
        # host itself. Hosts are plain ASCII and compared exactly, so they are refused.
        "https://\uff41\uff50\uff49.githubcopilot.com",
        "https://api.\uff47ithubcopilot.com",
        "https://api.githubcopilot\uff0ecom",
        "https://bücher.example",
        "https://api.githubcopilot.cоm",  # a Cyrillic o
    ],
)
def test_unicode_hosts_are_refused_never_mapped_onto_an_allowlisted_one(url: str) -> None:
    with pytest.raises(OriginError) as info:
        CopilotEndpoint.parse(url)
    assert "plain ASCII" in info.value.message
    with pytest.raises(OriginError):
        default_allowlist().vet(url)
