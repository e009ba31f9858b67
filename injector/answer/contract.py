"""What an engine answers: one JSON object, parsed tolerantly and checked for shape.

Models asked for JSON often leave LaTeX backslashes unescaped. `\\sqrt` then makes the JSON invalid, and worse,
`\\frac`, `\\beta`, `\\neq`, `\\times` are valid JSON escapes that decode silently into a form feed, a backspace,
a newline or a tab. `escape_latex_backslashes` undoes that damage before any JSON decoding.

Top level: an answer that decodes to something other than an object (a list, a string) is a `parse_error`.
"""
from __future__ import annotations

import copy
import functools
import json
import re
from typing import Annotated, Any, Literal

import json_repair
from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from injector.model.choices import DEFAULT_OUTPUT_MODE, OUTPUT_MODES, OutputMode  # noqa: F401 (defined there for --help)
from injector.model.codes import ReasonCode
from injector.util.errors import InjectorError, UserError
from injector.util.json_bounds import (
    MAX_ANSWER_BYTES,
    MAX_JSON_DEPTH,
    NumberTooLong,
    bounded_decoder,
    too_deep,
    too_long,
)
from injector.taxonomy import Category


def check_output_mode(output_mode: str) -> str:
    """`output_mode`, if it is one of `OUTPUT_MODES`; a UserError otherwise."""
    if output_mode not in OUTPUT_MODES:
        raise UserError(f"unknown output mode {output_mode!r}: choose one of {', '.join(OUTPUT_MODES)}")
    return output_mode


def answer_mode(category: Category, output_mode: str) -> str:
    """The form the answer takes for `category` asked in `output_mode`."""
    return _answer_mode(category.rules.multi_solution, check_output_mode(output_mode))


def _answer_mode(multi_solution: bool, output_mode: str) -> str:
    # The one place of this rule: multi_solution always writes a whole new solution, whatever the output mode.
    return "full" if multi_solution else output_mode


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


def _json_type(value: Any) -> str:
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
        raise _parse_error(f"The answer is {_json_type(value)}, not a JSON object.")
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


def _reject_bool(value: Any) -> Any:
    # pydantic's lax mode reads true as 1; a boolean is no step number, so let it fail as one.
    if isinstance(value, bool):
        raise ValueError("a boolean is not a step number")
    return value


StepNumber = Annotated[int, BeforeValidator(_reject_bool)]
"""A 1-based step index; lax mode still accepts "3" and 3.0, which mean 3 unambiguously."""

_CONFIG = ConfigDict(extra="ignore", use_attribute_docstrings=True)


class FullAnswer(BaseModel):
    """The full form: the modified question and solution, which steps changed and which are wrong, and why."""

    model_config = _CONFIG

    modified_question: str
    """The question after the modification (the original, unchanged, unless the category changes it)."""
    modified_process: list[str]
    """Every step of the modified solution, in order, one string per step."""
    modified_steps: list[StepNumber]
    """1-based numbers of the steps of modified_process that were changed or inserted."""
    error_steps: list[StepNumber]
    """1-based numbers of the steps of modified_process that are erroneous."""
    reason: str
    """Why the modification is an error of this category."""
    explanations: dict[str, str] | None = None
    """Error step (its 1-based number in modified_process, as a string) -> what is wrong with it."""

    @field_validator("explanations", mode="before")
    @classmethod
    def _explanations_as_map(cls, value: Any) -> Any:
        # The strict schema cannot express a map, so it asks for [{"step": n, "text": ...}]; both forms are fine.
        if isinstance(value, list):
            return {str(item.get("step")): item.get("text") for item in value if isinstance(item, dict)}
        return value


class MultiSolutionAnswer(BaseModel):
    """The multi-solution form: a different complete correct solution."""

    model_config = _CONFIG

    modified_process: list[str]
    """Every step of the new solution, in order, one string per step."""
    reason: str = ""
    """How this solution differs from the original."""


EditOp = Literal["replace", "insert", "delete", "flag"]
"""What an edit does to the original steps."""


class Edit(BaseModel):
    """One edit of the original solution; `step` and `after` index the ORIGINAL steps (1-based, `after` from 0)."""

    model_config = _CONFIG

    op: EditOp
    step: StepNumber | None = None
    """The original step a replace, delete or flag acts on."""
    after: StepNumber | None = None
    """The original step an insert goes after (0: before the first step)."""
    text: str | None = None
    """The new step text of a replace or insert."""
    error: bool | None = False
    """Whether the replaced or inserted step is an error step (null means false)."""
    explanation: str | None = None
    """Why this step is an error (error edits and flags)."""

    @model_validator(mode="after")
    def _fields_of_op(self) -> "Edit":
        needs = {"replace": ("step", "text"), "insert": ("after", "text"), "delete": ("step",), "flag": ("step",)}
        missing = [name for name in needs[self.op] if getattr(self, name) is None]
        if missing:
            raise ValueError(f"a {self.op} edit needs {' and '.join(missing)}")
        return self

    @property
    def is_error(self) -> bool:
        return self.op == "flag" or bool(self.error)


class EditAnswer(BaseModel):
    """The edit form: only what changes; the toolkit applies it to the original steps."""

    model_config = _CONFIG

    question: str | None = None
    """The full new question, or null when it is unchanged."""
    edits: list[Edit]
    reason: str
    """Why the modification is an error of this category."""


_EXPECTED = {
    "modified_question": "a string",
    "modified_process": "a list of strings, one per step",
    "modified_steps": "a list of integers (1-based step numbers)",
    "error_steps": "a list of integers (1-based step numbers)",
    "reason": "a string",
    "edits": "a list of edit objects {op, step or after, text, error}",
    "question": "a string or null",
}


def _describe(error: ErrorDetails) -> str:
    location = error["loc"]
    field = str(location[0])
    expected = _EXPECTED.get(field, "a value of another type")
    if field == "edits" and len(location) > 1 and isinstance(location[1], int):
        where = f"edits: item {location[1] + 1}"
        if error["type"] == "value_error":
            return f"{where}: {error['msg'].removeprefix('Value error, ')}"
        if len(location) > 2:
            return f"{where}: {location[2]}: {error['msg']}"
    if error["type"] == "missing":
        return f"{field}: missing; expected {expected}"
    if len(location) > 1 and isinstance(location[1], int):
        shown = json.dumps(error["input"], ensure_ascii=False)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        return f"{field}: expected {expected}, but item {location[1] + 1} is {shown}"
    return f"{field}: expected {expected}, got {_json_type(error['input'])}"


def _schema_message(error: ValidationError) -> str:
    lines = list(dict.fromkeys(_describe(item) for item in error.errors()))
    return "; ".join(lines)


def _answer_model(multi_solution: bool,
                  edits: bool) -> type[FullAnswer] | type[MultiSolutionAnswer] | type[EditAnswer]:
    if multi_solution:
        return MultiSolutionAnswer
    return EditAnswer if _answer_mode(multi_solution, "edits" if edits else "full") == "edits" else FullAnswer


def parse_answer(text: str, *, multi_solution: bool = False,
                 edits: bool = False) -> FullAnswer | MultiSolutionAnswer | EditAnswer:
    """Parse a model reply and check its shape; raises `AnswerError` (`PARSE_ERROR` or `SCHEMA`)."""
    data = parse_json_object(text)
    model = _answer_model(multi_solution, edits)
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise AnswerError(ReasonCode.SCHEMA, _schema_message(error)) from None


def _strict_clean(node: Any) -> Any:
    """Drop what OpenAI strict mode rejects or does not need (defaults, titles); property names are kept."""
    if isinstance(node, list):
        return [_strict_clean(value) for value in node]
    if not isinstance(node, dict):
        return node
    cleaned = {key: _strict_clean(value) for key, value in node.items() if key not in ("default", "title")}
    if isinstance(node.get("properties"), dict):
        cleaned["properties"] = {name: _strict_clean(value) for name, value in node["properties"].items()}
    return cleaned


def response_schema(*, multi_solution: bool = False, edits: bool = False, explanations: bool = False) -> dict:
    """The JSON schema of an answer, valid as an OpenAI strict `json_schema` response format (a fresh copy).

    In edit mode the error edits carry an `explanation` key only when `explanations` is asked for: strict mode
    makes every key required, and a null explanation on every edit costs output tokens for nothing.
    """
    return json.loads(_schema_text(multi_solution, edits, explanations))  # a copy: providers may rewrite it


@functools.lru_cache(maxsize=8)
def _schema_text(multi_solution: bool, edits: bool, explanations: bool) -> str:
    return json.dumps(_build_schema(multi_solution, edits, explanations))


def _build_schema(multi_solution: bool, edits: bool, explanations: bool) -> dict:
    if _answer_mode(multi_solution, "edits" if edits else "full") == "edits":
        return copy.deepcopy(edit_answer_schema(explanations))
    schema = copy.deepcopy(_response_schema(multi_solution))
    if explanations and not multi_solution:
        schema["properties"]["explanations"] = {
            "type": "array",
            "description": "One entry per error step: its 1-based number in modified_process and what is wrong.",
            "items": {"type": "object", "properties": {"step": {"type": "integer"}, "text": {"type": "string"}},
                      "required": ["step", "text"], "additionalProperties": False},
        }
        schema["required"].append("explanations")
    return schema


def _edit_variant(op: str, index: str, *extra: str) -> dict[str, Any]:
    described = {
        "step": {"type": "integer", "description": "1-based original step."},
        "after": {"type": "integer", "description": "Insert after this original step (0: before the first)."},
        "text": {"type": "string", "description": "The new step text."},
        "error": {"type": "boolean", "description": "Whether this step is an error step."},
        "explanation": {"type": ["string", "null"], "description": "Why this step is an error, or null."},
    }
    keys = [index, *extra]
    return {
        "type": "object",
        "properties": {"op": {"type": "string", "enum": [op]}, **{key: described[key] for key in keys}},
        "required": ["op", *keys],
        "additionalProperties": False,
    }


@functools.lru_cache(maxsize=2)
def edit_answer_schema(explanations: bool = False) -> dict[str, Any]:
    """Written out rather than generated: strict mode needs every key of an object required, so each op is its own
    variant carrying only its own keys (six keys with nulls on every edit cost a quarter more output tokens;
    bench/edit_tokens.py)."""
    why = ("explanation",) if explanations else ()
    return {
        "type": "object",
        "properties": {
            "question": {"type": ["string", "null"], "description": "The full new question, or null when unchanged."},
            "edits": {
                "type": "array",
                "items": {"anyOf": [
                    _edit_variant("replace", "step", "text", "error", *why),
                    _edit_variant("insert", "after", "text", "error", *why),
                    _edit_variant("delete", "step"),
                    _edit_variant("flag", "step", *why),
                ]},
            },
            "reason": {"type": "string", "description": "Why the modification is an error of this category."},
        },
        "required": ["question", "edits", "reason"],
        "additionalProperties": False,
    }


@functools.lru_cache(maxsize=2)
def _response_schema(multi_solution: bool) -> dict:
    # Built once: pydantic's schema generation costs about a millisecond, as much as the rest of a unit.
    model = MultiSolutionAnswer if multi_solution else FullAnswer
    schema = _strict_clean(model.model_json_schema(mode="validation"))
    # A map from step to text cannot be expressed in strict mode: `response_schema` adds a list form on request.
    schema["properties"].pop("explanations", None)
    schema["required"] = list(schema["properties"])
    schema["additionalProperties"] = False
    return schema
