"""The wheel is what users install: build it, install it into a fresh venv, look inside."""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("httpx2", "cryptography", "keyring", "aiohttp")


def _run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=300, check=False, **kwargs)  # type: ignore[call-overload, no-any-return]


def test_import_is_lazy_and_version_is_a_constant() -> None:
    code = (
        "import sys, json, copilot_host as ch; "
        "v = ch.__version__; "
        f"print(json.dumps([v, [m for m in {HEAVY!r} if m in sys.modules], "
        "'importlib.metadata' in sys.modules]))"
    )
    out = _run([sys.executable, "-c", code])
    assert out.returncode == 0, out.stderr
    version, heavy, metadata = json.loads(out.stdout)
    assert version
    assert heavy == []
    assert metadata is False


def test_public_names_resolve() -> None:
    import copilot_host

    for name in copilot_host.__all__:
        assert getattr(copilot_host, name) is not None, name
    with pytest.raises(AttributeError):
        copilot_host.no_such_name  # noqa: B018


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # No build isolation: the test extra brings setuptools, so this works offline too.
    result = _run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(out),
            str(ROOT),
        ]
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    (found,) = out.glob("copilot_host-*.whl")
    return found


@pytest.mark.slow
def test_wheel_installs_exactly_two_packages_with_data(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    bindir = env_dir / "bin"
    purelib = Path(
        sysconfig.get_path("purelib", vars={"base": str(env_dir), "platbase": str(env_dir)})
    )
    # Unpack the wheel into the fresh venv with this interpreter's pip (no network), and let
    # the venv see this environment's dependencies through a .pth appended after its own.
    result = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "--target",
            str(purelib),
            str(wheel),
        ]
    )
    assert result.returncode == 0, result.stderr
    deps = [p for p in site.getsitepackages() if "site-packages" in p]
    (purelib / "zz_outer_deps.pth").write_text("\n".join(deps) + "\n")

    top_level = sorted(
        p.name
        for p in purelib.iterdir()
        if not p.name.endswith((".dist-info", ".pth")) and p.name not in {"bin", "__pycache__"}
    )
    assert top_level == ["copilot_host", "copilot_host_cli"]
    assert (purelib / "copilot_host" / "py.typed").is_file()
    assert (purelib / "copilot_host_cli" / "py.typed").is_file()
    assert (purelib / "copilot_host" / "allowlists" / "inference-origins.txt").is_file()
    assert not (purelib / "cli").exists()
    assert not (purelib / "allowlists").exists()

    python = bindir / "python"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = (
        "import copilot_host, copilot_host_cli, json; "
        "from copilot_host import default_allowlist; "
        "print(json.dumps([copilot_host.__file__, copilot_host_cli.__file__, "
        "sorted(default_allowlist().origins)]))"
    )
    result = _run([str(python), "-c", code], env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lib_file, cli_file, origins = json.loads(result.stdout)
    assert lib_file.startswith(str(purelib))
    assert cli_file.startswith(str(purelib))
    assert "https://api.githubcopilot.com" in origins

    script = purelib / "bin" / "copilot-host"
    assert script.is_file(), "the console script is installed"
    result = _run([str(python), str(script), "--version"], env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "copilot-host" in result.stdout


def test_editable_install_reads_the_same_allowlist() -> None:
    from importlib import resources

    from copilot_host import default_allowlist

    text = resources.files("copilot_host.allowlists").joinpath("inference-origins.txt")
    assert text.read_text(encoding="utf-8") == (
        ROOT / "allowlists" / "inference-origins.txt"
    ).read_text(encoding="utf-8")
    assert len(default_allowlist().origins) == 4


def test_all_is_literal_and_matches_the_lazy_table() -> None:
    import copilot_host

    exports = copilot_host._EXPORTS
    assert copilot_host.__all__ == ["__version__", *sorted(exports)]


def test_an_embedding_app_type_checks_against_the_public_names(tmp_path: Path) -> None:
    """mypy --strict on a client of the public API, as an embedding application runs it."""
    client = tmp_path / "client.py"
    client.write_text(
        "import httpx2\n"
        "import copilot_host as ch\n"
        "from copilot_host.github import GitHubCopilotHost\n\n"
        "def run() -> list[str]:\n"
        "    catalog = ch.Catalog()\n"
        "    with GitHubCopilotHost() as host:\n"
        "        result: ch.RegistrationResult = ch.register_models(catalog, host)\n"
        "    route: ch.ModelRoute = result.routes[0]\n"
        "    client = httpx2.Client(auth=route.auth)\n"
        "    client.close()\n"
        "    secret: ch.Secret = ch.Secret('x')\n"
        "    assert isinstance(secret, ch.Secret)\n"
        "    try:\n"
        "        ch.CopilotEndpoint.parse(route.origin)\n"
        "    except ch.CopilotHostError as exc:\n"
        "        return [exc.code]\n"
        "    return [r.route_id for r in catalog.routes().values()]\n"
    )
    result = _run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(client)],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
