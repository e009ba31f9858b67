"""Equations in steps, evaluated: the arithmetic the circular_logic, redundancy and confidence operators rewrite.

Two kinds of result a step can derive:
- a computation `E = V` with E made only of numbers (`$11 + 3.60 = 14.60$`, `60 * 7 = 420` outside math);
- a variable's value `x = V` (`$x = 37.5$`), together with an equation in `x` that the value solves.
Every equation is evaluated with sympy (through latex2sympy, which math-verify installs); one that does not
parse, or does not hold, is not offered, so an operator never builds on arithmetic it could not check.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from injector.engines.offline.text import NUMBER, lower_first, split_answer
from injector.util.foreign_errors import latex_failures

# A value an operator can take as a result: a number, a negative number or a plain fraction.
VALUE = r"-?\s*(?:\\[dt]?frac\{\d+\}\{\d+\}|" + NUMBER.pattern + ")"
MATH = re.compile(r"\$([^$]+)\$")
# A bare computation outside math: "60 * 7 = 420", "10+5+1=16".
BARE = re.compile(r"(?<![\w.\\{^$])(\d[\d.\s+\-*/()]*?[+\-*/][\d.\s+\-*/()]*?)\s*=\s*(" + NUMBER.pattern + ")")
# What makes a math segment something other than plain equalities between numbers.
NOT_AN_EQUALITY = re.compile(r"\\(?:equiv|pmod|bmod|mod|approx|neq|ne|le|ge|leq|geq|lt|gt|pm|mp|in|cdots|ldots|dots|"
                             r"text|mathrm|circ|angle|triangle|infty|sum|prod|int|lim|log|ln|sin|cos|tan|%)|[<>%!,;:]|"
                             r"\^\\circ|_")
VARIABLE = r"[a-zA-Z]"
# Leading connectives a clause can shed before it is framed as an assumption ("So the total cost is ...").
CONNECTIVE = re.compile(r"^(?:(?:so|then|thus|hence|and|now|next|finally|first|similarly|therefore|right)\b,?\s*)+",
                        re.IGNORECASE)
# A clause that states a quantity: "the total cost is", "her speed is", "she travels" (not "That gives").
STATES = re.compile(r"^(?:the|her|his|their|our|each|one|angle|there|she|he|they|we)\b[^$]*$", re.IGNORECASE)


@dataclass(frozen=True)
class Computation:
    """`lhs = value` in a step's body, with `lhs` numeric; spans index the body."""

    step: int
    lhs: str
    value: str
    start: int  # where the written chain `A0 = ... = lhs = value` begins
    end: int  # just past `value`
    value_start: int
    in_math: bool


@dataclass(frozen=True)
class Solved:
    """A step's `var = value`, and an equation `left = right` in `var` (from this step or an earlier one) that
    the value satisfies."""

    step: int
    var: str
    value: str
    start: int
    end: int
    left: str
    right: str


@functools.lru_cache(maxsize=4096)
def evaluate(latex: str):
    """The exact sympy value of a numeric LaTeX expression, or None (not numeric, unparsable, not finite)."""
    import sympy
    from latex2sympy2_extended import latex2sympy

    latex = latex.replace("\\left", "").replace("\\right", "").replace("\\$", "").strip()
    if not latex or re.search(r"[a-zA-Z]", re.sub(r"\\[a-zA-Z]+", "", latex)):
        return None
    try:
        value = sympy.nsimplify(latex2sympy(latex.replace("*", " \\cdot ")).doit(), rational=True)
    except latex_failures():  # latex2sympy raises bare Exceptions; an unparsable expression is simply not offered
        return None
    return value if value.is_number and value.is_finite and value.is_real else None


def holds(lhs: str, rhs: str) -> bool:
    """Do two numeric LaTeX expressions have the same value (to the decimals `rhs` is written with)?"""
    left, right = evaluate(lhs), evaluate(rhs)
    if left is None or right is None:
        return False
    decimals = re.search(r"\.(\d+)", rhs)
    tolerance = 0.5 * 10 ** -len(decimals.group(1)) if decimals else 0
    return abs(float(left - right)) <= tolerance + 1e-12 if tolerance else left == right


def introduced(value: str, earlier: str) -> bool:
    """Is `value` new here, i.e. not written as a number in `earlier` text (the question and earlier steps)?"""
    # Loose on purpose: a number anywhere, even inside LaTeX braces ("\\frac{1}{2}"), counts as written.
    value = value.strip()
    if not re.fullmatch(NUMBER.pattern, value):
        return value.replace(" ", "") not in numbers_in(earlier)
    return re.search(r"(?<![\d.])" + re.escape(value) + r"(?!\d|\.\d)", earlier) is None


def numbers_in(text: str) -> set[str]:
    return {m.group(0).replace(" ", "") for m in re.finditer(VALUE, text)} | {m.group(0) for m in NUMBER.finditer(text)}


def computations(body: str, step: int) -> list[Computation]:
    """The numeric computations `E = V` written in a step body (V a number), each one checked to hold."""
    found: list[Computation] = []
    for math in MATH.finditer(body):
        segment = math.group(1)
        if NOT_AN_EQUALITY.search(segment):
            continue
        parts = segment.split("=")
        if len(parts) < 2:
            continue
        offset = math.start(1)
        position = offset + len(parts[0]) + 1
        for left, right in zip(parts, parts[1:]):
            value = right.strip()
            value_start = position + (len(right) - len(right.lstrip()))
            if NUMBER.fullmatch(value) and evaluate(left) is not None and holds(left, value) and \
                    not NUMBER.fullmatch(left.strip()):
                found.append(Computation(step, left.strip(), value, offset + len(segment) - len(segment.lstrip()),
                                         value_start + len(value), value_start, True))
            position += len(right) + 1
    for bare in BARE.finditer(_outside_math(body)):
        lhs, value = bare.group(1).strip(), bare.group(2)
        if holds(lhs, value):
            found.append(Computation(step, lhs, value, bare.start(1), bare.end(2), bare.start(2), False))
    return found


def solved_values(steps: list[str], question: str, step: int) -> list[Solved]:
    """`var = V` results of step `step` (V new there), each with an equation in `var` it satisfies: the last such
    equation before it in the step, else in the step before."""
    body = split_answer(steps[step])[0]
    found: list[Solved] = []
    for math in MATH.finditer(body):
        match = re.fullmatch(r"\s*(" + VARIABLE + r")\s*=\s*(" + VALUE + r")\s*", math.group(1))
        if not match:
            continue
        var, value = match.group(1), match.group(2).replace(" ", "")
        earlier = question + " " + " ".join(steps[:step]) + body[: math.start()]
        if not introduced(value, earlier) or len(re.findall(r"(?<![\w\\])" + var + r"\s*=", body)) > 1:
            continue
        # The equation an unchanged earlier step wrote comes first: a loop on it reads as a loop on the solution.
        for source in (split_answer(steps[step - 1])[0] if step else "", body[: math.start()]):
            equation = _equation_in(source, var, value)
            if equation:
                found.append(Solved(step, var, value, math.start(), math.end(), *equation))
                break
    return found


def _equation_in(text: str, var: str, value: str) -> tuple[str, str] | None:
    """The last equation `left = right` in `text`'s math that contains `var`, is more than `var = ...`, and holds
    when `var` is `value`."""
    for math in reversed(list(MATH.finditer(text))):
        segment = math.group(1)
        if segment.count("=") != 1 or NOT_AN_EQUALITY.search(segment):
            continue
        left, right = (side.strip() for side in segment.split("="))
        if not re.search(r"(?<![A-Za-z\\])" + var + r"(?![A-Za-z])", segment) or left == var or right == var:
            continue
        if re.search(r"(?<![A-Za-z\\])(?!" + var + r")[A-Za-z](?![A-Za-z])", re.sub(r"\\[a-zA-Z]+", "", segment)):
            continue  # another unknown
        if holds(substitute(left, var, value), substitute(right, var, value)):
            return left, right
    return None


def substitute(latex: str, var: str, value: str) -> str:
    """`latex` with `var` replaced by `value`, written as a person would: `4x` -> `4 \\cdot 37.5`,
    `x^2` with a negative or a fraction -> `(-3)^2`."""
    plain = NUMBER.fullmatch(value) is not None

    def put(match: re.Match) -> str:
        before, after = latex[: match.start()], latex[match.end():]
        written = value if plain or not after.lstrip().startswith("^") else f"({value})"
        if not plain and value.startswith("-") and re.search(r"[\d)}+\-]\s*$", before):
            written = f"({value})"
        if re.search(r"[\d)}]\s*$", before):
            written = " \\cdot " + written
        if re.match(r"\s*[\d(\\]", after) and not re.match(r"\s*\\(?:cdot|times|div|right|frac)", after):
            written += " \\cdot "
        return written

    return re.sub(r"(?<![A-Za-z\\])" + var + r"(?![A-Za-z])", put, latex)


def latex_number(value) -> str | None:
    """A sympy rational as a person writes it: `12`, `-3`, `\\frac{25}{3}`; None when it is not rational."""
    import sympy

    value = sympy.nsimplify(value, rational=True)
    if not value.is_rational:
        return None
    if value.is_integer:
        return str(int(value))
    sign = "-" if value < 0 else ""
    return f"{sign}\\frac{{{abs(value.p)}}}{{{value.q}}}"


def _outside_math(body: str) -> str:
    """`body` with its `$...$` math blanked out (same length, so spans still index the body)."""
    return MATH.sub(lambda m: " " * len(m.group(0)), body)


def inverse_equations(lhs: str, value: str, earlier: str, strict: bool = False) -> list[str]:
    """Equations that recover a known operand of `lhs` from `value`: `a + b` -> `value - b = a`, `a \\cdot b` ->
    `\\frac{value}{b} = a`, `\\frac{a}{b}` -> `value \\cdot b = a`; only operands written earlier count as known.
    `strict`: written earlier as a quantity (a standalone number), not only inside an exponent, a subscript or a
    LaTeX argument (`x^2` or `\\frac{1}{2}` establishes no 2)."""
    lhs = lhs.strip()
    fraction = re.fullmatch(r"\\[dt]?frac\{([^{}]+)\}\{([^{}]+)\}", lhs)
    if fraction:
        terms = [("/", [fraction.group(1).strip(), fraction.group(2).strip()])]
    else:
        terms = []
        for op, pattern in (("+", r"\+"), ("-", r"(?<=\s)-(?=\s)"), ("*", r"\\cdot|\\times|\*")):
            parts = [p.strip() for p in top_level_split(lhs, pattern)]
            if len(parts) >= 2 and all(parts) and (op != "-" or len(parts) == 2):
                terms.append((op, parts))
    # An operand is known when it is a number (or a computation of numbers) that the solution had already written.
    quantities = {m.group(0) for m in NUMBER.finditer(earlier)}
    known = lambda operand: evaluate(operand) is not None and NUMBER.search(operand) and \
        not any(introduced(n.group(0), earlier) or (strict and n.group(0) not in quantities)
                for n in NUMBER.finditer(operand))
    inverses = []
    for op, parts in terms:
        if len(terms) > 1 or not all(known(p) for p in parts):
            continue  # mixed operators: undoing one of them is not a plain inverse
        for k, kept in enumerate(parts):
            # An operand after a minus is bracketed when it is negative or a sum: `9 - (-16)`, `11 - (10-0)`.
            others = [_bracketed(p) if op in "+-" else p for p in parts[:k] + parts[k + 1:]]
            product = " \\cdot ".join(others)
            bare = kept[1:-1] if re.fullmatch(r"\(-?[\d.]+\)", kept) else kept
            if op == "+":
                inverse = f"{value} - {' - '.join(others)} = {bare}"
            elif op == "-":
                inverse = f"{value} + {_bracketed(parts[1])} = {bare}" if k == 0 else \
                    f"{parts[0]} - {_bracketed(value)} = {bare}"
            elif op == "*":
                inverse = f"\\frac{{{value}}}{{{product}}} = {bare}"
            else:
                if k == 1 and not re.fullmatch(r"\d+(?:\.\d+)?", parts[0]):
                    continue  # "\\frac{3+5}{4} = 2" reads as a puzzle, not as a step
                inverse = f"{value} \\cdot {parts[1]} = {parts[0]}" if k == 0 else \
                    f"\\frac{{{parts[0]}}}{{{value}}} = {parts[1]}"
            # The recovered operand is a number or a product of numbers ("10 \\cdot 2 = 5 \\cdot 4"), never a
            # difference that reads as a puzzle ("67 - 1 = 100-34").
            plain = r"-?\d+(?:\.\d+)?"
            if re.fullmatch(plain + r"(?:\s*(?:\\cdot|\\times|\*)\s*" + plain + ")*", bare) and \
                    holds(*inverse.rsplit(" = ", 1)):
                inverses.append(inverse)
    return inverses


def _bracketed(operand: str) -> str:
    """`operand` in parentheses when it is negative or a sum or difference, as an operand of `+` or `-`."""
    operand = operand.strip()
    if operand.startswith("-") or len(top_level_split(operand, r"\+|(?<=[\w})\s])-")) > 1:
        return f"({operand})"
    return operand


def top_level_split(text: str, pattern: str) -> list[str]:
    """`text` split at the matches of `pattern` outside braces and parentheses."""
    parts, depth, start = [], 0, 0
    for match in re.finditer(r"[{(]|[})]|" + pattern, text):
        token = match.group(0)
        if token in "{(":
            depth += 1
        elif token in "})":
            depth -= 1
        elif depth == 0:
            parts.append(text[start: match.start()])
            start = match.end()
    return parts + [text[start:]]


@dataclass(frozen=True)
class Stated:
    """The clause around a computation that states a quantity: "So the total cost is $11 + 3.60 = 14.60$
    dollars." -> prefix "the total cost is", suffix " dollars"; `start:end` is the computation's span to rewrite."""

    prefix: str
    suffix: str
    start: int
    end: int
    in_math: bool
    times: str
    """The multiplication sign the step writes (`\\cdot`, `\\times` or `*`)."""
    name: str = ""
    """What the chain names before its numbers ("m = " of `$m = 5 \\cdot 2 = 10$`), kept in every clause."""

    def clause(self, math: str) -> str:
        """The clause with `math` in place of the computation, in the step's notation."""
        return f"{lower_first(self.prefix)} {self.math(self.name + math)}{self.suffix}"

    def math(self, latex: str) -> str:
        """`latex` written as the step writes math: inside `$...$`, or as plain text (`a/b`, `*`)."""
        written = latex.replace("\\cdot", self.times).replace("  ", " ")
        if self.in_math:
            return f"${written}$"
        # `a/b` in prose: a numerator or denominator that is itself a computation goes in parentheses, so that
        # `546/(3 * 7 * 13)` does not read as `(546/3) * 7 * 13`.
        written = re.sub(r"\\[dt]?frac\{([^{}]+)\}\{([^{}]+)\}",
                         lambda m: f"{_operand(m.group(1))}/{_operand(m.group(2))}", written).replace("\\div", "/")
        return written


def _operand(text: str) -> str:
    """`text` as an operand of a prose `/`: parenthesized when it is more than one number."""
    text = text.strip()
    return text if re.fullmatch(r"-?\d+(?:\.\d+)?", text) else f"({text})"


def stated_quantity(body: str, computation: Computation) -> Stated | None:
    """The clause around a computation that is the whole of its math, or None when the words before it do not
    state a quantity or the math holds more than the computation."""
    if re.search(r"\bor\b", body):
        return None
    if computation.in_math:
        math_start = body.rfind("$", 0, computation.start)
        math_end = body.find("$", computation.end)
        if math_start < 0 or math_end < 0 or body[math_start + 1: computation.start].strip() or \
                body[computation.end: math_end].strip():
            return None  # the math holds more than the computation ("$b = \\frac{9-3}{3} = 2$")
        before, after, start = body[:math_start], body[math_end + 1:], math_start + 1
    else:
        before, after, start = body[: computation.start], body[computation.end:], computation.start
        if re.search(r"[=\\^]", after.split(".")[0]):
            return None
    # Of "A, so B is $...$", only the clause that states the quantity counts; of the words after, one sentence.
    prefix = CONNECTIVE.sub("", re.split(r",\s*(?:so|and|then)\s+", before)[-1]).strip()
    if not STATES.match(prefix):  # "After buying 1 more he has": the clause starts at its subject
        # The last subject: "if we simplify it we get" -> "we get"; not an object of a preposition ("the sum of
        # the first 39 terms is" is one subject, not "the first 39 terms is").
        subjects = [m for m in re.finditer(r"(?<![\w$])(?:the|her|his|their|our|there|she|he|they|we)\b"
                                           r"(?=[^$,;:]*$)", prefix)
                    if not re.search(r"\b(?:of|in|for|to|on|at|by|from|with|than|into|between|among)\s+$",
                                     prefix[: m.start()])]
        prefix = prefix[subjects[-1].start():] if subjects else prefix
    suffix = re.split(r"(?<!\d)\.(?!\d)", after)[0].rstrip().rstrip(".")
    if not STATES.match(prefix) or "$" in suffix or len(suffix) > 60 or re.search(r"\d", prefix[-3:]):
        return None
    times = "*" if "*" in computation.lhs else "\\times" if "\\times" in computation.lhs else \
        "*" if not computation.in_math else "\\cdot"
    # "the fact that $m = 5 \\cdot 2 = 10$": the leading sides that name the quantity stay ("... that $m = 10$").
    name = ""
    for side in body[start: computation.end].split("=")[:-1]:
        if not re.search(r"[A-Za-z]", re.sub(r"\\[A-Za-z]+", "", side)):
            break
        name += side.strip() + " = "
    return Stated(prefix, suffix, start, computation.end, computation.in_math, times, name)


def own_sentence(body: str, stated: Stated, math: str) -> str | None:
    """The step's own words with `math` (already in the step's notation, without `$`) in place of its computation,
    ending where the computation's sentence ends and without a final period: "So the total cost is $14.60$ dollars"
    for `math` "14.60". None when the step holds another equation or goes on after that sentence."""
    rest = body[stated.end:]
    if not re.fullmatch(r"\$?" + re.escape(stated.suffix) + r"\s*\.?\s*", rest):
        return None
    text = body[: stated.start] + stated.name + math + rest.rstrip().rstrip(".")
    return None if "=" in body[: stated.start] else text


def substituted(solved: Solved) -> str:
    """The equation a solved value satisfies, with the value put in: `2 \\cdot 5 + 2 = 12 = 3 \\cdot 5 - 3`."""
    left = substitute(solved.left, solved.var, solved.value)
    right = substitute(solved.right, solved.var, solved.value)
    middle = latex_number(evaluate(left)) if evaluate(left) is not None else None
    if right != solved.right and middle is not None and middle not in (left, right):
        return f"{left} = {middle} = {right}"  # both sides had the variable: show the common value
    return f"{left} = {right}"


def determines(solved: Solved) -> bool:
    """The equation pins the variable down: it fails for a different value (an identity proves nothing)."""
    other = evaluate(solved.value)
    if other is None:
        return False
    other = latex_number(other + 1)
    return other is not None and not holds(substitute(solved.left, solved.var, other),
                                           substitute(solved.right, solved.var, other))
