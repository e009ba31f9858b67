"""What the review app works on: the candidates of one or more run directories, their taxonomies and stores."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

from injector.answer.align import normalize_step
from injector.util.errors import InjectorError, UserError
from injector.records.directory import RunDirectory
from injector.records.jsonl import record_at
from injector.records.models import CANDIDATES_FILE, Candidate
from injector.taxonomy import Category, Taxonomy, run_taxonomy
from injector.inject.validation import validate_answer
from injector.triage.verdicts import VERDICTS, VerifyRecord, read_verdicts, verdict_rank
from injector.curate.review.store import Decision, ReviewStore, apply_decision

log = logging.getLogger("injector")

STATUSES = ("all", "unreviewed", "accepted", "rejected")
STATUS_OF = {"accept": "accepted", "reject": "rejected"}
QUICK_REASONS = ("not this category", "not an error", "error elsewhere", "leaks its label", "unreadable")
UNVERIFIED = "unverified"
"""The verdict filter's name for candidates `inject verify` has not judged."""
ORDERS = ("verdict", "file")
"""How the list is sorted: by the blind judge's verdict (likeliest bad items first), or as the run wrote them."""


@dataclass(frozen=True)
class View:
    """What the reviewer is looking at: the filters and the order of the list, carried from page to page."""

    cat: str = ""
    status: str = ""
    verdict: str = ""
    """A verdict name, `unverified`, or "" for all."""
    order: str = ""
    """`verdict` or `file`; "" is the default: by verdict when any run was verified, else file order."""

    @classmethod
    def of(cls, values: dict[str, Any]) -> "View":
        """The view a query string or a POST names; anything but text counts as not given."""
        return cls(*(str(values.get(name) or "") for name in ("cat", "status", "verdict", "order")))

    def query(self) -> dict[str, str]:
        return {name: value for name, value in vars(self).items() if value}


class Refused(InjectorError):
    """A decision the app will not save; the message is shown to the reviewer as is."""


class Conflict(Refused):
    """A decision that would replace the reviewer's own without their say-so (unconfirmed, or made on a page that
    showed an older state): refused, never merged silently."""


@dataclass
class Entry:
    """Where one candidate lives; the record itself is read from its file on demand."""

    key: str
    """`<run number>/<candidate id>`: ids repeat across runs over the same input."""
    run: int
    id: str
    category: str
    offset: int
    file: str = CANDIDATES_FILE
    """The run directory's file holding the record (gold items, `--gold`, live in their own)."""


@dataclass
class Run:
    path: Path
    store: ReviewStore
    taxonomy: Taxonomy
    taxonomy_note: str = ""
    """Why the bundled taxonomy stands in for the run's own, or that the run's hooks are off, when so."""
    entries: list[Entry] = field(default_factory=list)
    image_base: Path | None = None
    """The only directory the app serves this run's local images from (manifest `image_base`)."""
    verdicts: dict[str, VerifyRecord] = field(default_factory=dict)
    """The blind judge's verdict per candidate id (`verify.jsonl`; empty when the run was not verified)."""
    reviews: dict[str, dict[str, Decision]] = field(default_factory=dict)
    """Candidate id -> reviewer -> latest decision, for the adjudicator's side-by-side view (`adjudicate.py`)."""
    blind: bool = False
    """Whether the reviewer works through a review plan's queue: then they see their own decisions only."""


def _run_image_base(path: Path) -> Path | None:
    """The run's image directory from its manifest (relative to the run directory); None: no local image served."""
    try:
        manifest = RunDirectory(path).read_manifest()
    except UserError as exc:  # an unreadable manifest: the candidates can still be reviewed, without local images
        log.warning("%s; local images are not served", exc)
        return None
    base = manifest.image_base if manifest is not None else None
    return path / base if base else None


def _index(run_no: int, path: Path) -> list[Entry]:
    """One entry per candidate id (a repeated id keeps its first line, as `build` does); lines that are not
    candidates are skipped and said (FILE:LINE)."""
    return [Entry(f"{run_no}/{candidate.id}", run_no, candidate.id, candidate.category, offset)
            for _, offset, candidate in RunDirectory(path).indexed_candidates()]


def _gold_entries(path: Path, number: int, plan) -> list[Entry]:
    """The entries of run number `number`'s gold items (`--gold`), from their own file."""
    from injector.curate.review.gold import GOLD_FILE, gold_records

    return [Entry(f"{number}/{candidate.id}", number, candidate.id, candidate.category, offset, GOLD_FILE)
            for offset, candidate in gold_records(path, plan)]


def _with_gold(run: Run, number: int) -> None:
    from injector.curate.review.assign import read_plan

    known = {entry.id for entry in run.entries}
    run.entries += [entry for entry in _gold_entries(run.path, number, read_plan(run.path)) if entry.id not in known]


def _to_queue(run: Run, reviewer: str, number: int) -> None:
    """Narrow a run to the reviewer's queue of its review plan, in the plan's order, when it has one."""
    from injector.curate.review.assign import read_plan

    plan = read_plan(run.path)
    if plan is None:
        return
    if reviewer not in plan.queues:
        raise UserError(f"{run.path}: its review plan has no queue for {reviewer!r}; open the app with --reviewer "
                        f"and one of: {', '.join(plan.reviewers)}")
    order = {candidate_id: n for n, candidate_id in enumerate(plan.queues[reviewer])}
    entries = [entry for entry in run.entries + _gold_entries(run.path, number, plan) if entry.id in order]
    run.entries = sorted(entries, key=lambda entry: order[entry.id])
    run.verdicts = {}
    run.blind = True


class ReviewSession:
    """The candidates of the given run directories, in file order, with each run's store and taxonomy."""

    def __init__(self, run_dirs: Sequence[str | Path], reviewer: str = "", taxonomy: str | Path | None = None, *,
                 queue: bool = False, register: bool = True):
        """`taxonomy` (`--taxonomy`) checks every run with that taxonomy, hooks included; without it each run's
        own is read from its manifest for its rules only (see `run_taxonomy`). With `queue`, a run that has a
        review plan (`assign.py`) shows only the reviewer's queue, gold items mixed in, blind to others' decisions
        and to the judge's verdicts (which would also tell gold items apart)."""
        self.reviewer = reviewer
        self.role = "review"
        """The role of the decisions made through the app: `adjudication` for an adjudicator's."""
        self.runs: list[Run] = []
        for number, run_dir in enumerate(run_dirs):
            path = Path(run_dir)
            if not (path / CANDIDATES_FILE).is_file():
                raise UserError(f"{path}: no {CANDIDATES_FILE} here; give a run directory written by `inject run`")
            loaded, note = run_taxonomy(path, taxonomy)
            # All read before the store is opened (and created): a refused run directory is left as it was.
            entries, image_base, verdicts = _index(number, path), _run_image_base(path), read_verdicts(path)
            run = Run(path, ReviewStore(path), loaded, note, entries, image_base, verdicts)
            if queue:
                _to_queue(run, reviewer, number)
            else:  # every candidate, gold items too (their decisions are imported and exported as any)
                _with_gold(run, number)
                if register:  # for the app's progress; build and --export write nothing to the store
                    run.store.register((entry.id, entry.category) for entry in run.entries)
            self.runs.append(run)
        self.entries = [entry for run in self.runs for entry in run.entries]
        self.by_key = {entry.key: entry for entry in self.entries}
        self._bundled: Taxonomy | None = None
        # A view's entries without its status filter (and each key's position), built once: only decisions change.
        self._listings: dict[tuple[str, str, str], tuple[list[Entry], dict[str, int]]] = {}
        self._totals: dict[str, int] = {}
        self._present: list[str] | None = None

    def candidate(self, entry: Entry) -> Candidate:
        return record_at(self.runs[entry.run].path / entry.file, entry.offset, Candidate)

    def category(self, entry: Entry) -> Category | None:
        """The candidate's category from its run's taxonomy, else the bundled one, else None."""
        return self._category(entry.run, entry.category)

    def _category(self, run: int, category_id: str) -> Category | None:
        try:
            return self.runs[run].taxonomy.category(category_id)
        except UserError:
            pass
        self._bundled = self._bundled or Taxonomy.load()
        try:
            return self._bundled.category(category_id)
        except UserError:
            return None

    def taxonomy_for(self, run: int, category: Category) -> Taxonomy:
        """The taxonomy `category` came from: run number `run`'s own, else the bundled one."""
        taxonomy = self.runs[run].taxonomy
        return taxonomy if category in taxonomy.categories else (self._bundled or Taxonomy.load())

    def latest(self) -> dict[str, Decision]:
        """Latest decision per entry key, across every run."""
        found: dict[str, Decision] = {}
        for number, run in enumerate(self.runs):
            decisions = run.store.latest_of(self.reviewer, self.role) if run.blind else run.store.latest()
            for candidate_id, decision in decisions.items():
                found[f"{number}/{candidate_id}"] = decision
        return found

    def history(self, entry: Entry) -> list[Decision]:
        rows = self.runs[entry.run].store.history(entry.id)
        if not self.runs[entry.run].blind:
            return rows
        return [d for d in rows if d.reviewer == self.reviewer and d.role == self.role]

    def verdict(self, entry: Entry) -> VerifyRecord | None:
        """The blind judge's record for this candidate, None when its run has none for it."""
        return self.runs[entry.run].verdicts.get(entry.id)

    @property
    def verified(self) -> bool:
        """Whether any run under review has verdicts (then the list is sorted by verdict by default)."""
        return any(run.verdicts for run in self.runs)

    def verdicts(self) -> list[str]:
        """The verdicts present, in reviewer order, then `unverified` when some candidate has none (found once)."""
        if self._present is None:
            present = {record.verdict if (record := self.verdict(entry)) else UNVERIFIED for entry in self.entries}
            self._present = [v for v in (*VERDICTS, UNVERIFIED) if v in present]
        return self._present

    def listing(self, view: View) -> tuple[list[Entry], dict[str, int]]:
        """The entries of a view in its order (by verdict a stable sort: file order within a verdict), and each
        entry key's position in it. Without a status filter this is built once per view; a status filter reads
        the standing decisions (unparsed) once per call."""
        shape = (view.cat, view.verdict if view.verdict != "all" else "", self.order(view))
        if shape not in self._listings:
            items = [entry for entry in self.entries if self._wanted(entry, view)]
            if shape[2] == "verdict":
                items.sort(key=lambda entry: verdict_rank(record.verdict if (record := self.verdict(entry)) else None))
            self._listings = {**self._listings, shape: (items, {entry.key: n for n, entry in enumerate(items)})}
        listed = self._listings[shape]
        if view.status in ("", "all"):
            return listed
        decided = self.decided()
        items = [entry for entry in listed[0]
                 if (STATUS_OF[d] if (d := decided.get(entry.key)) else "unreviewed") == view.status]
        return items, {entry.key: n for n, entry in enumerate(items)}

    def _wanted(self, entry: Entry, view: View) -> bool:
        if view.cat and entry.category != view.cat:
            return False
        if view.verdict not in ("", "all"):
            record = self.verdict(entry)
            return (record.verdict if record else UNVERIFIED) == view.verdict
        return True

    def latest_for(self, entries: Sequence[Entry]) -> dict[str, Decision]:
        """`latest` for these entries only (a page's), read by their ids alone."""
        found: dict[str, Decision] = {}
        for number, run in enumerate(self.runs):
            ids, store = [entry.id for entry in entries if entry.run == number], run.store
            decisions = store.latest_of_for(ids, self.reviewer, self.role) if run.blind else store.latest_for(ids)
            found.update((f"{number}/{candidate_id}", decision) for candidate_id, decision in decisions.items())
        return found

    def decided(self) -> dict[str, str]:
        """Entry key -> its standing decision (accept or reject) as this reviewer sees it, for a status filter."""
        found: dict[str, str] = {}
        for number, run in enumerate(self.runs):
            own = run.store.latest_of_for([e.id for e in run.entries], self.reviewer, self.role) if run.blind else {}
            pairs = ((d.id, d.decision) for d in own.values()) if run.blind else iter(run.store.decided().items())
            found.update((f"{number}/{candidate_id}", decision) for candidate_id, decision in pairs)
        return found

    def progress(self) -> dict[str, list[int]]:
        """Category -> [candidates, accepted, rejected] over every run: COUNT queries, except in a queue (its own
        candidates' decisions, read by id)."""
        per = {category: [total, 0, 0] for category, total in self._category_totals().items()}
        for run in self.runs:
            if run.blind:
                category = {entry.id: entry.category for entry in run.entries}
                own = run.store.latest_of_for(category, self.reviewer, self.role).values()
                rows = [(category[d.id], d.decision, 1) for d in own]
            else:
                rows = run.store.progress()
            for name, decision, count in rows:
                if name in per and decision in STATUS_OF:
                    per[name][1 if decision == "accept" else 2] += count
        return per

    def order(self, view: View) -> str:
        """The view's order, its default resolved."""
        return view.order if view.order in ORDERS else ("verdict" if self.verified else "file")

    def categories(self) -> list[str]:
        return list(self._category_totals())

    def _category_totals(self) -> dict[str, int]:
        """Candidates per category, in order of first appearance; counted once."""
        if not self._totals:
            for entry in self.entries:
                self._totals[entry.category] = self._totals.get(entry.category, 0) + 1
        return self._totals

    def own(self, entry: Entry) -> Decision | None:
        """The reviewer's latest decision on the entry (their own only), None before they decide."""
        mine = [d for d in self.history(entry) if d.reviewer == self.reviewer and d.role == self.role]
        return mine[-1] if mine else None

    def decide(self, key: str, payload: dict[str, Any]) -> Decision:
        """Check a decision from the page, re-validate a correction, and save it; `Refused` says why not.

        Replacing one's own earlier decision needs the page to say which one it showed (`seen`, its time) and that
        the reviewer confirmed (`confirm`); anything else is a `Conflict`, so a stale tab or a repeated key press
        never overwrites a decision silently. The server holds a lock around this check and the write."""
        entry = self.by_key.get(key)
        if entry is None:
            raise Refused(f"no candidate {key!r} in the runs under review")
        own = self.own(entry)
        if own is not None:
            if payload.get("seen") != own.time:
                raise Conflict(f"not saved: you decided this candidate meanwhile ({_brief(own)}, {own.time}), "
                               "in another tab or by a repeated key; reload to see it")
            if payload.get("confirm") is not True:
                raise Conflict(f"not saved: you already decided this candidate ({_brief(own)}); confirm to "
                               "replace your decision")
        decision = self.check(entry, decision_from_page(entry.id, payload, self.reviewer))
        decision.role = self.role
        return self.runs[entry.run].store.record(decision)

    def check(self, entry: Entry, decision: Decision, candidate: Candidate | None = None) -> Decision:
        """`decision` on `entry`'s candidate as it is stored, or `Refused` saying why it may not be.

        The one place the app's rules live: the page's POST, `review --import` and `build` all call it. A
        rejection needs a reason (and carries no corrections); an accept's edits must name existing steps, an edit
        that leaves a step's text as it was and an error-step list equal to the candidate's are dropped, and a
        correction is re-validated in full against the category's rules. `candidate` defaults to the entry's
        record as read from its run.
        """
        return self.check_record(entry.run, candidate or self.candidate(entry), decision)

    def check_record(self, run: int, candidate: Candidate, decision: Decision) -> Decision:
        """`check` for a candidate record of run number `run` (what `build` reads itself)."""
        reason = decision.reason.strip() if isinstance(decision.reason, str) else decision.reason
        if decision.decision not in ("accept", "reject") or not isinstance(reason, str):
            raise Refused("a decision is accept or reject, with an optional text reason")
        if decision.decision == "reject":
            if not reason:
                raise Refused("give a reason for the rejection: type one or pick a quick reason")
            return replace(decision, reason=reason, corrected_error_steps=None, edited_steps=None)
        process = candidate.modified_process
        corrected, edits = decision.corrected_error_steps, decision.edited_steps
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
        if corrected is not None:
            corrected = sorted(set(corrected))
            if corrected == sorted(candidate.error_steps):
                corrected = None
        checked = replace(decision, reason=reason, corrected_error_steps=corrected, edited_steps=changed or None)
        if corrected is not None or changed:
            self._revalidate(run, candidate, checked)
        return checked

    def _revalidate(self, run: int, candidate: Candidate, decision: Decision) -> None:
        """Run the corrected record through `validate_answer` in full mode; a broken rule refuses it."""
        category = self._category(run, candidate.category)
        if category is None:
            raise Refused(f"category {candidate.category!r} is in neither the run's taxonomy nor the bundled one, "
                          "so a correction cannot be checked; accept or reject it as it is")
        if category.rules.multi_solution and decision.corrected_error_steps:
            raise Refused(f"{category.id} has no error steps: a different correct solution marks none")
        corrected = apply_decision(candidate, decision)
        # The whole record as the model's answer would have been: explanations included, which categories that
        # require them check (a correction once dropped them and was refused with `missing_explanation`).
        answer = corrected.as_answer(multi_solution=category.rules.multi_solution)
        verdict = validate_answer(self.taxonomy_for(run, category), category, candidate.source_trajectory(), answer)
        if verdict.codes:
            raise Refused("not saved, the corrected record breaks a rule: " + " ".join(
                f"[{code}]" for code in verdict.codes) + " " + "; ".join(verdict.messages))


def _brief(decision: Decision) -> str:
    return "accepted" if decision.decision == "accept" else f"rejected: {decision.reason}"


def decision_from_page(candidate_id: str, payload: dict[str, Any], reviewer: str) -> Decision:
    """The decision a page's POST describes, as given; `ReviewSession.check` decides whether it may be stored."""
    return Decision(candidate_id, payload.get("decision") or "", payload.get("reason") or "",
                    payload.get("corrected_error_steps"), payload.get("edited_steps"), reviewer=reviewer)
