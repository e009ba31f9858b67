"""Exact values of relation sides: a fast path for plain arithmetic (exact fractions, no sympy) and a sympy path
(through latex2sympy) for the rest, with the parser's known pitfalls guarded before parsing.

Pitfalls guarded (each has a test pinned to the parser version): juxtaposed numbers (`2(3)(4)` is a product, not
the mixed number 9; `\\binom52\\binom31` is 30, not 13); a bare `e` or any other letter is a variable, not
Euler's number; `58_9` is a number in base 9; `30^\\circ` is degrees; `f(3)` is an unknown function (not closed);
`17\\%5` is a remainder, `50\\%` a percentage.
"""
from __future__ import annotations

import math
import re
from fractions import Fraction

from injector.util.errors import InjectorError
from injector.util.foreign_errors import latex_failures

Value = Fraction

_MAX_EXPONENT = 4096
_MAX_FACTORIAL = 500
# Commands that may stand in a closed expression; any other command (or any letter outside one) makes the side
# not closed as far as this audit can tell, and the link is skipped.
_ALLOWED_COMMANDS = {
    "frac", "dfrac", "tfrac", "cdot", "times", "div", "left", "right", "sqrt", "binom", "dbinom", "tbinom", "pi",
    "sin", "cos", "tan", "cot", "sec", "csc", "arcsin", "arccos", "arctan", "log", "ln", "lfloor", "rfloor",
    "lceil", "rceil", "circ", "cdotp", "big", "Big", "bigl", "bigr", "Bigl", "Bigr", "%", ",", "!", " ", ";", ":",
    "{", "}", "$", "displaystyle", "text", "mathrm", "textrm", "mbox", "operatorname",
}
_UNIT = re.compile(r"\\(?:text|mathrm|textrm|mbox|operatorname)\s*\{\s*([^{}]*)\}")
_COMMAND = re.compile(r"\\([a-zA-Z]+|.)")


class NotClosed(InjectorError, ValueError):
    """The side has free variables or notation the audit does not read: the link is skipped."""


class NeedsSympy(InjectorError, ValueError):
    """The side is closed but beyond the fast path (roots, trigonometry, logs, binomials)."""


def strip_units(latex: str) -> str:
    """Drop `\\text{ cm}`-style units (words only); keep a `\\text{}` that holds digits (then it is content)."""
    return _UNIT.sub(lambda m: " " if re.fullmatch(r"[a-zA-Z\s.]*", m.group(1)) else m.group(0), latex)


def closed_or_raise(latex: str) -> None:
    """Raise NotClosed when a side holds a letter outside an allowed command (a free variable, `e`, `f(3)`)."""
    for found in _COMMAND.finditer(latex):
        if found.group(1) not in _ALLOWED_COMMANDS:
            raise NotClosed(f"\\{found.group(1)}")
    if re.search(r"[a-zA-Z]", _COMMAND.sub(" ", latex)):
        raise NotClosed("a variable")


def base_numbers(latex: str) -> str:
    """`58_9` -> `53`, `1011_2` -> `11`, `10_{10}` -> `10`; a digit invalid in its base makes it not closed."""
    def convert(found: re.Match[str]) -> str:
        digits, base = found.group(1), int(found.group(2) or found.group(3))
        if not 2 <= base <= 36:
            raise NotClosed("a number base")
        try:
            return str(int(digits, base))
        except ValueError:
            raise NotClosed("a digit outside its base") from None
    return re.sub(r"(?<![\w.\\])([0-9A-Za-z]*\d[0-9A-Za-z]*)_(?:\{(\d+)\}|(\d))", convert, latex)


# ---- the fast path -------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d+)?|\.\d+)|(\\frac|\\dfrac|\\tfrac|\\sqrt|\\[dt]?binom)|(\\cdot|\\times|\\div|\\%|[-+*/×÷·^()!%\[\]{}])"
                    r"|(\\left|\\right|\\,|\\!|\\ |\\;|\\:|\\displaystyle|\\big|\\Big)|(\S))")


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    for found in _TOKEN.finditer(text):
        number, frac, op, ignored, other = found.groups()
        if ignored is not None:
            continue
        if other is not None:
            raise NeedsSympy(other)
        out.append(number or frac or op)
    return out


class _Parser:
    """Recursive descent over + - (lowest), * / mod and juxtaposition, unary minus, ^, postfix ! and %."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens, self.at = tokens, 0

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise NeedsSympy("end of expression")
        self.at += 1
        return token

    def whole(self) -> Fraction:
        value = self.sum()
        if self.peek() is not None:
            raise NeedsSympy(str(self.peek()))
        return value

    def sum(self) -> Fraction:
        value = self.product()
        while self.peek() in ("+", "-"):
            value = value + self.product() if self.take() == "+" else value - self.product()
        return value

    def product(self) -> Fraction:
        value = self.unary()
        while True:
            token = self.peek()
            if token in ("*", "\\cdot", "\\times", "×", "·"):
                self.take()
                value *= self.unary()
            elif token in ("/", "\\div", "÷"):
                self.take()
                divisor = self.unary()
                if divisor == 0:
                    raise NotClosed("a division by zero")
                value /= divisor
            elif token in ("\\%", "%") and self.at + 1 < len(self.tokens) and self._starts_operand(self.at + 1):
                self.take()
                divisor = self.unary()
                if divisor == 0 or value.denominator != 1 or divisor.denominator != 1:
                    raise NotClosed("a remainder of non-integers")
                value = Fraction(int(value) % int(divisor))
            elif token in ("(", "\\frac", "\\dfrac", "\\tfrac", "[", "{", "\\sqrt", "\\binom", "\\dbinom", "\\tbinom"):
                value *= self.unary()  # juxtaposition: `2(3)(4)` is 24, never the mixed number 9
            else:
                return value

    def _starts_operand(self, index: int) -> bool:
        token = self.tokens[index]
        return token[0].isdigit() or token in ("(", "\\frac", "\\dfrac", "\\tfrac", "{", ".")

    def unary(self) -> Fraction:
        if self.peek() in ("-", "+"):
            return -self.unary() if self.take() == "-" else self.unary()
        return self.power()

    def power(self) -> Fraction:
        base = self.postfix()
        if self.peek() != "^":
            return base
        self.take()
        exponent = self.unary()
        if exponent.denominator != 1 or abs(exponent) > _MAX_EXPONENT:
            raise NeedsSympy("a non-integer or huge exponent")
        if base == 0 and exponent < 0:
            raise NotClosed("a division by zero")
        if abs(base.numerator) > 1 and abs(exponent) * math.log2(abs(base.numerator)) > 20000:
            raise NotClosed("a number too large")
        return base ** int(exponent)

    def postfix(self) -> Fraction:
        value = self.atom()
        while self.peek() in ("!", "\\%", "%"):
            if self.peek() != "!" and self.at + 1 < len(self.tokens) and self._starts_operand(self.at + 1):
                return value  # `17 \% 5`: a remainder, handled as a product-level operator
            if self.take() == "!":
                if value.denominator != 1 or not 0 <= value <= _MAX_FACTORIAL:
                    raise NotClosed("a factorial out of range")
                value = Fraction(math.factorial(int(value)))
            else:
                value /= 100
        return value

    def atom(self) -> Fraction:
        token = self.take()
        if token[0].isdigit() or token[0] == ".":
            following = self.peek()
            if following is not None and (following[0].isdigit() or following == "."):
                raise NotClosed("two numbers side by side")
            if following in ("\\frac", "\\dfrac", "\\tfrac") and token.isdigit():
                self.take()
                part = self._fraction()
                # `= 1825\frac{1}{3}` standing alone is a mixed number; `2\frac{1}{3}(x)` a coefficient
                alone = self.peek() in (None, "+", "-", ")", "]", "}")
                return Fraction(token) + part if alone and 0 < part < 1 else Fraction(token) * part
            return Fraction(token)
        closing = {"(": ")", "[": "]", "{": "}"}
        if token in closing:
            value = self.sum()
            if self.take() != closing[token]:
                raise NeedsSympy("unbalanced brackets")
            return value
        if token in ("\\frac", "\\dfrac", "\\tfrac"):
            return self._fraction()
        if token == "\\sqrt" and self.peek() == "{":
            radicand = self.atom()
            root = math.isqrt(radicand.numerator) if radicand.denominator == 1 and radicand >= 0 else -1
            if root * root != radicand:
                raise NeedsSympy("an irrational root")  # exact, but only sympy can carry it
            return Fraction(root)
        if token.endswith("binom") and self.peek() == "{":
            top, bottom = self.atom(), self.atom()
            if top.denominator != 1 or bottom.denominator != 1 or not 0 <= top <= 10000:
                raise NeedsSympy("\\binom")
            return Fraction(math.comb(int(top), int(bottom)) if bottom >= 0 else 0)
        raise NeedsSympy(token)

    def _fraction(self) -> Fraction:
        parts = []
        for _ in range(2):
            token = self.peek()
            if token == "{":
                parts.append(self.atom())
            elif token is not None and token.isdigit():  # `\frac12`: one digit each
                self.take()
                if len(token) > 1:
                    self.tokens[self.at:self.at] = [token[1:]]
                    token = token[0]
                parts.append(Fraction(token))
            else:
                raise NeedsSympy("\\frac")
        if parts[1] == 0:
            raise NotClosed("a division by zero")
        return parts[0] / parts[1]


def fast_value(latex: str) -> Fraction:
    """The exact value of plain arithmetic (numbers, + - * / ^ ! %, \\frac, brackets); NeedsSympy beyond it."""
    return _Parser(_tokens(latex)).whole()


# ---- the sympy path (runs in the worker process) ---------------------------------------------------------------

def _sympy_ready(latex: str) -> str:
    """Rewrite a closed side so latex2sympy reads it as written (the juxtaposition and degree pitfalls)."""
    latex = re.sub(r"\\(d|t)?binom\s*(\d)\s*(\d)", r"\\binom{\2}{\3}", latex)
    latex = re.sub(r"\\([dt]?frac)\s*(\d)\s*(\d)", r"\\frac{\2}{\3}", latex)
    latex = re.sub(r"\\[dt]frac", r"\\frac", latex)
    latex = re.sub(r"\\[dt]binom", r"\\binom", latex)
    latex = re.sub(r"(\d+(?:\.\d+)?)\s*(?:\^\s*\{?\s*\\circ\s*\}?|°)", r"\\left(\1 \\cdot \\frac{\\pi}{180}\\right)", latex)
    latex = re.sub(r"\\sqrt\s*(\d)", r"\\sqrt{\1}", latex.replace("\\left", " \\left"))
    # A product written by juxtaposition gets an explicit \cdot (latex2sympy would make `2(3)` a mixed number).
    latex = re.sub(r"([\d)}])\s*(?=\\left\(|\(|\\sqrt|\\binom|\\frac|\\pi|\\sin|\\cos|\\tan|\\log|\\ln)", r"\1 \\cdot ", latex)
    latex = re.sub(r"(\)|\\right\))\s*(?=\d)", r"\1 \\cdot ", latex)
    latex = latex.replace("×", "\\times").replace("÷", "\\div").replace("·", "\\cdot").replace("*", "\\cdot")
    return latex


def sympy_value(latex: str) -> object:
    """The exact sympy value of a closed LaTeX side; NotClosed if it turns out not closed or not a number."""
    import sympy
    from latex2sympy2_extended import latex2sympy
    from latex2sympy2_extended.latex2sympy2 import ConversionConfig
    from sympy.core.function import AppliedUndef

    try:
        value = latex2sympy(_sympy_ready(latex), conversion_config=ConversionConfig(lowercase_symbols=False))
    except latex_failures() as exc:  # latex2sympy raises bare Exceptions; an unreadable side is not checked
        raise NotClosed(f"unparsable ({type(exc).__name__})") from None
    if not isinstance(value, sympy.Expr) or value.free_symbols or value.atoms(AppliedUndef):
        raise NotClosed("not a closed number")
    value = value.doit()
    if not (value.is_number and value.is_finite):
        raise NotClosed("not a finite number")
    return value
