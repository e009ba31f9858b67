"""The two ways `inject eval` reads a split and turns scores into step labels (docs/evaluation-protocols.md).

- `strict` (our own splits): one score per step, error steps past the last step refused, ids unique, F1 of a class
  with no true hit 0.
- `prmbench` (PRMBench's files): as PRMBench's own code does it: the first record of a repeated
  `(classification, idx)` kept, error steps past the last step never match (such an item is scored as a solution
  without error), `correct` controls built from the redundancy items' originals, label lists one longer than the
  steps consumed, F1 of a class with no true hit -1.

Label rules (how a score list becomes per-step "correct" predictions), as PRMBench's model wrappers do:
`threshold:T` (correct when score > T; 0.5 for Qwen-PRM, Llemma, MathShepherd, RLHFlow; 0 for LLM judges) and
`step-difference:D` (Skywork-PRM: step k>1 correct when s_k - s_{k-1} > D; step 1 by its own score > 0.5).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from injector.util.errors import UserError

STRICT, PRMBENCH = "strict", "prmbench"
PROTOCOLS = (STRICT, PRMBENCH)
NO_HIT_F1 = -1.0
"""PRMBench's F1 of a class with no true hit (precision + recall = 0)."""
REDUNDANCY_CLASSIFICATIONS = ("redundency", "circular")
"""PRMBench's classifications whose labels come from a model's redundancy scores when it gives them."""
FIRST_STEP_THRESHOLD = 0.5
"""step-difference: the first step has no predecessor and is judged by its own score against this."""

# The rule PRMBench's wrapper of each model uses (matched on the lower-cased model name).
KNOWN_MODEL_RULES = (("skywork", "step-difference:-0.05"), ("qwen", "threshold:0.5"), ("llemma", "threshold:0.5"),
                     ("math-shepherd", "threshold:0.5"), ("mathshepherd", "threshold:0.5"),
                     ("rlhflow", "threshold:0.5"))


@dataclass(frozen=True)
class LabelRule:
    """How scores become per-step predictions (True: the step is predicted correct)."""

    kind: str
    """"threshold" or "step-difference"."""
    value: float

    @property
    def text(self) -> str:
        return f"{self.kind}:{self.value:g}"

    def labels(self, scores: Sequence[float]) -> list[bool]:
        if self.kind == "threshold":
            return [score > self.value for score in scores]
        return [score > FIRST_STEP_THRESHOLD if k == 0 else score - scores[k - 1] > self.value
                for k, score in enumerate(scores)]

    def error_scores(self, scores: Sequence[float]) -> list[float]:
        """Per step, a number that is at or below 0 exactly when the rule predicts an error (for first-error
        predictions and the threshold sweep)."""
        if self.kind == "threshold":
            return [score - self.value for score in scores]
        return [score - FIRST_STEP_THRESHOLD if k == 0 else score - scores[k - 1] - self.value
                for k, score in enumerate(scores)]


def parse_label_rule(text: str) -> LabelRule:
    """`threshold:T` or `step-difference:D`; a UserError saying the accepted forms otherwise."""
    kind, _, number = text.partition(":")
    try:
        value = float(number)
    except ValueError:
        value = float("nan")
    if kind not in ("threshold", "step-difference") or value != value:
        raise UserError(f"`label_rule` {text!r}: give threshold:T (e.g. threshold:0.5, threshold:0 for judges) or "
                        "step-difference:D (e.g. step-difference:-0.05 for Skywork-PRM)")
    return LabelRule(kind, value)


def rule_for_model(model: str) -> str | None:
    """The label rule PRMBench's wrapper of `model` uses, or None when PRMBench did not evaluate it."""
    name = model.lower()
    return next((rule for key, rule in KNOWN_MODEL_RULES if key in name), None)


def check_protocol(protocol: str) -> str:
    if protocol not in PROTOCOLS:
        raise UserError(f"`protocol` {protocol!r}: give one of {', '.join(PROTOCOLS)}")
    return protocol


def class_f1(hits: int, false_alarms: int, misses: int, protocol: str) -> float | None:
    """F1 of one class from its counts. strict: 2·hits/(2·hits+false alarms+misses), 0 without a hit, None when
    the class is neither labelled nor predicted. prmbench: precision and recall as PRMBench computes them (0 when
    their denominator is 0), their harmonic mean, -1 when precision + recall is 0."""
    if protocol == PRMBENCH:
        precision = hits / (hits + false_alarms) if hits + false_alarms else 0.0
        recall = hits / (hits + misses) if hits + misses else 0.0
        return 2 * precision * recall / (precision + recall) if precision + recall > 0 else NO_HIT_F1
    denominator = 2 * hits + false_alarms + misses
    return None if denominator == 0 else 2 * hits / denominator
