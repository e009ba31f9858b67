"""Propagation by recomputation: after an operator changes a value in one step, rewrite every later step that
depends on it, consistently, up to and including the `# Answer` line.

    propagate(steps, index, new_text, question=...) -> list of replace edits, or None (not applicable)

`steps[index]` becomes `new_text` (the operator's error). The values the operator changed are found by comparing
the numbers of the old and the new step. A later step depends on a changed value when it contains that value and
the value was *introduced* by the changed step (it occurs neither in the question nor in an earlier step); the
step is then rewritten: the value is substituted, each equation chain of the step (`a = b = c` inside `$...$`) is
re-evaluated with sympy (through math-verify's LaTeX parser), and the literal results to the right of a changed
expression are written back in the step's own notation (`5.40`, `\\frac{3}{8}`, `11`). Those rewritten results are
changed values in turn. Symbols set in a step (`$x = 37.5$`, or solved from one equation in one unknown) are
tracked, so `$4x = 150$` is recomputed when `x` changed.

Anything that cannot be recomputed exactly makes the whole propagation not applicable (None), never an
inconsistent solution: a changed value that also occurs in the question or an earlier step, or in an exponent or
subscript later; a changed expression that is not part of an equation; an intermediate expression that is not a
literal (`= 5 \\cdot 42 =`); a relation other than `=` whose truth would flip; `\\equiv`, `\\approx` and the like;
a result that cannot be written exactly in its notation.

Each returned edit is `{"op": "replace", "step": k (1-based), "text": ..., "error": True}`: the changed step and
every later step whose text changed (they state results that are false about the problem as posed).
"""
from __future__ import annotations

import difflib
import re
from fractions import Fraction
from typing import Any

from injector.util.foreign_errors import sympy_failures
from injector.engines.offline.text import replace, split_answer
from injector.engines.offline.latex_values import (MATH, NUMBER_THEORY_PROSE, ORDER, PLAIN_ARITHMETIC, as_fraction,
                                                   Chain, chains, equal, evaluate, literal, lone_symbol, math_spans,
                                                   NotRecomputable, parse, refuse_half_carried, render,
                                                   substitute_answer, substitute_in_step, tokens, values)


class Recomputer:
    """Walks the steps after a change, carrying the changed values and the symbols' old and new values."""

    def __init__(self, question: str, steps: list[str]):
        self.question, self.steps = question, steps
        self.current = list(steps)
        self.changes: dict[Fraction, Fraction] = {}
        self.old_env: dict[str, Any] = {}
        self.new_env: dict[str, Any] = {}
        self.ambiguous: set[str] = set()

    def seen_before(self, value: Fraction, index: int) -> bool:
        """Does `value` occur in the question or in a step before `index` (as it reads now: a step already
        rewritten no longer shows its old values)?"""
        return any(value in values(text) for text in [self.question, *self.current[:index]])

    def add_change(self, old: Fraction, new: Fraction, index: int) -> None:
        """Record that the value `old`, introduced in step `index`, is now `new`."""
        if old == new:
            return
        if self.changes.get(old, new) != new:
            raise NotRecomputable(f"{old} would change to two different values")
        if old in self.changes.values():
            raise NotRecomputable(f"{old} is both an old and a new value")
        if self.seen_before(old, index):
            # Not introduced here: a later occurrence could be either quantity.
            if any(old in values(text) for text in self.steps[index + 1:]):
                raise NotRecomputable(f"{old} also occurs before step {index + 1}")
            return
        self.changes[old] = new

    def assign(self, name: str, old: Any, new: Any) -> None:
        if name in self.ambiguous:
            return
        if name in self.old_env and not equal(self.old_env[name], old):
            self.ambiguous.add(name)  # the same letter for two values: drop it
            self.old_env.pop(name), self.new_env.pop(name, None)
            return
        self.old_env[name], self.new_env[name] = old, new

    def step(self, index: int, old: str, new: str, given: int = 0, names_left: bool = False) -> str:
        """The recomputed text of step `index` (old text `old`, substituted text `new`). The first `given` chains
        are the operator's own (read for symbol values, not rewritten)."""
        old_chains, new_chains = chains(old, math_spans(old)), chains(new, math_spans(new))
        if len(old_chains) != len(new_chains):
            raise NotRecomputable(f"step {index + 1} changed shape")
        for k, (o, n) in enumerate(zip(old_chains, new_chains)):
            if len(o.exprs) != len(n.exprs):
                if not names_left or len(o.exprs) < 2 or len(n.exprs) < 2 or o.relations[0] != "=":
                    raise NotRecomputable(f"step {index + 1} changed shape")
                # The operator rewrote the middle of an equation chain: its old middle expressions all had the
                # chain's value, so any of them stands for each new middle one.
                middle = [o.exprs[min(j, len(o.exprs) - 2)] for j in range(1, len(n.exprs) - 1)]
                old_chains[k] = Chain([o.exprs[0], *middle, o.exprs[-1]], ["="] * (len(n.exprs) - 1), o.in_dollars)
        edits: list[tuple[int, int, str]] = []
        for k, (o, n) in enumerate(zip(old_chains, new_chains)):
            edits += self.chain(index, old, new, o, n, given=k < given, names_left=names_left)
        for start, end, text in sorted(edits, reverse=True):
            new = new[:start] + text + new[end:]
        self._no_empty_restatement(index, old, new)
        self._plain_text_guard(old, new)
        return new

    def _no_empty_restatement(self, index: int, old: str, new: str) -> None:
        """A chain must not become "X = X" where it was "\\frac{30}{56} = \\frac{15}{28}" (a simplification whose
        point the new values erased)."""
        old_chains, new_chains = chains(old, math_spans(old)), chains(new, math_spans(new))
        for o, n in zip(old_chains, new_chains):
            old_exprs = [old[a:b].strip() for a, b in o.exprs]
            new_exprs = [new[a:b].strip() for a, b in n.exprs]
            if len(old_exprs) != len(new_exprs):
                continue
            for k in range(1, len(new_exprs)):
                if new_exprs[k] == new_exprs[k - 1] and old_exprs[k] != old_exprs[k - 1]:
                    raise NotRecomputable(f"step {index + 1} would state {new_exprs[k]} = {new_exprs[k]}")

    def _plain_text_guard(self, old: str, new: str) -> None:
        # A changed number in prose next to arithmetic ("5*6=30" without $) would leave the arithmetic stale.
        plain, plain_old = (PLAIN_ARITHMETIC.sub(" ", MATH.sub(" ", split_answer(t)[0])) for t in (new, old))
        if re.search(r"\d\s*[-+*=x×]\s*\d", plain) and plain_old != plain:  # (a/b is how prose gets a fraction)
            raise NotRecomputable("changed arithmetic outside math")

    def chain(self, index: int, old: str, new: str, o: Chain, n: Chain, given: bool,
              names_left: bool = False) -> list[tuple[int, int, str]]:
        old_exprs = [old[a:b] for a, b in o.exprs]
        new_exprs = [new[a:b] for a, b in n.exprs]
        touched = [a != b or self._uses_changed_symbol(a) for a, b in zip(old_exprs, new_exprs)]
        relations = n.relations
        if not relations:
            if touched[0] and not given and not literal(new_exprs[0]):
                raise NotRecomputable(f"step {index + 1} states a changed expression without evaluating it")
            return []
        if any(r not in ("=", *ORDER) for r in relations):
            if any(touched) and not given:
                raise NotRecomputable(f"step {index + 1} relates a changed value by {relations}")
            return []
        if any(r in ORDER for r in relations):
            if any(touched) and not given:
                self._same_truth(index, old_exprs, new_exprs, relations)
            return []
        return self._equation(index, old_exprs, new_exprs, n, touched, given, names_left)

    def _uses_changed_symbol(self, latex: str) -> bool:
        expr = parse(latex)
        if expr is None or not hasattr(expr, "free_symbols"):
            return False
        return any(s.name in self.new_env and not equal(self.new_env[s.name], self.old_env[s.name])
                   for s in expr.free_symbols)

    def _same_truth(self, index: int, old_exprs: list[str], new_exprs: list[str], relations: list[str]) -> None:
        import sympy

        ops = {"<": sympy.Lt, ">": sympy.Gt, "\\le": sympy.Le, "\\leq": sympy.Le, "\\ge": sympy.Ge,
               "\\geq": sympy.Ge, "\\neq": sympy.Ne, "\\ne": sympy.Ne, "=": sympy.Eq}
        for exprs, env in ((old_exprs, self.old_env), (new_exprs, self.new_env)):
            vals = [evaluate(e, env) for e in exprs]
            if any(v is None for v in vals):
                raise NotRecomputable(f"step {index + 1}: an inequality with a changed value cannot be evaluated")
            truth = all(bool(ops[r](a, b)) for r, a, b in zip(relations, vals, vals[1:]))
            if exprs is old_exprs:
                old_truth = truth
        if truth != old_truth:
            raise NotRecomputable(f"step {index + 1}: an inequality would flip")

    def _equation(self, index: int, old_exprs: list[str], new_exprs: list[str], n: Chain, touched: list[bool],
                  given: bool, names_left: bool = False) -> list[tuple[int, int, str]]:
        import sympy

        # "x = ..." with x not yet known: the rest is a numeric chain, and x takes its value.
        name = lone_symbol(old_exprs[0]) if len(old_exprs) > 1 else None
        if name is not None and name in self.old_env and name not in self.ambiguous:
            name = None  # x is known: "x = 37.5" restates it, evaluated like any expression
        start = 1 if name is not None else 0
        old_vals = [evaluate(e, self.old_env) for e in old_exprs]
        new_vals = [evaluate(e, self.new_env) for e in new_exprs]
        # Leading names ("AB = \sqrt{...} = 10", "x_A y_B - x_B y_A = 1 \cdot 9 - 7 = 2") are not evaluated.
        while (len(old_exprs) - start > 2 and old_vals[start] is None and new_vals[start] is None
               and not touched[start]):
            start += 1
        if given:
            # The operator's step: learn symbol values, rewrite nothing.
            if name is not None and old_vals[-1] is not None and new_vals[-1] is not None:
                self.assign(name, old_vals[-1], new_vals[-1])
            else:
                self._solve(old_exprs, new_exprs)
            return []
        if not any(touched):
            if name is not None and old_vals[-1] is not None:
                self.assign(name, old_vals[-1], old_vals[-1])
            else:
                self._solve(old_exprs, new_exprs)
            return []
        if any(v is None for v in old_vals[start:]) or any(v is None for v in new_vals[start:]):
            # One unknown, solved from this equation: a premise ("4x + 30 = 360"), nothing to rewrite.
            if self._solve(old_exprs, new_exprs):
                return []
            if (len(old_exprs) == 2 and not touched[0] and old_vals[0] is None and new_vals[0] is None
                    and literal(new_exprs[1])):
                return []  # "AB = 14": a name restated with its substituted value
            raise NotRecomputable(f"step {index + 1}: an equation with a changed value cannot be evaluated: "
                                  f"{'='.join(new_exprs)[:80]}")
        if not all(equal(v, old_vals[start]) for v in old_vals[start:]):
            raise NotRecomputable(f"step {index + 1}: the original equation does not hold exactly")
        first = next(k for k in range(start, len(touched)) if touched[k]) if any(touched[start:]) else None
        if first is None:
            return []
        edits = self._rewrite_results(index, (old_exprs, new_exprs), (old_vals, new_vals), n,
                                      range(start, len(new_exprs)), first, names_left)
        if name is not None:
            self.assign(name, old_vals[-1], new_vals[first])
        return edits

    def _rewrite_results(self, index: int, exprs: tuple[list[str], list[str]], vals: tuple[list[Any], list[Any]],
                         n: Chain, positions: range, first: int, names_left: bool) -> list[tuple[int, int, str]]:
        """(start, end, text) rewrites of the literal results of chain `n` right of its first changed expression
        `first`, each recorded as a change in turn."""
        import sympy

        old_vals, new_vals = vals
        old_exprs, new_exprs = exprs
        target = new_vals[first]
        edits = []
        for k in positions:
            if k == first or equal(new_vals[k], target):
                continue
            if k < first and names_left:
                continue  # the operator's step: what stands left of its changed formula is the quantity's name
            if k < first or not literal(new_exprs[k]):
                raise NotRecomputable(f"step {index + 1}: {new_exprs[k].strip()!r} cannot be recomputed")
            old_value, new_value = as_fraction(old_vals[k]), as_fraction(sympy.nsimplify(target))
            if old_value is None or new_value is None:
                raise NotRecomputable(f"step {index + 1}: the new value is not rational")
            a, b = n.exprs[k]
            text = new_exprs[k]
            core = re.search(r"(?:-\s*)?(?:\\[dt]?frac\{\d+\}\{\d+\}|\d+(?:\.\d+)?)", text)
            if core is None:
                raise NotRecomputable(f"step {index + 1}: no number to replace in {text.strip()!r}")
            rendered = render(new_value, core.group(0), in_math=n.in_dollars)
            if k > 0 and rendered == new_exprs[k - 1].strip() and old_exprs[k - 1].strip() != old_exprs[k].strip():
                raise NotRecomputable(f"step {index + 1} would restate {rendered} as itself")
            edits.append((a + core.start(), a + core.end(), rendered))
            self.add_change(old_value, new_value, index)
        return edits

    def _solve(self, old_exprs: list[str], new_exprs: list[str]) -> bool:
        """Learn one unknown from `L = R` (old and new); whether it did."""
        import sympy

        if len(old_exprs) != 2:
            return False
        solved = []
        for exprs, env in ((old_exprs, self.old_env), (new_exprs, self.new_env)):
            left, right = parse(exprs[0]), parse(exprs[1])
            if left is None or right is None or not isinstance(left, sympy.Expr) or not isinstance(right, sympy.Expr):
                return False
            equation = (left - right).subs({s: env[s.name] for s in (left - right).free_symbols if s.name in env})
            unknown = [s for s in equation.free_symbols if s.name not in self.ambiguous]
            if len(unknown) != 1 or len(equation.free_symbols) != 1:
                return False
            # Only small polynomial equations of degree 1 or 2: anything else can keep sympy busy for minutes.
            if sympy.count_ops(equation) > 40 or not equation.is_polynomial(unknown[0]):
                return False
            try:
                if sympy.degree(equation, unknown[0]) > 2:
                    return False
                roots = [r for r in sympy.solve(equation, unknown[0]) if r.is_real]
            except sympy_failures():
                return False
            if len(roots) != 1:
                return False
            solved.append((unknown[0].name, roots[0]))
        (name, old), (name_new, new) = solved
        if name != name_new:
            return False
        self.assign(name, old, new)
        return True


def _changed_values(old: str, new: str) -> list[tuple[Fraction, Fraction]]:
    """(old value, new value) for each number the operator replaced by another one."""
    a, b = tokens(old), tokens(new)
    pairs = []
    matcher = difflib.SequenceMatcher(a=[t.text for t in a], b=[t.text for t in b], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "replace" and i2 - i1 == j2 - j1:
            pairs += [(a[i].value, b[j].value) for i, j in zip(range(i1, i2), range(j1, j2))]
    return pairs


def _given_chains(old: str, new: str) -> int:
    """How many chains of the changed step, from the first, contain the operator's change."""
    old_chains, new_chains = chains(old, math_spans(old)), chains(new, math_spans(new))
    last = 0
    for k, (o, n) in enumerate(zip(old_chains, new_chains)):
        if [old[a:b] for a, b in o.exprs] != [new[a:b] for a, b in n.exprs]:
            last = k + 1
    return last


def propagate(steps: list[str], index: int, new_text: str, *, question: str = "", recompute: bool = False,
              carry: bool = True) -> list[dict[str, Any]] | None:
    """Replace edits for `steps[index] -> new_text` and every later step recomputed from it; None when the change
    cannot be carried through exactly (see the module docstring).

    By default `new_text` is the operator's finished step (its results are its own, e.g. an arithmetic slip) and
    the numbers it replaced are carried to the later steps. `recompute=True`: the operator only replaced inputs
    (a constant, a formula, a value) and the step's own equations are recomputed from them, as a later step's
    would be; an expression left of the changed one names the quantity (`\\binom{5}{2} = 5 \\cdot 4 = ...`).
    `carry=False`: the replaced numbers stay local to this step (a step that misuses a quantity another step
    established); only the results recomputed in it are carried on.
    """
    try:
        return _propagate(list(steps), index, new_text, question, recompute, carry)
    except NotRecomputable:
        return None


def why_not(steps: list[str], index: int, new_text: str, *, question: str = "", recompute: bool = False,
            carry: bool = True) -> str | None:
    """Why `propagate` returns None for this change (None when it does not)."""
    try:
        _propagate(list(steps), index, new_text, question, recompute, carry)
    except NotRecomputable as exc:
        return str(exc)
    return None


def final_answer_changed(steps: list[str], edits: list[dict[str, Any]]) -> bool:
    """Does the last step's `# Answer` differ after these edits? A solution without an `# Answer` line ends at its
    last step that states a number: that step must have changed."""
    if not split_answer(steps[-1])[1]:
        last_result = max((k for k, step in enumerate(steps, 1) if tokens(step)), default=None)
        return last_result is not None and any(e["step"] == last_result for e in edits)
    last = next((e["text"] for e in edits if e["op"] == "replace" and e["step"] == len(steps)), steps[-1])
    return split_answer(last)[1].strip() != split_answer(steps[-1])[1].strip()


def _propagate(steps: list[str], index: int, new_text: str, question: str, recompute: bool,
               carry: bool) -> list[dict[str, Any]]:
    walker = Recomputer(question, steps)
    for k in range(index):  # symbols set before the change keep their values
        walker.step(k, steps[k], steps[k])
    old_text = steps[index]
    if carry:
        # Bodies only: the answer tail restates a result, and would pair the wrong occurrences.
        for old_value, new_value in _changed_values(split_answer(old_text)[0], split_answer(new_text)[0]):
            walker.add_change(old_value, new_value, index)
    if recompute:
        new_text = _recompute(walker, index, old_text, new_text, names_left=True)
    else:
        walker.step(index, old_text, new_text, given=_given_chains(old_text, new_text))
        new_body, new_tail = split_answer(new_text)
        new_text = new_body + substitute_answer(new_tail, walker.changes)  # a slip in the last step reaches its answer
    edits = [replace(index + 1, new_text)]
    walker.current[index] = new_text
    for k in range(index + 1, len(steps)):
        body, tail = split_answer(steps[k])
        fractions: list[tuple[Fraction, Fraction]] = []
        new_body = substitute_in_step(body, math_spans(body), walker.changes, fractions)
        for old_value, new_value in fractions:  # "\frac{16}{32}" is now "\frac{66}{32}": a later "\frac{1}{2}" too
            walker.add_change(old_value, new_value, k)
        new_tail = substitute_answer(tail, walker.changes)
        if new_body == body and new_tail == tail and not _uses_changed_symbols(walker, body):
            walker.step(k, body, body)
            continue
        prose = MATH.sub(" ", body)
        if NUMBER_THEORY_PROSE.search(prose):
            raise NotRecomputable(f"step {k + 1} makes a claim about its numbers in words ({prose.strip()[:60]!r})")
        text = _recompute(walker, k, steps[k], new_body + new_tail)
        walker.current[k] = text
        if text != steps[k]:
            edits.append(replace(k + 1, text))
    refuse_half_carried(steps, edits, walker.changes)
    return edits



def _recompute(walker: Recomputer, index: int, old: str, new: str, names_left: bool = False) -> str:
    """Step `index` recomputed from its substituted text `new`, its answer tail included."""
    old_body, tail = split_answer(old)
    body = split_answer(new)[0]
    known = dict(walker.changes)
    recomputed = walker.step(index, old_body, body, names_left=names_left)
    fresh = {a: b for a, b in walker.changes.items() if a not in known}
    if fresh:  # a result recomputed here and restated later in the same step ("... = 250, so 250 minutes")
        recomputed = substitute_in_step(recomputed, math_spans(recomputed), fresh)
    return recomputed + substitute_answer(split_answer(new)[1] or tail, walker.changes)


def _uses_changed_symbols(walker: Recomputer, body: str) -> bool:
    return any(walker._uses_changed_symbol(body[a:b]) for a, b in math_spans(body))


def carried_on(edits: list[dict[str, Any]]) -> str:
    """" Steps 5 and 6 carry the wrong value to the final answer." for a reason (empty when nothing was carried)."""
    later = [e["step"] for e in edits[1:]]
    if not later:
        return ""
    if len(later) == 1:
        return f" Step {later[0]} carries it forward."
    return f" Steps {', '.join(map(str, later[:-1]))} and {later[-1]} carry it forward."
