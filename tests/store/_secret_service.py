"""A private, unlocked Secret Service (gnome-keyring over a private D-Bus session bus).

Mirrors ``shared/scripts/with-secret-service``: the daemons run with a throwaway HOME and
XDG_RUNTIME_DIR, the bus socket lives in that throwaway folder, and the caller's own
keyring is never reachable (its bus address is never used). Unlike ``dbus-run-session``,
the bus has no service directories, so D-Bus activation cannot start a second, locked
gnome-keyring that wins the race for the Secret Service name (seen under load).
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
# A session bus without service directories: nothing can be started by D-Bus activation,
# so the only Secret Service on it is the unlocked one started here (an activated
# gnome-keyring would race it for the name and come up locked).
_BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


def missing_programs() -> list[str]:
    return [name for name in PROGRAMS if shutil.which(name) is None]


def _not_ready(address: str) -> str | None:
    """Why the private Secret Service cannot be used yet, or None when it can."""
    import secretstorage
    import secretstorage.exceptions
    from jeepney.bus_messages import message_bus
    from jeepney.io.blocking import Proxy, open_dbus_connection

    try:
        connection = open_dbus_connection(bus=address)
    except OSError as exc:
        return f"bus: {exc!r}"
    try:
        if not Proxy(message_bus, connection).NameHasOwner("org.freedesktop.secrets")[0]:
            return "org.freedesktop.secrets has no owner yet"
        # Owning the name comes before the login collection is created and unlocked; a
        # test that ran in between would meet an unlock prompt (and time out).
        try:
            if secretstorage.Collection(connection).is_locked():
                return "the default collection is locked"
        except secretstorage.exceptions.SecretStorageException as exc:
            return f"no default collection: {exc!r}"
        return None
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
    config = os.path.join(scratch, "bus.conf")
    with open(config, "w") as handle:
        handle.write(_BUS_CONFIG.format(socket=os.path.join(run, "bus")))
    bus = subprocess.run(
        [
            "dbus-daemon",
            f"--config-file={config}",
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
        # --unlock reads the login collection's password from stdin at start-up, and does
        # not wait for it: the pipe holds the whole password (and EOF) before it starts.
        password_in, password_out = os.pipe()
        os.write(password_out, b"test-collection-password")
        os.close(password_out)
        try:
            keyring_daemon = subprocess.Popen(
                ["gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets"],
                env=env,
                stdin=password_in,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        finally:
            os.close(password_in)
        deadline = time.monotonic() + _START_TIMEOUT
        while (why := _not_ready(address)) is not None:
            if keyring_daemon.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"gnome-keyring-daemon did not start a Secret Service ({why}; "
                    f"exit status {keyring_daemon.returncode})"
                )
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
