"""Which optional accelerations are used: the one reading of the environment that selects them.

The base install runs on the pure-Python stack: uvicorn on h11, httpx2's own transport,
``json``. ``copilot-host[fast]`` adds httptools (uvicorn's parser), aiohttp (the gateway's
upstream transport) and orjson (request bodies). :func:`accelerations` decides, from what
is installed and from the environment, which of them apply:

* ``COPILOT_HOST_PURE_PYTHON=1`` (any value but empty or ``0``) rules them all out, even
  when installed: a way to rule them out when something misbehaves, and how the suite
  exercises the base stack with the extra installed;
* a proxy variable (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, either case) rules out
  aiohttp: httpx2's own transport applies the proxy, as it always did.

It is the only code that reads those variables. The gateway's server calls it once when
it starts serving (:func:`copilot_host.gateway.serve`); the JSON reader asks it once, when
this module is first imported.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from urllib.request import getproxies

__all__ = ["PURE_PYTHON_ENV", "Accelerations", "accelerations", "orjson"]

PURE_PYTHON_ENV = "COPILOT_HOST_PURE_PYTHON"
_PROXY_SCHEMES = ("http", "https", "all")


@dataclass(frozen=True)
class Accelerations:
    """Which accelerations apply: each True only when installed and not ruled out."""

    httptools: bool
    aiohttp: bool
    orjson: bool
    # Whether the environment names a proxy (httpx2 then applies it).
    proxy: bool


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules, a bad spec
        return False


def _proxy(environ: Mapping[str, str] | None) -> bool:
    if environ is None:
        # httpx2 reads the same urllib.request.getproxies() (the environment, and the
        # system's settings on macOS).
        found = getproxies()
        return any(found.get(scheme) for scheme in _PROXY_SCHEMES)
    names = {f"{scheme}_proxy" for scheme in _PROXY_SCHEMES}
    return any(value and name.lower() in names for name, value in environ.items())


def accelerations(environ: Mapping[str, str] | None = None) -> Accelerations:
    """The accelerations that apply under ``environ`` (default: this process's)."""
    env = os.environ if environ is None else environ
    proxy = _proxy(environ)
    if env.get(PURE_PYTHON_ENV, "").strip() not in ("", "0"):
        return Accelerations(httptools=False, aiohttp=False, orjson=False, proxy=proxy)
    return Accelerations(
        httptools=_installed("httptools"),
        aiohttp=not proxy and _installed("aiohttp"),
        orjson=_installed("orjson"),
        proxy=proxy,
    )


def _orjson() -> ModuleType | None:
    if not accelerations().orjson:
        return None
    try:
        import orjson as module
    except ImportError:
        return None
    return module


# A JSON parser in Rust, two to three times as fast as ``json`` on request bodies
# (``read_json_body``); None on the pure stack or without the [fast] extra.
orjson = _orjson()
