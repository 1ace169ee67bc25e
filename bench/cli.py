"""Start-up cost of the CLI, as ratios to ``python -c "import click"`` in the same run.

    python bench/cli.py [--runs N]

Each command runs N times as a fresh process (the installed ``copilot-host`` console
script), interleaved with ``python -c "import click"`` so machine load affects both
alike. The ratio uses the best of N runs (as timeit advises: the minimum is what the
code costs, the rest is other processes); medians are printed beside it. Targets:
``import copilot_host``, --version and --help at most 1.3x, status at most 1.6x.
status is timed logged out and logged in (a key-file record in a throwaway
COPILOT_HOST_HOME).

pip compiles an installed wheel's bytecode at install time, and click's is compiled in
site-packages: so the children run with bytecode caching on (PYTHONDONTWRITEBYTECODE is
dropped; the warm-up run writes the __pycache__ folders), or the comparison would charge
copilot-host, and only copilot-host, for compiling its sources on every start.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGETS = {
    "import copilot_host": 1.3,
    "--version": 1.3,
    "--help": 1.3,
    "status": 1.6,
    "status (logged in)": 1.6,
}


def _time(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def _logged_in_home(root: Path) -> Path:
    home = root / "logged-in"
    code = (
        "import secrets\nfrom copilot_host import Secret\nfrom copilot_host.store import "
        "CredentialStore\nCredentialStore().save('octocat', "
        "Secret('gho_' + secrets.token_hex(18)), key_file=True)\n"
    )
    subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, "COPILOT_HOST_HOME": str(home)}, check=True
    )
    return home


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    runs = parser.parse_args().runs

    script = Path(sys.executable).parent / "copilot-host"
    if not script.exists():
        sys.exit(f"no console script at {script}: pip install -e . first")
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        base_env = {**environ, "COPILOT_HOST_HOME": str(root / "empty")}
        logged_in_env = {**environ, "COPILOT_HOST_HOME": str(_logged_in_home(root))}
        cases = {
            "import copilot_host": ([sys.executable, "-c", "import copilot_host"], base_env),
            "--version": ([str(script), "--version"], base_env),
            "--help": ([str(script), "--help"], base_env),
            "status": ([str(script), "status"], base_env),
            "status (logged in)": ([str(script), "status"], logged_in_env),
        }
        baseline_argv = [sys.executable, "-c", "import click"]
        # Warm the page cache and .pyc files before measuring anything.
        for argv, env in [*cases.values(), (baseline_argv, base_env)]:
            _time(argv, env)

        samples: dict[str, list[float]] = {name: [] for name in cases}
        baseline: list[float] = []
        for _ in range(runs):
            baseline.append(_time(baseline_argv, base_env))
            for name, (argv, env) in cases.items():
                samples[name].append(_time(argv, env))

    base, base_median = min(baseline), statistics.median(baseline)
    print(f"{'':<32}  best of {runs}   median")
    label = "python -c 'import click'"
    print(f"{label:<31} {base * 1000:7.1f} ms {base_median * 1000:7.1f} ms")
    for name, values in samples.items():
        best, median = min(values), statistics.median(values)
        ratio = best / base
        verdict = "ok" if ratio <= TARGETS[name] else "OVER TARGET"
        print(
            f"copilot-host {name:<19} {best * 1000:7.1f} ms {median * 1000:7.1f} ms  "
            f"{ratio:4.2f}x (median {median / base_median:4.2f}x; "
            f"target {TARGETS[name]}x) {verdict}"
        )


if __name__ == "__main__":
    main()
