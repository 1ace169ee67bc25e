"""A server that runs out of descriptors: the gateway's server with a connection bound far
above its open-file limit, so that accept() fails with EMFILE.

    python tests/gateway/emfile_child.py OPEN_FILES

Prints the port once it listens; logs (WARNING and up) go to stderr as serve's do.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import socket
import sys
from typing import Any


async def _app(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def main() -> None:
    from copilot_host.gateway import GatewayServer
    from copilot_host.gateway._server import Hardening
    from copilot_host.gateway._server._stack import PURE_PYTHON

    open_files = int(sys.argv[1])
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    listener = socket.create_server(("127.0.0.1", 0), backlog=1024)

    def started() -> None:
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, hard))
        print(listener.getsockname()[1], flush=True)

    server = GatewayServer(
        listener=listener,
        stack=PURE_PYTHON,
        hardening=Hardening(max_connections=100_000),
        lifespan=False,
        signals=True,
        on_started=started,
    )
    asyncio.run(server.serve(_app))


if __name__ == "__main__":
    main()
