# A constant, so `--version` and `__version__` cost no importlib.metadata lookup.
__version__ = "0.4.0"
