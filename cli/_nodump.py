"""No core files from a process that holds tokens.

A core file is the process's memory: the gateway key, the GitHub token, Copilot session
tokens. Where cores are kept (``RLIMIT_CORE`` unlimited, systemd-coredump, apport, ABRT)
a crash or a Ctrl-\\ would leave them on disk. Every command that holds a token calls
:func:`no_core_dumps` first: ``RLIMIT_CORE`` 0 everywhere (the soft limit, which the
command ``run`` starts inherits too: its environment holds the key), and on Linux
``prctl(PR_SET_DUMPABLE, 0)``, which also keeps core handlers away (a pipe in
``core_pattern`` ignores ``RLIMIT_CORE``), closes ``/proc/PID/environ`` and ``mem`` to all
but root, and stops debuggers of the same user from attaching.
"""

from __future__ import annotations

import sys

__all__ = ["no_core_dumps"]

_PR_SET_DUMPABLE = 4


def no_core_dumps() -> None:
    """Make this process write no core, whatever ends it; best effort, never raises."""
    try:
        import resource

        _soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
        resource.setrlimit(resource.RLIMIT_CORE, (0, hard))
    except (ImportError, ValueError, OSError):
        pass
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
        except (OSError, AttributeError):
            pass
