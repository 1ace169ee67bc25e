"""Where an inference origin is vetted: form (``CopilotEndpoint.parse``) and allowlist."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from ._errors import OriginError
from ._safety._text import clean

__all__ = ["CopilotEndpoint", "OriginAllowlist", "default_allowlist"]

_MAX_URL = 2048
# Letters, digits and hyphens; each label 1-63 characters.
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
_PORT = re.compile(r"^[0-9]{1,5}$")
_LOOPBACK_IPS = frozenset({"127.0.0.1", "::1"})
_DEFAULT_PORTS = {"https": 443, "http": 80}


def _fail(url: str, why: str) -> OriginError:
    return OriginError(f"not a valid inference origin {clean(url, limit=80)!r}: {why}")


def _normalize_host(host: str, url: str) -> tuple[str, bool]:
    """Return the host in ASCII lower case and whether it is an IP literal."""
    if host.startswith("["):
        if not host.endswith("]"):
            raise _fail(url, "unterminated IPv6 literal")
        try:
            ip6 = ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise _fail(url, "malformed IPv6 literal") from None
        if ip6.scope_id:
            raise _fail(url, "IPv6 zone identifiers are not allowed")
        return f"[{ip6.compressed}]", True
    if not host:
        raise _fail(url, "no host")
    if "%" in host:
        raise _fail(url, "percent-encoded hosts are not allowed")
    if host.endswith("."):
        raise _fail(url, "trailing dot in host")
    # Dotted-decimal only: "127.1", "0x7f.1" and friends are ambiguous and refused.
    if re.fullmatch(r"[0-9.]+", host):
        try:
            ip4 = ipaddress.IPv4Address(host)
        except ValueError:
            raise _fail(url, "malformed IPv4 address") from None
        return str(ip4), True
    if re.fullmatch(r"[0-9a-fA-Fx.]+", host) and host.lower().startswith("0x"):
        raise _fail(url, "numeric host forms are not allowed")
    # Plain ASCII only, compared exactly: an internationalized host (full-width letters,
    # look-alikes) is refused rather than mapped, so it can never be turned into an
    # allowlisted one. A real IDN is written in its xn-- form.
    if not host.isascii():
        raise _fail(url, "the host must be plain ASCII (write an international name as xn--)")
    ascii_host = host.lower()
    labels = ascii_host.split(".")
    if any(not _LABEL.match(label) for label in labels):
        raise _fail(url, "host has an invalid label")
    if len(ascii_host) > 253:
        raise _fail(url, "host name too long")
    return ascii_host, False


@dataclass(frozen=True, slots=True)
class CopilotEndpoint:
    """A vetted inference origin: ``scheme://host[:port]`` with nothing else.

    Build it with :meth:`parse`; parsing checks form only. Whether the origin may be used
    is the allowlist's question (:class:`OriginAllowlist`).
    """

    scheme: str
    host: str
    port: int | None

    @property
    def origin(self) -> str:
        port = f":{self.port}" if self.port is not None else ""
        return f"{self.scheme}://{self.host}{port}"

    def url(self, path: str) -> str:
        """The absolute URL of ``path`` (which must start with ``/``) on this origin."""
        if not path.startswith("/"):
            raise ValueError("path must start with '/'")
        return self.origin + path

    def __str__(self) -> str:
        return self.origin

    @classmethod
    def parse(cls, url: str, *, allow_loopback_http: bool = False) -> CopilotEndpoint:
        if not isinstance(url, str):
            raise OriginError("an inference origin must be a string")
        if not url or len(url) > _MAX_URL:
            raise _fail(url, "empty or too long")
        if any(ord(ch) < 0x21 or ord(ch) == 0x7F for ch in url) or not url.isprintable():
            raise _fail(url, "whitespace or control characters")
        if "\\" in url:
            raise _fail(url, "backslashes are not allowed")
        scheme, sep, rest = url.partition("://")
        if not sep:
            raise _fail(url, "expected https://host")
        if scheme not in ("https", "http"):
            # Upper-case schemes are refused rather than folded: configuration is exact.
            why = "write the scheme in lower case" if scheme.lower() == "https" else None
            raise _fail(url, why or "scheme must be https")
        if "?" in rest or "#" in rest:
            raise _fail(url, "queries and fragments are not allowed")
        authority, slash, path = rest.partition("/")
        if slash and path:
            raise _fail(url, "paths are not allowed")
        if "@" in authority:
            raise _fail(url, "user information is not allowed")
        if authority.startswith("["):
            close = authority.find("]")
            host, port_text = authority[: close + 1], authority[close + 1 :]
            if port_text and not port_text.startswith(":"):
                raise _fail(url, "junk after IPv6 literal")
            port_text = port_text[1:] if port_text else ""
            has_port = bool(authority[close + 1 :])
        else:
            host, has_colon, port_text = authority.partition(":")
            has_port = bool(has_colon)
        port: int | None = None
        if has_port:
            if not _PORT.match(port_text):
                raise _fail(url, "port must be a number")
            port = int(port_text)
            if not 1 <= port <= 65535:
                raise _fail(url, "port out of range")
        norm_host, is_ip = _normalize_host(host, url)
        if scheme == "http":
            bare = norm_host.strip("[]")
            if not (allow_loopback_http and is_ip and bare in _LOOPBACK_IPS):
                raise _fail(url, "scheme must be https")
        if port == _DEFAULT_PORTS[scheme]:
            port = None
        return cls(scheme=scheme, host=norm_host, port=port)


class OriginAllowlist:
    """An exact set of allowed origins: no suffix, substring or wildcard matching."""

    __slots__ = ("_origins",)

    def __init__(self, origins: frozenset[str]) -> None:
        self._origins = origins

    @classmethod
    def from_text(cls, text: str) -> OriginAllowlist:
        origins: set[str] = set()
        for raw in text.splitlines():
            line = raw.split("#", 1)[0].strip()
            if line:
                origins.add(CopilotEndpoint.parse(line).origin)
        return cls(frozenset(origins))

    @property
    def origins(self) -> frozenset[str]:
        return self._origins

    def __contains__(self, endpoint: object) -> bool:
        return isinstance(endpoint, CopilotEndpoint) and endpoint.origin in self._origins

    def check(self, endpoint: CopilotEndpoint) -> CopilotEndpoint:
        """Return ``endpoint`` if it is allowed, else raise ``OriginError``."""
        if endpoint not in self:
            raise OriginError(
                f"the inference origin {endpoint.origin} is not on the allowlist of "
                "Copilot API hosts; refusing to send credentials there",
                code="origin_not_allowed",
            )
        return endpoint

    def vet(self, url: str) -> CopilotEndpoint:
        """Parse ``url`` strictly (https only) and check it against the allowlist."""
        return self.check(CopilotEndpoint.parse(url))

    def __repr__(self) -> str:
        return f"OriginAllowlist({sorted(self._origins)!r})"


_default: OriginAllowlist | None = None


def default_allowlist() -> OriginAllowlist:
    """The fixed list of Copilot inference origins shipped in the wheel."""
    global _default  # noqa: PLW0603 - a read-only, load-once cache
    if _default is None:
        # Imported here: importlib.resources (and the tempfile machinery it pulls in) is
        # a measurable share of the CLI's start-up, and only this loader needs it.
        from importlib import resources

        text = (
            resources.files("copilot_host.allowlists")
            .joinpath("inference-origins.txt")
            .read_text(encoding="utf-8")
        )
        _default = OriginAllowlist.from_text(text)
    return _default
