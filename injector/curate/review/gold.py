"""Gold items: candidates with known labels mixed into every reviewer's queue (`inject review --gold FILE`).

A gold file is a PRMBench-format .jsonl (every item an accepted error with its `error_steps`), or the
`candidates.jsonl` of an earlier round reviewed with this app (its final decisions are the labels: accepted with
their error steps, or rejected). Only items of categories the run has are used (an unseen category would give them
away); they are written to `RUN/review-gold.jsonl` as candidate records and placed at seeded positions in every
queue, where nothing on the page tells them apart (blind queues show no judge verdicts and no provenance). Each
reviewer's answers on them are scored (`gold_scores`) as PRM800K screened its labellers.
"""
from __future__ import annotations

import json
import logging
import random
from pathlib import Path

from pydantic import BaseModel, ValidationError

from injector.records.directory import RunDirectory
from injector.records.jsonl import scan_records
from injector.records.models import Candidate
from injector.util.errors import InputError, UserError
from injector.util.json_bounds import jsonl_lines
from injector.util.safe_files import write_replacing
from injector.curate.review.assign import GoldLabel, ReviewPlan

log = logging.getLogger("injector")

GOLD_FILE = "review-gold.jsonl"
GOLD_THRESHOLD = 0.8
"""A reviewer whose accept/reject accuracy on gold items is below this is flagged."""


def gold_records(run_path: Path, plan: ReviewPlan | None) -> list[tuple[int, Candidate]]:
    """(byte offset in `GOLD_FILE`, record) of the run's gold items (none without `--gold`)."""
    if plan is None or not plan.gold or not (run_path / GOLD_FILE).is_file():
        return []
    return [(offset, candidate) for _, offset, candidate in scan_records(run_path / GOLD_FILE, Candidate, strict=True)
            if candidate.id in plan.gold]


def read_gold(path: Path) -> list[tuple[Candidate, GoldLabel]]:
    """The labelled items of a gold file; a line that is no such item is an InputError naming FILE:LINE."""
    decisions = _earlier_round(path)
    items = []
    for number, value in jsonl_lines(path, "a PRMBench record or a candidate record per line"):
        if not isinstance(value, dict):
            raise InputError(path, number, "expected a JSON object (a PRMBench record or a candidate record)")
        # PRMBench's own fields and ours; anything else a file carries (a note, a score) is not part of the item
        record = {"idx": "", "question": value.get("original_question", ""),
                  **{k: v for k, v in value.items() if k in Candidate.model_fields}}
        record.setdefault("category", record.get("classification", ""))
        record.setdefault("trajectory_id", record["idx"])
        record.setdefault("sample", 0)
        record.setdefault("id", f"{record['idx']}::{record['category']}::0")
        try:
            candidate = Candidate.model_validate(record)
        except ValidationError as exc:  # a published benchmark has such lines: left out, and said
            log.warning("%s:%d: not used as a gold item, not a consistent PRMBench record (%s)", path, number,
                        exc.errors()[0]["msg"])
            continue
        label = GoldLabel(decision="accept", error_steps=sorted(candidate.error_steps))
        if decisions is not None:
            decision = decisions.get(candidate.id)
            if decision is None:
                continue  # not reviewed in that round: no known label
            from injector.curate.review.store import apply_decision

            candidate = apply_decision(candidate, decision) if decision.decision == "accept" else candidate
            label = GoldLabel(decision=decision.decision, error_steps=sorted(candidate.error_steps)
                              if decision.decision == "accept" else [])
        items.append((candidate, label))
    return items


def _earlier_round(path: Path) -> dict | None:
    """The final decisions of the round `path` is the candidates file of, None when it is not one."""
    if path.name != "candidates.jsonl" or not (path.parent / "review.sqlite").is_file():
        return None
    from injector.curate.review.store import ReviewStore

    return ReviewStore(path.parent).latest()


def add_gold(run_dir: Path, plan: ReviewPlan, gold_path: Path, rate: float) -> ReviewPlan:
    """The plan with gold items mixed into every queue at `rate` (their share of each queue), at seeded places;
    the items are written to `RUN/review-gold.jsonl`."""
    run_ids = {c.id: c.category for _, _, c in RunDirectory(run_dir).indexed_candidates()}
    categories = set(run_ids.values())
    usable = [(c, label) for c, label in read_gold(gold_path) if c.category in categories and c.id not in run_ids]
    if not usable:
        raise UserError(f"{gold_path}: no labelled item of the run's categories ({', '.join(sorted(categories))}); "
                        "give a gold file with items of those categories")
    generator = random.Random(f"gold:{plan.seed}")
    usable = list({c.id: (c, label) for c, label in usable}.values())  # an id given twice: its first item
    generator.shuffle(usable)
    longest = max(map(len, plan.queues.values()), default=0)
    needed = min(len(usable), max(1, round(longest * rate / (1 - rate))))
    chosen = usable[:needed]
    queues = {}
    for name, queue in plan.queues.items():
        count = min(needed, max(1, round(len(queue) * rate / (1 - rate))))
        mixed = list(queue)
        for candidate, _ in chosen[:count]:
            mixed.insert(generator.randint(0, len(mixed)), candidate.id)
        queues[name] = mixed
    data = "".join(json.dumps(c.model_dump(exclude_none=True), ensure_ascii=False) + "\n" for c, _ in chosen)
    write_replacing(Path(run_dir) / GOLD_FILE, data.encode())
    return plan.model_copy(update={"queues": queues, "gold_rate": rate,
                                   "gold": {c.id: label for c, label in chosen}})


class GoldScore(BaseModel):
    """One reviewer's answers on gold items: how many, and how many right on each measure."""

    reviewer: str
    answered: int = 0
    decision_right: int = 0
    first_step_right: int = 0
    steps_right: int = 0
    accepted_gold: int = 0
    """Gold errors the reviewer accepted (the base of the two step measures)."""

    @property
    def accuracy(self) -> float:
        return self.decision_right / self.answered if self.answered else float("nan")

    @property
    def flagged(self) -> bool:
        return self.answered > 0 and self.accuracy < GOLD_THRESHOLD


def gold_scores(run_dir: Path) -> list[GoldScore]:
    """Each planned reviewer's accuracy on the run's gold items (empty without `--gold`)."""
    from injector.curate.review.assign import read_plan
    from injector.curate.review.store import ReviewStore, latest_per_reviewer

    plan = read_plan(run_dir)
    if plan is None or not plan.gold:
        return []
    shown = {c.id: c for _, _, c in scan_records(Path(run_dir) / GOLD_FILE, Candidate, strict=True)}
    per = latest_per_reviewer(ReviewStore(run_dir).rows()) if (Path(run_dir) / "review.sqlite").exists() else {}
    scores = {name: GoldScore(reviewer=name) for name in plan.reviewers}
    for gold_id, label in plan.gold.items():
        for name, decision in per.get(gold_id, {}).items():
            if name not in scores or gold_id not in shown:
                continue
            score = scores[name]
            score.answered += 1
            score.decision_right += decision.decision == label.decision
            if label.decision == "accept" and decision.decision == "accept":
                marked = sorted(decision.corrected_error_steps if decision.corrected_error_steps is not None
                                else shown[gold_id].error_steps)
                score.accepted_gold += 1
                score.first_step_right += bool(marked and label.error_steps and marked[0] == label.error_steps[0])
                score.steps_right += marked == label.error_steps
    return list(scores.values())
