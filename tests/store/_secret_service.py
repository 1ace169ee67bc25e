"""A private, unlocked Secret Service (gnome-keyring over a private D-Bus session bus).

Mirrors ``shared/scripts/with-secret-service``: the daemons run with a throwaway HOME and
XDG_RUNTIME_DIR, the bus socket lives in that throwaway folder, and the caller's own
keyring is never reachable (its bus address is never used).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

PROGRAMS = ("dbus-daemon", "gnome-keyring-daemon")
_START_TIMEOUT = 15.0


def missing_programs() -> list[str]:
    return [name for name in PROGRAMS if shutil.which(name) is None]


def _service_ready(address: str) -> bool:
    import secretstorage
    from jeepney.io.blocking import open_dbus_connection

    try:
        connection = open_dbus_connection(bus=address)
    except OSError:
        return False
    try:
        # NameHasOwner, not activation: an activated daemon would start locked.
        return bool(secretstorage.check_service_availability(connection))
    finally:
        connection.close()


@contextmanager
def private_secret_service() -> Iterator[str]:
    """Yield the address of a private session bus with an unlocked Secret Service."""
    scratch = tempfile.mkdtemp(prefix="copilot-host-secret-service-")
    home = os.path.join(scratch, "home")
    run = os.path.join(scratch, "run")
    os.mkdir(home, 0o700)
    os.mkdir(run, 0o700)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "XDG_RUNTIME_DIR": run,
        "XDG_DATA_HOME": os.path.join(home, ".local", "share"),
        "XDG_CONFIG_HOME": os.path.join(home, ".config"),
        "LANG": "C.UTF-8",
    }
    bus = subprocess.run(
        [
            "dbus-daemon",
            "--session",
            f"--address=unix:path={run}/bus",
            "--print-address=1",
            "--print-pid=1",
            "--fork",
            "--nopidfile",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=_START_TIMEOUT,
        check=True,
    )
    address, pid_text = bus.stdout.split()[:2]
    bus_pid = int(pid_text)
    keyring_daemon: subprocess.Popen[bytes] | None = None
    try:
        env["DBUS_SESSION_BUS_ADDRESS"] = address
        keyring_daemon = subprocess.Popen(
            ["gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        assert keyring_daemon.stdin is not None
        # --unlock reads the password of the (new) login collection from stdin until EOF.
        keyring_daemon.stdin.write(b"test-collection-password")
        keyring_daemon.stdin.close()
        deadline = time.monotonic() + _START_TIMEOUT
        while not _service_ready(address):
            if keyring_daemon.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("gnome-keyring-daemon did not start a Secret Service")
            time.sleep(0.02)
        yield address
    finally:
        if keyring_daemon is not None:
            keyring_daemon.terminate()
            try:
                keyring_daemon.wait(5)
            except subprocess.TimeoutExpired:
                keyring_daemon.kill()
                keyring_daemon.wait()
        os.kill(bus_pid, signal.SIGTERM)
        shutil.rmtree(scratch, ignore_errors=True)
