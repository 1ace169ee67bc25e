"""Data shipped with copilot_host: the fixed inference-origin allowlist."""
