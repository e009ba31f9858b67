"""What `inject eval --compare` reads of a report's metrics.json, declared: a metrics.json is a file someone may have
edited, cut or written by hand, and a missing or mistyped figure must be a one-line error naming the file and the
field, never a KeyError in the table."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class _Figures(BaseModel):
    """PRMBench's figures of all steps, or of one category's."""

    model_config = ConfigDict(extra="allow")
    prmscore: float | None
    f1: float | None
    f1_neg: float | None


class _PRMBench(BaseModel):
    model_config = ConfigDict(extra="allow")
    overall: _Figures
    per_category: dict[str, _Figures]
    correct: dict[str, Any] | None = None


class _ProcessBench(BaseModel):
    model_config = ConfigDict(extra="allow")
    f1: float | None
    acc_error: float | None
    acc_correct: float | None


class _HeldOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    n_items: int


class _Sweep(BaseModel):
    model_config = ConfigDict(extra="allow")
    held_out: _HeldOut


class ReportFile(BaseModel):
    """The parts of a metrics.json that `compare` and its paired difference read; the rest is kept as it is."""

    model_config = ConfigDict(extra="allow")
    split: str
    scorer: dict[str, Any]
    threshold: float | None
    validity: float | None
    prmbench: _PRMBench | None
    processbench: _ProcessBench
    n_items: int | None = None
    sweep: _Sweep | None = None
    protocol: str | None = None
