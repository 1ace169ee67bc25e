"""Importing the store loads neither cryptography nor keyring, nor reads the environment."""

from __future__ import annotations

import subprocess
import sys


def test_import_is_lazy() -> None:
    code = (
        "import os, sys\n"
        "os.environ['COPILOT_HOST_HOME'] = '/nonexistent/should-not-matter'\n"
        "import copilot_host.store as s\n"
        "assert s.__all__ == [\n"
        "    'CredentialStore', 'Deleted', 'GatewayKey', 'GatewayKeyFile', 'PrivateFile',\n"
        "    'PrivateFolder', 'Protection', 'ProtectionKind', 'RecordHeader', 'Saved',\n"
        "    'default_home', 'private_folder',\n"
        "]\n"
        "heavy = [m for m in ('cryptography', 'keyring', 'platformdirs') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    assert _printed(code) == ""


def test_the_private_files_module_loads_when_first_named() -> None:
    """Only the ledger uses it: a command that reads the store does not build its classes
    at start-up, and each name, once asked for, is the module's own object."""
    code = (
        "import sys\n"
        "import copilot_host.store as s\n"
        "assert 'copilot_host.store._private' not in sys.modules\n"
        "assert {'PrivateFile', 'PrivateFolder', 'private_folder'} <= set(dir(s))\n"
        "folder = s.PrivateFolder\n"
        "from copilot_host.store import _private\n"
        "assert folder is _private.PrivateFolder\n"
        "assert s.private_folder is _private.private_folder\n"
        "assert s.PrivateFile is _private.PrivateFile\n"
        "try:\n"
        "    s.NoSuchName\n"
        "except AttributeError as exc:\n"
        "    print(exc)\n"
    )
    assert _printed(code) == "module 'copilot_host.store' has no attribute 'NoSuchName'"


def _printed(code: str) -> str:
    """What ``code`` prints in a fresh interpreter (nothing imported before it)."""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return result.stdout.strip()
