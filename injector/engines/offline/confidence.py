"""Offline confidence operators: a false result asserted with certainty in place of its derivation, or a confident
false "correction" of a correct result; the false value is carried through the later steps to the final answer.

Two forms, both on a step that computes a quantity:
- the step's computation is dropped and a wrong value is asserted with certainty ("So clearly the total cost is
  $15.60$ dollars.");
- the step stays, and a new step after it "corrects" it with certainty to a wrong value ("That is not right: the
  total cost is $15.60$ dollars, not $14.60$.").
Later steps are recomputed from the wrong value (`propagate`); when that cannot be done exactly the option is not
applicable. The same certainty phrases go on one or two correct steps of the same solution (declared edits that are
not errors), so that certainty alone does not give the error step away.
"""
from __future__ import annotations

import random
import re
from fractions import Fraction

from injector.model.trajectory import Trajectory
from injector.engines.offline.equations import STATES, Computation, computations, evaluate, introduced, solved_values, stated_quantity, \
    top_level_split
from injector.engines.offline.numerical_calculation import slip_decimal, slipped
from injector.engines.offline.latex_values import render
from injector.engines.offline.propagate import carried_on, final_answer_changed, propagate
from injector.engines.offline.text import Option, Perturbation, lower_first, replace_span, split_answer

ADVERBS = ("clearly", "certainly", "of course", "obviously", "surely", "undoubtedly", "plainly", "evidently")
# Said after a statement: ", without a doubt." (grammatical after any declarative sentence).
AFTERWARDS = ("without a doubt", "no question about it", "as anyone can see", "beyond any doubt", "for sure",
              "that much is certain", "plainly", "with certainty", "as is certain", "undoubtedly", "of course",
              "as is well known", "no doubt")
OPENERS = ("It is certain that {clause}", "We know for sure that {clause}", "There is no doubt that {clause}",
           "Without a doubt, {clause}", "It is plain that {clause}", "We can be sure that {clause}",
           "It is evident that {clause}", "Everyone can see that {clause}")
# A step that claims something: an equation or a stating verb; not a plan, an instruction or a question.
STATEMENT = re.compile(r"=|\b(?:is|are|was|were|has|have|equals|gives|get|gets|got|costs?|makes|means)\b")
NOT_A_STATEMENT = re.compile(r"(?:\w+,?\s+)?(?:let's|let|we need|we want|we can|we should|consider|suppose|if|"
                             r"i think|ok|okay|now let's|first let's|how|what|why)\b|.*\?\s*$", re.IGNORECASE)
CORRECTIONS = ("That is not right: {adverb} {clause}.", "No, {clause}, not {old}; that much is certain.",
               "That value does not hold up. {Adverb}, {clause}.", "Correction: {clause}, {afterwards}.",
               "Rather, {clause}, {afterwards}.", "On second thought, {clause}, {afterwards}.",
               "We know for sure that {clause} instead.")


def with_certainty(text: str, rng: random.Random) -> str | None:
    """`text` said with certainty, grammatically, its `# Answer` tail untouched; None when no form fits."""
    body, tail = split_answer(text)
    stripped = body.rstrip()
    if not STATEMENT.search(stripped) or NOT_A_STATEMENT.match(stripped):
        return None  # certainty fits a claim, not a plan ("Let's start at the beginning") or a question
    forms = []
    connective = re.match(r"(So|Then|Thus|Hence|And)\b,?\s+(?=(?:the|her|his|their|our|there|she|he|they|we|it|"
                          r"this|that|each|\$)\b|\$)", stripped)
    if connective:
        forms.append(lambda adverb: f"{connective.group(1)} {adverb} {stripped[connective.end():]}")
    elif STATES.match(re.split(r"\$", stripped)[0].strip() or "$") and stripped[:1].isupper():
        forms.append(lambda adverb: f"{adverb.capitalize()}, {lower_first(stripped)}")
        forms.append(lambda adverb: rng.choice(OPENERS).format(clause=lower_first(stripped)))
    if stripped.endswith(".") and not stripped.endswith(".."):
        forms.append(lambda adverb: f"{stripped[:-1]}, {rng.choice(AFTERWARDS)}.")
    if not forms:
        return None
    return rng.choice(forms)(rng.choice(ADVERBS)) + body[len(stripped):] + tail


def confidence_options(trajectory: Trajectory) -> list[Option]:
    steps = list(trajectory.steps)
    options: list[Option] = []
    for index, step in enumerate(steps):
        body, tail = split_answer(step)
        for computation in computations(body, index):
            bare = _bare(body, computation)
            if bare is None:
                continue
            options.append(_option(trajectory, index, computation, bare, correction=False))
            if stated_quantity(body, computation) and not tail and index < len(steps) - 1:
                options.append(_option(trajectory, index, computation, bare, correction=True))
        for solved in solved_values(steps, trajectory.question, index):
            value_start = body.rfind(solved.value, solved.start, solved.end)
            # The solved value as a computation of nothing: the whole step gives way to the bare assertion.
            as_computation = Computation(index, solved.var, solved.value, solved.start, value_start + len(solved.value),
                                         value_start, True)
            options.append(_option(trajectory, index, as_computation, (0, len(body), f"${solved.var} = "),
                                   correction=False, solved=True))
    return options


def _bare(body: str, computation: Computation) -> tuple[int, int, str] | None:
    """(start, end, kept) of the math to replace by `kept` + the new value: the whole computation when the words
    around it state the quantity, else everything after the chain's first expression when that expression names
    the quantity (`\\binom{5}{2} = \\frac{5 \\cdot 4}{2} = 10` -> `\\binom{5}{2} = ...`)."""
    stated = stated_quantity(body, computation)
    if stated:
        return stated.start, stated.end, stated.name
    if not computation.in_math:
        return None
    math_start = body.rfind("$", 0, computation.start) + 1
    chain = body[math_start: computation.end].split("=")
    # The first expression names the quantity only when it is one term: `\\sqrt{961}+106` is a computation, and
    # asserting a value for it would be a false derivation, not a bare assertion.
    if len(chain) >= 3 and re.match(r"\s*(?:\\binom|\\sqrt|\\lfloor|[a-zA-Z]\(|\\frac\{\\|[a-zA-Z]\s*$)", chain[0]) \
            and len(top_level_split(chain[0].strip(), r"[-+*/]|\\cdot|\\times|\\div")) == 1:
        return math_start, computation.end, chain[0].rstrip() + " = "
    return None


def _option(trajectory: Trajectory, index: int, computation: Computation, bare: tuple[int, int, str],
            correction: bool, solved: bool = False) -> Option:
    steps = list(trajectory.steps)
    body, tail = split_answer(steps[index])

    def option(rng: random.Random) -> Perturbation | None:
        old = computation.value
        written = trajectory.question + " " + " ".join(steps[: index + 1])
        for _ in range(5):  # a false value that is not some other quantity of the solution already
            if "." in old:
                new = slip_decimal(old, rng)
            else:
                value = evaluate(old)
                new = render(slipped(Fraction(int(value.p), int(value.q)), rng), old, in_math=True)
            if new != old and introduced(new, written):
                break
        else:
            return None
        new_tail = tail.replace(old, new) if tail and split_answer(steps[index])[1].strip().endswith(old) else tail
        slipped_step = replace_span(body, computation.value_start, computation.end, new) + new_tail
        edits = propagate(steps, index, slipped_step, question=trajectory.question)
        if edits is None or not _reaches_the_answer(steps, edits):
            return None
        start, end, kept = bare
        if correction:
            stated = stated_quantity(body, computation)
            if stated is None:
                return None
            adverb = rng.choice(ADVERBS)
            said = rng.choice(CORRECTIONS).format(clause=stated.clause(new), old=stated.math(old), adverb=adverb,
                                                  Adverb=adverb.capitalize(), afterwards=rng.choice(AFTERWARDS))
            edits[0] = {"op": "insert", "after": index + 1, "text": said, "error": True}
            what = (f"The step inserted after step {index + 1} \"corrects\" its true result {old} to {new} with "
                    "certainty and no reason.")
        else:
            if solved:  # "So $4x = 150$ and $x = 37.5$." -> "So clearly $x = 38$."
                asserted = with_certainty(rng.choice(("So ", "Then ", "This gives ")) + kept + new + "$." + new_tail,
                                          rng)
            else:
                asserted = with_certainty(body[:start] + kept + new + body[end:] + new_tail, rng)
            if asserted is None:
                return None
            edits[0]["text"] = asserted
            what = (f"Step {index + 1} no longer computes the value: it asserts {new} with certainty, and the "
                    f"value is {old}.")
        touched = {e.get("step") for e in edits if e["op"] == "replace"}
        candidates = [k for k in range(len(steps)) if k + 1 not in touched and k != index]
        rng.shuffle(candidates)
        declared, wanted = [], rng.choice((1, 2, 2))
        for k in candidates:
            certain = with_certainty(steps[k], rng)
            if certain is not None:
                declared.append({"op": "replace", "step": k + 1, "text": certain, "error": False})
            if len(declared) == wanted:
                break
        if not declared:
            return None  # certainty on the error step alone would give it away
        # After an insert the later steps sit one further on: name them in the new numbering.
        later = carried_on([{}] + [{"step": e["step"] + 1} for e in edits[1:]]) if correction else carried_on(edits)
        return Perturbation("confident_false_result" if not correction else "confident_false_correction",
                            edits + declared, what + later +
                            " The certainty on the other changed steps sits on true statements.")
    return option


def _reaches_the_answer(steps: list[str], edits: list[dict]) -> bool:
    """The false value changes the final answer: the `# Answer` line, or (a solution without one, as PRMBench's
    echoed originals often are) the last step that states a number ("We did it!" after it states none)."""
    return final_answer_changed(steps, edits)
