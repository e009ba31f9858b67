"""The offline engine: rule-based perturbations of correct solutions, with no model, no key and no network.

Each operator is correct by construction for its category: it changes only the steps it declares, and the step it
marks is an error of that category (for redundancy, a step that can be removed). Its answer goes out as the same
JSON an LLM would write, through the same parser, validator and writer. It is for cheap negatives at scale and
offline smoke runs; subtle, deceptive or novel errors need an LLM (`deception` and `multi_solution` are not offered).
"""
from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from typing import Any, Callable

from ..answers import final_answer_of_steps
from ..contract import Edit
from ..edits import apply_edits
from ..taxonomy import Category
from ..trajectory import Trajectory
from .base import NotApplicable, Proposal

OPERATORS_VERSION = "1"

# A standalone number: not part of a word, a LaTeX argument in braces, an exponent, a subscript or a longer number.
NUMBER = re.compile(r"(?<![\w.^_\\{])\d+(?:\.\d+)?(?![\w^}]|\.\d)")
# A computed quantity: a number right after "=" (optionally a dollar sign), e.g. "$4 \cdot 2.75 = 11$".
RESULT = re.compile(r"=\s*(?:\\\$\s*)?(" + NUMBER.pattern + ")")
MATH_WITH_EQUALS = re.compile(r"\$([^$]*=[^$]*)\$")
# PRMBench's phase-2 files write line breaks around `# Answer` as a literal `\n` (backslash, n): part of the tail too.
ANSWER_MARK = re.compile(r"(?:\n|\\n)*#+ *(?:Final )?Answer\b", re.IGNORECASE)
# A counted quantity in plain text: "4 notebooks", "12 students".
COUNTED = re.compile(r"(?<![\w.$\\{])(\d+) ([a-z]{3,}s)\b")
ASKING = re.compile(r"(?:find|what|how|compute|determine|express|evaluate|simplify|solve|show|calculate)\b",
                    re.IGNORECASE)
SENTENCE_END = re.compile(r"(?<=[.!])\s+(?=[A-Z])")

CERTAINTY = ("Clearly, ", "Obviously, ", "It is obvious that ", "It is well known that ", "Certainly, ")
RESTATEMENTS = (
    "As a quick check, ${math}$ indeed holds, as found above.",
    "In other words, we have ${math}$.",
    "Restating the result so far: ${math}$.",
    "Note once more that ${math}$.",
)


@dataclass
class Perturbation:
    """An operator's output, as edits of the original steps (the form the edit contract uses)."""

    operator: str
    edits: list[dict[str, Any]]
    reason: str
    question: str | None = None
    """The new question, or None when it is unchanged."""


def replace(step: int, text: str) -> dict[str, Any]:
    return {"op": "replace", "step": step, "text": text, "error": True}


def insert(after: int, text: str) -> dict[str, Any]:
    return {"op": "insert", "after": after, "text": text, "error": True}


def flag(step: int) -> dict[str, Any]:
    return {"op": "flag", "step": step}


Option = Callable[[random.Random], Perturbation]


def split_answer(step: str) -> tuple[str, str]:
    """A step's body and its `# Answer ...` tail (empty when there is none), so operators leave the answer alone."""
    mark = ANSWER_MARK.search(step)
    return (step[: mark.start()], step[mark.start():]) if mark else (step, "")


def perturb_number(text: str, rng: random.Random) -> str:
    """A different number of the same shape (same decimal places; never negative when the original is not)."""
    decimals = len(text.split(".")[1]) if "." in text else 0
    value = round(float(text) * 10**decimals)
    deltas = [d for d in (1, 2, 3, -1, -2, 10) if value + d >= 0 and value + d != value]
    new = value + rng.choice(deltas)
    if decimals:
        return f"{new // 10**decimals}.{new % 10**decimals:0{decimals}d}"
    return str(new)


def replace_span(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


def lower_first(text: str) -> str:
    # "The pens cost ..." -> "the pens cost ...", but leave "I", LaTeX and acronyms alone.
    if len(text) > 1 and text[0].isupper() and text[1].islower():
        return text[0].lower() + text[1:]
    return text


# --- operators: each returns the options it has for a trajectory (empty when it finds nothing to work on) ---

def counterfactual_options(trajectory: Trajectory) -> list[Option]:
    options: list[Option] = []
    for index, step in enumerate(trajectory.steps):
        body, tail = split_answer(step)
        for match in RESULT.finditer(body):
            def option(rng: random.Random, index=index, body=body, tail=tail, match=match) -> Perturbation:
                old = match.group(1)
                new = perturb_number(old, rng)
                text = replace_span(body, match.start(1), match.end(1), new) + tail
                return Perturbation("change_result", [replace(index + 1, text)],
                                    f"Step {index + 1} states {new} where the correct value is {old}.")
            options.append(option)
    return options


def confidence_options(trajectory: Trajectory) -> list[Option]:
    def certain(option: Option) -> Option:
        def wrapped(rng: random.Random) -> Perturbation:
            perturbation = option(rng)
            [edit] = perturbation.edits
            phrase = rng.choice(CERTAINTY)
            edit["text"] = phrase + lower_first(edit["text"])
            perturbation.operator = "confident_false_result"
            perturbation.reason += f" The step asserts this with unwarranted certainty ({phrase.strip(' ,')!r})."
            return perturbation
        return wrapped

    return [certain(option) for option in counterfactual_options(trajectory)]


def step_contradiction_options(trajectory: Trajectory) -> list[Option]:
    """A later step restates a value an earlier step derived, but differently."""
    options: list[Option] = []
    bodies = [split_answer(step) for step in trajectory.steps]
    for i, (earlier, _) in enumerate(bodies):
        derived = {m.group(1) for m in RESULT.finditer(earlier)}
        for j in range(i + 1, len(bodies)):
            body, tail = bodies[j]
            for match in NUMBER.finditer(body):
                if match.group(0) not in derived:
                    continue

                def option(rng: random.Random, i=i, j=j, body=body, tail=tail, match=match) -> Perturbation:
                    old = match.group(0)
                    new = perturb_number(old, rng)
                    text = replace_span(body, match.start(), match.end(), new) + tail
                    return Perturbation("restate_inconsistently", [replace(j + 1, text)],
                                        f"Step {j + 1} uses {new} for the value that step {i + 1} found to be {old}.")
                options.append(option)
    return options


def redundancy_options(trajectory: Trajectory) -> list[Option]:
    """Insert, right after a step that derives an equation, a step that only restates it."""
    options: list[Option] = []
    for index, step in enumerate(trajectory.steps[:-1]):
        for match in MATH_WITH_EQUALS.finditer(split_answer(step)[0]):
            def option(rng: random.Random, index=index, math=match.group(1).strip()) -> Perturbation:
                inserted = rng.choice(RESTATEMENTS).replace("{math}", math)
                return Perturbation("restate_result", [insert(index + 1, inserted)],
                                    f"The step inserted after step {index + 1} only restates its result; removing it "
                                    "changes nothing.")
            options.append(option)
    return options


def last_reasoning_step(steps: list[str]) -> int | None:
    """Index of the last step with text besides its `# Answer` tail (a step that is only `# Answer\n3` is not)."""
    return next((index for index in range(len(steps) - 1, -1, -1) if split_answer(steps[index])[0].strip()), None)


def circular_logic_options(trajectory: Trajectory) -> list[Option]:
    """Assume the final answer early, then let the last reasoning step "confirm" it by that assumption."""
    answer = trajectory.answer or final_answer_of_steps(list(trajectory.steps))
    steps = trajectory.steps
    confirming = last_reasoning_step(steps)  # the answer step itself stays as it is
    if answer is None or confirming is None or confirming < 1:
        return []
    which = "the last step" if confirming == len(steps) - 1 else f"step {confirming + 1}"
    options: list[Option] = []
    for position in range(0, max(1, confirming // 2)):
        def option(rng: random.Random, position=position) -> Perturbation:
            assumed = (f"We know the final answer must be ${answer}$, so we take ${answer}$ as given and check "
                       "that the remaining steps agree with it.")
            body, tail = split_answer(steps[confirming])
            confirmed = (body.rstrip() + f" This agrees with the value ${answer}$ we started from, which confirms "
                         f"that ${answer}$ is the answer." + tail)
            return Perturbation("assume_the_answer",
                                [insert(position + 1, assumed), replace(confirming + 1, confirmed)],
                                f"The step inserted after step {position + 1} assumes the final answer {answer} "
                                f"before deriving it, and {which} confirms the answer by that assumption: the "
                                "conclusion supports itself.")
        options.append(option)
    return options


def _content_words(text: str) -> set[str]:
    # Crude stems ("notebooks" -> "notebook") of the longer words, enough to tell a use of "4 notebooks" from a
    # coincidental 4 elsewhere.
    return {word.lower().rstrip("s") for word in re.findall(r"[A-Za-z]{4,}", text)} - _COMMON_WORDS


_COMMON_WORDS = {"what", "that", "this", "then", "with", "from", "each", "have", "many", "much", "there", "their",
                 "which", "when", "find", "given", "your", "answer", "express", "does", "into", "after", "same"}


def _first_use(trajectory: Trajectory, number: str, context: str) -> int | None:
    """Index of the first step that uses `number` together with a content word of `context` (where it came from)."""
    words = _content_words(context)
    for index, step in enumerate(trajectory.steps):
        body = split_answer(step)[0]
        if any(m.group(0) == number for m in NUMBER.finditer(body)) and words & _content_words(body):
            return index
    return None


def missing_condition_options(trajectory: Trajectory) -> list[Option]:
    """Take from the question a condition the solution uses; the first step using it is the error step.

    Either drop a whole sentence that gives a number the steps use, or make a counted quantity vague
    ("4 notebooks" -> "some notebooks").
    """
    sentences = SENTENCE_END.split(trajectory.question.strip())
    options: list[Option] = []
    for k, sentence in enumerate(sentences[:-1]):  # the last sentence asks the question
        if ASKING.match(sentence):
            continue  # "Find the larger root of ..." is the task itself, not a condition
        for number in dict.fromkeys(m.group(0) for m in NUMBER.finditer(sentence)):
            first_use = _first_use(trajectory, number, sentence)
            if first_use is None:
                continue

            def drop(rng: random.Random, k=k, first_use=first_use, number=number) -> Perturbation:
                question = " ".join(s for n, s in enumerate(sentences) if n != k)
                return Perturbation("drop_condition", [flag(first_use + 1)],
                                    f"The question no longer gives the condition \"{sentences[k]}\"; step "
                                    f"{first_use + 1} still uses {number} from it.", question=question)
            options.append(drop)
            break  # one option per sentence
    for match in COUNTED.finditer(trajectory.question):
        first_use = _first_use(trajectory, match.group(1), match.group(2))
        if first_use is None:
            continue

        def vague(rng: random.Random, match=match, first_use=first_use) -> Perturbation:
            question = replace_span(trajectory.question, match.start(), match.end(), f"some {match.group(2)}")
            return Perturbation("vague_quantity", [flag(first_use + 1)],
                                f"The question no longer says how many {match.group(2)} (it said {match.group(1)}); "
                                f"step {first_use + 1} still uses {match.group(1)}.", question=question)
        options.append(vague)
    return options


def domain_inconsistency_options(trajectory: Trajectory) -> list[Option]:
    """Drop the plus-or-minus of a square root (every one in the step), keeping only the positive root."""
    options: list[Option] = []
    plus_minus = re.compile(r"(=\s*)?\\pm(?![A-Za-z])\s*")
    for index, step in enumerate(trajectory.steps):
        body, tail = split_answer(step)
        if not plus_minus.search(body):
            continue

        def option(rng: random.Random, index=index, body=body, tail=tail) -> Perturbation:
            text = plus_minus.sub(lambda m: m.group(1) or "+ ", body) + tail
            return Perturbation("drop_plus_minus", [replace(index + 1, text)],
                                f"Step {index + 1} takes only the positive square root, as if the quantity were "
                                "known to be non-negative; the negative root is lost.")
        options.append(option)
    return options


OPERATORS: dict[str, Callable[[Trajectory], list[Option]]] = {
    "redundancy": redundancy_options,
    "circular_logic": circular_logic_options,
    "counterfactual": counterfactual_options,
    "step_contradiction": step_contradiction_options,
    "confidence": confidence_options,
    "missing_condition": missing_condition_options,
    "domain_inconsistency": domain_inconsistency_options,
    # ProJudge's arithmetic slip is a changed computed result, as counterfactual's is.
    "numerical_calculation": counterfactual_options,
}
NEEDS_A_MODEL = {
    "deception": "a subtle, plausible-looking error needs a model's judgement",
    "multi_solution": "writing a different correct solution needs a model",
}


class OfflineEngine:
    """Deterministic rule-based injection: the same trajectory, category, seed and sample give the same answer.

    `operators` adds (or replaces) operators by category id: a function from a trajectory to its options, each a
    function from a seeded `random.Random` to a `Perturbation` (see `counterfactual_options`).
    """

    name = "offline"

    def __init__(self, operators: dict[str, Callable[[Trajectory], list[Option]]] | None = None):
        self.operators = {**OPERATORS, **(operators or {})}
        self._custom = sorted(operators or {})

    def describe(self) -> dict[str, Any]:
        described = {"engine": self.name, "model": "offline", "api_base_host": None, "operators": OPERATORS_VERSION}
        if self._custom:
            described["custom_operators"] = self._custom
        return described

    def check_ready(self) -> None:
        """Always ready: nothing to configure."""

    def unsupported_reason(self, category: Category) -> str | None:
        """Why this engine cannot make `category` (None when it can)."""
        if category.id in self.operators:
            return None
        return NEEDS_A_MODEL.get(category.id, f"the offline engine has no operator for {category.id!r}")

    def perturb(self, trajectory: Trajectory, category: Category, *, seed: int, sample: int) -> Perturbation:
        """The `sample`-th perturbation in a seeded order; NotApplicable when there is none left."""
        options = self.operators[category.id](trajectory)
        if sample >= len(options):
            found = f"only {len(options)} place(s)" if options else "nothing"
            raise NotApplicable(f"{category.id}: the offline operator found {found} to work on in this trajectory")
        # String seeds are hashed with SHA-512 by `random`, so the order is stable across processes and platforms.
        key = f"{seed}\x00{trajectory.id}\x00{category.id}"
        order = list(range(len(options)))
        random.Random(f"order\x00{key}").shuffle(order)
        return options[order[sample]](random.Random(f"edit\x00{key}\x00{sample}"))

    async def propose(self, messages: list[dict[str, Any]], *, trajectory: Trajectory, category: Category,
                      seed: int, sample: int, response_schema: dict[str, Any] | None,
                      output_mode: str = "edits", read_cache: bool = True) -> Proposal:
        perturbation = self.perturb(trajectory, category, seed=seed, sample=sample)
        # Every error edit explains itself (taxonomies such as projudge require it): the operator's reason.
        edits = [{**edit, "explanation": perturbation.reason} if edit.get("error") or edit["op"] == "flag" else edit
                 for edit in perturbation.edits]
        if output_mode == "edits":
            answer: dict[str, Any] = {"question": perturbation.question, "edits": edits,
                                      "reason": perturbation.reason}
        else:  # the full form is the edits applied: one source of truth for both contracts
            applied = apply_edits(list(trajectory.steps), [Edit.model_validate(e) for e in edits])
            answer = {
                "modified_question": perturbation.question if perturbation.question is not None
                else trajectory.question,
                "modified_process": applied.modified_process,
                "modified_steps": applied.modified_steps,
                "error_steps": applied.error_steps,
                "reason": perturbation.reason,
                "explanations": {str(step): text for step, text in applied.explanations.items()},
            }
        return Proposal(text=json.dumps(answer, ensure_ascii=False), cost=0.0,
                        details={"operator": perturbation.operator})
