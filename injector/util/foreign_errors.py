"""What foreign math libraries raise for input they cannot handle, named once, for the `except` clauses around them.

sympy fails with arithmetic, type and value errors, `NotImplementedError`, its polynomial errors (which derive from
`Exception` only) and, on deep expressions, `RecursionError`: `sympy_failures()`. latex2sympy raises a bare
`Exception` for LaTeX it cannot parse (17 places in latex2sympy2_extended 1.x), so a clause around it has to catch
`Exception`: `latex_failures()` does, and logs what it catches that is neither that bare `Exception` nor one of
sympy's failures (once per kind), so a bug of ours read as "not an expression" leaves a trace.

Both are called in the `except` line itself (`except sympy_failures():`): Python evaluates it only when an exception
is being matched, so sympy is imported only then, and `latex_failures` sees the exception in flight.
"""
from __future__ import annotations

import functools
import logging
import sys

log = logging.getLogger(__name__)
_reported: set[str] = set()


@functools.cache
def sympy_failures() -> tuple[type[BaseException], ...]:
    """The exceptions sympy raises for an expression it cannot evaluate, compare, solve or simplify."""
    from sympy.polys.polyerrors import BasePolynomialError

    return (ArithmeticError, TypeError, ValueError, AttributeError, NotImplementedError, RecursionError,
            BasePolynomialError)


def latex_failures() -> tuple[type[BaseException], ...]:
    """For `except latex_failures():` around latex2sympy: catches any `Exception` (the parser raises bare ones), and
    logs a kind that is neither that nor one of sympy's failures, once per kind."""
    in_flight = sys.exc_info()[1]
    if in_flight is not None and type(in_flight) is not Exception and not isinstance(in_flight, sympy_failures()):
        kind = f"{type(in_flight).__module__}.{type(in_flight).__qualname__}"
        if kind not in _reported:
            _reported.add(kind)
            log.warning("a LaTeX expression was read as unparsable after %s: %s (further ones not shown)", kind,
                        in_flight)
    return (Exception,)
