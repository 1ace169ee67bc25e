"""Arbitrary JSON for the fuzz targets, nested to a fixed depth.

``st.recursive`` costs several times more per example than the same shapes spelled out
level by level (its leaf budget is re-checked on every draw), and the CI profile draws
500 examples per target; the parsers under test check types one level at a time, so a
bounded depth loses nothing they could tell apart.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st


def json_scalars(*, big: int = 10**40, text: int = 24) -> st.SearchStrategy[Any]:
    """null, booleans, integers up to ``big``, any float (NaN and infinities included)
    and short text."""
    return (
        st.none()
        | st.booleans()
        | st.integers(min_value=-big, max_value=big)
        | st.floats(allow_nan=True, allow_infinity=True)
        | st.text(max_size=text)
    )


def json_values(
    leaves: st.SearchStrategy[Any] | None = None,
    *,
    keys: st.SearchStrategy[str] | None = None,
    depth: int = 3,
    width: int = 3,
) -> st.SearchStrategy[Any]:
    """A JSON value: a leaf, or lists and objects of up to ``width`` items nested up to
    ``depth`` levels."""
    leaf = json_scalars() if leaves is None else leaves
    key = st.text(max_size=8) if keys is None else keys
    value = leaf
    for _ in range(depth):
        value = leaf | st.lists(value, max_size=width) | st.dictionaries(key, value, max_size=width)
    return value
