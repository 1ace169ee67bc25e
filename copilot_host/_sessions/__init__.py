"""Sessions and the request path: the refresh policy, the one-exchange-for-everyone state
machine and its thread and asyncio shells, what a request body says, and ``route.auth``.

Private: the public names are re-exported from :mod:`copilot_host`.
"""
