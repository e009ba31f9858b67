"""Human review of candidates: a local web app (`inject review`) and the decision store `inject build` reads."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from injector.curate.review.store import Decision, ReviewStore, apply_decision

__all__ = ["Decision", "ReviewStore", "apply_decision"]


def __getattr__(name: str) -> Any:
    """The store's names, imported on first use: `inject --help` registers the review command without them."""
    if name not in __all__:
        raise AttributeError(f"module 'injector.curate.review' has no attribute {name!r}")
    return getattr(importlib.import_module("injector.curate.review.store"), name)
