"""What the gateway saves by keeping its upstream connections alive on httpx2's own
transport, rather than opening one per request (docs/upstream/httpcore2-leftover-bytes.md
says why it keeps them despite an httpcore2 defect).

    python bench/upstream_reuse.py [--requests 300]

A loopback TLS server (a self-signed certificate, trusted by the client) answers small
JSON documents; one httpx2 client on httpx2's own transport sends the same sequential
requests with the gateway's pool (connections kept alive: the baseline) and with no idle
connection kept (a new TCP and TLS connection per request). Printed: the time per
request of each, measured in the same run, and the ratio. On loopback this is the CPU
of a TLS handshake; to the real service each new connection adds the round trips of
TCP and TLS too (two or three, some 20-100 ms each from most places), which loopback
cannot show.
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import sys
import tempfile
import time
from pathlib import Path

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from copilot_host.gateway._app import UPSTREAM_LIMITS
from tests._tls import self_signed

BODY = b'{"ok": true}'
# The gateway's pool with no idle connection kept: one connection per request.
NO_REUSE = httpx2.Limits(max_connections=512, max_keepalive_connections=0)


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(BODY), BODY)
            )
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
        pass
    except asyncio.CancelledError:
        # A kept-alive connection's handler, cancelled as the run ends: its normal end
        # (asyncio would otherwise print the cancellation as a failed callback).
        return
    finally:
        writer.close()


async def _per_request(url: str, trust: ssl.SSLContext, limits: httpx2.Limits, n: int) -> float:
    async with httpx2.AsyncClient(verify=trust, limits=limits) as client:
        await client.get(url)  # warm: imports, the first connection
        began = time.perf_counter()
        for _ in range(n):
            answer = await client.get(url)
            assert answer.status_code == 200
        return (time.perf_counter() - began) / n


async def main(requests: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        cert, key = self_signed(Path(folder), "bench upstream")
        served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        served.load_cert_chain(cert, key)
        trust = ssl.create_default_context(cafile=str(cert))
        server = await asyncio.start_server(_handle, "127.0.0.1", 0, ssl=served)
        url = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
        try:
            kept = await _per_request(url, trust, UPSTREAM_LIMITS, requests)
            fresh = await _per_request(url, trust, NO_REUSE, requests)
        finally:
            server.close()
    print(f"{requests} sequential requests over TLS on loopback, httpx2's own transport")
    print(f"  connections kept alive (baseline): {kept * 1000:.2f} ms per request")
    print(f"  a new connection per request:      {fresh * 1000:.2f} ms per request")
    print(f"  ratio: {fresh / kept:.1f}x the baseline")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--requests", type=int, default=300)
    asyncio.run(main(parser.parse_args().requests))
