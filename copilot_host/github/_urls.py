"""GitHub.com's fixed addresses. There is no override: not from the environment, not from
configuration. Tests reach these URLs through an httpx2 transport, never a changed URL."""

from __future__ import annotations

__all__ = [
    "ACCESS_TOKEN_URL",
    "COPILOT_TOKEN_URL",
    "DEVICE_CODE_URL",
    "MODELS_PATH",
    "USAGE_URL",
    "USER_URL",
    "VERIFICATION_URI",
]

DEVICE_CODE_URL = "https://github.com/login/device/code"
ACCESS_TOKEN_URL = "https://github.com/login/oauth/access_token"  # noqa: S105 - a URL
# The only page a person is ever sent to; a device-code answer naming another is refused.
VERIFICATION_URI = "https://github.com/login/device"
COPILOT_TOKEN_URL = "https://api.github.com/copilot_internal/v2/token"  # noqa: S105 - a URL
USER_URL = "https://api.github.com/user"
# The account's plan and quotas (what VS Code's quota display reads).
USAGE_URL = "https://api.github.com/copilot_internal/user"
# Discovery lives on the vetted inference origin the exchange names.
MODELS_PATH = "/models"
