"""Whether a verify pass measured anything: a judge none of whose critiques could be read leaves every candidate
`unparseable`, which is no triage at all; the CLI exits non-zero on it and says what the judge returned."""
from __future__ import annotations

from pathlib import Path

from injector.answer.contract import AnswerError, parse_json_object
from injector.triage.verdicts import read_verdicts
from injector.triage.verify import VerifySummary
from injector.util.errors import InjectorError, NothingMeasured, UserError


def check_verify_measured(summary: VerifySummary) -> None:
    """Raise when every verdict `verify.jsonl` holds is `unparseable`: a `UserError` (exit 2) when no answer was even
    a JSON object with `first_error_step` (the judge does not follow the format), else `NothingMeasured` (exit 5)."""
    counts: dict[str, int] = {}
    for per_category in summary.verdicts.values():
        for verdict, count in per_category.items():
            counts[verdict] = counts.get(verdict, 0) + count
    if not counts or set(counts) != {"unparseable"}:
        return
    raise _unmeasured(Path(summary.run_dir))


def _unmeasured(run_dir: Path) -> InjectorError:
    records = list(read_verdicts(run_dir).values())
    answers = [record.judge_modified for record in records if record.judge_modified is not None]
    raws = [answer.raw or "" for answer in answers]
    problem = answers[-1].reason.removeprefix("unparseable: ") if answers else "no readable critique"
    returned = f"its last answer: {excerpt(raws[-1])}" if raws and raws[-1] else "no answer text"
    where = run_dir / "verify.jsonl"
    if not any(_in_format(raw) for raw in raws):
        return judge_out_of_format(problem, returned, f"its critiques are in {where}")
    return NothingMeasured(f"no critique of the judge could be read, so nothing was verified ({problem}; "
                           f"{returned}); its critiques are in {where}")


def _in_format(raw: str) -> bool:
    try:
        return "first_error_step" in parse_json_object(raw)
    except AnswerError:
        return False


def judge_out_of_format(problem: str, returned: str, where: str) -> UserError:
    """The error for a judge none of whose answers was even in the format asked for (exit 2): what to change."""
    return UserError(f"the judge never answered in the format asked for ({problem}; {returned}); use a judge that "
                     f"follows a JSON format, or --no-schema if its server mishandles response_format; {where}")


def excerpt(text: str, limit: int = 200) -> str:
    """A model's answer shortened to one line for a message."""
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[:limit] + "...")
