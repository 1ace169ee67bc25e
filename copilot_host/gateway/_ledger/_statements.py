"""The statements the ledger's book writes, and the values it binds to them.

None of them binds ``None`` or a ``bool``: the sqlite3 module of Python before 3.12 binds
those only after a failed adapter lookup that raises and clears an exception per value (a
start row had eight). What is NULL or a flag is written into the statement instead, and a
statement per pattern of NULLs is made once (they are few) and kept.
"""

from __future__ import annotations

import functools
import operator
from itertools import chain
from typing import TYPE_CHECKING

from ._records import End
from ._schema import WRITTEN

if TYPE_CHECKING:
    import sqlite3

__all__ = [
    "COLUMNS",
    "DAY_FIGURES",
    "END_COLUMNS",
    "INSERT_INTERRUPTED",
    "MAX_ROWS",
    "Shape",
    "START",
    "START_HELD",
    "assignments",
    "end_values",
    "insert_ended",
    "insert_rows",
]

COLUMNS = ", ".join(WRITTEN)
# A row in flight: its reservation (estimated) when its model's cost is known.
START_HELD = (
    "INSERT INTO requests (time, run_id, login, agent, api, model_asked, model, credits, "
    "credits_estimated, rewrote) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?)"
)
START = (
    "INSERT INTO requests (time, run_id, login, agent, api, model_asked, model, rewrote) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
# What an end sets: the columns from ``status`` to ``duration_ms``.
END_COLUMNS = WRITTEN[WRITTEN.index("status") : WRITTEN.index("rewrote")]
# done: credits of rows that ended; held: reservations of rows in flight; flying: how many.
DAY_FIGURES = (
    "SELECT total(CASE WHEN status IS NULL THEN 0 ELSE credits END), "
    "total(CASE WHEN status IS NULL THEN credits ELSE 0 END), "
    "count(CASE WHEN status IS NULL THEN 1 END) "
    "FROM requests WHERE time >= ? AND time < ? AND login = ?"
)


@functools.lru_cache(maxsize=64)
def assignments(nulls: tuple[bool, ...], rewrote: bool) -> str:
    """The UPDATE that ends a row, with NULL written in for the values ``nulls`` marks;
    ``rewrote`` when the end names the changes (else the start's stay)."""
    sets = [
        f"{name} = {'NULL' if null else '?'}" for name, null in zip(END_COLUMNS, nulls, strict=True)
    ]
    if rewrote:
        sets.append("rewrote = ?")
    # Only this module's column names, NULL and ? go into the text.
    where = "WHERE id = ? AND run_id = ? AND status IS NULL"
    return f"UPDATE requests SET {', '.join(sets)} {where}"  # noqa: S608


# The most rows one INSERT writes: 17 values a row stays under the 999 parameters a
# statement may bind in SQLite before 3.32 (a build Python may still link).
MAX_ROWS = 32


@functools.lru_cache(maxsize=256)
def insert_ended(nulls: tuple[bool, ...], seq: bool = False, rows: int = 1) -> str:
    """The INSERT of ``rows`` rows that have ended, each with NULL where ``nulls`` marks
    it: answers the gateway gave itself, or (with ``seq``, bound last in each row)
    requests whose starts waited in the run's journal."""
    marks = ", ".join("NULL" if null else "?" for null in nulls)
    columns, more = (f"{COLUMNS}, seq", ", ?") if seq else (COLUMNS, "")
    values = ", ".join([f"(?, ?, ?, ?, ?, ?, ?, {marks}, ?{more})"] * rows)
    # Only this module's column names, NULL and ? go into the text.
    return f"INSERT INTO requests ({columns}) VALUES {values}"  # noqa: S608


# A row written whole, as :func:`insert_ended` shapes its statement: which of the end's
# values are NULL, and whether a journal ``seq`` is bound.
Shape = tuple[tuple[bool, ...], bool]


def insert_rows(cursor: sqlite3.Cursor, rows: dict[Shape, list[tuple[object, ...]]]) -> None:
    """Insert rows written whole, up to :data:`MAX_ROWS` to a statement (sizes halving, so
    a shape has a few statements, each prepared once). Why not a statement per row: the
    sqlite3 module lets go of the GIL while each statement runs, and the event loop,
    waiting for it, takes it; the writer then waits out the interpreter's switch interval
    to have it back. A row per statement was a hand-off of the GIL per request (two thread
    switches) while the gateway was busy."""
    for (nulls, seq), shaped in rows.items():
        at, left = 0, len(shaped)
        while left:
            size = min(MAX_ROWS, 1 << (left.bit_length() - 1))
            cursor.execute(
                insert_ended(nulls, seq, size), tuple(chain.from_iterable(shaped[at : at + size]))
            )
            at += size
            left -= size


# A dead run's request still in its journal: interrupted, its reservation kept.
INSERT_INTERRUPTED = (
    "INSERT INTO requests (time, run_id, login, agent, api, model_asked, model, status, "
    "credits, credits_estimated, rewrote, seq) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, 'interrupted', ?, ?, ?, ?)"
)


_NO_NULLS = (False,) * len(END_COLUMNS)
_is_none = functools.partial(operator.is_, None)
_is_not_none = functools.partial(operator.is_not, None)


def end_values(end: End) -> tuple[tuple[bool, ...], tuple[object, ...]]:
    """An end's values in the order of :data:`END_COLUMNS`: which are None, and the
    others (what is bound)."""
    values = (
        end.status,
        end.input_tokens,
        end.output_tokens,
        end.cached_tokens,
        end.credits,
        1 if end.credits_estimated else 0,
        end.duration_ms,
    )
    if None not in values:  # the usual end: every count reported
        return _NO_NULLS, values
    return tuple(map(_is_none, values)), tuple(filter(_is_not_none, values))
