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
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == ""
