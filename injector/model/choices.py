"""The values of the CLI's choice options, in a module that imports nothing: `inject --help` lists them without
loading the library (pydantic models, templates, clients). The modules that own each choice import it from here."""
from __future__ import annotations

from typing import Literal

OutputMode = Literal["edits", "full"]
OUTPUT_MODES: tuple[str, ...] = ("edits", "full")
"""How the model answers (`--output-mode`): edits (the default) lists only its edits, applied by the toolkit; full
writes back the whole modified solution."""
DEFAULT_OUTPUT_MODE: OutputMode = "edits"

OFFLINE_MODEL = "offline"
"""The model name of the rule-based engine (`--model offline`, the default)."""

DUPLICATE_ID_POLICIES = ("error", "first")
"""What two different records with the same trajectory id do: stop with `FILE:LINE` (default), or keep the first
and skip the rest as `duplicate_id`. Identical (question, steps) records are always dropped as `duplicate`."""

CLIENTS = ("auto", "litellm", "openai")
"""`--client`: auto picks the openai SDK where it sends what litellm would (`engines/openai_client.py`), else
litellm."""
