"""The callgrind recipe ``instructions.py`` and ``against_instructions.py`` share: the
command that counts a child's instructions, and the count it wrote. It imports nothing of
copilot_host, so a release's interpreter can use it beside that release's own bench."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path


def valgrind_or_exit(script: str) -> str:
    """valgrind's path, or the script ends saying it needs it."""
    found = shutil.which("valgrind")
    if found is None:
        sys.exit(f"{script} needs valgrind (apt install valgrind)")
    return found


def counted(out: Path | str) -> list[str]:
    """The argv prefix that runs a child under callgrind, every thread counted, into ``out``."""
    valgrind = shutil.which("valgrind") or "valgrind"
    return [valgrind, "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-instr=no"]


def instructions(out: Path | str) -> int:
    """The instructions callgrind counted into ``out``."""
    text = Path(out).read_text()
    found = re.search(r"^summary: (\d+)", text, re.MULTILINE)
    assert found, f"no summary in {out}"
    return int(found.group(1))
