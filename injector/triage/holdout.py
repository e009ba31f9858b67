"""Dev and test parts of the source problems, so the offline engine is not tuned to what it is measured on.

One rule, `source_part`: a problem belongs to the test part or the dev part by a salted hash of its problem key
(`injector.model.problem.problem_key`, the normalised question text), about half each. Every solution of one
problem is on the same side. Look at and tune on the dev part only; quote figures from the test part only
(`bench/offline_quality.py` prints both).
"""
from __future__ import annotations

import hashlib
from typing import Iterable, Literal, TypeVar

from injector.model.problem import problem_key
from injector.model.trajectory import Trajectory

Part = Literal["dev", "test"]
SALT = "prm-injector holdout v1"
T = TypeVar("T", bound=Trajectory)


def source_part(question: str) -> Part:
    """"dev" or "test" for the problem this question states: stable across runs, machines and copies."""
    digest = hashlib.sha256(f"{SALT}\x00{problem_key(question)}".encode("utf-8")).digest()
    return "test" if digest[0] % 2 else "dev"


def in_part(trajectories: Iterable[T], part: Part) -> list[T]:
    """The trajectories whose problem is in `part`."""
    return [trajectory for trajectory in trajectories if source_part(trajectory.question) == part]
