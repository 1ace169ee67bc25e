"""``copilot-host run`` on a plan that can use only Copilot Auto: the agent's profile keeps
the model names it knows, sized by the smallest limits of Auto's pool, and the gateway
serves every name it is sent with Auto (its default model becomes ``auto``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from copilot_host.testing import Scenario, Usage
from tests.cli.conftest import Cli
from tests.cli.test_run_inprocess import _echo_argv, _logged_in

CHILD = Path(__file__).resolve().parent / "run_child.py"
FREE = Scenario(usage=Usage(usage_plan="free"))


def test_codex_keeps_a_name_it_knows_sized_by_autos_pool(
    cli: Cli, emulate: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    env = emulate(FREE)
    seam = _logged_in(cli, env, capfd)
    codex = tmp_path / "codex"
    _echo_argv(codex)
    result = cli("run", "--", str(codex), "exec", "hi", seam=seam, env={"HOME": str(tmp_path)})
    assert result.exit_code == 0, result.stderr
    argv: list[str] = json.loads(capfd.readouterr()[0])
    settings = [argv[i + 1] for i, arg in enumerate(argv) if arg == "-c"]
    # The newest model Codex ships metadata for; the window and compaction point of Auto's
    # pool (gpt-5-mini, claude-opus-4.6, gpt-5.3-codex): its smallest window and prompt.
    assert 'model="gpt-5.6-luna"' in settings
    assert "model_context_window=264000" in settings
    assert "model_auto_compact_token_limit=115200" in settings  # 90% of 128000


def test_the_agents_names_are_served_by_auto(
    cli: Cli, emulate: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    env = emulate(FREE)
    seam = _logged_in(cli, env, capfd)
    log = tmp_path / "run.log"
    script = (
        "import json, os, urllib.request\n"
        "def ask(model):\n"
        "    body = json.dumps({'model': model, 'messages': [{'role': 'user', 'content': 'hi'}]})\n"
        "    request = urllib.request.Request(os.environ['OPENAI_BASE_URL'] + '/chat/completions',\n"
        "        body.encode(), {'Authorization': 'Bearer ' + os.environ['OPENAI_API_KEY'],\n"
        "        'Content-Type': 'application/json'})\n"
        "    return json.load(urllib.request.urlopen(request))['model']\n"
        "print(json.dumps([ask('gpt-4.1'), ask('anything'), ask('auto')]))\n"
    )
    result = cli("run", "--log", str(log), "--", sys.executable, "-c", script, seam=seam)
    assert result.exit_code == 0, result.stderr
    assert json.loads(capfd.readouterr()[0]) == ["gpt-5-mini"] * 3
    logged = [line.split()[3] for line in log.read_text().splitlines() if " POST " in line]
    assert logged == [
        "model=gpt-4.1->auto->gpt-5-mini",
        "model=anything->auto->gpt-5-mini",
        "model=auto->gpt-5-mini",
    ]
