"""Tolerant parsing of an engine's reply: LaTeX backslashes repaired, a code fence stripped, one JSON object read.

Models asked for JSON often leave LaTeX backslashes unescaped. `\\sqrt` then makes the JSON invalid, and worse,
`\\frac`, `\\beta`, `\\neq`, `\\times` are valid JSON escapes that decode silently into a form feed, a backspace,
a newline or a tab. `escape_latex_backslashes` undoes that damage before any JSON decoding.
"""
from __future__ import annotations

import json
import re
from typing import Any

import json_repair

from injector.model.codes import ReasonCode
from injector.util.errors import InjectorError
from injector.util.json_bounds import MAX_ANSWER_BYTES, MAX_JSON_DEPTH, NumberTooLong, bounded_decoder, too_deep, too_long


class AnswerError(InjectorError):
    """The answer could not be used; `message` is worded to be sent back to the model as feedback."""

    code: ReasonCode
    """`PARSE_ERROR` (no JSON object could be read) or `SCHEMA` (the object has the wrong shape)."""
    message: str

    def __init__(self, code: ReasonCode, message: str):
        self.code, self.message = code, message
        super().__init__(f"{code}: {message}")


# LaTeX / amsmath / amssymb commands (plus common text-mode and package ones) whose name starts with a JSON escape
# letter. A backslash followed by one of these whole names is LaTeX, not an escape; commands starting with any
# other letter need no list, since `\c`, `\s`, ... are invalid JSON escapes anyway. Single-letter accents (`\b`,
# `\t`, `\u`, `\r`) are left out on purpose: `\n`, `\t` alone must stay a newline and a tab.
_LATEX_B = """
    backepsilon backprime backsim backsimeq backslash bar barwedge baselineskip bbox because begin beta beth
    between bf bfseries big bigbreak bigcap bigcirc bigcup bigg biggl biggm biggr bigl bigm bigodot bigoplus
    bigotimes bigr bigskip bigsqcup bigstar bigtriangledown bigtriangleup biguplus bigvee bigwedge binom
    blacklozenge blacksquare blacktriangle blacktriangledown blacktriangleleft blacktriangleright bm bmod
    boldmath boldsymbol bot bowtie box boxdot boxed boxminus boxplus boxtimes brace bracevert brack break breve
    buildrel bullet bumpeq
"""
_LATEX_F = """
    fallingdotseq fbox fboxsep fill flat fontsize footnote footnotesize forall frac frak framebox frown
"""
_LATEX_N = """
    nabla natural ncong ne nearrow neg negmedspace negthickspace negthinspace neq newcommand newenvironment
    newline newpage nexists ngeq ngeqq ngeqslant ngtr ni nLeftarrow nleftarrow nLeftrightarrow nleftrightarrow
    nleq nleqq nleqslant nless nmid nobreak noindent nolimits nonumber normalfont normalsize not notag notin
    nparallel nprec npreceq nRightarrow nrightarrow nshortmid nshortparallel nsim nsubseteq nsubseteqq nsucc
    nsucceq nsupseteq nsupseteqq ntriangleleft ntrianglelefteq ntriangleright ntrianglerighteq nu null
    numberwithin nVDash nVdash nvDash nvdash nwarrow
"""
_LATEX_R = """
    raggedleft raggedright raisebox rangle rbrace rbrack rceil ref renewcommand restriction rfloor rgroup
    rhd rho right rightarrow rightarrowtail rightharpoondown rightharpoonup rightleftarrows rightleftharpoons
    rightrightarrows rightsquigarrow rightthreetimes risingdotseq rlap rm rmfamily rmoustache root rtimes rule
    rVert rvert
"""
_LATEX_T = """
    tag tan tanh tau tbinom text textasciicircum textasciitilde textbackslash textbf textcolor textcopyright
    textdegree textemdash textendash textgreater textit textless textmd textnormal textperiodcentered
    textquotedbl textregistered textrm textsc textsf textsl textstyle texttrademark texttt textup textwidth
    tfrac therefore theta thetasym thickapprox thicksim thickspace thinspace thispagestyle tilde times tiny to
    today top triangle triangledown triangleleft trianglelefteq triangleq triangleright trianglerighteq tt
    ttfamily twoheadleftarrow twoheadrightarrow
"""
_LATEX_U = """
    ulcorner underbrace underline underset unit unlhd unrhd upalpha uparrow upbeta updelta updownarrow upgamma
    upharpoonleft upharpoonright uplambda uplus upmu uppi upshape upsigma upsilon uptheta upuparrows urcorner
    usepackage
"""
LATEX_COMMANDS: frozenset[str] = frozenset(
    " ".join((_LATEX_B, _LATEX_F, _LATEX_N, _LATEX_R, _LATEX_T, _LATEX_U)).split()
)
"""LaTeX command names (without the backslash) that begin with b, f, n, r, t or u."""

_BACKSLASH_RUN = re.compile(r"\\+")
_LETTER_RUN = re.compile(r"[A-Za-z]*")
_HEX4 = re.compile(r"[0-9A-Fa-f]{4}")


def _is_json_escape(text: str, after: int) -> bool:
    """Whether the single backslash just before `after` starts an escape JSON defines and the model meant."""
    if after >= len(text):
        return False
    char = text[after]
    if char in '"/':
        return True
    if char not in "bfnrtu":
        return False  # `\(`, `\sqrt`, `\ `, ...: invalid JSON, so it can only be LaTeX
    # LaTeX, like this rule, reads the longest run of letters as the command name: `\neq5` is `neq`,
    # `\nThe` is `nThe` (no command, so a newline and "The").
    letters = _LETTER_RUN.match(text, after)
    assert letters is not None  # `[A-Za-z]*` matches everywhere
    if letters.group() in LATEX_COMMANDS:
        return False
    if char == "u":
        return _HEX4.match(text, after + 1) is not None
    return True


def escape_latex_backslashes(text: str) -> str:
    """Double every lone backslash that is LaTeX rather than a JSON escape, so `json.loads` keeps it literally.

    An even run of backslashes is escaped pairs and is left alone; in an odd run the last one is judged by what
    follows it (see `_is_json_escape`).
    """
    pieces: list[str] = []
    last = 0
    for run in _BACKSLASH_RUN.finditer(text):
        if len(run.group()) % 2 == 1 and not _is_json_escape(text, run.end()):
            pieces.append(text[last : run.end()])
            pieces.append("\\")
            last = run.end()
    pieces.append(text[last:])
    return "".join(pieces)


_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
# strict=False lets raw newlines and tabs stand inside strings, a common and unambiguous slip.
_DECODER = bounded_decoder(strict=False)  # integers past MAX_INT_DIGITS raise NumberTooLong
_ANSWER_WITH_ONE_OBJECT = "Answer with exactly one JSON object and nothing else."


def _parse_error(detail: str) -> AnswerError:
    return AnswerError(ReasonCode.PARSE_ERROR, f"{detail} {_ANSWER_WITH_ONE_OBJECT}")


def _strip_fence(text: str) -> str:
    """The content of the first code fence that holds a `{` (else of the first fence), else the text itself."""
    fences = [fence.group(1).strip() for fence in _FENCE.finditer(text)]
    return next((fence for fence in fences if "{" in fence), fences[0] if fences else text.strip())


def _outermost_object(text: str) -> dict | None:
    """The longest `{...}` in the text that decodes; braces inside strings are handled by the decoder."""
    best: dict | None = None
    best_length = 0
    position = text.find("{")
    while position != -1:
        try:
            value, end = _DECODER.raw_decode(text, position)
        except json.JSONDecodeError:
            position = text.find("{", position + 1)
            continue
        if end - position > best_length:
            best, best_length = value, end - position
        # everything inside a decoded object is shorter than it, so skip past it
        position = text.find("{", end)
    return best


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def parse_json_object(text: str) -> dict:
    """The JSON object the model meant, from a reply that may carry fences, prose and unescaped LaTeX."""
    if not isinstance(text, str) or not text.strip():
        raise _parse_error("The answer is empty.")
    # Bounded before any decoding: the decoders recurse per nesting level (see json_bounds).
    if too_long(text):
        raise _parse_error(f"The answer is longer than {MAX_ANSWER_BYTES // (1024 * 1024)} MB.")
    if too_deep(text):
        raise _parse_error(f"The answer nests lists or objects more than {MAX_JSON_DEPTH} levels deep.")
    try:
        return _decode_object(text)
    except RecursionError:
        # Backstop for nesting the scan cannot see (brackets inside a string that a fallback decodes from).
        raise _parse_error(f"The answer nests lists or objects more than {MAX_JSON_DEPTH} levels deep.") from None
    except NumberTooLong as exc:
        raise _parse_error(f"The answer {exc}; step numbers are small integers.") from None


def _decode_object(text: str) -> dict:
    escaped = escape_latex_backslashes(text)
    body = _strip_fence(escaped)
    try:
        value = _DECODER.decode(body)
    except json.JSONDecodeError:
        pass
    else:
        if isinstance(value, dict):
            return value
        raise _parse_error(f"The answer is {json_type(value)}, not a JSON object.")
    found = _outermost_object(escaped)
    if found is not None:
        return found
    if "{" in body:
        # Last resort for broken JSON (trailing commas, missing quotes or commas, truncation). Its guesses can
        # read brackets the depth scan took for string text (after a stray quote), and it reports the recursion
        # that follows as a ValueError: whatever it cannot repair is unreadable, not a crash.
        try:
            repaired = json_repair.loads(body)
        except (RecursionError, ValueError):
            repaired = None
        if isinstance(repaired, dict):
            return repaired
    raise _parse_error("The answer does not contain a readable JSON object.")
