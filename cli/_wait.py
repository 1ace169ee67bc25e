"""The login wait: the host polls in a worker thread, the main thread talks to people.

Splitting it this way keeps every terminal write on the main thread (no interleaved
output), lets the countdown tick while a poll is in flight, and leaves the main thread
free to receive SIGINT/SIGTERM: during the wait the signal handler only sets the cancel
event the host's wait watches (and the sleep between polls wakes on), so the host returns
without storing anything and the command exits 130/143. A second signal leaves at once
(see ``_signals``).
"""

from __future__ import annotations

import itertools
import os
import queue
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._context import CliSeam
from ._events import LoginEvents
from ._failure import Interrupted, signal_word
from ._format import mmss
from ._output import Output
from ._signals import current_signals

if TYPE_CHECKING:
    from copilot_host import Clock, CopilotDeviceLogin, LoginIdentity
    from copilot_host.github import GitHubCopilotHost

__all__ = ["DEVICE_URL", "can_open_browser", "wait_for_login"]

# The one page a person is sent to; we open this constant, never a server-supplied URL.
DEVICE_URL = "https://github.com/login/device"

_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_ASCII_SPINNER = "|/-\\"
# How long a cancelled login may take to wind down (an HTTP poll in flight) before we
# leave anyway.
_CANCEL_GRACE = 5.0
_PLAIN_EVERY = 60.0


def can_open_browser() -> bool:
    """Only where a graphical browser can appear: not over SSH, and on Linux only with a
    display. (Elsewhere ``webbrowser`` may start a text browser that takes over the
    terminal the code is shown on.)"""
    if os.environ.get("SSH_CONNECTION") or os.environ.get("SSH_TTY"):
        return False
    if sys.platform == "darwin":
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _default_open(url: str) -> bool:
    import webbrowser

    try:
        return webbrowser.open(url, new=2)
    except Exception:  # any browser failure means "show instructions"
        return False


class _Countdown:
    """A live line on a terminal; an occasional plain line anywhere else."""

    def __init__(self, out: Output, clock: Clock) -> None:
        self._out = out
        self._clock = clock
        self._deadline: float | None = None
        self._frames = itertools.cycle(_SPINNER if _utf8(sys.stderr) else _ASCII_SPINNER)
        self._next_plain = 0.0

    def start(self, deadline: float) -> None:
        self._deadline = deadline
        left = deadline - self._clock.monotonic()
        if not self._out.err_is_tty:
            self._out.info(f"Waiting for authorization (the code expires in {mmss(left)})...")
            self._next_plain = self._clock.monotonic() + _PLAIN_EVERY
        self.tick()

    def tick(self) -> None:
        if self._deadline is None:
            return
        now = self._clock.monotonic()
        left = self._deadline - now
        if self._out.err_is_tty:
            self._out.live(
                f"{next(self._frames)} Waiting for you to authorize... "
                f"{mmss(left)} left (Ctrl-C to cancel)"
            )
        elif now >= self._next_plain:
            self._out.info(f"Still waiting for authorization: {mmss(left)} left.")
            self._next_plain = now + _PLAIN_EVERY

    def stop(self) -> None:
        self._deadline = None
        self._out.end_live()


def _utf8(stream: object) -> bool:
    encoding = getattr(stream, "encoding", None) or ""
    return encoding.lower().replace("-", "") == "utf8"


def _show_code(
    out: Output,
    events: LoginEvents,
    login: CopilotDeviceLogin,
    clock: Clock,
    *,
    headless: bool,
    open_browser: Callable[[str], bool] | None,
) -> None:
    from copilot_host._internal import clean

    left = login.deadline - clock.monotonic()
    events.device_code(
        user_code=login.user_code,
        verification_uri=DEVICE_URL,
        expires_in=left,
        deadline_wall=clock.time() + left,
        interval=login.interval,
    )
    # After the event (a stdout that cannot be written fails on it with one line), before
    # the code on stderr.
    if events.app_line is not None:
        out.info(events.app_line)
    out.info()
    out.info(f"  First copy your one-time code:  {out.strong(clean(login.user_code))}")
    out.info(f"  Then open:                      {out.strong(DEVICE_URL)}")
    out.info()
    if headless:
        out.info("Open that address on any device (a phone works) and enter the code.")
        return
    opener = open_browser
    if opener is None and can_open_browser():
        opener = _default_open
    if opener is not None and opener(DEVICE_URL):
        out.info(f"Opened {DEVICE_URL} in your browser; enter the code there.")
    else:
        out.info("Could not open a browser here: open the address above on any device.")


@dataclass(frozen=True, slots=True)
class _Code:
    login: CopilotDeviceLogin


@dataclass(frozen=True, slots=True)
class _Done:
    identity: LoginIdentity


@dataclass(frozen=True, slots=True)
class _Failed:
    error: BaseException


_Message = _Code | _Done | _Failed | None


def wait_for_login(
    host: GitHubCopilotHost,
    *,
    out: Output,
    events: LoginEvents,
    headless: bool,
    seam: CliSeam,
    clock: Clock,
) -> LoginIdentity:
    cancel = threading.Event()
    inbox: queue.Queue[_Message] = queue.Queue()

    def work() -> None:
        try:
            # With no injected sleep the host's wait sleeps on ``cancel`` itself, so a
            # signal ends even a long interval at once.
            identity = host.login(
                on_code=lambda login: inbox.put(_Code(login)), cancel=cancel, sleep=seam.sleep
            )
        except BaseException as exc:  # handed to the main thread, which raises it
            inbox.put(_Failed(exc))
        else:
            inbox.put(_Done(identity))

    tick = seam.tick if seam.tick is not None else 0.1
    countdown = _Countdown(out, clock)
    worker = threading.Thread(target=work, name="copilot-host-login", daemon=True)
    signals = current_signals()
    message: _Message = None
    with signals.cancelling(cancel):
        worker.start()
        try:
            while True:
                try:
                    message = inbox.get(timeout=tick)
                except queue.Empty:
                    message = None
                if signals.received is not None or isinstance(message, _Done | _Failed):
                    break
                if isinstance(message, _Code):
                    _show_code(
                        out,
                        events,
                        message.login,
                        clock,
                        headless=headless,
                        open_browser=seam.open_browser,
                    )
                    countdown.start(message.login.deadline)
                    if seam.on_waiting is not None:
                        seam.on_waiting()
                else:
                    countdown.tick()
        except BaseException:
            # The main thread failed (stdout cannot be written, say): the login must not
            # go on, and maybe complete, behind the failure being reported.
            cancel.set()
            worker.join(_CANCEL_GRACE)
            raise
    countdown.stop()
    # Checked after the block, so a signal that came as the wait ended is not lost.
    if signals.received is not None:
        return _after_signal(out, worker, inbox, signals.received, message)
    if isinstance(message, _Failed):
        raise message.error
    assert isinstance(message, _Done)
    return message.identity


def _after_signal(
    out: Output,
    worker: threading.Thread,
    inbox: queue.Queue[_Message],
    signum: int,
    message: _Message,
) -> LoginIdentity:
    """The signal wins: report a cancellation, unless the login completed in the race."""
    if not isinstance(message, _Done | _Failed):
        out.info("Cancelling the login...")
        worker.join(_CANCEL_GRACE)
        while not isinstance(message, _Done | _Failed):
            try:
                message = inbox.get_nowait()
            except queue.Empty:
                break
    if isinstance(message, _Done):
        # The person authorized in the same instant: the login is complete and stored.
        # Say so rather than claim nothing happened.
        from copilot_host._internal import clean

        raise Interrupted(
            signum,
            f"{signal_word(signum)}, but the login had just completed: logged in as "
            f"{clean(message.identity.account)} (run `copilot-host logout` to undo)",
            code="interrupted_after_login",
        )
    if worker.is_alive():
        # Still winding down after the grace period: most likely an HTTP poll waiting on
        # its timeout, but a save that began just before the signal runs to its end (the
        # store's lock and keyring waits are bounded, not interruptible). Do not promise.
        raise Interrupted(
            signum,
            "login cancelled; if it was completing at that moment it may have been stored: "
            "run `copilot-host status` to check",
            code="login_cancelled",
        )
    raise Interrupted(signum, "login cancelled; nothing was stored", code="login_cancelled")
