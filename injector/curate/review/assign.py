"""Who reviews what: `inject review RUN --reviewers ann,bo,cy --overlap 2` writes `RUN/review-plan.json`.

Each candidate goes to `overlap` reviewers; the candidates are dealt in an order fixed by the seed, each to the
reviewers with the fewest so far (ties broken by a seeded ranking of the reviewers), so the queues differ in length
by at most one and every pair of reviewers shares about as many candidates. The same candidates, reviewers, overlap
and seed give the same plan on every machine. Each reviewer then opens the app with `--reviewer NAME` and sees only
their queue, blind to everyone else's decisions.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from injector.util.errors import UserError
from injector.util.json_bounds import JsonRefused, loads_bounded
from injector.util.safe_files import read_text, write_replacing

PLAN_FILE = "review-plan.json"
MAX_REVIEWERS = 100


class ReviewPlan(BaseModel):
    """The queues of one run directory's reviewers (candidate ids, in the run's order)."""

    reviewers: list[str]
    overlap: int
    seed: int = 0
    queues: dict[str, list[str]]
    gold_rate: float = 0.0
    """The share of each queue that is gold items (`--gold`), 0 without."""
    gold: dict[str, "GoldLabel"] = Field(default_factory=dict)
    """Gold candidate id -> its known label; these ids are in `gold.jsonl`'s candidates, mixed into the queues."""


class GoldLabel(BaseModel):
    """A gold item's known answer: accept (with its error steps) or reject."""

    decision: str
    error_steps: list[int] = Field(default_factory=list)


ReviewPlan.model_rebuild()


def parse_reviewers(text: str) -> list[str]:
    """`ann,bo,cy` -> the names, checked: non-empty, distinct, at most MAX_REVIEWERS."""
    names = [name.strip() for name in text.split(",")]
    if not names or any(not name for name in names):
        raise UserError(f"--reviewers {text!r}: give names separated by commas, e.g. --reviewers ann,bo,cy")
    if len(set(names)) != len(names):
        raise UserError(f"--reviewers {text!r}: a name is given twice; each reviewer once")
    if len(names) > MAX_REVIEWERS:
        raise UserError(f"--reviewers: at most {MAX_REVIEWERS} reviewers, {len(names)} given")
    return names


def make_plan(candidate_ids: list[str], reviewers: list[str], overlap: int, seed: int = 0) -> ReviewPlan:
    """Deal each candidate to `overlap` reviewers, balanced and deterministic by `seed`; queues keep file order."""
    if not 1 <= overlap <= len(reviewers):
        raise UserError(f"--overlap {overlap}: each candidate goes to between 1 and {len(reviewers)} reviewers "
                        f"(the number named by --reviewers)")
    generator = random.Random(seed)
    rank = {name: n for n, name in enumerate(generator.sample(reviewers, len(reviewers)))}
    load = dict.fromkeys(reviewers, 0)
    chosen: dict[str, set[str]] = {}
    for candidate_id in generator.sample(candidate_ids, len(candidate_ids)):
        takers = sorted(reviewers, key=lambda name: (load[name], rank[name]))[:overlap]
        chosen[candidate_id] = set(takers)
        for name in takers:
            load[name] += 1
    queues = {name: [cid for cid in candidate_ids if name in chosen[cid]] for name in reviewers}
    return ReviewPlan(reviewers=reviewers, overlap=overlap, seed=seed, queues=queues)


def read_plan(run_dir: Path) -> ReviewPlan | None:
    """The run's plan, None when it has none; a plan that cannot be read is a UserError naming the file."""
    path = Path(run_dir) / PLAN_FILE
    if not path.exists() and not path.is_symlink():
        return None
    try:
        return ReviewPlan.model_validate(loads_bounded(read_text(path)))
    except (JsonRefused, ValueError, ValidationError, UnicodeDecodeError) as exc:
        reason = str(exc).splitlines()[0]
        raise UserError(f"{path}: not a review plan ({reason}); plan again with `inject review {run_dir} "
                        "--reviewers ...` after moving it aside") from None


def write_plan(run_dir: Path, plan: ReviewPlan) -> Path:
    """Write the plan (atomically); an existing different plan is refused, the same one is left as it is."""
    path = Path(run_dir) / PLAN_FILE
    existing = read_plan(run_dir)
    if existing is not None and existing != plan:
        raise UserError(f"{path}: a different review plan exists ({', '.join(existing.reviewers)}, overlap "
                        f"{existing.overlap}); remove it to plan again (decisions already made are kept)")
    if existing is None:
        write_replacing(path, (json.dumps(plan.model_dump(), indent=1, ensure_ascii=False) + "\n").encode())
    return path
