"""A value that must never be shown: tokens, device codes, data keys."""

from __future__ import annotations

from typing import NoReturn

__all__ = ["Secret"]

_MASK = "Secret('**********')"


class Secret:
    """Holds a credential string; ``reveal()`` is the only way back to the value.

    ``repr``, ``str`` and every format spec show a fixed mask (never the length), pickling
    and copying to a new process raise, and ``==`` compares in constant time and only with
    another ``Secret``, so a secret cannot be compared against a guessed plain string.
    """

    __slots__ = ("__value", "__weakref__")

    def __init__(self, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError("Secret holds a str")
        # Name-mangled slot: not in __dict__ (there is none), not in vars(), not in repr.
        self.__value = value

    def reveal(self) -> str:
        return self.__value

    def __repr__(self) -> str:
        return _MASK

    __str__ = __repr__

    def __format__(self, format_spec: str) -> str:
        return _MASK

    def __bool__(self) -> bool:
        return bool(self.__value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        # Imported here: hmac pulls in OpenSSL's hashlib, a visible share of CLI start-up.
        from hmac import compare_digest

        return compare_digest(self.__value.encode(), other.__value.encode())

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        # Equal objects must hash equal, and a hash of the value would leak a function of
        # it: one constant for every Secret keeps sets and dicts correct (just not fast,
        # which a handful of credentials never needs).
        return 0x5EC2E7

    def __reduce__(self) -> NoReturn:
        raise TypeError("a Secret cannot be pickled: credentials never leave the process")

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        raise TypeError("a Secret cannot be pickled: credentials never leave the process")

    def __copy__(self) -> Secret:
        return self

    def __deepcopy__(self, memo: object) -> Secret:
        return self
