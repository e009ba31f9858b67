"""Write `demo_scores.jsonl`: step scores for the demo split of the bundled sample, from a simple heuristic, so that
`inject eval` has an example that runs on a fresh machine with no model (README, "Evaluate: `inject eval`").

    inject run --category all --out runs/demo
    inject build runs/demo --out splits/demo --include-unreviewed --include-sources
    python data/make_demo_scores.py splits/demo > data/demo_scores.jsonl

The heuristic reads only the text of each step (and the question), never its label: a surface-cue baseline, not a
PRM. A step starts at 0.9 and loses
  - 0.5 when it sounds certain ("certain", "clearly", "definitely", "obviously", "without a doubt", "of course") or
    takes something back ("on second thought", a step opening with "No,"),
  - 0.5 when it assumes ("assume", "suppose", "let us take"),
  - 0.3 when it re-checks ("again", "verify", "check", "confirm", "indeed"),
  - 0.45 when the number it ends on already appeared in the question or an earlier step (it may only restate
    what is known), unless it is the step that gives the final answer,
and is kept within 0.05..0.95, rounded to two decimals. Scores at or below 0.5 mark a step as an error at the
default threshold.
"""
from __future__ import annotations

import json
import re
import sys
from typing import Iterable

CERTAIN = re.compile(r"\b(certain\w*|clearly|definitely|obviously|undoubtedly|without a doubt|of course|on second "
                     r"thought)\b|^No,", re.IGNORECASE)
ASSUMES = re.compile(r"\b(assum\w*|suppos\w*|let us take)\b", re.IGNORECASE)
RECHECKS = re.compile(r"\b(again|verif\w*|check\w*|confirm\w*|indeed)\b", re.IGNORECASE)
NUMBER = re.compile(r"\d+(?:\.\d+)?")


def step_scores(question: str, steps: Iterable[str]) -> list[float]:
    """The heuristic's score of each step, in order (see the module docstring)."""
    scores, seen = [], set(NUMBER.findall(question))
    for step in steps:
        score = 0.9
        score -= 0.5 if CERTAIN.search(step) else 0.0
        score -= 0.5 if ASSUMES.search(step) else 0.0
        score -= 0.3 if RECHECKS.search(step) else 0.0
        numbers = NUMBER.findall(step)
        if numbers and numbers[-1] in seen and "# Answer" not in step:
            score -= 0.45
        seen.update(numbers)
        scores.append(round(min(0.95, max(0.05, score)), 2))
    return scores


def demo_lines(split: str) -> list[str]:
    """One `{"id", "step_scores"}` line per solution of the split, in the split's order."""
    from injector.evaluate import load_split

    return [json.dumps({"id": item.id, "step_scores": step_scores(item.question, item.steps)}) + "\n"
            for item in load_split(split).items]


def main(argv: list[str] | None = None) -> None:
    """The command line: `--help` prints the docstring; a bad split is a one-line error (exit 2), no traceback."""
    import argparse

    parser = argparse.ArgumentParser(prog="python data/make_demo_scores.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("split", metavar="SPLIT_DIR", help="an `inject build` directory (or a split's JSONL file)")
    args = parser.parse_args(argv)
    from injector.util.errors import InjectorError

    try:
        lines = demo_lines(args.split)
    except InjectorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    sys.stdout.writelines(lines)


if __name__ == "__main__":
    main()
