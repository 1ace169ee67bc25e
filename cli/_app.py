from __future__ import annotations

import click

from copilot_host._version import __version__


@click.group()
@click.version_option(__version__, prog_name="copilot-host")
def main() -> None:
    """copilot-host: GitHub Copilot credentials for your applications."""
