"""The bundled input record formats, one module per format, each declaring `FORMAT = RecordFormat(...)`.

The registry (`injector/sources/registry.py`) finds them by file name without importing them: a module added here
is a format called by its file name (modules whose names start with `_` are not formats). Keep this file empty of
imports, so that listing the names stays cheap.
"""
