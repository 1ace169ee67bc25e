"""The CLI's redaction reaches every root handler while a command runs, and is gone after:
an application that runs the CLI in-process gets its logging back as it was."""

from __future__ import annotations

import logging
from pathlib import Path

from click.testing import CliRunner
from copilot_host_cli import main

from copilot_host import RedactingFilter


def test_the_cli_leaves_the_root_logger_as_it_found_it(copilot_home: Path) -> None:
    root = logging.getLogger()
    mine = logging.Handler()
    seen: list[list[logging.Filter | object]] = []
    mine.emit = lambda record: seen.append(list(mine.filters))  # type: ignore[method-assign]
    root.addHandler(mine)
    root_filters, level = list(root.filters), root.level
    try:
        result = CliRunner().invoke(main, ["--debug", "status"], catch_exceptions=False)
        assert result.exit_code == 1  # not logged in
        logging.getLogger("copilot_host.test").warning("while no command runs")
    finally:
        root.removeHandler(mine)
    assert mine.filters == []
    assert root.filters == root_filters and root.level == level
    assert seen and seen[-1] == []


def test_during_a_command_foreign_handlers_are_redacted(copilot_home: Path) -> None:
    from copilot_host_cli._logging import configure_logging

    root = logging.getLogger()
    mine = logging.Handler()
    root.addHandler(mine)
    try:
        undo = configure_logging(debug=True)
        assert any(isinstance(f, RedactingFilter) for f in mine.filters)
        undo()
        assert mine.filters == []
    finally:
        root.removeHandler(mine)
