"""Agents' own configuration files, read by the profiles without trusting the folder they are in.

A profile reads what the user set in an agent's files (aider's ``.env`` and
``.aider.conf.yml``, opencode's ``opencode.json[c]``) so that it never overrides it. Those
files sit in folders a repository controls, so a hostile checkout can make any of them a
link to ``/dev/zero`` or ``/dev/tty``, a FIFO, or a file of gigabytes. :func:`read_text`
opens a file following links (a user's dotfiles are often links), without blocking
(``O_NONBLOCK``: a FIFO with no writer opens at once) and without taking a terminal
(``O_NOCTTY``), then reads it only when ``fstat`` shows a regular file of at most
:data:`MAX_CONFIG_BYTES`. Anything else is *skipped*: the profile then adds nothing that
file could have set, and ``run --print-profile`` says which file was skipped and why.

JSON configuration (opencode's, with comments and trailing commas) is read by
:func:`read_json`: linear in the text, and nested at most
:data:`copilot_host.gateway._json.MAX_DEPTH` levels (deeper is invalid: one DEBUG line, and
the file counts as not there, as opencode itself would refuse it).
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._json import too_deep

__all__ = [
    "MAX_CONFIG_BYTES",
    "Skipped",
    "deep_merge",
    "git_root",
    "parse_json",
    "read_json",
    "read_text",
    "strip_jsonc",
    "upward",
]

_log = logging.getLogger("copilot_host.gateway")

# The largest configuration file read: agents' files are a few KiB.
MAX_CONFIG_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Skipped:
    """A file that exists but was not read, and why (for ``run``'s notes)."""

    path: Path
    reason: str

    def note(self) -> str:
        return f"{self.path} skipped ({self.reason})"


def read_text(path: Path) -> str | Skipped | None:
    """The text of the configuration file at ``path``; None when there is none; a
    :class:`Skipped` when something is there that is not a regular UTF-8 file of at most
    :data:`MAX_CONFIG_BYTES`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return Skipped(path, exc.strerror or type(exc).__name__)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return Skipped(path, "not a regular file")
        if info.st_size > MAX_CONFIG_BYTES:
            return Skipped(path, f"over {MAX_CONFIG_BYTES // 1024} KiB")
        data = os.read(fd, MAX_CONFIG_BYTES + 1)
        if len(data) > MAX_CONFIG_BYTES:  # it grew since fstat
            return Skipped(path, f"over {MAX_CONFIG_BYTES // 1024} KiB")
    except OSError as exc:
        return Skipped(path, exc.strerror or type(exc).__name__)
    finally:
        os.close(fd)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return Skipped(path, "not UTF-8 text")


# A JSON string, a // comment, or a /* */ comment; then a string, or a comma before a
# closing bracket (a trailing comma), each found left to right so neither is looked for
# inside a string.
_COMMENTS = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*.*?(?:\*/|\Z)', re.DOTALL)
_TRAILING = re.compile(r'"(?:[^"\\\n]|\\.)*"|,(\s*[}\]])')


def strip_jsonc(text: str) -> str:
    """JSON with comments and trailing commas (opencode's ``.jsonc``) made plain JSON, in
    time linear in the text."""
    plain = _COMMENTS.sub(lambda m: m.group() if m.group().startswith('"') else "", text)
    return _TRAILING.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(), plain)


# What a parse too deep for the interpreter's stack stands for.
_TOO_DEEP: Any = object()


def parse_json(text: str, where: str) -> dict[str, Any] | None:
    """The JSON object ``text`` holds (comments and trailing commas allowed), or None when
    it holds none: malformed, not an object, or nested too deep (one DEBUG line says which,
    naming ``where``)."""
    try:
        value = json.loads(strip_jsonc(text))
    except RecursionError:
        value = _TOO_DEEP
    except ValueError:
        _log.debug("%s is not JSON: left out", where)
        return None
    if value is _TOO_DEEP or too_deep(value):
        _log.debug("%s nests too deep: left out", where)
        return None
    if not isinstance(value, dict):
        _log.debug("%s is not a JSON object: left out", where)
        return None
    return value


def read_json(path: Path) -> dict[str, Any] | Skipped | None:
    """The JSON object in the file at ``path`` (see :func:`parse_json`); None when there is
    no such file or it holds no object; :class:`Skipped` as :func:`read_text` says."""
    text = read_text(path)
    if text is None or isinstance(text, Skipped):
        return text
    return parse_json(text, str(path))


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``over`` merged in, object by object; ``over`` wins elsewhere. A loop
    over the objects both hold, so no nesting makes it recurse."""
    merged: dict[str, Any] = dict(base)
    pending: list[tuple[dict[str, Any], Mapping[str, Any]]] = [(merged, over)]
    while pending:
        target, source = pending.pop()
        for key, value in source.items():
            kept = target.get(key)
            if isinstance(kept, Mapping) and isinstance(value, Mapping):
                target[key] = inner = dict(kept)
                pending.append((inner, value))
            else:
                target[key] = value
    return merged


def upward(start: Path, names: tuple[str, ...]) -> list[Path]:
    """Each of ``names`` in ``start`` and every folder above it, nearest first, where
    something of that name exists (a file to read, or one to skip)."""
    found: list[Path] = []
    for folder in (start, *start.parents):
        found += [folder / name for name in names if os.path.lexists(folder / name)]
    return found


def git_root(start: Path) -> list[Path]:
    """The nearest folder at or above ``start`` holding ``.git``, as a one-item list."""
    for folder in (start, *start.parents):
        if os.path.lexists(folder / ".git"):
            return [folder]
    return []
