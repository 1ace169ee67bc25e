"""The service's two refusals by policy as exact answers, for the tests of every surface
that meets them (docs/WIRE.md, "Refusals by policy", has the reports they are copied from)."""

from __future__ import annotations

import json

from copilot_host.testing import RawAnswer

__all__ = ["INTEGRATOR", "POLICY"]

_PLAIN = (("Content-Type", "text/plain; charset=utf-8"),)

# An organisation's policy refusing the client (github/copilot-cli #18, #539, reported).
POLICY = RawAnswer(403, b"unauthorized: not authorized to use this Copilot feature\n", _PLAIN)

# A model not served to the login's OAuth app (1jehuang/jcode's test, reported), naming the
# integrator as VS Code's app's is named (gethouston/houston #1153, reported).
INTEGRATOR = RawAnswer(
    400,
    json.dumps(
        {
            "error": {
                "message": 'The requested model is not available for integrator "vscode-chat". '
                "Available models: [gpt-4.1 claude-opus-4.7 gpt-5.5]. Verify the correct "
                "Copilot-Integration-Id header is being sent.",
                "code": "model_not_available_for_integrator",
                "param": "model",
                "type": "invalid_request_error",
            }
        }
    ).encode(),
    _PLAIN,
)
