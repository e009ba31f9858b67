"""The offline engine: rule-based perturbations of correct solutions, with no model, no key and no network.

Each operator is correct by construction for its category: it changes only the steps it declares, and the step it
marks is an error of that category (for redundancy, a step that can be removed). Its answer goes out as the same
JSON an LLM would write, through the same parser, validator and writer. It is for cheap negatives at scale and
offline smoke runs; subtle, deceptive or novel errors need an LLM (`deception` and `multi_solution` are not offered).
"""
from __future__ import annotations

from injector.engines.offline.engine import (NEEDS_A_MODEL, OPERATORS, OPERATORS_VERSION, WITHDRAWN_OPERATORS,
                                             OfflineEngine)
from injector.engines.offline.text import (NUMBER, RESULT, Option, Perturbation, flag, insert, lower_first,
                   replace, replace_span, split_answer)

__all__ = ["NEEDS_A_MODEL", "NUMBER", "OPERATORS", "OPERATORS_VERSION", "RESULT", "OfflineEngine",
           "Option", "Perturbation", "flag", "insert", "lower_first", "replace", "replace_span",
           "split_answer", "WITHDRAWN_OPERATORS"]
