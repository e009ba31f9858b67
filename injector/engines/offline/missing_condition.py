"""Offline missing_condition operators."""
from __future__ import annotations

import random
import re

from ...trajectory import Trajectory
from .text import ASKING, COUNTED, NUMBER, SENTENCE_END, Option, Perturbation, flag, replace_span, split_answer

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
