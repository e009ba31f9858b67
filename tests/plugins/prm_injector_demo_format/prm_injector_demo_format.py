"""The `demo` record format: `{"demo_problem": str, "demo_solution": str}`, one step per non-blank line."""
from __future__ import annotations

from injector.model.trajectory import Trajectory
from injector.sources.reading import BadRecord, required
from injector.sources.registry import ReadOptions, RecordFormat

_NEEDS = "demo records need demo_problem and demo_solution"


def detect(record: dict) -> bool:
    return "demo_problem" in record and "demo_solution" in record


def read(record: dict, origin: str, where: str, options: ReadOptions) -> Trajectory:
    problem = required(record, "demo_problem", (str,), _NEEDS)
    steps = [line.strip() for line in required(record, "demo_solution", (str,), _NEEDS).splitlines() if line.strip()]
    if not steps:
        raise BadRecord("demo_solution has no steps")
    return Trajectory(id=f"demo:{origin}", question=problem, steps=steps,
                      meta={"idx": f"demo:{origin}", "source_format": "demo"})


FORMAT = RecordFormat(name="demo", description="A problem and its solution text, one step per line.",
                      detect=detect, read=read)
