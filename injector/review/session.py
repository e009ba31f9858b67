"""What the review app works on: the candidates of one or more run directories, their taxonomies and stores."""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..contract import FullAnswer, MultiSolutionAnswer
from ..errors import UserError
from ..records import CANDIDATES_FILE, MANIFEST_FILE
from ..taxonomy import Category, Taxonomy
from ..trajectory import Trajectory
from ..validate import normalize_step, validate_answer
from .store import Decision, ReviewStore, apply_decision, now_iso

log = logging.getLogger("injector")

STATUSES = ("all", "unreviewed", "accepted", "rejected")
STATUS_OF = {"accept": "accepted", "reject": "rejected"}
QUICK_REASONS = ("not this category", "not an error", "error elsewhere", "leaks its label", "unreadable")


class Refused(Exception):
    """A decision the app will not save; the message is shown to the reviewer as is."""


@dataclass
class Entry:
    """Where one candidate lives; the record itself is read from its file on demand."""

    key: str
    """`<run number>/<candidate id>`: ids repeat across runs over the same input."""
    run: int
    id: str
    category: str
    offset: int


@dataclass
class Run:
    path: Path
    store: ReviewStore
    taxonomy: Taxonomy
    taxonomy_note: str = ""
    """Why the bundled taxonomy stands in for the run's own, when it does."""
    entries: list[Entry] = field(default_factory=list)
    image_base: Path | None = None
    """The only directory the app serves this run's local images from (manifest `image_base`)."""


def _run_taxonomy(path: Path) -> tuple[Taxonomy, str]:
    """The taxonomy the run was made with (manifest `config.taxonomy_path`), else the bundled one and why."""
    try:
        manifest = json.loads((path / MANIFEST_FILE).read_text(encoding="utf-8"))
        taxonomy_path = manifest["config"]["taxonomy_path"]
    except (OSError, ValueError, KeyError, TypeError):
        return Taxonomy.load(), f"{path / MANIFEST_FILE} names no taxonomy: showing the bundled one"
    try:
        return Taxonomy.load(taxonomy_path), ""
    except UserError as exc:
        return Taxonomy.load(), f"the run's taxonomy could not be loaded ({exc}): showing the bundled one"


def _run_image_base(path: Path) -> Path | None:
    """The run's image directory from its manifest (a relative one resolves against the run directory, never the
    current directory); None when it records none, and then no local image is served."""
    try:
        base = json.loads((path / MANIFEST_FILE).read_text(encoding="utf-8"))["image_base"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return path / base if isinstance(base, str) and base else None


def _index(run_no: int, path: Path) -> list[Entry]:
    """One entry per candidate id (a repeated id keeps its last line); unreadable lines are skipped and said."""
    entries: dict[str, Entry] = {}
    offset = 0
    with path.open("rb") as handle:
        for number, line in enumerate(handle, 1):
            start, offset = offset, offset + len(line)
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                entries[record["id"]] = Entry(f"{run_no}/{record['id']}", run_no, record["id"],
                                              str(record.get("category", "")), start)
            except (ValueError, KeyError, TypeError):
                log.warning("%s:%d: not a candidate record (torn or hand-edited?); not shown", path, number)
    return list(entries.values())


class ReviewSession:
    """The candidates of the given run directories, in file order, with each run's store and taxonomy."""

    def __init__(self, run_dirs: list[str | Path], reviewer: str = ""):
        self.reviewer = reviewer
        self.runs: list[Run] = []
        for number, run_dir in enumerate(run_dirs):
            path = Path(run_dir)
            if not (path / CANDIDATES_FILE).is_file():
                raise UserError(f"{path}: no {CANDIDATES_FILE} here; give a run directory written by `inject run`")
            taxonomy, note = _run_taxonomy(path)
            run = Run(path, ReviewStore(path), taxonomy, note, _index(number, path / CANDIDATES_FILE))
            run.image_base = _run_image_base(path)
            self.runs.append(run)
        self.entries = [entry for run in self.runs for entry in run.entries]
        self.by_key = {entry.key: entry for entry in self.entries}
        self._bundled: Taxonomy | None = None

    def candidate(self, entry: Entry) -> dict[str, Any]:
        with (self.runs[entry.run].path / CANDIDATES_FILE).open("rb") as handle:
            handle.seek(entry.offset)
            return json.loads(handle.readline())

    def category(self, entry: Entry) -> Category | None:
        """The candidate's category from its run's taxonomy, else the bundled one, else None."""
        try:
            return self.runs[entry.run].taxonomy.category(entry.category)
        except UserError:
            pass
        self._bundled = self._bundled or Taxonomy.load()
        try:
            return self._bundled.category(entry.category)
        except UserError:
            return None

    def taxonomy_for(self, entry: Entry, category: Category) -> Taxonomy:
        taxonomy = self.runs[entry.run].taxonomy
        return taxonomy if category in taxonomy.categories else (self._bundled or Taxonomy.load())

    def latest(self) -> dict[str, Decision]:
        """Latest decision per entry key, across every run."""
        found: dict[str, Decision] = {}
        for number, run in enumerate(self.runs):
            for candidate_id, decision in run.store.latest().items():
                found[f"{number}/{candidate_id}"] = decision
        return found

    def history(self, entry: Entry) -> list[Decision]:
        return self.runs[entry.run].store.history(entry.id)

    def filtered(self, category: str, status: str, latest: dict[str, Decision]) -> list[Entry]:
        def wanted(entry: Entry) -> bool:
            if category and entry.category != category:
                return False
            decision = latest.get(entry.key)
            state = STATUS_OF[decision.decision] if decision else "unreviewed"
            return status in ("", "all") or state == status
        return [entry for entry in self.entries if wanted(entry)]

    def categories(self) -> list[str]:
        return list(dict.fromkeys(entry.category for entry in self.entries))

    def decide(self, key: str, payload: dict[str, Any]) -> Decision:
        """Check a decision from the page, re-validate a correction, and save it; `Refused` says why not."""
        entry = self.by_key.get(key)
        if entry is None:
            raise Refused(f"no candidate {key!r} in the runs under review")
        kind = payload.get("decision")
        reason = payload.get("reason") or ""
        if kind not in ("accept", "reject") or not isinstance(reason, str):
            raise Refused("a decision is accept or reject, with an optional text reason")
        if kind == "reject":
            if not reason.strip():
                raise Refused("give a reason for the rejection: type one or pick a quick reason")
            decision = Decision(entry.id, "reject", reason.strip(), reviewer=self.reviewer)
        else:
            decision = self._accept(entry, payload, reason.strip())
        decision.time = now_iso()
        self.runs[entry.run].store.record(decision)
        return decision

    def _accept(self, entry: Entry, payload: dict[str, Any], reason: str) -> Decision:
        candidate = self.candidate(entry)
        process = candidate["modified_process"]
        corrected, edits = payload.get("corrected_error_steps"), payload.get("edited_steps")
        if corrected is not None and not (isinstance(corrected, list) and all(
                isinstance(s, int) and not isinstance(s, bool) for s in corrected)):
            raise Refused("corrected_error_steps must be a list of step numbers")
        if edits is not None and not (isinstance(edits, dict) and all(isinstance(v, str) for v in edits.values())):
            raise Refused("edited_steps must map step numbers to text")
        changed: dict[int, str] = {}
        for step, text in (edits or {}).items():
            number = int(step) if str(step).isdigit() else 0
            if not 1 <= number <= len(process):
                raise Refused(f"step {step} does not exist: the solution has steps 1..{len(process)}")
            # A browser textarea may drop a leading newline or turn CRLF into LF; that is not an edit.
            if normalize_step(text) != normalize_step(process[number - 1]):
                changed[number] = text
        if corrected is not None and sorted(set(corrected)) == sorted(candidate["error_steps"]):
            corrected = None
        decision = Decision(entry.id, "accept", reason, corrected, changed or None, reviewer=self.reviewer)
        if corrected is not None or changed:
            self._revalidate(entry, candidate, decision)
        return decision

    def _revalidate(self, entry: Entry, candidate: dict[str, Any], decision: Decision) -> None:
        """Run the corrected record through `validate_answer` in full mode; a broken rule refuses it."""
        category = self.category(entry)
        if category is None:
            raise Refused(f"category {entry.category!r} is in neither the run's taxonomy nor the bundled one, "
                          "so a correction cannot be checked; accept or reject it as it is")
        corrected = apply_decision(candidate, decision)
        trajectory = Trajectory(id=str(candidate.get("trajectory_id") or entry.id),
                                question=candidate["original_question"], steps=candidate["original_process"])
        answer: FullAnswer | MultiSolutionAnswer
        if category.rules.multi_solution:
            if decision.corrected_error_steps:
                raise Refused(f"{category.id} has no error steps: a different correct solution marks none")
            answer = MultiSolutionAnswer(modified_process=corrected["modified_process"], reason=candidate["reason"])
        else:
            answer = FullAnswer(modified_question=candidate["modified_question"],
                                modified_process=corrected["modified_process"],
                                modified_steps=corrected["modified_steps"], error_steps=corrected["error_steps"],
                                reason=candidate["reason"])
        verdict = validate_answer(self.taxonomy_for(entry, category), category, trajectory, answer)
        if verdict.codes:
            raise Refused("not saved, the corrected record breaks a rule: " + " ".join(
                f"[{code}]" for code in verdict.codes) + " " + "; ".join(verdict.messages))
