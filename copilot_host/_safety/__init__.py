"""Text safety: the ``Secret`` value, redaction of known secret values, and text made safe
for a terminal.

Private: the public names are re-exported from :mod:`copilot_host`.
"""
