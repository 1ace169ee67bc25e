"""Socket reads that do not map and unmap memory each time (glibc only).

asyncio's selector transports read a socket with ``sock.recv(256 KiB)``: CPython
allocates a 256 KiB buffer, reads the few hundred bytes that came into it, and shrinks
it. glibc serves an allocation that size with a fresh ``mmap`` whenever it is above
malloc's mmap threshold, which starts at 128 KiB and only grows when a mapped block that
large is freed unshrunk; whether that ever happens depends on the process's heap
history. In a gateway process where it did not, every read of a client's request and of
an upstream answer cost ``mmap``, ``mremap`` and ``munmap``, and the page faults of a new
mapping: ``strace -c`` counted two such triples per relayed request on the base stack,
and none in the bare relay beside it.

:func:`tune_malloc` fixes both thresholds above that size for the whole process, so those
buffers come from the heap and go back to it. The cost is that up to
:data:`TRIM_THRESHOLD` of freed heap is kept rather than returned, and that blocks
between 128 KiB and :data:`MMAP_THRESHOLD` are carved from the heap. It changes the whole
process, so :class:`~copilot_host.gateway.GatewayServer` does it only when asked
(``tune_malloc=True``, which ``copilot-host serve`` and ``run`` pass).
"""

from __future__ import annotations

import os

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "tune_malloc"]

# Above asyncio's 256 KiB read buffer with room to spare; glibc's own dynamic rule would
# set the trim threshold to twice the mmap threshold, as here.
MMAP_THRESHOLD = 1024 * 1024
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD

# mallopt's parameter numbers (glibc's malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def _is_glibc() -> bool:
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (AttributeError, ValueError, OSError):
        return False


def tune_malloc() -> bool:
    """Set glibc malloc's mmap threshold to :data:`MMAP_THRESHOLD` and its trim threshold
    to :data:`TRIM_THRESHOLD` for this process; whether both were set (False on another C
    library, where nothing is changed). Never raises."""
    if not _is_glibc():
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
        mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
        mallopt.restype = ctypes.c_int
    except (OSError, AttributeError):
        return False
    # mallopt answers 1 when it took the value, 0 when it refused it.
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
