"""One call in a daemon worker thread, waited for at most a given time.

For calls that can hang where no timeout reaches (an OS keyring waiting on an unlock
prompt, a network step whose phases each have a timeout but whose whole must end by a
deadline): the caller gets the call's result or its exception within ``timeout``, or
:class:`Abandoned`. An abandoned call runs on in its daemon thread (it cannot be killed)
and is never waited for again; ``Abandoned.done`` is set if it ever ends.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["Abandoned", "call_bounded"]

T = TypeVar("T")


class Abandoned(Exception):
    """The call did not end within its time; it runs on in its thread."""

    def __init__(self, done: threading.Event) -> None:
        super().__init__("abandoned")
        self.done = done


def call_bounded(call: Callable[[], T], timeout: float, *, name: str) -> T:
    """``call()``'s result, or its exception re-raised here, within ``timeout`` seconds;
    else :class:`Abandoned`."""
    box: list[T] = []
    failure: list[BaseException] = []
    done = threading.Event()

    def run() -> None:
        try:
            box.append(call())
        except BaseException as exc:  # handed to the waiting caller, which raises it
            failure.append(exc)
        finally:
            done.set()

    threading.Thread(target=run, name=name, daemon=True).start()
    if not done.wait(max(timeout, 0.0)):
        raise Abandoned(done)
    if failure:
        raise failure[0]
    return box[0]
