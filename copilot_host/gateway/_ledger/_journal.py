"""A run's requests in flight, kept in its lock file instead of a row per start.

A process without a daily budget has nothing to decide when a request starts, only a
promise to keep: a request killed in flight is recorded ``interrupted``, never lost. A
committed SQLite row per start kept it at a price (a transaction, file locks and writes,
every request, on the gateway's event loop) that was most of what recording cost. The run's
lock file (``_runs``), which the process holds from before its first request to after its
last, keeps it instead: it is sized to :data:`SLOTS` slots of :data:`SLOT` bytes and mapped
into memory, and a start is written into a free slot (no system call) before the request
goes upstream. The row is written whole when the answer ends, in the writer thread's next
batch, with the slot's sequence number (``seq``); the slot is freed once that commits.

The kernel keeps what was written to a shared mapping when the process dies, however it
dies, as it keeps a committed WAL frame: both are lost only with the machine (a power cut),
which ``synchronous=NORMAL`` already allows. So the next process to start finds a dead
run's taken slots in its file and records each as ``interrupted`` with its reservation,
unless a row with its ``seq`` is there already (the process died between the commit and
freeing the slot): never lost, never counted twice. ``usage --history`` shows a live run's
taken slots as ``in_flight``, and a process with a daily budget counts their reservations.

A slot: byte 0 is 1 while taken (written last, so a slot half-written when the process died
is free: its request never went upstream); then ``seq``, ``time``, ``reserved`` (NaN for
none) and the stored names, joined by :data:`_SEPARATOR`. A start whose names do not fit,
or that finds every slot taken, is written as a row (the slower way that always works).
"""

from __future__ import annotations

import itertools
import math
import mmap
import os
import stat
import struct
from collections.abc import Iterator
from typing import NamedTuple

from ._records import stored_text, valid_run_id

__all__ = [
    "SIZE",
    "SLOT",
    "SLOTS",
    "SUFFIX",
    "Flying",
    "Journal",
    "Journals",
    "open_journal",
    "read_journal",
]

# A run's lock file, which is its journal: ``<run id>.lock`` in the runs folder.
SUFFIX = ".lock"
# Opened to read, never following a link, never blocking (a FIFO in its place).
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK

SLOT = 1024
SLOTS = 256
SIZE = SLOT * SLOTS
# After the taken byte and its padding: seq, time, reserved, the names' length.
_BODY = struct.Struct("<QddH")
_NAMES_AT = 8 + _BODY.size
_ROOM = SLOT - _NAMES_AT
_SEPARATOR = "\x1f"  # a control character: never in a cleaned name
_TAKEN = 1
_FREE = 0
_NAMES = 6


class Flying(NamedTuple):
    """A request in flight as its slot holds it: the start's stored names, as
    :func:`~._records.stored_names` orders them."""

    seq: int
    time: float
    reserved: float | None
    login: str
    agent: str
    api: str
    model_asked: str
    model: str
    rewrote: str

    def row(self, run_id: str) -> tuple[object, ...]:
        """What its row holds before the end's values, as ``requests`` orders them:
        time, run, login, agent, API, model asked, model, reservation, whether estimated,
        changes."""
        held = self.reserved
        return (
            self.time,
            run_id,
            self.login,
            self.agent,
            self.api,
            self.model_asked,
            self.model,
            held,
            0 if held is None else 1,
            self.rewrote,
        )


class Journal:
    """This run's slots (see the module docstring). :meth:`take` is called from the
    gateway's event loop, :meth:`free` from the writer thread: a slot's index moves
    between them through a list, whose ``pop`` and ``append`` are atomic."""

    def __init__(self, fd: int) -> None:
        os.ftruncate(fd, SIZE)
        self._map: mmap.mmap | None = mmap.mmap(fd, SIZE)
        self._free = list(range(SLOTS - 1, -1, -1))
        self._seq = itertools.count(1)
        # A start's stored names, encoded once per set of names (they repeat).
        self._encoded: dict[tuple[str, ...], bytes] = {}

    def take(self, names: tuple[str, ...], time: float, reserved: float | None) -> int:
        """Write a start into a free slot; returns ``seq * SLOTS + slot``, or 0 when it
        cannot be kept here (no slot free, names too long, the journal closed)."""
        encoded = self._encoded.get(names)
        if encoded is None:
            encoded = _SEPARATOR.join(names).encode()
            if len(encoded) > _ROOM:
                return 0
            if len(self._encoded) < 256:
                self._encoded[names] = encoded
        free = self._free
        mapped = self._map
        if not free or mapped is None:
            return 0
        slot = free.pop()
        seq = next(self._seq)
        at = slot * SLOT
        try:
            body = _BODY.pack(seq, time, math.nan if reserved is None else reserved, len(encoded))
        except struct.error:
            free.append(slot)
            # Named by its type only: the value could be anything a caller passed.
            raise TypeError("a start's time and reservation are numbers") from None
        try:
            mapped[at + 8 : at + _NAMES_AT + len(encoded)] = body + encoded
            mapped[at] = _TAKEN
        except ValueError:  # closed by the writer thread in between: not kept here
            free.append(slot)
            return 0
        return seq * SLOTS + slot

    def free(self, *keys: int) -> None:
        """The rows of ``keys`` (from :meth:`take`) are committed: their slots are free
        again."""
        mapped = self._map
        if mapped is None:
            return
        free = self._free
        for key in keys:
            slot = key % SLOTS
            mapped[slot * SLOT] = _FREE
            free.append(slot)

    def taken(self) -> list[tuple[int, Flying]]:
        """Every slot still taken, with the key :meth:`take` gave it."""
        mapped = self._map
        if mapped is None:
            return []
        return [(one.seq * SLOTS + slot, one) for slot, one in _slots(mapped)]

    def close(self) -> None:
        """Unmap (before the lock goes: the mapping holds the file open, and its lock)."""
        mapped, self._map = self._map, None
        if mapped is not None:
            mapped.close()


def seq_of(key: int) -> int:
    return key // SLOTS


def _slots(data: bytes | mmap.mmap) -> Iterator[tuple[int, Flying]]:
    """The taken slots of a journal's bytes; a slot that does not read back whole (a
    damaged file) is skipped."""
    if len(data) < SIZE:
        return
    marks = data[0:SIZE:SLOT]
    slot = marks.find(_TAKEN)
    while slot >= 0:
        at = slot * SLOT
        seq, time, reserved, length = _BODY.unpack_from(data, at + 8)
        if 0 < length <= _ROOM and seq > 0 and math.isfinite(time):
            try:
                names = bytes(data[at + _NAMES_AT : at + _NAMES_AT + length]).decode()
            except UnicodeDecodeError:
                names = ""
            parts = names.split(_SEPARATOR)
            if len(parts) == _NAMES:
                held = None if math.isnan(reserved) else reserved
                # Cleaned again: what a damaged file says never goes into a row as it is.
                login, agent, api, asked, model, rewrote = (stored_text(part) for part in parts)
                yield slot, Flying(seq, time, held, login, agent, api, asked, model, rewrote)
        slot = marks.find(_TAKEN, slot + 1)


def open_journal(folder_fd: int, run_id: str) -> int | None:
    """Another run's journal in the runs folder ``folder_fd``, open to read; None when
    there is none to read (gone, a name no run of ours has, a link)."""
    if not valid_run_id(run_id):
        return None
    try:
        return os.open(run_id + SUFFIX, _READ, dir_fd=folder_fd)
    except OSError:
        return None


def read_journal(fd: int) -> list[Flying]:
    """The taken slots of the journal open as ``fd`` (another run's); none when ``fd`` is
    not a journal (a lock file of an earlier version, or not a regular file at all)."""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return []
        data = os.pread(fd, SIZE, 0)
    except OSError:
        return []
    return [one for _slot, one in _slots(data)]


class Journals:
    """Other live runs' journals as a process with a daily budget counts them: mapped
    read-only, the set renewed when the ``runs`` table changes."""

    def __init__(self) -> None:
        self._maps: dict[str, mmap.mmap] = {}

    def renew(self, folder_fd: int, run_ids: set[str]) -> None:
        for gone in set(self._maps) - run_ids:
            self._maps.pop(gone).close()
        for run_id in run_ids - set(self._maps):
            fd = open_journal(folder_fd, run_id)
            if fd is None:
                continue  # nothing in flight there
            try:
                info = os.fstat(fd)
                if stat.S_ISREG(info.st_mode) and info.st_size == SIZE:
                    self._maps[run_id] = mmap.mmap(fd, SIZE, prot=mmap.PROT_READ)
            except OSError:
                pass
            finally:
                os.close(fd)

    def held(self, login: str, day_start: float, day_end: float) -> tuple[float, int]:
        """The reservations of requests in flight in these journals for ``login`` that
        started in the day, and how many there are."""
        held = 0.0
        flying = 0
        for mapped in self._maps.values():
            for _slot, one in _slots(mapped):
                if one.login == login and day_start <= one.time < day_end:
                    held += one.reserved or 0.0
                    flying += 1
        return held, flying

    def close(self) -> None:
        for mapped in self._maps.values():
            mapped.close()
        self._maps.clear()
