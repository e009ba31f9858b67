"""The values and equation chains of a step's mathematics, as the offline engine's propagation reads them:
math spans (`$...$`, `\\(...\\)`, plain arithmetic outside `$`), value tokens, chains `a = b = c`, and their
evaluation with sympy (through math-verify's LaTeX parser). `propagate.py` walks the steps with them."""
from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from injector.util.foreign_errors import latex_failures, sympy_failures
from injector.util.errors import InjectorError
from injector.engines.offline.text import split_answer

# Math segments: $$...$$, $...$ (an escaped \$ is a dollar sign, not a delimiter), \(...\), \[...\].
MATH = re.compile(r"\$\$(.+?)\$\$|(?<!\\)\$((?:\\\$|[^$])+?)(?<!\\)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.DOTALL)
# A value token: \frac{p}{q} with integer p, q, or a plain number (optionally with a unary minus, decided later).
VALUE = re.compile(r"\\[dt]?frac\{(\d+)\}\{(\d+)\}|(?<![\w.])\d+(?:\.\d+)?(?![\d])(?!\.\d)")
RELATION = re.compile(r"\\(?:neq|ne|leq|le|geq|ge|approx|equiv|cong|sim|to|Rightarrow|implies|iff|pmod|mod|"
                      r"Longrightarrow|rightarrow|subset|in|propto)(?![A-Za-z])|[=<>]")
SEPARATOR = re.compile(r",|;|\\quad|\\qquad|\\text\{\s*(?:and|or)\s*\}")
ORDER = {"<", ">", "\\le", "\\leq", "\\ge", "\\geq", "\\neq", "\\ne"}
# Decorations that do not change a value: dollar signs, degrees, percent, text units, spacing, sizing.
DECORATION = re.compile(r"\\\$|\^\s*\{?\\circ\}?|\\%|\\text\{[^{}]*\}|\\mbox\{[^{}]*\}|\\[,;:! ]|\\left|\\right|"
                        r"\\displaystyle|\\big|\\Big")
LITERAL = re.compile(r"\s*(-?)\s*(?:\\[dt]?frac\{(\d+)\}\{(\d+)\}|(\d+(?:\.\d+)?))\s*")


# Claims in words about the numbers of a step ("both are divisible by 81", "dividing by 2", "reduces to") stay
# true only for the old values and cannot be recomputed: a step with one is not rewritten.
NUMBER_THEORY_PROSE = re.compile(r"divisible|\bdivid(?:e|es|ing)\b[^.$]*\bby\s+\d|\breduces?\b|lowest terms|"
                                 r"\bprimes?\b|common (?:factor|divisor|multiple)|\bfactors?\b", re.IGNORECASE)


class NotRecomputable(InjectorError):
    """The change cannot be carried through this step exactly."""


@dataclass
class Token:
    start: int
    end: int
    value: Fraction
    text: str
    """The token's own text, minus sign included when it is unary."""
    raised: bool
    """In an exponent, a subscript or a base-n numeral: not a quantity of the problem."""
    parts: tuple[tuple[int, int, int], ...] = ()
    """For \\frac{p}{q}: (start, end, value) of p and of q, which may be quantities in their own right."""


def _unary_minus_before(text: str, start: int) -> int | None:
    """Start of a unary minus right before `start` ("= -12", "(-7)", "$-4c"), else None."""
    k = start - 1
    while k >= 0 and text[k] == " ":
        k -= 1
    if k < 0 or text[k] != "-":
        return None
    j = k - 1
    while j >= 0 and text[j] == " ":
        j -= 1
    if j < 0 or text[j] in "=(,[{<>+*/:" or re.search(r"\\[A-Za-z]+$", text[: j + 1]):
        return k
    return None


def tokens(text: str, signed: bool = True) -> list[Token]:
    """The value tokens of a text, in order."""
    found = []
    for match in VALUE.finditer(text):
        start, end = match.start(), match.end()
        parts: tuple[tuple[int, int, int], ...] = ()
        if match.group(1) is not None:
            value = Fraction(int(match.group(1)), int(match.group(2)))
            parts = tuple((match.start(g), match.end(g), int(match.group(g))) for g in (1, 2))
        else:
            value = Fraction(match.group(0))
        before = text[:start].rstrip()
        raised = bool(re.search(r"[_^]\{?$", before) or re.match(r"\s*_", text[end:])
                      or re.search(r"[_^]\{[^{}]*$", text[:start]))
        minus = _unary_minus_before(text, start) if signed else None
        if minus is not None:
            start, value = minus, -value
        found.append(Token(start, end, value, text[start:end], raised, parts))
    return found


@lru_cache(maxsize=8192)
def values(text: str) -> frozenset[Fraction]:
    """Every value a text mentions, with and without its sign (a "-12" also shows a 12)."""
    found = tokens(text)
    parts = {Fraction(value) for t in found for _, _, value in t.parts}
    return frozenset({abs(t.value) for t in found} | {t.value for t in found} | parts)


def render(value: Fraction, like: str, in_math: bool) -> str:
    """`value` written like the token `like` (integer, decimal with as many places, or \\frac), exactly."""
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    bare = like.lstrip("- ")
    frac = re.match(r"\\([dt]?frac)", bare)
    if frac:
        if magnitude.denominator == 1:
            return f"{sign}{magnitude.numerator}"
        return f"{sign}\\{frac.group(1)}{{{magnitude.numerator}}}{{{magnitude.denominator}}}"
    places = len(bare.split(".")[1]) if "." in bare else 0
    for digits in range(places, 5):
        scaled = magnitude * 10**digits
        if scaled.denominator == 1:
            if digits == 0:
                return f"{sign}{scaled.numerator}"
            whole, part = divmod(scaled.numerator, 10**digits)
            return f"{sign}{whole}.{part:0{digits}d}"
    if not in_math:  # prose: "1250/3 minutes" (a new $...$ segment would change the step's shape)
        return f"{sign}{magnitude.numerator}/{magnitude.denominator}"
    return f"{sign}\\frac{{{magnitude.numerator}}}{{{magnitude.denominator}}}"


def substitute(text: str, changes: dict[Fraction, Fraction], in_math: bool,
               fractions: list[tuple[Fraction, Fraction]] | None = None) -> tuple[str, bool]:
    """`text` with every token whose value changed rewritten; whether anything was. A fraction whose numerator or
    denominator changed has a new value: (old, new) is appended to `fractions` when given."""
    out, last, hit = [], 0, False
    for token in tokens(text):
        # A fraction's own numerator or denominator changing wins over its value changing (6/16 -> 12/16, not 3/4).
        if token.value not in changes or any(value in changes for _, _, value in token.parts):
            parts = [Fraction(value) for _, _, value in token.parts]
            for k, (start, end, value) in enumerate(token.parts):  # \frac{6}{16} after 16 became 8: \frac{6}{8}
                if value in changes:
                    new_part = changes[Fraction(value)]
                    if new_part.denominator != 1 or new_part <= 0:
                        raise NotRecomputable(f"{value} in {token.text} would not be a whole number")
                    out.append(text[last:start] + str(new_part.numerator))
                    last, hit = end, True
                    parts[k] = new_part
            if parts and fractions is not None and parts[0] / parts[1] != abs(token.value):
                sign = -1 if token.value < 0 else 1
                fractions.append((token.value, sign * parts[0] / parts[1]))
            continue
        if token.raised:
            raise NotRecomputable(f"{token.text} occurs in an exponent or a subscript")
        new = render(changes[token.value], token.text, in_math)
        if new.startswith("-") and not token.text.startswith("-") and in_math:
            before = text[: token.start].rstrip()
            if before and (before[-1] not in "=(,[{" or re.search(r"\\[A-Za-z]+$", before)):
                new = f"({new})"  # "3 \cdot (-1)", "20 - (-1)"
        out.append(text[last: token.start] + new)
        last, hit = token.end, True
    out.append(text[last:])
    return "".join(out), hit


_NUM = r"\(?-?\d+(?:\.\d+)?\)?"
# Arithmetic written in prose, without $ ("60 * 7 = 420"): at least one "=", numbers and operators only.
PLAIN_ARITHMETIC = re.compile(rf"(?<![\w.$\\^_{{]){_NUM}(?:\s*[-+*/×]\s*{_NUM})*(?:\s*=\s*{_NUM}(?:\s*[-+*/×]\s*{_NUM})*)+"
                              r"(?![\w.]\d|\d|\^)")


def dollar_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each $-delimited (or \\( \\), \\[ \\]) math segment's content."""
    spans = []
    for match in MATH.finditer(text):
        group = next(g for g in range(1, 5) if match.group(g) is not None)
        spans.append((match.start(group), match.end(group)))
    return spans


def plain_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of arithmetic written in prose, outside math segments."""
    blanked = MATH.sub(lambda m: " " * len(m.group(0)), text)
    return [(m.start(), m.end()) for m in PLAIN_ARITHMETIC.finditer(blanked)]


def math_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each piece of mathematics: math segments and arithmetic written in prose, in order."""
    return sorted(dollar_spans(text) + plain_spans(text))


def _top_level_split(text: str, pattern: re.Pattern) -> list[tuple[int, int, str]]:
    """Split `text` at matches of `pattern` outside brackets: (start, end, separator-before)."""
    depth, parts, begin, before, k = 0, [], 0, "", 0
    while k < len(text):
        ch = text[k]
        if ch == "\\" and k + 1 < len(text) and not text[k + 1].isalpha():
            k += 2  # "\{", "\$", "\," are characters, not brackets or separators
            continue
        if ch in "{([":
            depth += 1
        elif ch in "})]":
            depth -= 1
        elif depth == 0:
            match = pattern.match(text, k)
            if match and match.end() > k:
                parts.append((begin, k, before))
                begin, before, k = match.end(), match.group(0), match.end()
                continue
        k += 1
    parts.append((begin, len(text), before))
    return parts


@dataclass
class Chain:
    """Expressions joined by relations: `exprs[i]` is (start, end) in the step text; `relations[i]` joins i-1, i."""

    exprs: list[tuple[int, int]]
    relations: list[str]
    in_dollars: bool = True
    """Inside $...$ (else arithmetic written in prose, where a fraction is written as $\\frac{p}{q}$)."""


def chains(text: str, spans: list[tuple[int, int]]) -> list[Chain]:
    found, dollars = [], set(dollar_spans(text))
    for seg_start, seg_end in spans:
        segment = text[seg_start:seg_end]
        for start, end, _ in _top_level_split(segment, SEPARATOR):
            piece = segment[start:end]
            parts = _top_level_split(piece, RELATION)
            exprs = [(seg_start + start + a, seg_start + start + b) for a, b, _ in parts]
            found.append(Chain(exprs, [rel for _, _, rel in parts[1:]], (seg_start, seg_end) in dollars))
    return found


def clean(latex: str) -> str:
    latex = DECORATION.sub(" ", latex)
    latex = re.sub(r"\\[dt]frac", r"\\frac", latex).replace("×", "\\times ")
    # Decimals as exact fractions, so sympy never rounds.
    return re.sub(r"(?<![\w.])(\d+)\.(\d+)", lambda m: f"\\frac{{{m.group(1)}{m.group(2)}}}{{1{'0' * len(m.group(2))}}}",
                  latex)


@lru_cache(maxsize=4096)
def parse(latex: str) -> Any:
    """A sympy expression for a LaTeX expression, or None when it does not parse."""
    from latex2sympy2_extended import latex2sympy
    from latex2sympy2_extended.latex2sympy2 import ConversionConfig

    source = clean(latex).strip()
    if not source or re.search(r"\\(?:pmod|mod|equiv|ldots|cdots|dots|in|cup|cap|infty|int|sum|prod|lim)\b", source):
        return None
    try:
        return latex2sympy(source, conversion_config=ConversionConfig(lowercase_symbols=False))
    except latex_failures():  # the parser raises bare Exceptions: "not an expression we can evaluate"
        return None


def evaluate(latex: str, env: dict[str, Any]) -> Any:
    """The exact value of a LaTeX expression under `env` (symbol name -> value), or None."""
    import sympy

    expr = parse(latex)
    if expr is None or not isinstance(expr, sympy.Expr):
        return None
    names = {s.name: s for s in expr.free_symbols}
    if any(name not in env for name in names):
        return None
    return _evaluate(latex, tuple(sorted((name, env[name]) for name in names)))


@lru_cache(maxsize=16384)
def _evaluate(latex: str, bindings: tuple) -> Any:
    import sympy

    expr = parse(latex)
    names = {s.name: s for s in expr.free_symbols}
    env = dict(bindings)
    try:
        value = sympy.nsimplify(expr.subs({names[n]: env[n] for n in names}).doit())
    except (KeyError,) + sympy_failures():  # a name without a value, or sympy cannot evaluate it
        return None
    return value if value.is_number and value.is_finite and value.is_real else None


def equal(a: Any, b: Any) -> bool:
    """Exact for rationals; otherwise numerically to 40 digits (sympy's simplify can take minutes on big powers)."""
    import sympy

    if isinstance(a, sympy.Rational) and isinstance(b, sympy.Rational):
        return bool(a == b)
    try:
        difference = sympy.N(a - b, 50)
        scale = max(abs(sympy.N(a, 20)), abs(sympy.N(b, 20)), 1)
        return bool(abs(difference) <= scale * sympy.Float("1e-40"))
    except sympy_failures():  # not comparable as numbers
        return False


def as_fraction(value: Any) -> Fraction | None:
    import sympy

    return Fraction(int(value.p), int(value.q)) if isinstance(value, sympy.Rational) else None


def literal(latex: str) -> bool:
    return LITERAL.fullmatch(DECORATION.sub(" ", unbox(latex))) is not None


def unbox(latex: str) -> str:
    """`\\boxed{x}` -> `x`."""
    return re.sub(r"^\s*\\boxed\{(.*)\}\s*$", r"\1", latex, flags=re.DOTALL)


def lone_symbol(latex: str) -> str | None:
    expr = parse(latex)
    import sympy

    return expr.name if isinstance(expr, sympy.Symbol) else None


def substitute_in_step(body: str, spans: list[tuple[int, int]], changes: dict,
                       fractions: list | None = None) -> str:
    """`body` with the changed values substituted inside its math spans and in its prose around them."""
    out, last = [], 0
    dollars = set(dollar_spans(body))
    for start, end in spans:
        out.append(substitute(body[last:start], changes, in_math=False, fractions=fractions)[0])
        out.append(substitute(body[start:end], changes, in_math=(start, end) in dollars, fractions=fractions)[0])
        last = end
    out.append(substitute(body[last:], changes, in_math=False, fractions=fractions)[0])
    return "".join(out)


ANSWER_VALUE = re.compile(r"(#+ *(?:Final )?Answer\b[:\s]*(?:\\n)*\s*)(.*?)(\s*)$", re.IGNORECASE | re.DOTALL)


def substitute_answer(tail: str, changes: dict) -> str:
    """The `# Answer` tail with the changed values substituted; an answer that is an expression cannot be."""
    if not tail:
        return tail
    match = ANSWER_VALUE.search(tail)
    if not match:
        return tail
    answer = match.group(2)
    new, hit = substitute(answer, changes, in_math=True)
    if hit and not literal(new):
        raise NotRecomputable("the final answer is an expression with a changed value in it")
    return tail[: match.start(2)] + new + tail[match.end(2):]


def refuse_half_carried(steps: list[str], edits: list[dict[str, Any]], changes: dict[Fraction, Fraction]) -> None:
    """A false value carried through every use or not at all: a rewritten later step that uses a changed value
    but still states, unchanged, a value the solution derived from the old one in words (the old value ± 1 or 2,
    twice or half it: "7 choices for the first role and 6 for the second" carried as "8 ... and 6") is refused."""
    for edit in edits[1:]:
        before, after = values(split_answer(steps[edit["step"] - 1])[0]), values(split_answer(edit["text"])[0])
        for old, new in changes.items():
            if old in before and new in after and old.denominator == 1 and old >= 3:
                kept = ({old - 2, old - 1, old + 1, old + 2, 2 * old, old / 2} & before & after) - set(changes)
                if kept:
                    raise NotRecomputable(f"step {edit['step']} keeps {min(kept)}, derived from {old} in words, "
                                          f"while {old} became {new}")
