"""The checks of ``copilot-host doctor``, in order, each a :class:`Check` with a fix.

A check that cannot be made because one before it failed is reported as not checked
(``ok`` None) and says which; no check raises for anything the store, the keyring or
GitHub answers. What GitHub is asked (the exchange, ``/models`` under each identity, the
plan, the probes) goes through the GitHub adapter (``GitHubCopilotHost.checkup``,
``usage``, ``probe``); the store and its key are read as every command reads them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from copilot_host import ApiProtocol, CopilotHostError, CopilotUsage, ModelSpec
    from copilot_host.github import Checkup, EditorIdentity, GitHubCopilotHost, IdentityCheck
    from copilot_host.store import CredentialStore, RecordHeader

__all__ = ["CLOCK_TOLERANCE", "PROBE_CODES", "Check", "Checks", "Probe", "cheapest"]

# Further apart than this, this machine's clock and GitHub's disagree enough to matter: a
# session lives 30 minutes and is refreshed 5 minutes before its end by clients that read
# this clock, and TLS checks certificates against it too.
CLOCK_TOLERANCE = 300.0

_SETTINGS = "https://github.com/settings/copilot"
_UPGRADE = "upgrade copilot-host (pip install --upgrade copilot-host)"
_LOGIN_AGAIN = "run `copilot-host login` again"
_API_NAMES = {
    "openai-chat": ("probe_chat", "Chat Completions"),
    "openai-responses": ("probe_responses", "OpenAI Responses"),
    "anthropic-messages": ("probe_messages", "Anthropic Messages"),
}
PROBE_CODES = tuple(code for code, _ in _API_NAMES.values())


@dataclass(frozen=True, slots=True)
class Check:
    """One line of the report: ``ok`` True (passed), False (failed) or None (not checked:
    an earlier check it needs failed, or the person declined it); ``fix`` is one line for a
    failed check, None otherwise."""

    code: str
    ok: bool | None
    message: str
    fix: str | None = None

    def document(self) -> dict[str, object]:
        return {"code": self.code, "ok": self.ok, "message": self.message, "fix": self.fix}


@dataclass(frozen=True, slots=True)
class Probe:
    """A probe doctor would send: ``model`` on ``protocol``."""

    protocol: ApiProtocol
    model: str

    @property
    def code(self) -> str:
        return _API_NAMES[self.protocol.value][0]

    @property
    def api(self) -> str:
        return _API_NAMES[self.protocol.value][1]


def _skip(code: str, why: str) -> Check:
    return Check(code, None, f"not checked: {why}")


def _fix_for(error: CopilotHostError) -> str:
    """The one thing to do about a library error, by its class and code."""
    import copilot_host as ch

    code = error.code
    if code in ("policy_refused", "integrator_refused"):
        return (
            "ask an administrator to allow this client in the organisation's Copilot "
            "policies (changes take a few minutes)"
            if code == "policy_refused"
            else "use a model the message lists, or log in with VS Code's app (the default)"
        )
    if isinstance(error, ch.LoginRevokedError | ch.NotLoggedInError):
        return _LOGIN_AGAIN
    if isinstance(error, ch.ClientOutdatedError):
        return f"{_UPGRADE}, or present a newer editor with COPILOT_HOST_EDITOR"
    if isinstance(error, ch.QuotaExceededError):
        return f"wait for the quota to reset, or allow overage at {_SETTINGS}"
    if isinstance(error, ch.EntitlementError):
        return f"see {_SETTINGS} (the message says what GitHub asks of this account)"
    if isinstance(error, ch.TransportError):
        return "check the network (and HTTPS_PROXY), then run `copilot-host doctor` again"
    if isinstance(error, ch.ServerError):
        return "GitHub is busy or failing: try again in a few minutes"
    return "run `copilot-host doctor --debug` for details"


def _store_fix(error: CopilotHostError) -> str:
    import copilot_host as ch

    if isinstance(error, ch.StoreCorruptError):
        return "run `copilot-host login` to replace the damaged record (it is kept aside)"
    if isinstance(error, ch.StoreInsecureError):
        return "make the folder yours and private (chmod 700), or point COPILOT_HOST_HOME elsewhere"
    if isinstance(error, ch.StoreVersionError):
        return f"{_UPGRADE}: a newer version wrote this record"
    if isinstance(error, ch.StoreLockedError):
        return "another copilot-host is using the store: try again when it is done"
    if error.code == "invalid_store_path":
        return "set COPILOT_HOST_HOME to a folder of your own"
    return "check the store folder's permissions and free space"


def _key_fix(error: CopilotHostError) -> str:
    code = error.code
    if code == "keyring_locked":
        return "unlock the OS keyring (log in to the desktop session), then try again"
    if code in ("keyring_entry_missing", "key_file_missing"):
        return f"the data key is gone from where the record says: {_LOGIN_AGAIN}"
    if code in ("keyring_unavailable", "keyring_timeout"):
        return (
            "start or unlock the OS keyring, or log in with `copilot-host login --key-file` "
            "on a machine without one"
        )
    return _store_fix(error)


def _money(value: float | None) -> float:
    return math.inf if value is None else value


def cheapest(models: Sequence[ModelSpec], protocol: ApiProtocol) -> str | None:
    """The model speaking ``protocol`` a probe costs least on: lowest listed token prices,
    then multiplier, then the inventory's order; None when no model speaks it."""
    best: tuple[float, float, int] | None = None
    chosen: str | None = None
    for index, spec in enumerate(models):
        if protocol not in spec.protocols:
            continue
        billing = spec.billing
        prices = billing.prices if billing is not None else None
        price = _money(prices.input) + _money(prices.output) if prices is not None else math.inf
        multiplier = _money(billing.multiplier if billing is not None else None)
        key = (price, multiplier, index)
        if best is None or key < best:
            best, chosen = key, spec.model_id
    return chosen


class Checks:
    """One run of the checks, in order (:meth:`free`), then the probes (:meth:`probe`)."""

    def __init__(
        self,
        make_store: Callable[[], CredentialStore],
        make_host: Callable[[CredentialStore], GitHubCopilotHost],
        editor: EditorIdentity | None,
    ) -> None:
        self._make_store = make_store
        self._make_host = make_host
        self._editor = editor
        self._store: CredentialStore | None = None
        self._header: RecordHeader | None = None
        self._readable = False
        self.host: GitHubCopilotHost | None = None
        self.checkup: Checkup | None = None

    # -- the order --------------------------------------------------------------------------

    def free(self) -> Iterator[Check]:
        """The checks that send no model request, each as soon as it is made."""
        yield self._store_check()
        yield self._keyring_check()
        yield self._login_check()
        yield self._availability_check()
        yield self._plan_check()
        identities = self.checkup.identities if self.checkup is not None else ()
        yield self._identity_check("editor_identity", identities, 0)
        yield self._identity_check("cli_identity", identities, 1)
        yield self._clock_check()
        yield self._policy_check()

    def probes(self) -> list[Probe] | None:
        """One probe per API a model of the account speaks, on its cheapest such model;
        None when there is no model list to choose from (no session was served)."""
        from copilot_host import ApiProtocol

        found = self.checkup.inventory if self.checkup is not None else None
        if found is None:
            return None
        order = (
            ApiProtocol.OPENAI_CHAT,
            ApiProtocol.OPENAI_RESPONSES,
            ApiProtocol.ANTHROPIC_MESSAGES,
        )
        chosen = ((protocol, cheapest(found.models, protocol)) for protocol in order)
        return [Probe(protocol, model) for protocol, model in chosen if model is not None]

    @staticmethod
    def unprobed(why: str, probes: list[Probe] | None = None) -> list[Check]:
        """The probes that were not sent (every API's when none were planned), reported as
        not checked."""
        codes = [p.code for p in probes] if probes is not None else list(PROBE_CODES)
        return [_skip(code, why) for code in codes]

    def probe(self, probe: Probe) -> Check:
        from copilot_host._internal import clean

        assert self.host is not None
        assert self.checkup is not None
        sent = self.host.probe(self.checkup, probe.protocol, probe.model)
        model = clean(probe.model, limit=64)
        if sent.error is None:
            took = f"{sent.seconds * 1000:.0f} ms"
            return Check(probe.code, True, f"{model} answered on {probe.api} in {took}")
        return Check(probe.code, False, sent.error.message, _fix_for(sent.error))

    # -- the store and its key ------------------------------------------------------------

    def _store_check(self) -> Check:
        import copilot_host as ch
        from copilot_host._internal import show_path

        try:
            store = self._store = self._make_store()
            self._header = store.header()
        except ch.StoreError as exc:
            # What needs the store is not checked, rather than reported "not logged in".
            self._store = None
            return Check("store", False, exc.message, _store_fix(exc))
        if self._header is None:
            return Check("store", True, f"no login stored yet in {show_path(store.home)}")
        return Check("store", True, f"the login record {show_path(store.record_path)} reads")

    def _keyring_check(self) -> Check:
        import copilot_host as ch

        from ._status import describe_protection

        if self._store is None:
            return _skip("keyring", "the store cannot be read (see store)")
        if self._header is None:
            return _skip("keyring", "no login is stored, so there is no data key to open")
        where = describe_protection(self._header.protection)
        try:
            self._store.load()
        except ch.CopilotHostError as exc:
            return Check("keyring", False, f"{exc.message} (key: {where})", _key_fix(exc))
        self._readable = True
        return Check("keyring", True, f"the data key in the {where} opens the record")

    def _login_check(self) -> Check:
        from copilot_host._internal import clean
        from copilot_host.github import DEFAULT_CLIENT_ID

        if self._store is None:
            return _skip("login", "the store cannot be read")
        header = self._header
        if header is None:
            return Check("login", False, "not logged in", "run `copilot-host login`")
        app = header.client_id or DEFAULT_CLIENT_ID
        mine = " (VS Code's, the default)" if header.client_id is None else ""
        return Check(
            "login", True, f"logged in as {clean(header.account)} with OAuth app {app}{mine}"
        )

    # -- GitHub ------------------------------------------------------------------------------

    def _availability_check(self) -> Check:
        import copilot_host as ch

        if self._store is None:
            return _skip("availability", "the store cannot be read (see store)")
        if self._header is None:
            return _skip("availability", "no login is stored (see login)")
        if not self._readable:
            return _skip("availability", "the login cannot be read (see keyring)")
        self.host = self._make_host(self._store)
        try:
            checkup = self.checkup = self.host.checkup()
        except ch.CopilotHostError as exc:
            # Loading the login again failed (the keyring locked since the keyring check).
            fix = _key_fix(exc) if isinstance(exc, ch.StoreError) else _fix_for(exc)
            return Check("availability", False, exc.message, fix)
        if checkup.error is not None:
            return Check("availability", False, checkup.error.message, _fix_for(checkup.error))
        where = f" on {checkup.endpoint.removeprefix('https://')}" if checkup.endpoint else ""
        sku = f" ({checkup.sku})" if checkup.sku else ""
        return Check("availability", True, f"GitHub grants this login Copilot sessions{where}{sku}")

    def _plan_check(self) -> Check:
        import copilot_host as ch

        if self.host is None or self.checkup is None or self.checkup.error is not None:
            return _skip("plan", self._no_session())
        try:
            found = self.host.usage()
        except ch.EntitlementError as exc:
            if exc.code == "usage_unavailable":
                return _skip("plan", "GitHub does not show this login's plan to its OAuth app")
            return Check("plan", False, exc.message, _fix_for(exc))
        except ch.CopilotHostError as exc:
            return Check("plan", False, exc.message, _fix_for(exc))
        return _plan_of(found)

    def _identity_check(
        self, code: str, identities: tuple[IdentityCheck, ...], index: int
    ) -> Check:
        if len(identities) <= index:
            return _skip(code, self._no_session())
        return _identity_of(code, identities[index], identities, self._editor is not None)

    def _clock_check(self) -> Check:
        checkup = self.checkup
        if checkup is None or checkup.received_wall is None:
            return _skip(
                "clock", "GitHub's answer to the session exchange is needed (see availability)"
            )
        return _clock_of(checkup.received_wall, checkup.server_date, checkup.expires_at)

    def _policy_check(self) -> Check:
        checkup = self.checkup
        if checkup is None or checkup.error is not None or not checkup.identities:
            return _skip("policy", self._no_session())
        return _policy_of(checkup)

    def _no_session(self) -> str:
        if self.checkup is None:
            return "it needs a Copilot session, and none was asked for (see availability)"
        return "it needs a Copilot session, and GitHub granted none (see availability)"


def _plan_of(found: CopilotUsage) -> Check:
    from copilot_host._internal import clean

    plan = clean(found.plan or "unknown")
    billing = "AI credits" if found.unit == "credits" else "premium requests"
    auto_only = found.auto_only_line()
    if auto_only is not None:
        return Check(
            "plan",
            False,
            auto_only,
            f"a plan with model choice (Copilot Pro or higher) lifts it: {_SETTINGS}",
        )
    spent = [q for q in found.quotas if not q.usable]
    if spent:
        when = f"; it resets on {found.reset_at:%Y-%m-%d}" if found.reset_at else ""
        return Check(
            "plan",
            False,
            f"the {clean(spent[0].id)} quota of plan {plan} is used up and the plan permits "
            f"no overage{when}",
            f"allow overage at {_SETTINGS}, or wait for the reset",
        )
    return Check("plan", True, f"{plan}, billed in {billing}; every quota has room or overage")


def _identity_of(
    code: str, check: IdentityCheck, identities: tuple[IdentityCheck, ...], from_env: bool
) -> Check:
    who = f"{check.editor_version} ({check.integration_id})"
    cli = check.name == "cli"
    upgrade = _UPGRADE if cli else f"{_UPGRADE}, or set COPILOT_HOST_EDITOR to a newer VS Code"
    error = check.error
    if error is None and check.deprecated:
        return Check(
            code,
            False,
            f"GitHub calls {who} deprecated (client_version_deprecated on its models): "
            "it will be refused",
            upgrade,
        )
    if error is None:
        given = " (from COPILOT_HOST_EDITOR)" if from_env and not cli else ""
        return Check(code, True, f"{who}{given} is served ({check.models} models listed)")
    if check.refused_by_policy:
        other = next((i for i in identities if i is not check and i.error is None), None)
        if other is None:
            return _skip(code, f"an organisation policy refuses {who} (see policy)")
        return Check(
            code,
            True,
            f"an organisation policy refuses {who}; copilot-host presents "
            f"{other.editor_version} ({other.integration_id}) instead, which is served",
        )
    if check.minimum is not None:
        return Check(
            code,
            False,
            f"{who} is refused as too old; GitHub names {check.minimum} as the oldest it "
            f"serves ({error.message})",
            upgrade,
        )
    fix = upgrade if error.code == "client_outdated" else _fix_for(error)
    return Check(code, False, error.message, fix)


def _span(seconds: float) -> str:
    seconds = abs(seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if round(seconds / 60) < 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _clock_of(received: float, server: float | None, expires_at: float | None) -> Check:
    from datetime import UTC, datetime

    ends = ""
    if expires_at is not None:
        ends = (
            "; the session ends at "
            f"{datetime.fromtimestamp(expires_at, tz=UTC):%H:%M} UTC by GitHub's clock"
        )
    left = None if expires_at is None else expires_at - received
    fix = (
        "set the clock right: turn on network time (`timedatectl set-ntp true` on Linux, "
        "the Date & Time settings elsewhere)"
    )
    if server is None:
        if left is not None and left <= 0:
            return Check(
                "clock",
                False,
                f"sessions look expired when they arrive: by this clock the session ended "
                f"{_span(left)} ago{ends}",
                fix,
            )
        return Check("clock", True, f"GitHub sent no Date to compare with{ends}")
    skew = received - server
    side = "ahead of" if skew > 0 else "behind"
    if abs(skew) <= CLOCK_TOLERANCE:
        return Check("clock", True, f"this clock is within {_span(skew)} of GitHub's{ends}")
    expired = " (so the session looks expired already)" if left is not None and left <= 0 else ""
    return Check(
        "clock",
        False,
        f"this machine's clock is {_span(skew)} {side} GitHub's{expired}{ends}",
        fix,
    )


def _policy_of(checkup: Checkup) -> Check:
    if checkup.policy_error is not None:
        error = checkup.policy_error
        return Check("policy", False, error.message, _fix_for(error))
    refused = [i for i in checkup.identities if i.refused_by_policy]
    if checkup.chat_enabled is False:
        return Check(
            "policy",
            False,
            "the session exchange reports Copilot Chat turned off for this account "
            "(chat_enabled: false), which copilot-host's requests need",
            "ask an administrator to enable Copilot Chat in the organisation's Copilot policies",
        )
    seats = []
    if checkup.organisations:
        seats.append(f"{checkup.organisations} organisation(s)")
    if checkup.enterprises:
        seats.append(f"{checkup.enterprises} enterprise(s)")
    seat = f"; the seat comes from {' and '.join(seats)}" if seats else ""
    if refused:
        names = ", ".join(f"{i.editor_version} ({i.integration_id})" for i in refused)
        return Check(
            "policy", True, f"an organisation policy refuses {names}; the other is served{seat}"
        )
    return Check("policy", True, f"no policy refuses copilot-host's identities{seat}")
