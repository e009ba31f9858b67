"""The step audit: every closed relation of every step evaluated exactly, and flags where the labels disagree."""
from injector.triage.step_audit.audit import (COMPUTATION_CATEGORIES, Finding, RecordAudit, SolutionAudit, StepAudit,
                                              audit_candidate, audit_steps, default_worker)
from injector.triage.step_audit.check import LinkCheck

__all__ = ["COMPUTATION_CATEGORIES", "Finding", "LinkCheck", "RecordAudit", "SolutionAudit", "StepAudit",
           "audit_candidate", "audit_steps", "default_worker"]
