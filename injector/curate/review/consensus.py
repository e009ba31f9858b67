"""When reviewers agree, and what stands when they do not: the adjudicator's queue and `inject build --consensus`.

Two decisions agree when both reject, or both accept with the same error steps (as corrected, else the
candidate's own). A candidate is disputed when its reviewers' latest decisions do not all agree; an adjudicator's
decision on it (`role` adjudication) is final.

`--consensus K-of-N` keeps a candidate when at least K of its reviewers agree (K must be a majority of N, so two
different decisions cannot both reach it); `--consensus adjudicated` keeps the adjudicated decision, else a
decision at least two reviewers made unanimously. Either way an adjudication, when there is one, stands.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from typing import Iterable

from injector.records.models import Candidate
from injector.util.errors import UserError
from injector.curate.review.store import Decision, latest_per_reviewer

ADJUDICATED = "adjudicated"


def label(decision: Decision, candidate: Candidate) -> tuple:
    """What two decisions must share to agree: reject, or accept with its error steps."""
    if decision.decision == "reject":
        return ("reject",)
    steps = decision.corrected_error_steps if decision.corrected_error_steps is not None else candidate.error_steps
    return ("accept", tuple(sorted(steps)))


def disputed(decisions: dict[str, Decision], candidate: Candidate) -> bool:
    """Whether two or more reviewers decided the candidate and not all alike."""
    return len({label(d, candidate) for d in decisions.values()}) > 1


def parse_rule(rule: str) -> tuple[int, int] | None:
    """`K-of-N` -> (K, N), `adjudicated` -> None; anything else is a UserError saying what is accepted."""
    if rule == ADJUDICATED:
        return None
    match = re.fullmatch(r"(\d+)-of-(\d+)", rule)
    if not match or not 1 <= int(match[1]) <= int(match[2]) or int(match[1]) * 2 <= int(match[2]):
        raise UserError(f"--consensus {rule!r}: give K-of-N with K a majority of N (e.g. 2-of-3, 3-of-3), or "
                        "adjudicated")
    return int(match[1]), int(match[2])


def consensus_decisions(rows: list[Decision], rule: str, candidates: Iterable[Candidate]) -> dict[str, Decision]:
    """Candidate id -> the decision that stands under `rule`, for the candidates that meet it (the others are
    left out); `rows` is a store's rows, oldest first."""
    needed = parse_rule(rule)
    per = latest_per_reviewer(rows)
    adjudicated = {d.id: d for d in rows if d.role == "adjudication"}
    standing: dict[str, Decision] = {}
    for candidate in candidates:
        if candidate.id in adjudicated:
            standing[candidate.id] = adjudicated[candidate.id]
            continue
        decisions = per.get(candidate.id, {})
        counts = Counter(label(d, candidate) for d in decisions.values())
        if not counts:
            continue
        (top, agreeing), *_ = counts.most_common()
        enough = (len(counts) == 1 and agreeing >= 2) if needed is None else agreeing >= needed[0]
        if enough:
            names = sorted(name for name, d in decisions.items() if label(d, candidate) == top)
            latest = max((decisions[name] for name in names), key=lambda d: d.time)
            standing[candidate.id] = replace(latest, reviewer="+".join(names))
    return standing
