"""Models and routes: the credential-free model values, which inventory entries may become
routes, the catalog, and registration.

Private: the public names are re-exported from :mod:`copilot_host`.
"""
