"""`ReviewOptions`: what `inject review` was asked to do, as one typed value (its own module, so that `inject
--help` loads no pydantic)."""
from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel


class ReviewOptions(BaseModel):
    """What `inject review` was asked to do."""

    run_dirs: list[Path]
    port: int = 0
    no_browser: bool = False
    reviewer: str | None = None
    export_path: Path | None = None
    import_path: Path | None = None
    taxonomy_path: str | None = None
    reviewers: str | None = None
    overlap: int = 1
    seed: int = 0
    gold_path: Path | None = None
    gold_rate: float = 0.05
    agreement: bool = False
    bootstrap: int = 1000
    adjudicate: bool = False
