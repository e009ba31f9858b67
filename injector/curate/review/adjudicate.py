"""The adjudicator's queue (`inject review RUN --adjudicate --reviewer NAME`): the candidates whose reviewers
disagree (on the decision, the first error step or the error steps), each reviewer's decision side by side; the
adjudicator's decision is stored with `role` adjudication and is final (`inject build --consensus`)."""
from __future__ import annotations

from html import escape

from injector.records.models import CANDIDATES_FILE
from injector.curate.review.consensus import disputed, label
from injector.curate.review.store import latest_per_reviewer


def to_adjudication(session) -> None:
    """Narrow the session to the disputed candidates of its runs (gold items left out); its decisions become
    adjudications, and the adjudicator sees only their own earlier adjudications as the status."""
    session.role = "adjudication"
    for run in session.runs:
        per = latest_per_reviewer(run.store.rows())
        listed = run.entries if session.listed else run.queue.all()  # file order
        run.entries = [entry for entry in listed if entry.file == CANDIDATES_FILE and entry.id in per
                       and _disputed(session, entry, per[entry.id])]
        run.reviews = per
        run.blind = True
    session.narrow()


def _disputed(session, entry, decisions) -> bool:
    from injector.curate.review.queue import NotACandidate

    try:
        return disputed(decisions, session.candidate(entry))
    except NotACandidate:  # no candidate to adjudicate: `build` stops at its line anyway
        return False


def side_by_side(session, entry) -> str:
    """Each reviewer's latest decision on the entry as an HTML table (adjudication only; "" otherwise)."""
    if session.role != "adjudication":
        return ""
    candidate = session.candidate(entry)
    rows = []
    for reviewer, decision in sorted(session.runs[entry.run].reviews.get(entry.id, {}).items()):
        found = label(decision, candidate)
        accepted = found[0] == "accept"
        cells = [reviewer or "(unnamed)", decision.decision,
                 (", ".join(map(str, found[1])) or "none") if accepted else "",
                 str(min(found[1])) if accepted and found[1] else "",
                 ", ".join(map(str, decision.edited_steps or {})), decision.reason, decision.time]
        rows.append("<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in cells) + "</tr>")
    return ('<section id="reviews"><h2>reviewers\' decisions (disputed)</h2><table class="kv reviews"><tr>'
            "<th>reviewer</th><th>decision</th><th>error steps</th><th>first error</th><th>edited steps</th>"
            f"<th>reason</th><th>time</th></tr>{''.join(rows)}</table></section>")
