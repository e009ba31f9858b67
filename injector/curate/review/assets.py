"""The page's style and script, inline, and the vendored KaTeX files the server serves itself (no build step, no
CDN: the page makes no request but to its own server).

The script never builds HTML from data: it reads form values, sets `textContent` and copies the server's nodes for
KaTeX to typeset (KaTeX 0.19.1, MIT, in `static/katex/` with its licence; `static/katex/VENDORED.md` says how).
"""
from __future__ import annotations

import base64
import functools
import hashlib
from pathlib import Path

STATIC_DIR = Path(__file__).parent / "static"
KATEX_STYLESHEET = "/static/katex/katex.min.css"
KATEX_SCRIPTS = ("/static/katex/katex.min.js", "/static/katex/auto-render.min.js")
KATEX_ERROR_COLOR = "#a11"
# KaTeX shows a formula it cannot parse as its source in a span with style="color:<errorColor>"; the page's policy
# allows that one style attribute by its hash ('unsafe-hashes' covers exactly the hashed value, nothing else).
KATEX_ERROR_STYLE_HASH = "'sha256-" + base64.b64encode(hashlib.sha256(
    f"color:{KATEX_ERROR_COLOR}".encode()).digest()).decode() + "'"
CONTENT_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".woff2": "font/woff2"}


@functools.cache
def _static_files() -> dict[str, Path]:
    """URL path -> file, for every servable file under `static/` (listed once: no path is built from a request)."""
    return {"/static/" + path.relative_to(STATIC_DIR).as_posix(): path for path in sorted(STATIC_DIR.rglob("*"))
            if path.is_file() and path.suffix in CONTENT_TYPES}


def static_file(url_path: str) -> tuple[bytes, str] | None:
    """The bytes and content type of a vendored asset the page asks for, None when there is no such asset."""
    path = _static_files().get(url_path)
    return (path.read_bytes(), CONTENT_TYPES[path.suffix]) if path else None

PAGE_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #222; }
header { position: sticky; top: 0; background: #f4f4f4; border-bottom: 1px solid #ccc; padding: 6px 12px;
         display: flex; gap: 16px; align-items: baseline; flex-wrap: wrap; z-index: 1; }
.layout { display: flex; }
nav.list { width: 260px; flex: none; max-height: calc(100vh - 50px); overflow: auto; position: sticky; top: 44px;
           font-size: 12px; border-right: 1px solid #ddd; }
nav.list ol { padding-left: 36px; margin: 6px 0; }
nav.list li.accepted a { color: #176b2c; } nav.list li.rejected a { color: #a11; text-decoration: line-through; }
nav.list a[aria-current] { font-weight: bold; background: #ffe9a8; }
main { padding: 8px 16px; flex: 1; min-width: 0; }
h2 { font-size: 15px; margin: 14px 0 4px; } h3 { font-size: 13px; margin: 0 0 4px; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; font-family: ui-monospace, monospace; font-size: 13px; }
table.steps { border-collapse: collapse; width: 100%; table-layout: fixed; }
table.steps th, table.steps td { border: 1px solid #ddd; padding: 4px 6px; vertical-align: top; }
table.steps th:nth-child(1), table.steps th:nth-child(3) { width: 28px; } table.steps th:nth-child(5) { width: 120px; }
td.n { color: #777; text-align: right; }
tr.changed td { background: #fffbe6; } tr.error td { background: #fdecea; } tr.deleted td { background: #eee; }
del { background: #f6c1c1; text-decoration: line-through; } ins { background: #bfe8c4; text-decoration: none; }
.gone { color: #777; font-style: italic; }
.badge { display: inline-block; border-radius: 3px; padding: 0 4px; margin: 1px; font-size: 11px; color: #fff; }
.badge.changed { background: #b07d00; } .badge.error { background: #c62828; } .badge.deleted { background: #666; }
.explanation { margin-top: 4px; color: #5b3a00; font-family: system-ui, sans-serif; }
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
.status { font-weight: bold; } .status.accepted { color: #176b2c; } .status.rejected { color: #a11; }
.note { color: #7a5200; }
.actions { position: sticky; top: 44px; background: #fff; padding: 6px 0; border-bottom: 1px solid #eee; }
.actions textarea { width: 100%; }
.quick { margin: 2px; }
#message.bad { color: #a11; font-weight: bold; } #message.ok { color: #176b2c; }
.help { color: #777; font-size: 12px; }
.fix { display: none; } body.correcting .fix { display: inline-block; }
textarea.edit-text { width: 100%; font-family: ui-monospace, monospace; }
table.kv th { text-align: left; padding-right: 12px; } pre { white-space: pre-wrap; font-size: 12px; }
.empty { font-size: 16px; color: #555; }
.verdict { display: inline-block; border-radius: 3px; padding: 0 4px; font-size: 11px; color: #fff; background: #777;
           font-weight: normal; }
.v-missed, .v-original_flagged, .v-disputed { background: #c62828; }
.v-unparseable, .v-flagged, .v-early, .v-late { background: #b07d00; } .v-confirmed { background: #2e7d32; }
nav.list .verdict { font-size: 10px; padding: 0 3px; }
.route { border-radius: 3px; padding: 0 3px; font-size: 10px; color: #fff; background: #777; font-weight: normal; }
.route.r-review_first { background: #6a1b9a; } .route.r-fast_track { background: #2e7d32; }
#routing li.disagree { color: #a11; font-weight: bold; } #routing ul { margin: 2px 0; }
.judge-reason { font-family: system-ui, sans-serif; color: #333; margin: 2px 0; }
/* Math: the server's text (.tex-source, what a correction edits) and KaTeX's typeset copy (.tex-shown) */
.tex-shown { display: none; }
body.typeset .tex-shown { display: inline; font-family: system-ui, sans-serif; font-size: 14px; }
body.typeset .tex-source, body.typeset.raw .tex-shown { display: none; }
body.typeset.raw .tex-source { display: inline; }
.tex-shown .katex { font-size: 1.1em; }
ins .katex, del .katex { padding: 0 1px; }
tr.collapsed td { background: #f7f7f7; color: #555; } button.expand { font-size: 12px; }
#answers p { margin: 2px 0; } .warn { color: #a11; font-weight: bold; }
#checklist { margin: 4px 0; padding: 2px 8px; border: 1px solid #ccc; } #checklist label { display: block; }
#math-toggle { margin-left: auto; } body:not(.typeset) #math-toggle { display: none; }
"""

PAGE_JS = r"""
(() => {
  const body = document.body;
  const token = document.querySelector('meta[name="review-token"]').content;
  const key = body.dataset.key;
  const $ = (id) => document.getElementById(id);
  const message = $('message');

  // The token now sits in a cookie: keep it out of the address bar and the history.
  const here = new URL(location.href);
  if (here.searchParams.has('token')) {
    here.searchParams.delete('token');
    history.replaceState(null, '', here.pathname + here.search);
  }

  // Math: every .text block keeps the server's text and gets a copy beside it for KaTeX to typeset (the copy is made
  // from the server's nodes, never from HTML text). A formula KaTeX cannot parse stays as written, in red.
  if (typeof renderMathInElement === 'function') {
    // A block too long for KaTeX (.no-tex, marked by the server) stays as written: a huge formula froze the tab.
    for (const block of document.querySelectorAll('.text:not(.no-tex)')) {
      const source = document.createElement('span');
      source.className = 'tex-source';
      while (block.firstChild) source.appendChild(block.firstChild);
      const shown = source.cloneNode(true);
      shown.className = 'tex-shown';
      block.append(source, shown);
      try {
        renderMathInElement(shown, {
          delimiters: [{left: '$$', right: '$$', display: true}, {left: '\\[', right: '\\]', display: true},
                       {left: '\\(', right: '\\)', display: false}, {left: '$', right: '$', display: false}],
          throwOnError: false, errorColor: '@ERROR_COLOR@', strict: 'ignore', trust: false, maxExpand: 1000,
          maxSize: 50});
      } catch (error) {
        shown.remove();  // the source stays on its own
        source.className = '';
      }
    }
    body.classList.add('typeset');
  }
  const mathToggle = $('math-toggle');
  function showSource(raw) {
    body.classList.toggle('raw', raw);
    if (mathToggle) {
      mathToggle.setAttribute('aria-pressed', String(raw));
      mathToggle.textContent = raw ? 'typeset math (t)' : 'LaTeX source (t)';
    }
    try { localStorage.setItem('review-raw', raw ? '1' : '0'); } catch (error) { /* storage off: this page only */ }
  }
  let rawWanted = false;
  try { rawWanted = localStorage.getItem('review-raw') === '1'; } catch (error) { /* storage off */ }
  showSource(rawWanted);
  const toggleSource = () => showSource(!body.classList.contains('raw'));

  const say = (text, bad) => { if (message) { message.textContent = text; message.className = bad ? 'bad' : 'ok'; } };
  const go = (url) => { if (url) location.href = url; };

  let saving = false;
  async function decide(payload) {
    if (!key) return;
    if (saving) { say('NOT saved: the previous decision is still being saved', true); return; }
    // Replacing one's own decision is asked first, and the server checks it is the one this page showed.
    payload.seen = body.dataset.mine || '';
    if (body.dataset.mine) {
      if (!window.confirm('You already decided this candidate: ' + body.dataset.mineText +
                          '.\nReplace your decision?')) {
        say('not changed: your earlier decision stands', true);
        return;
      }
      payload.confirm = true;
    }
    saving = true;
    say('saving…', false);
    let response;
    try {
      response = await fetch('/api/decide', {
        method: 'POST',
        headers: {'Content-Type': 'application/json', 'X-Review-Token': token},
        body: JSON.stringify(Object.assign({key, cat: body.dataset.cat, status: body.dataset.status,
                                            verdict: body.dataset.verdict, order: body.dataset.order}, payload)),
      });
    } catch (error) {
      saving = false;
      say('NOT saved: the review server does not answer (' + error + '); restart `inject review`', true);
      return;
    }
    let data = {};
    try { data = await response.json(); } catch (error) { /* a non-JSON error page */ }
    if (!response.ok) {
      saving = false;
      say('NOT saved: ' + (data.error || ('HTTP ' + response.status)), true);
      return;
    }
    say('saved', false);
    go(data.next || location.href);
  }

  // Long solutions: unchanged runs expand on a click (all of them when correcting); `n` jumps to the next change.
  function expand(run) {
    for (const row of document.querySelectorAll('tr[data-in-run="' + run + '"]')) row.hidden = false;
    const line = document.querySelector('tr.collapsed[data-run="' + run + '"]');
    if (line) line.remove();
  }
  for (const button of document.querySelectorAll('button.expand')) {
    button.addEventListener('click', () => expand(button.dataset.run));
  }
  const changes = () => Array.from(document.querySelectorAll('tr.changed, tr.error, tr.deleted'));
  function nextChange() {
    const all = changes();
    if (!all.length) { say('no change in the steps', true); return; }
    const below = all.find((row) => row.getBoundingClientRect().top > 140);
    (below || all[0]).scrollIntoView({block: 'center'});
  }
  const firstChange = changes()[0];
  if (firstChange && firstChange.getBoundingClientRect().bottom > window.innerHeight) {
    firstChange.scrollIntoView({block: 'center'});
  }

  const panels = {reject: $('reject-panel'), correct: $('correct-panel')};
  function closePanels() {
    for (const panel of Object.values(panels)) if (panel) panel.hidden = true;
    body.classList.remove('correcting');
  }
  function openReject() {
    closePanels();
    if (!panels.reject) return;
    panels.reject.hidden = false;
    $('reject-reason').focus();
  }
  function openCorrect() {
    closePanels();
    if (!panels.correct) return;
    panels.correct.hidden = false;
    body.classList.add('correcting');
    for (const line of Array.from(document.querySelectorAll('tr.collapsed'))) expand(line.dataset.run);
    const first = document.querySelector('.err-box') || document.querySelector('.edit-btn');
    if (first) first.focus();
  }
  // On a candidate already accepted with corrections, `a` accepts it as shown: corrections included.
  const accept = () => (body.dataset.corrected === '1' ? saveCorrection() : decide({decision: 'accept'}));
  function reject() {
    const reason = $('reject-reason').value.trim();
    if (!reason) { say('give a reason: type one or pick a quick reason', true); return; }
    decide({decision: 'reject', reason});
  }
  function saveCorrection() {
    const corrected = Array.from(document.querySelectorAll('.err-box:checked'), (box) => Number(box.value));
    const edited = {};
    for (const area of document.querySelectorAll('textarea.edit-text')) edited[area.dataset.step] = area.value;
    const payload = {decision: 'accept', edited_steps: edited};
    if (document.querySelector('.err-box')) payload.corrected_error_steps = corrected;
    decide(payload);
  }

  const on = (id, handler) => { const element = $(id); if (element) element.addEventListener('click', handler); };
  on('accept', accept);
  on('reject', openReject);
  on('reject-save', reject);
  on('correct', openCorrect);
  on('correct-save', saveCorrection);
  on('skip', () => go(body.dataset.next));
  on('math-toggle', toggleSource);
  for (const button of document.querySelectorAll('.quick')) {
    button.addEventListener('click', () => {
      const area = $('reject-reason');
      const reason = button.dataset.reason;
      area.value = area.value.trim() ? area.value.trim() + '; ' + reason : reason;
      area.focus();
    });
  }
  for (const button of document.querySelectorAll('.edit-btn')) {
    button.addEventListener('click', () => {
      const area = document.querySelector('textarea.edit-text[data-step="' + button.dataset.step + '"]');
      area.hidden = !area.hidden;
      if (!area.hidden) area.focus();
    });
  }
  for (const select of document.querySelectorAll('.filters select')) {
    select.addEventListener('change', () => select.form.submit());
  }

  document.addEventListener('keydown', (event) => {
    const target = event.target;
    const typing = target.matches('textarea, select, input[type="text"]');
    if (event.key === 'Escape') { if (typing) target.blur(); closePanels(); return; }
    if (typing) {
      if (target.id === 'reject-reason' && event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        reject();
      }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    // The time of the previous key press outlives the page (sessionStorage), so presses that land on the next
    // candidate while the page moves on are caught too.
    const now = Date.now();
    let previous = 0;
    try {
      previous = Number(sessionStorage.getItem('review-last-key') || 0);
      sessionStorage.setItem('review-last-key', String(now));
    } catch (error) { /* storage off: this page only */ }
    if (event.key === 'a' && now - previous < Number(body.dataset.debounce || 0)) {
      event.preventDefault();
      say('NOT saved: "a" came ' + (now - previous) + ' ms after the previous key (a repeated press?); ' +
          'look at this candidate, then press "a" again to accept it', true);
      return;
    }
    const actions = {a: accept, r: openReject, e: openCorrect, t: toggleSource, s: () => go(body.dataset.next),
                     j: () => go(body.dataset.next), k: () => go(body.dataset.prev), n: nextChange};
    const action = actions[event.key];
    if (action) { event.preventDefault(); action(); }
  });
})();
""".replace("@ERROR_COLOR@", KATEX_ERROR_COLOR)
