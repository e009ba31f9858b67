"""What the review app works on: the candidates of one or more run directories, their taxonomies and stores."""
from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from injector.util.errors import UserError
from injector.records.directory import RunDirectory
from injector.records.models import CANDIDATES_FILE, Candidate
from injector.taxonomy import Category, Taxonomy, run_taxonomy
from injector.triage.verdicts import VERDICTS, VerifyRecord
from injector.curate.review.rules import Conflict, Refused, check_record
from injector.curate.review.views import Window, view_window
from injector.curate.review.plan_queue import PlanQueue, planned_window
from injector.curate.review.queue import Entry, NotACandidate, RunQueue, load_candidate, load_verdict
from injector.curate.review.queue_index import ORDER_KEYS, UNVERIFIED, refresh
from injector.curate.review.store import Decision, ReviewStore

log = logging.getLogger("injector")

STATUSES = ("all", "unreviewed", "accepted", "rejected")
STATUS_OF = {"accept": "accepted", "reject": "rejected"}
QUICK_REASONS = ("not this category", "not an error", "error elsewhere", "leaks its label", "unreadable")
ORDERS = tuple(ORDER_KEYS)
"""How the list may be sorted (`queue_index.ORDER_KEYS`): by the triage routing (disagreeing signals first), by the
blind judge's verdict (likeliest bad items first), or as the run wrote them."""
__all__ = ["Conflict", "Entry", "NotACandidate", "Refused", "ReviewSession", "UNVERIFIED", "View", "Window"]


@dataclass(frozen=True)
class View:
    """What the reviewer is looking at: the filters and the order of the list, carried from page to page."""

    cat: str = ""
    status: str = ""
    verdict: str = ""
    """A verdict name, `unverified`, or "" for all."""
    order: str = ""
    """One of `ORDERS`; "" is the default: by routing, but a reviewer's queue as written (its plan's order)."""

    @classmethod
    def of(cls, values: dict[str, Any]) -> "View":
        """The view a query string or a POST names; anything but text counts as not given."""
        return cls(*(str(values.get(name) or "") for name in ("cat", "status", "verdict", "order")))

    def query(self) -> dict[str, str]:
        return {name: value for name, value in vars(self).items() if value}


@dataclass
class Run:
    path: Path
    store: ReviewStore
    taxonomy: Taxonomy
    queue: RunQueue
    taxonomy_note: str = ""
    """Why the bundled taxonomy stands in for the run's own, or that the run's hooks are off, when so."""
    entries: list[Entry] = field(default_factory=list)
    """The run's entries when an adjudication narrows it (else the index serves them)."""
    plan: PlanQueue | None = None
    """The reviewer's queue of the run's review plan, when the app serves one (read from the index)."""
    image_base: Path | None = None
    """The only directory the app serves this run's local images from (manifest `image_base`)."""
    verified: bool = False
    """Whether the blind judge's verdicts are shown for this run (`verify.jsonl`; never in a blind queue)."""
    reviews: dict[str, dict[str, Decision]] = field(default_factory=dict)
    """Candidate id -> reviewer -> latest decision, for the adjudicator's side-by-side view (`adjudicate.py`)."""
    blind: bool = False
    """Whether the reviewer works through a review plan's queue: then they see their own decisions only."""


def _run_image_base(path: Path) -> Path | None:
    """The run's image directory from its manifest (a relative one resolves against the run directory, never the
    current directory); None when it records none, and then no local image is served."""
    try:
        manifest = RunDirectory(path).read_manifest()
    except UserError as exc:  # an unreadable manifest: the candidates can still be reviewed, without local images
        log.warning("%s; local images are not served", exc)
        return None
    base = manifest.image_base if manifest is not None else None
    return path / base if base else None


def _to_queue(run: Run, reviewer: str) -> None:
    """Narrow a run to the reviewer's queue of its review plan (kept in the index, in the plan's order)."""
    run.plan = PlanQueue.open(run.queue, reviewer, run.path)
    if run.plan is not None:
        run.verified, run.blind = False, True


class _Keys:
    """Entry key -> entry, looked up in the runs' indexes (or the narrowed lists) one key at a time."""

    def __init__(self, session: "ReviewSession"):
        self.session = session

    def get(self, key: str, default: Entry | None = None) -> Entry | None:
        run, _, candidate_id = key.partition("/")
        if not run.isdigit() or int(run) >= len(self.session.runs):
            return default
        if self.session.listed:
            return self.session.listed_keys().get(key, default)
        if self.session.planned:
            plan = self.session.runs[int(run)].plan
            return (plan.entry(candidate_id) if plan else None) or default
        return self.session.runs[int(run)].queue.entry(candidate_id) or default

    def __getitem__(self, key: str) -> Entry:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None


class ReviewSession:
    """The candidates of the given run directories, in file order, with each run's store and taxonomy."""

    def __init__(self, run_dirs: Sequence[str | Path], reviewer: str = "", taxonomy: str | Path | None = None, *,
                 queue: bool = False, listing: bool = True):
        """`taxonomy` (`--taxonomy`) checks every run with that taxonomy, hooks included; without it each run's
        own is read from its manifest for its rules only (see `run_taxonomy`). With `queue`, a run that has a
        review plan (`assign.py`) shows only the reviewer's queue, gold items mixed in, blind to others' decisions
        and to the judge's verdicts (which would also tell gold items apart). Each run's candidates are indexed in
        its store (`queue_index.py`, rebuilt only when its files changed), not read: a record is validated when
        it is shown, and `build` validates them all. Without `listing` (`build`: it reads every record itself, and
        needs only the stores and the rules) nothing is indexed, and no view may be asked for."""
        self.reviewer = reviewer
        self.role = "review"
        """The role of the decisions made through the app: `adjudication` for an adjudicator's."""
        self.runs: list[Run] = []
        for number, run_dir in enumerate(run_dirs):
            path = Path(run_dir)
            if not (path / CANDIDATES_FILE).is_file():
                raise UserError(f"{path}: no {CANDIDATES_FILE} here; give a run directory written by `inject run`")
            loaded, note = run_taxonomy(path, taxonomy)
            store = ReviewStore(path)
            if listing:
                refresh(store, path)  # every candidate, gold items too (their decisions are imported and exported)
            run = Run(path, store, loaded, RunQueue(store, number, hold=listing), note, image_base=_run_image_base(path))
            if queue:
                _to_queue(run, reviewer)
            # a reviewer's queue shows no verdict (and never reads the queue's own views)
            run.verified = listing and run.plan is None and bool(run.queue.verdicts() - {UNVERIFIED})
            self.runs.append(run)
        self.planned = any(run.plan for run in self.runs)
        """Whether the runs are narrowed to a reviewer's queues of their plans (read from the index)."""
        self.listed = False
        """Whether the runs are narrowed to lists (an adjudication): then views are built from them."""
        self.by_key = _Keys(self)
        self._bundled: Taxonomy | None = None
        self._keys: dict[str, Entry] | None = None
        # A view's entries without its status filter (and each key's position), built once: only decisions change.
        self._listings: dict[tuple[str, str, str], tuple[list[Entry], dict[str, int]]] = {}
        self._totals: dict[str, int] = {}
        self._present: list[str] | None = None
        self._verdicts: dict[tuple[int, int], VerifyRecord | None] = {}

    def narrow(self) -> None:
        """Serve views from the runs' `entries` lists (set by an adjudication), not from a plan's queues."""
        for run in self.runs:
            run.plan = None
        self.listed, self.planned, self._keys, self._listings, self._totals = True, False, None, {}, {}

    def listed_keys(self) -> dict[str, Entry]:
        if self._keys is None:
            self._keys = {entry.key: entry for run in self.runs for entry in run.entries}
        return self._keys

    @property
    def entries(self) -> list[Entry]:
        """Every entry, in file order: O(run) (the page never needs it; a walk over everything may)."""
        if self.planned:
            return [entry for run in self.runs if run.plan for entry in run.plan.all()]
        return [entry for run in self.runs for entry in (run.entries if self.listed else run.queue.all())]

    def find(self, candidate_id: str) -> list[Entry]:
        """The entries of this candidate id, one per run that has it."""
        return [entry for number in range(len(self.runs)) if (entry := self.by_key.get(f"{number}/{candidate_id}"))]

    def size(self) -> int:
        return sum(self._category_totals().values())

    def candidate(self, entry: Entry) -> Candidate:
        """The entry's record, read and validated now; `NotACandidate` when its line is none."""
        return load_candidate(self.runs[entry.run].path, entry)

    def category(self, entry: Entry) -> Category | None:
        """The candidate's category from its run's taxonomy, else the bundled one, else None."""
        return self.category_named(entry.run, entry.category)

    def category_named(self, run: int, category_id: str) -> Category | None:
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
        """Latest decision per entry key, across every run (in a blind queue the reviewer's own: under a plan, on
        the candidates of their queue, read through its index; else the standing ones, read through the store's
        standing table)."""
        found: dict[str, Decision] = {}
        for number, run in enumerate(self.runs):
            decisions = (run.store.latest_in_plan(self.reviewer) if run.plan else
                         run.store.latest_of(self.reviewer, self.role) if run.blind else
                         run.store.standing_decisions())
            for candidate_id, decision in decisions.items():
                found[f"{number}/{candidate_id}"] = decision
        return found

    def history(self, entry: Entry) -> list[Decision]:
        rows = self.runs[entry.run].store.history(entry.id)
        if not self.runs[entry.run].blind:
            return rows
        return [d for d in rows if d.reviewer == self.reviewer and d.role == self.role]

    def verdict_name(self, entry: Entry) -> str:
        """The blind judge's verdict as the index holds it (`unverified` when the reviewer may not see it)."""
        return entry.verdict if self.runs[entry.run].verified else UNVERIFIED

    def verdict(self, entry: Entry) -> VerifyRecord | None:
        """The blind judge's record for this candidate, read and validated now; None when it has none."""
        run = self.runs[entry.run]
        if not run.verified or entry.verify_offset is None:
            return None
        place = (entry.run, entry.verify_offset)
        if place not in self._verdicts:
            self._verdicts = self._verdicts if len(self._verdicts) < 1024 else {}  # a page's worth, not the run
            self._verdicts[place] = load_verdict(run.path, entry.verify_offset)
        return self._verdicts[place]

    @property
    def verified(self) -> bool:
        """Whether any run under review has verdicts (then the list is sorted by verdict by default)."""
        return any(run.verified for run in self.runs)

    def verdicts(self) -> list[str]:
        """The verdicts present, in reviewer order, then `unverified` when some candidate has none (found once)."""
        if self._present is None:
            present = ({UNVERIFIED} if self.planned else
                       {self.verdict_name(entry) for entry in self.entries} if self.listed else
                       {v for run in self.runs for v in (run.queue.verdicts() if run.verified else {UNVERIFIED})})
            self._present = [v for v in (*VERDICTS, UNVERIFIED) if v in present]
        return self._present

    def window(self, view: View, key: str | None, before: int, after: int) -> Window:
        """The view's entries around `key` (`before` ahead of it, `after` behind it), or around its first entry
        when `key` is not in the view: a few index reads per run, whatever the run's size."""
        return (planned_window if self.planned else view_window)(self, view, key, before, after)

    def listing(self, view: View) -> tuple[list[Entry], dict[str, int]]:
        """The entries of a narrowed session's view in its order (by verdict a stable sort: file order within a
        verdict), and each entry key's position in it (built once per view; a status filter reads the standing
        decisions of the list). A session over the indexes reads `window` instead."""
        order = self.order(view)
        shape = (view.cat, view.verdict if view.verdict != "all" else "", order)
        if shape not in self._listings:
            items = [entry for entry in self.entries if self._wanted(entry, view)]
            items.sort(key=lambda entry: entry.groups.get(order, 0) if self.runs[entry.run].verified else 0)
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
        return view.verdict in ("", "all") or self.verdict_name(entry) == view.verdict

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
        """Category -> [candidates, accepted, rejected] over every run: counts the triggers keep (the reviewer's
        own in a plan's queue), except in an adjudication (its candidates' own decisions, read by id)."""
        per = {category: [total, 0, 0] for category, total in self._category_totals().items()}
        for run in self.runs:
            if run.plan or self.planned:  # a run without a plan shows nothing in a reviewer's queue
                rows = run.plan.progress() if run.plan else []
            elif run.blind:
                category = {entry.id: entry.category for entry in run.entries}
                own = run.store.latest_of_for(category, self.reviewer, self.role).values()
                rows = [(category[d.id], d.decision, 1) for d in own]
            else:
                run.queue.ready()  # registers the candidates the store's counts cover
                rows = run.store.progress()
            for name, decision, count in rows:
                if name in per and decision in STATUS_OF:
                    per[name][1 if decision == "accept" else 2] += count
        return per

    def order(self, view: View) -> str:
        """The view's order, its default resolved."""
        return view.order if view.order in ORDER_KEYS else ("file" if self.listed or self.planned else "routing")

    def categories(self) -> list[str]:
        return list(self._category_totals())

    def _category_totals(self) -> dict[str, int]:
        """Candidates per category, in order of first appearance; counted once."""
        if not self._totals:
            for run in self.runs:
                counts = (Counter(e.category for e in run.entries).items() if self.listed else
                          (run.plan.categories() if run.plan else []) if self.planned else run.queue.categories())
                for category, n in counts:
                    self._totals[category] = self._totals.get(category, 0) + n
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
        record as read from its run (validated now: a line that is no candidate refuses every decision).
        """
        try:
            candidate = candidate or self.candidate(entry)
        except NotACandidate as exc:
            raise Refused(str(exc)) from None
        return self.check_record(entry.run, candidate, decision)

    def check_record(self, run: int, candidate: Candidate, decision: Decision) -> Decision:
        """`check` for a candidate record of run number `run` (what `build` reads itself): `rules.check_record`."""
        return check_record(self, run, candidate, decision)


def _brief(decision: Decision) -> str:
    return "accepted" if decision.decision == "accept" else f"rejected: {decision.reason}"


def decision_from_page(candidate_id: str, payload: dict[str, Any], reviewer: str) -> Decision:
    """The decision a page's POST describes, as given; `ReviewSession.check` decides whether it may be stored."""
    return Decision(candidate_id, payload.get("decision") or "", payload.get("reason") or "",
                    payload.get("corrected_error_steps"), payload.get("edited_steps"), reviewer=reviewer)
