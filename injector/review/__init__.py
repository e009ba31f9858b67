"""Human review of candidates: a local web app (`inject review`) and the decision store `inject build` reads."""
from __future__ import annotations

from .store import Decision, ReviewStore, apply_decision

__all__ = ["Decision", "ReviewStore", "apply_decision"]
