"""The ``usage --history --json`` document, built where it is quickest.

A year of rows is half a million: made into Python objects one value at a time, then into
JSON, they took about 80 times as long as ``copilot-host status``. So each row's JSON text
is made by SQLite (``json_quote`` for the text fields, numbers and ``null`` as SQLite writes
them; a credit figure to 15 significant digits), and Python only joins the rows. An SQLite
without its JSON functions (older than 3.38 and built without them) gets the same document
from Python's ``json``. Grouped documents are small: Python makes them.

``{"v": 1, "rows": [{...}], "total": {"requests", "credits"}}``, or with ``--by``
``{"v": 1, "groups": [{"key", "requests", "credits", "input_tokens", "output_tokens"}],
"total": {...}}``; ``time`` is ISO 8601 in UTC with ``Z``; a row still in flight has the
status ``"in_flight"`` while its process lives and ``"interrupted"`` once it does not.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._history import (
    TOTAL,
    Group,
    History,
    HistoryRow,
    check_by,
    empty_history,
    read_history,
    reading,
)
from ._records import IN_FLIGHT, INTERRUPTED

assert (IN_FLIGHT, INTERRUPTED) == ("in_flight", "interrupted")  # as _ROW_JSON spells them

if TYPE_CHECKING:
    import sqlite3

__all__ = ["JSON_VERSION", "group_object", "history_json", "row_object"]

JSON_VERSION = 1

# One row's JSON object, made by SQLite in one printf (each || would copy the row so far).
# ?1: the live runs as a JSON array; ?2: since. Numbers as SQLite writes them (a credit
# figure to 15 significant digits), text through json_quote.
_ROW_JSON = (
    'SELECT printf(\'{"time":"%s","run_id":%s,"agent":%s,"api":%s,'
    '"model_asked":%s,"model":%s,"status":%s,"input_tokens":%s,'
    '"output_tokens":%s,"cached_tokens":%s,"credits":%s,"credits_estimated":%s,'
    '"duration_ms":%s,"rewrote":%s}\', '
    "strftime('%Y-%m-%dT%H:%M:%SZ', time, 'unixepoch'), json_quote(run_id), "
    "json_quote(agent), json_quote(api), json_quote(model_asked), json_quote(model), "
    "CASE WHEN status IS NULL THEN CASE WHEN run_id IN (SELECT value FROM json_each(?1)) "
    "THEN '\"in_flight\"' ELSE '\"interrupted\"' END "
    "WHEN typeof(status) = 'integer' THEN status ELSE json_quote(status) END, "
    "coalesce(input_tokens, 'null'), coalesce(output_tokens, 'null'), "
    "coalesce(cached_tokens, 'null'), coalesce(credits, 'null'), "
    "CASE WHEN credits_estimated THEN 'true' ELSE 'false' END, coalesce(duration_ms, 'null'), "
    # The writer keeps rewrite names of [a-z0-9_.:-] only; a file edited by hand still
    # makes valid JSON.
    "CASE WHEN rewrote = '' THEN '[]' ELSE '[\"' || replace(replace(replace(rewrote, "
    "'\\', ''), '\"', ''), ',', '\",\"') || '\"]' END) "
    "FROM requests WHERE time >= ?2 ORDER BY time, id"
)


def _iso(moment: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment))


def _credits(value: float) -> float:
    # Sums of nano-credit fractions carry float noise below a nano-credit.
    return round(value, 9)


def row_object(row: HistoryRow) -> dict[str, Any]:
    return {
        "time": _iso(row.time),
        "run_id": row.run_id,
        "agent": row.agent,
        "api": row.api,
        "model_asked": row.model_asked,
        "model": row.model,
        "status": row.status,
        "input_tokens": row.input_tokens,
        "output_tokens": row.output_tokens,
        "cached_tokens": row.cached_tokens,
        "credits": row.credits,
        "credits_estimated": row.credits_estimated,
        "duration_ms": row.duration_ms,
        "rewrote": list(row.rewrote),
    }


def group_object(group: Group) -> dict[str, Any]:
    return {
        "key": group.key,
        "requests": group.requests,
        "credits": _credits(group.credits),
        "input_tokens": group.input_tokens,
        "output_tokens": group.output_tokens,
    }


def _total(requests: int, credits: float) -> str:
    return json.dumps({"requests": requests, "credits": _credits(credits)}, separators=(",", ":"))


def _from_history(found: History) -> str:
    total = _total(found.requests, found.credits)
    if found.by is not None:
        groups = json.dumps(
            [group_object(group) for group in found.groups],
            ensure_ascii=False,
            separators=(",", ":"),
        )
        return f'{{"v":{JSON_VERSION},"groups":{groups},"total":{total}}}'
    rows = json.dumps(
        [row_object(row) for row in found.rows], ensure_ascii=False, separators=(",", ":")
    )
    return f'{{"v":{JSON_VERSION},"rows":{rows},"total":{total}}}'


def _sqlite_rows(db: sqlite3.Connection, since: float, alive: set[str]) -> str | None:
    """The rows document made by SQLite, or None when it has no JSON functions."""
    import sqlite3

    try:
        texts = db.execute(_ROW_JSON, (json.dumps(sorted(alive)), since)).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such function" in str(exc):
            return None
        raise
    requests, credits = db.execute(TOTAL, (since,)).fetchone()
    rows = ",".join(text for (text,) in texts)
    return f'{{"v":{JSON_VERSION},"rows":[{rows}],"total":{_total(requests, credits)}}}'


def history_json(path: Path, *, since: float, by: str | None = None) -> tuple[str, bool]:
    """The document for the ledger at ``path`` since ``since`` (one line of JSON), and
    whether the file exists (a missing one is an empty history). Errors as
    :func:`~._history.reading`."""
    check_by(by)
    if by is None:
        with reading(path) as found:
            if isinstance(found, bool):
                return _from_history(empty_history(path, since, by, found=found)), found
            db, alive = found
            made = _sqlite_rows(db, since, alive)
        if made is not None:
            return made, True
    history = read_history(path, since=since, by=by)
    return _from_history(history), history.found
