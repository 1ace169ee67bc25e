"""A server that runs out of descriptors: ``HardenedServer`` with a connection bound far
above its open-file limit, so that accept() fails with EMFILE.

    python tests/gateway/emfile_child.py OPEN_FILES

Prints the port once it listens; logs (WARNING and up) go to stderr as serve's do.
"""

from __future__ import annotations

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
    import uvicorn
    from copilot_host_cli._gateway_hardening import (
        ConnectionBook,
        HardenedServer,
        hardened_protocol,
    )

    open_files = int(sys.argv[1])
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    listener = socket.create_server(("127.0.0.1", 0), backlog=1024)
    config = uvicorn.Config(
        _app,
        lifespan="off",
        log_config=None,
        access_log=False,
        http=hardened_protocol(ConnectionBook(100_000)),
        loop="asyncio",  # as serve's: never uvloop, even when installed
    )

    class Server(HardenedServer):
        async def startup(self, sockets: list[Any] | None = None) -> None:
            await super().startup(sockets)
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, hard))
            print(listener.getsockname()[1], flush=True)

    Server(config).run(sockets=[listener])


if __name__ == "__main__":
    main()
