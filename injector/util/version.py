"""The toolkit's version, in a module of its own so every module can record it without importing the package."""
__version__ = "0.1.0"
