"""What another process does in the instant between two steps of the code under test, done
here at exactly that instant: the file operations are real, only their moment is chosen.

:func:`before` gives one module a view of a system module (``os``, ``fcntl``, ``time``) in
which one function first calls ``act`` with the same arguments; everything else is the
real module. ``act`` runs with the view switched off, so what it does (with the real
functions, the code under test's own helpers included) is not intercepted in turn.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest


class _View:
    def __init__(self, real: ModuleType) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def before(
    monkeypatch: pytest.MonkeyPatch,
    module: ModuleType,
    system: str,
    function: str,
    act: Callable[..., None],
) -> None:
    """Have ``module``'s ``system.function(*args)`` call ``act(*args)`` first."""
    real: ModuleType = getattr(module, system)
    original = getattr(real, function)
    view = _View(real)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        setattr(module, system, real)  # monkeypatch puts the real one back at the end
        try:
            act(*args)
        finally:
            setattr(module, system, view)
        return original(*args, **kwargs)

    setattr(view, function, wrapped)
    monkeypatch.setattr(module, system, view)
