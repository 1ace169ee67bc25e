# A constant, so `--version` and `__version__` cost no importlib.metadata lookup.
__version__ = "0.5.0"
