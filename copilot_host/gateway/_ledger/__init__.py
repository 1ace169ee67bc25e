"""The ledger: every model request ``serve`` and ``run`` answer, in a local SQLite file.

One row per request sent upstream and per answer the gateway gives itself (count_tokens,
server tools: 0 credits): when, which run, account, agent, API, model asked and served,
status, tokens, credits (and whether estimated), duration, and the names of the changes the
gateway applied. Never a prompt, an answer, a header value or a secret. docs/ARCHITECTURE.md
("The ledger") says why SQLite and how the pieces fit:

* :mod:`._records`: what the gateway tells the ledger (:class:`Start`, :class:`End`) and
  what it answers (:class:`Admitted`, :class:`OverDailyBudget`); sans-IO.
* :mod:`._schema`: the tables, ``PRAGMA user_version`` and the migrations.
* :mod:`._file`: which file, and opening it through the store's checked folder.
* :mod:`._runs`: which processes are alive (a lock each), and settling what dead ones left;
  :mod:`._journal` the requests in flight each run keeps in its lock file.
* :mod:`._book`: the connection and its writes, one user at a time; :mod:`._statements`
  the statements it writes.
* :mod:`._writer`: the writer thread, its batches and the daily budget.
* :mod:`._ledger`: :func:`open_ledger`, :class:`Ledger`, :class:`LedgerOff`.
* :mod:`._history`: reading it back (``usage --history``); :mod:`._document` its JSON;
  :mod:`._summary` what ``usage --report`` shows, in one read.

Importing this package needs no ``sqlite3``: a Python built without it gets a
:class:`LedgerOff` with its reason.
"""

from __future__ import annotations

from ._document import history_json
from ._file import LEDGER_NAME, LEDGER_VARIABLE, history_path, ledger_path
from ._history import BY, Group, History, HistoryRow, read_history, since_time
from ._ledger import KEEP_DAYS, Ledger, LedgerOff, Recorder, open_ledger
from ._records import (
    AGENTS,
    APIS,
    IN_FLIGHT,
    INTERRUPTED,
    Admission,
    Admitted,
    End,
    OverDailyBudget,
    Start,
    format_credits,
    new_run_id,
)
from ._schema import SCHEMA_VERSION
from ._summary import AUTO, Cell, RunSpan, Summary, read_summary

__all__ = [
    "AGENTS",
    "APIS",
    "AUTO",
    "BY",
    "IN_FLIGHT",
    "INTERRUPTED",
    "KEEP_DAYS",
    "LEDGER_NAME",
    "LEDGER_VARIABLE",
    "SCHEMA_VERSION",
    "Admission",
    "Admitted",
    "Cell",
    "End",
    "Group",
    "History",
    "HistoryRow",
    "Ledger",
    "LedgerOff",
    "OverDailyBudget",
    "Recorder",
    "RunSpan",
    "Start",
    "Summary",
    "format_credits",
    "history_json",
    "history_path",
    "ledger_path",
    "new_run_id",
    "open_ledger",
    "read_history",
    "read_summary",
    "since_time",
]
