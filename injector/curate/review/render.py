"""The review page, rendered on the server: every piece of data text goes through `html.escape` here.

Questions and steps are untrusted (a model wrote them): they are shown as text, never interpreted. The page's
script only reads and sets text (textContent, form values) and copies the server's nodes, so it adds no HTML
either; KaTeX (served by the app itself, `assets.py`) then typesets the `$...$` formulas of that text in the copy,
and a toggle shows the source as written. A formula counts as one word in the difference, so a changed formula is
marked whole and never split between a highlight and the text around it (KaTeX could not typeset the halves).
"""
from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlencode

from injector.answer.align import align_steps
from injector.records.models import Candidate
from injector.triage.step_audit.routing import route
from injector.triage.verdicts import VerifyRecord
from injector.curate.review.adjudicate import side_by_side
from injector.curate.review.longview import answer_header, collapse
from injector.curate.review.diff import DiffBudget, _tex, e, word_diff
from injector.curate.review.assets import KATEX_SCRIPTS, KATEX_STYLESHEET, PAGE_CSS, PAGE_JS
from injector.curate.review.session import (ORDERS, QUICK_REASONS, STATUS_OF, STATUSES, Entry, NotACandidate,
                                            ReviewSession, View, Window)
from injector.curate.review.store import Decision, apply_decision
from injector.curate.review.routing_order import route_badge, routing_section

DEBOUNCE_MS = 350
"""A decision key pressed sooner than this after the previous key press is refused (a held or bounced key, or
presses landing on the next candidate as the page moves on), with a message, never saved."""
LIST_WINDOW = 100
"""Entries of the filtered list shown on each side of the current one."""

def page_url(key: str | None = None, view: View = View()) -> str:
    query = {"key": key, **view.query()} if key else view.query()
    return "/?" + urlencode(query) if query else "/"


def _rows(original: list[str], modified: list[str]) -> list[tuple[int | None, int | None]]:
    """(original index, modified index) pairs in reading order; None on the side a step is missing from."""
    alignment = align_steps(original, modified)
    counterpart = {**alignment.matched, **alignment.replaced}
    deleted = sorted(alignment.deleted)
    rows: list[tuple[int | None, int | None]] = []
    for j in range(len(modified)):
        i = counterpart.get(j)
        if i is not None:
            while deleted and deleted[0] < i:
                rows.append((deleted.pop(0), None))
        rows.append((i, j))
    rows.extend((i, None) for i in deleted)
    return rows


def _badge(text: str, kind: str) -> str:
    return f'<span class="badge {kind}">{e(text)}</span>'


def _steps_table(candidate: Candidate, shown: Candidate, multi: bool, budget: DiffBudget) -> str:
    original, modified = candidate.original_process, shown.modified_process
    changed, errors = set(shown.modified_steps), set(shown.error_steps)
    explanations = shown.explanations or {}
    flags = candidate.step_audit.findings if candidate.step_audit else []  # as the run recorded them
    out: list[tuple[str, int | None]] = []  # each row, and its step when it is a plain unchanged one
    for i, j in _rows(original, modified):
        if j is None:
            assert i is not None  # a row lacks one side at most: this one is a deleted original step
            out.append((f'<tr class="deleted"><td class="n">{i + 1}</td><td class="text{_tex(original[i])}">'
                       f'<del>{e(original[i])}</del>'
                       f'</td><td class="n"></td><td class="text gone">(deleted)</td>'
                       f'<td>{_badge("deleted", "deleted")}</td></tr>', None))
            continue
        step = j + 1
        if i is None:
            left, right = "", f"<ins>{e(modified[j])}</ins>"
        elif step in changed:
            left, right = word_diff(original[i], modified[j], budget)
        else:
            left, right = e(original[i]), e(modified[j])
        classes = " ".join(c for c, on in (("changed", step in changed), ("error", step in errors)) if on)
        marks = "".join([_badge("inserted" if i is None else "changed", "changed") if step in changed else "",
                         _badge("error", "error") if step in errors else ""])
        if step in errors and str(step) in explanations:
            right += f'<div class="explanation">explanation: {e(explanations[str(step)])}</div>'
        flagged = [flag for flag in flags if flag.step == step]
        for flag in flagged:
            marks += _badge("audit flag", "error")
            right += f'<div class="explanation audit-flag">step audit: {e(flag.message)}</div>'
        box = "" if multi else (f'<label class="fix"><input type="checkbox" class="err-box" value="{step}"'
                                f'{" checked" if step in errors else ""}> error</label>')
        # A newline right after <textarea> is dropped by the HTML parser, so one is added to keep the text exact.
        fix = (f'{box}<button type="button" class="fix edit-btn" data-step="{step}">edit text</button>'
               f'<textarea class="edit-text" data-step="{step}" rows="4" hidden>\n{e(modified[j])}</textarea>')
        out.append((f'<tr class="step {classes}" data-step="{step}"><td class="n">{"" if i is None else i + 1}</td>'
                    f'<td class="text orig{_tex(original[i] if i is not None else "")}">{left}</td>'
                    f'<td class="n">{step}</td><td class="text mod{_tex(modified[j])}">{right}</td>'
                    f'<td class="marks">{marks}{fix}</td></tr>', None if classes or i is None or flagged else step))
    return ('<table class="steps"><thead><tr><th>#</th><th>original</th><th>#</th><th>modified</th>'
            '<th>marks</th></tr></thead><tbody>' + "".join(collapse(out)) + "</tbody></table>")


def _question(candidate: Candidate, budget: DiffBudget) -> str:
    old, new = candidate.original_question, candidate.modified_question
    if old == new:
        return f'<section id="question"><h2>question</h2><div class="text{_tex(new)}">{e(new)}</div></section>'
    left, right = word_diff(old, new, budget)
    return ('<section id="question"><h2>question <span class="badge changed">edited</span></h2><div class="pair">'
            f'<div><h3>original</h3><div class="text{_tex(old)}">{left}</div></div>'
            f'<div><h3>modified</h3><div class="text{_tex(new)}">{right}</div></div></div></section>')


def _images(candidate: Candidate, key: str) -> str:
    """The trajectory's images: local files through the server (token-guarded), URLs as text, never fetched."""
    images = candidate.images
    if not images:
        return ""
    items = []
    for n, reference in enumerate(images):
        if reference.startswith("data:"):  # may be megabytes: its type and size, not its data
            head = reference.split(",", 1)[0]
            items.append(f'<li><code>{e(head[:80])},…</code> (embedded, {len(reference)} characters: not shown)</li>')
        elif "://" in reference:
            items.append(f'<li><code>{e(reference)}</code> (remote: not loaded)</li>')
        else:
            source = "/image?" + urlencode({"key": key, "n": n})
            items.append(f'<li><img class="figure" src="{e(source)}" alt="{e(reference)}"><br>'
                         f"<code>{e(reference)}</code></li>")
    return f'<section id="images"><h2>images</h2><ul class="images">{"".join(items)}</ul></section>'


def _decision_text(d: Decision) -> str:
    parts = [STATUS_OF[d.decision]]
    if d.corrected_error_steps is not None:
        parts.append(f"error steps corrected to {', '.join(map(str, d.corrected_error_steps)) or 'none'}")
    if d.edited_steps:
        parts.append(f"edited step {', '.join(map(str, d.edited_steps))}")
    if d.reason:
        parts.append(f"reason: {d.reason}")
    return "; ".join(parts) + f" ({d.reviewer or 'unknown reviewer'}, {d.time})"


def _provenance(provenance: dict[str, Any]) -> str:
    rows = [(name, provenance.get(name)) for name in ("engine", "model", "operator", "api_base_host", "cost")]
    attempts = provenance.get("attempts")
    items = "".join(f"<li>attempt {n}: {e(_codes(a.get('codes')) or 'accepted')}</li>"
                    for n, a in enumerate(attempts if isinstance(attempts, list) else [], 1) if isinstance(a, dict))
    table = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in rows if v not in (None, ""))
    dump = e(json.dumps(provenance, indent=2, ensure_ascii=False))
    return (f'<section><h2>provenance</h2><table class="kv">{table}</table><ul class="attempts">{items}</ul>'
            f"<details><summary>all provenance</summary><pre>{dump}</pre></details></section>")


def _codes(codes: Any) -> str:
    """An attempt's reason codes as text (provenance is free-form: a received file may hold anything there)."""
    return ", ".join(map(str, codes)) if isinstance(codes, list) else str(codes or "")


def _progress(session: ReviewSession) -> str:
    per = session.progress()
    total = sum(c[0] for c in per.values())
    accepted, rejected = sum(c[1] for c in per.values()), sum(c[2] for c in per.values())
    rows = "".join(f"<tr><td>{e(cat)}</td><td>{c[1] + c[2]} / {c[0]}</td><td>{c[1]}</td><td>{c[2]}</td></tr>"
                   for cat, c in per.items())
    return (f'<details class="progress"><summary id="progress">reviewed {accepted + rejected} / {total} '
            f"(accepted {accepted}, rejected {rejected})</summary><table><tr><th>category</th><th>reviewed</th>"
            f"<th>accepted</th><th>rejected</th></tr>{rows}</table></details>")


def _options(values: list[str] | tuple[str, ...], chosen: str, labels: dict[str, str] | None = None) -> str:
    return "".join(f'<option value="{e(v)}"{" selected" if v == chosen else ""}>{e((labels or {}).get(v, v))}</option>'
                   for v in values)


def _filters(session: ReviewSession, view: View) -> str:
    cats = _options(["", *session.categories()], view.cat, {"": "all"})
    states = _options(STATUSES, view.status or "all")
    triage = ""
    if session.verified:  # the verdict filter only means something once `inject verify` ran
        verdicts = _options(["", *session.verdicts()], view.verdict, {"": "all"})
        triage = f' <label>verdict <select name="verdict" id="f-verdict">{verdicts}</select></label>'
    if not session.listed and not session.planned:  # a reviewer's queue keeps its plan's order
        orders = _options(ORDERS, session.order(view), {"routing": "disagreements first", "verdict": "by verdict",
                                                        "file": "as written"})
        triage += f' <label>order <select name="order" id="f-order">{orders}</select></label>'
    return ('<form class="filters" method="get" action="/"><label>category <select name="cat" id="f-cat">'
            f'{cats}</select></label> <label>status <select name="status" id="f-status">{states}</select></label>'
            f'{triage} <noscript><button>filter</button></noscript></form>')


def _verdict_badge(verdict: str) -> str:
    return f'<span class="verdict v-{e(verdict)}" title="the blind judge\'s verdict">{e(verdict)}</span>'


def _side_list(session: ReviewSession, window: Window, latest: dict[str, Decision], view: View) -> str:
    out = ['<nav class="list"><ol start="%d">' % (window.start + 1)]
    for n, entry in enumerate(window.entries):
        decision = latest.get(entry.key)
        state = STATUS_OF[decision.decision] if decision else "unreviewed"
        current = ' aria-current="true"' if n == window.current else ""
        verdict = session.verdict_name(entry)  # as indexed: the record itself is read for the shown one only
        badge = _verdict_badge(verdict) + " " if session.verified else ""
        badge += "" if session.runs[entry.run].blind else route_badge(entry.groups.get("routing"))
        # the title repeats ids the narrow column cuts
        out.append(f'<li class="{state}" data-verdict="{e(verdict)}">{badge}'
                   f'<a href="{e(page_url(entry.key, view))}" title="{e(entry.id)}"{current}>{e(entry.id)}</a></li>')
    out.append("</ol></nav>")
    return "".join(out)


def _triage(record: VerifyRecord | None) -> str:
    """The blind judge's verdict on the candidate, its reason, and what it answered (`inject verify`)."""
    if record is None:
        return ""
    def step(answer: Any) -> str:
        if answer is None or answer.first_error_step is None:
            return "no answer"
        return "none (-1)" if answer.first_error_step == -1 else f"step {answer.first_error_step}"
    facts = [f"on the modified solution: {step(record.judge_modified)}"]
    if record.declared_first_error is not None:
        facts.append(f"declared first error: step {record.declared_first_error}")
    if record.kind != "alternative":
        facts.append(f"on the original: {step(record.judge_original)}")
    if len(record.votes) > 1:
        facts.append("votes: " + ", ".join("?" if v is None else str(v) for v in record.votes))
    if record.mc:
        facts.append("Monte Carlo: " + ", ".join(f"{k} {v}" for k, v in record.mc.model_dump(exclude_unset=True).items()))
    original = record.judge_original.reason if record.judge_original and record.verdict == "original_flagged" else ""
    reasons = f'<div class="text judge-reason">reason: {e(record.reason)}</div>' if record.reason else ""
    if original:
        reasons += f'<div class="text judge-reason">reason on the original: {e(original)}</div>'
    return (f'<section id="triage"><h2>blind judge: {_verdict_badge(record.verdict)} <code>{e(record.kind)}</code></h2>'
            f'<p class="help">{e("; ".join(facts))}</p>{reasons}</section>')


def _routing(session: ReviewSession, entry: Entry, candidate: Candidate) -> str:
    """The triage routing of the candidate (not in a reviewer's queue, blind to the judge)."""
    return "" if session.runs[entry.run].blind else routing_section(route(entry.id, entry.category, candidate.step_audit,
                                                           session.verdict(entry)))


def _actions(multi: bool) -> str:
    quick = "".join(f'<button type="button" class="quick" data-reason="{e(r)}">{e(r)}</button>' for r in QUICK_REASONS)
    correct = "" if multi else "mark error steps with the boxes, "
    return (
        '<section class="actions"><button type="button" id="accept">accept (a)</button> '
        '<button type="button" id="reject">reject (r)</button> '
        '<button type="button" id="correct">correct (e)</button> '
        '<button type="button" id="skip">skip (s)</button> '
        '<span class="help">j / k: next / previous; n: next change; t: LaTeX source; Esc: close</span>'
        '<div id="reject-panel" hidden><div class="quick-reasons">' + quick + '</div>'
        '<textarea id="reject-reason" rows="2" placeholder="why (Ctrl+Enter to reject)"></textarea>'
        '<button type="button" id="reject-save">reject with this reason</button></div>'
        f'<div id="correct-panel" hidden>Correcting: {correct}"edit text" to change a step; '
        'the result is re-validated. <button type="button" id="correct-save">accept with corrections</button></div>'
        '<p id="message" role="status"></p></section>'
    )


def render_page(session: ReviewSession, *, key: str | None, view: View, token: str, nonce: str) -> str:
    window = session.window(view, key, LIST_WINDOW, LIST_WINDOW)
    entry, position = window.at(0), window.position
    # Only the decisions of the candidates this page shows are read, never the whole store.
    latest = session.latest_for(window.entries)
    nav = {name: (page_url(found.key, view) if (found := window.at(step)) else "")
           for name, step in (("next", 1), ("prev", -1))}
    head = (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>inject review</title>'
            f'<meta name="review-token" content="{e(token)}">'
            f'<link rel="stylesheet" href="{KATEX_STYLESHEET}" nonce="{nonce}">'
            f'<style nonce="{nonce}">{PAGE_CSS}</style></head>')
    decision = latest.get(entry.key) if entry else None
    corrected = bool(decision and (decision.corrected_error_steps is not None or decision.edited_steps))
    own = session.own(entry) if entry else None
    mine = (f'data-mine="{e(own.time)}" data-mine-text="{e(_decision_text(own))}" ' if own else 'data-mine="" ')
    data = (f'data-key="{e(entry.key if entry else "")}" data-cat="{e(view.cat)}" data-status="{e(view.status)}" '
            f'data-verdict="{e(view.verdict)}" data-order="{e(view.order)}" data-corrected="{int(corrected)}" '
            f'data-next="{e(nav["next"])}" data-prev="{e(nav["prev"])}" {mine}'
            f'data-debounce="{DEBOUNCE_MS}"')
    toggle = ('<button type="button" id="math-toggle" aria-pressed="false" title="show the LaTeX source, as a '
              'correction edits it">LaTeX source (t)</button>')
    kind = "adjudication queue" if session.role == "adjudication" else "queue"
    queue = (f'<span class="queue" id="queue">{kind} of {e(session.reviewer)}</span> '
             if any(run.blind for run in session.runs) else "")
    top = (f"<header><strong>inject review</strong> {queue}{_progress(session)} {_filters(session, view)} "
           f'<span class="position">{position + 1 if entry else 0} of {window.total} in this view</span>{toggle}'
           "</header>")
    if entry is None:
        main = '<main><p class="empty">No candidate matches these filters.</p></main>'
        side = ""
    else:
        try:
            main = _candidate(session, entry, latest.get(entry.key))
        except NotACandidate as exc:  # validated when shown: a line that is none says so, and is not decided
            main = f'<main><p class="note" id="not-a-candidate">{e(exc)}</p></main>'
        side = _side_list(session, window, latest, view)
    scripts = "".join(f'<script nonce="{nonce}" src="{src}"></script>' for src in KATEX_SCRIPTS)
    return (f'{head}<body {data}>{top}<div class="layout">{side}{main}</div>'
            f'{scripts}<script nonce="{nonce}">{PAGE_JS}</script></body></html>')


def _candidate(session: ReviewSession, entry: Entry, latest: Decision | None) -> str:
    candidate = session.candidate(entry)
    shown = apply_decision(candidate, latest) if latest and latest.decision == "accept" else candidate
    category = session.category(entry)
    multi = bool(category and category.rules.multi_solution)
    run = session.runs[entry.run]
    state = STATUS_OF[latest.decision] if latest else "unreviewed"
    about = (f"<h2>{e(category.name)} <code>{e(category.id)}</code></h2><p>{e(category.definition)}</p>"
             if category else f"<h2><code>{e(entry.category)}</code></h2><p>(not in the taxonomy)</p>")
    note = f'<p class="note">{e(run.taxonomy_note)}</p>' if run.taxonomy_note else ""
    where = f' in <code>{e(run.path)}</code>' if len(session.runs) > 1 else ""
    status = f'<p class="status {state}" id="status">{e(_decision_text(latest) if latest else "unreviewed")}</p>'
    if latest and latest.decision == "accept" and shown.error_steps != candidate.error_steps:
        status += f'<p class="note">the model marked step {e(", ".join(map(str, candidate.error_steps)))}</p>'
    warnings = "".join(f"<li>{e(w)}</li>" for w in shown.warnings)
    history = "".join(f"<li>{e(_decision_text(d))}</li>" for d in session.history(entry))
    history = f'<ol class="history">{history}</ol>' if history else "<p>none yet</p>"
    budget = DiffBudget()
    steps = _steps_table(candidate, shown, multi, budget)
    if budget.whole:
        steps = ('<p class="note" id="diff-whole">long changes are marked whole, not word by word (a word diff of '
                 'them would take too long)</p>' + steps)
    return (
        f'<main><section class="about"><p class="id">candidate <code id="cid">{e(entry.id)}</code>{where}</p>'
        f"{about}{note}{status}</section>{side_by_side(session, entry)}{_routing(session, entry, candidate)}"
        f"{_triage(session.verdict(entry))}"
        f"{_actions(multi)}"
        f"{answer_header(candidate, shown, category)}{_question(candidate, budget)}{_images(candidate, entry.key)}"
        f"<section><h2>steps</h2>{steps}</section>"
        f'<section><h2>model\'s reason</h2><div class="text{_tex(candidate.reason)}">{e(candidate.reason)}</div>'
        '</section>'
        f'<section><h2>warnings</h2><ul>{warnings or "<li>none</li>"}</ul></section>'
        f'{"" if run.blind else _provenance(candidate.provenance.model_dump(mode="json", exclude_unset=True))}'
        f"<section><h2>decisions</h2>{history}</section></main>"
    )
