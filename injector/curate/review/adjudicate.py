"""The adjudicator's queue (`inject review RUN --adjudicate --reviewer NAME`): the candidates whose reviewers
disagree (on the decision, the first error step or the error steps), each reviewer's decision side by side; the
adjudicator's decision is stored with `role` adjudication and is final (`inject build --consensus`)."""
from __future__ import annotations

from html import escape

from injector.records.models import CANDIDATES_FILE
from injector.curate.review.consensus import disputed, label


SPLIT = """
SELECT {columns} FROM queue WHERE source = 0 AND id IN (
    SELECT id FROM decisions WHERE role = 'review' GROUP BY id HAVING count(DISTINCT reviewer) > 1
    AND count(DISTINCT CASE decision WHEN 'reject' THEN 'reject'
        ELSE decision || ' ' || coalesce(corrected_error_steps, '-') END) > 1)
ORDER BY seq
"""
"""The run's candidates (not its gold items), in file order, that two or more reviewers reviewed in more than one
way over time: every disputed candidate is among them (two labels that differ differ here too; an accept
without corrections and one with them are told apart by the candidate's own error steps, read for these only),
found by SQLite over the decisions' id index, never by reading every decision or candidate."""


def to_adjudication(session) -> None:
    """Narrow the session to the disputed candidates of its runs (gold items left out); its decisions become
    adjudications, and the adjudicator sees only their own earlier adjudications as the status. Reads the
    decisions and candidates of the candidates reviewed in more than one way only (`SPLIT`)."""
    from injector.curate.review.queue import entry_columns

    session.role = "adjudication"
    for run in session.runs:
        rows = run.queue.read(SPLIT.format(columns=", ".join(entry_columns())))
        split = [run.queue.row_entry(row) for row in rows]
        if session.listed:  # already narrowed: keep to its entries
            kept = {entry.key for entry in run.entries}
            split = [entry for entry in split if entry.key in kept]
        per = run.store.reviews_for(entry.id for entry in split)
        run.entries = [entry for entry in split if entry.file == CANDIDATES_FILE and entry.id in per
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
