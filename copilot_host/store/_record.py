"""The on-disk record format (pure: bytes in, bytes out; no files, no keyring).

Layout, format version 1::

    b"copilot-host-credential\\n"    magic (24 bytes)
    version                          1 byte
    header length                    2 bytes, big-endian
    header                           canonical JSON (ASCII): login_id, account,
                                     created_at, protection {kind, backend}; backend
                                     is the keyring's name, or for a key file its
                                     name (credential-<login id>.key; records
                                     written before 0.2.0 hold its absolute path);
                                     format 2 adds client_id (the OAuth app the
                                     token was minted for, when not the default)
    nonce                            12 random bytes, fresh for every write
    ciphertext || tag                AES-256-GCM of the GitHub token (ASCII), >= 16 bytes

Everything before the nonce (magic, version, length, header) is the associated data, so
changing any byte of the record makes decryption fail. The version byte comes before
anything version-specific, so a newer format is recognized (and refused) without parsing it.
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
from dataclasses import dataclass
from typing import Any

from .._errors import StoreCorruptError, StoreError, StoreVersionError
from .._safety._secret import Secret
from .._safety._text import clean
from ._header import KEY_FILE, KEYRING, Protection, RecordHeader
from ._paths import key_file_name

__all__ = [
    "BASE_FORMAT",
    "FORMAT_VERSION",
    "KEY_BYTES",
    "MAX_RECORD_BYTES",
    "SealedRecord",
    "check_account",
    "check_client_id",
    "check_token",
    "format_for",
    "new_login_id",
    "open_sealed",
    "parse",
    "seal",
]

MAGIC = b"copilot-host-credential\n"
FORMAT_VERSION = 2
# Format 1 is still what a login with the default OAuth app writes: an older copilot-host
# sharing the home reads it, and says "newer" about (and keeps) a format-2 record.
BASE_FORMAT = 1
KEY_BYTES = 32  # AES-256
NONCE_BYTES = 12  # 96 bits: the size GCM is defined for without hashing the nonce
TAG_BYTES = 16
MAX_RECORD_BYTES = 64 * 1024
MAX_HEADER_BYTES = 8 * 1024
MAX_TOKEN_CHARS = 4096
MAX_ACCOUNT_CHARS = 256
_PREFIX = struct.Struct(">BH")  # version, header length
_HEADER_KEYS = frozenset({"account", "created_at", "login_id", "protection"})
_HEADER_KEYS_2 = _HEADER_KEYS | {"client_id"}
_CLIENT_ID = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,99}\Z")
_LOGIN_ID = re.compile(r"\A[0-9a-f]{32}\Z")
_TOKEN = re.compile(r"\A[\x21-\x7e]+\Z")  # printable ASCII, no spaces: every GitHub token


@dataclass(frozen=True, slots=True)
class SealedRecord:
    header: RecordHeader
    associated_data: bytes
    nonce: bytes
    ciphertext: bytes


def new_login_id() -> str:
    return os.urandom(16).hex()


def check_account(account: object) -> str:
    if (
        not isinstance(account, str)
        or not 0 < len(account) <= MAX_ACCOUNT_CHARS
        or clean(account, limit=MAX_ACCOUNT_CHARS) != account
    ):
        raise StoreError(
            "The account label must be 1 to 256 printable characters on one line",
            code="invalid_account",
        )
    return account


def check_token(token: object) -> Secret:
    # The message never echoes the value: it may be a real token in the wrong shape.
    if not isinstance(token, Secret):
        raise StoreError("The credential must be given as a Secret", code="invalid_credential")
    value = token.reveal()
    if len(value) > MAX_TOKEN_CHARS or not _TOKEN.match(value):
        raise StoreError(
            "The credential must be 1 to 4096 printable ASCII characters without spaces",
            code="invalid_credential",
        )
    return token


def check_client_id(client_id: object) -> str | None:
    """None (the default app) or an OAuth client id of the shape the device flow accepts."""
    if client_id is None:
        return None
    if not isinstance(client_id, str) or not _CLIENT_ID.match(client_id):
        raise StoreError(
            "The OAuth client id must be 1-100 letters, digits and . _ -",
            code="invalid_client_id",
        )
    return client_id


def format_for(client_id: str | None) -> int:
    """The record format a login minted for ``client_id`` (None: the default) is written in."""
    return BASE_FORMAT if client_id is None else FORMAT_VERSION


def _header_json(header: RecordHeader) -> bytes:
    body: dict[str, object] = {
        "account": header.account,
        "created_at": header.created_at,
        "login_id": header.login_id,
        "protection": {"backend": header.protection.backend, "kind": header.protection.kind},
    }
    if header.client_id is not None:
        body["client_id"] = header.client_id
    return json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def seal(header: RecordHeader, key: bytes, token: Secret) -> bytes:
    # Lazy: importing the store must not load cryptography.
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    version = format_for(header.client_id)
    if header.version != version or len(key) != KEY_BYTES:
        raise StoreError("Internal error: record version or key size is wrong")
    body = _header_json(header)
    # Whatever is written must read back: a header the parser would refuse would turn a
    # successful save into a record that every later read calls damaged.
    if len(body) > MAX_HEADER_BYTES or _parse_header(version, body) != header:
        raise StoreError("Internal error: the record header would not read back")
    associated = MAGIC + _PREFIX.pack(version, len(body)) + body
    nonce = os.urandom(NONCE_BYTES)
    sealed = AESGCM(key).encrypt(nonce, token.reveal().encode("ascii"), associated)
    return associated + nonce + sealed


def _corrupt(why: str) -> StoreCorruptError:
    return StoreCorruptError(why)


def _parse_header(version: int, body: bytes) -> RecordHeader | None:
    try:
        data: Any = json.loads(body.decode("ascii"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(data, dict) or set(data) != (
        _HEADER_KEYS_2 if version >= 2 else _HEADER_KEYS
    ):
        return None
    client_id = data.get("client_id")
    if client_id is not None and not (isinstance(client_id, str) and _CLIENT_ID.match(client_id)):
        return None
    protection = data["protection"]
    if not isinstance(protection, dict) or set(protection) != {"backend", "kind"}:
        return None
    login_id, account, created_at = data["login_id"], data["account"], data["created_at"]
    kind, backend = protection["kind"], protection["backend"]
    if not (
        isinstance(login_id, str)
        and _LOGIN_ID.match(login_id)
        and isinstance(account, str)
        and 0 < len(account) <= MAX_ACCOUNT_CHARS
        and clean(account, limit=MAX_ACCOUNT_CHARS) == account
        and isinstance(created_at, int | float)
        and not isinstance(created_at, bool)
        and math.isfinite(created_at)
        and kind in (KEYRING, KEY_FILE)
        and isinstance(backend, str)
        and _backend_ok(kind, backend, login_id)
    ):
        return None
    return RecordHeader(
        version=version,
        login_id=login_id,
        account=account,
        created_at=float(created_at),
        protection=Protection(kind=kind, backend=backend),
        client_id=client_id,
    )


def _backend_ok(kind: str, backend: str, login_id: str) -> bool:
    if kind == KEY_FILE and backend == key_file_name(login_id):
        return True
    # A keyring's display name, or the absolute key file path older records hold: shown
    # by status as recorded, so it must be printable text on one line.
    if clean(backend, limit=MAX_HEADER_BYTES) != backend:
        return False
    return kind == KEYRING or (
        backend.startswith("/") and backend.endswith("/" + key_file_name(login_id))
    )


def _reject_constant(name: str) -> object:
    raise ValueError(name)


def parse(data: bytes) -> SealedRecord:
    """Split a record without the key. Raises StoreVersionError for a newer format and
    StoreCorruptError (saying why) for anything else that is not a well-formed record."""
    if len(data) > MAX_RECORD_BYTES:
        raise _corrupt("it is larger than a credential record can be")
    if not data.startswith(MAGIC):
        raise _corrupt("it is not a copilot-host credential record")
    start = len(MAGIC)
    if len(data) < start + _PREFIX.size:
        raise _corrupt("it is truncated")
    version, length = _PREFIX.unpack_from(data, start)
    if version > FORMAT_VERSION:
        raise StoreVersionError(
            f"it was written by a newer copilot-host (record format {version}, this version "
            f"reads format {FORMAT_VERSION}); upgrade copilot-host to use it"
        )
    if version < 1:
        raise _corrupt("its format version is invalid")
    body_start = start + _PREFIX.size
    body_end = body_start + length
    if length > MAX_HEADER_BYTES or len(data) < body_end + NONCE_BYTES + TAG_BYTES:
        raise _corrupt("it is truncated")
    header = _parse_header(version, data[body_start:body_end])
    if header is None:
        raise _corrupt("its header is malformed")
    return SealedRecord(
        header=header,
        associated_data=data[:body_end],
        nonce=data[body_end : body_end + NONCE_BYTES],
        ciphertext=data[body_end + NONCE_BYTES :],
    )


def open_sealed(record: SealedRecord, key: bytes) -> Secret | None:
    """The token, or None when the record does not authenticate under ``key``."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    if len(key) != KEY_BYTES:
        return None
    try:
        plain = AESGCM(key).decrypt(record.nonce, record.ciphertext, record.associated_data)
    except InvalidTag:
        return None
    # Checked without try/except around the plaintext, so no decode error (which would carry
    # the bytes) can end up chained to an exception we raise.
    if len(plain) > MAX_TOKEN_CHARS or not plain.isascii():
        return None
    value = plain.decode("ascii")
    if not _TOKEN.match(value):
        return None
    return Secret(value)
