"""Certainty said about a step, in many ways: the offline confidence operator's false assertion and its decoys on
correct steps draw from the same repertoire, so that no phrase, opener or tag marks the error step.

A form is an adverb after the step's connective ("So clearly the total is ..."), a sentence opener ("It is easy to
see that ..."), a clause at the end (", no doubt about it.") or a second sentence ("That much is certain."). Each
phrase is one of many, none of them much commoner than another, so a bag-of-words probe finds the error by its
mathematics, not by a certainty tag (the decoys carry the same phrases on true statements).
"""
from __future__ import annotations

import random
import re

from injector.engines.offline.equations import STATES
from injector.engines.offline.text import lower_first, split_answer

ADVERBS = ("clearly", "certainly", "of course", "obviously", "surely", "definitely", "evidently", "undoubtedly",
           "naturally", "plainly")
OPENERS = ("Clearly, {clause}", "Obviously, {clause}", "Of course, {clause}", "Certainly, {clause}",
           "Without a doubt, {clause}", "Without question, {clause}", "It is certain that {clause}",
           "There is no doubt that {clause}", "It is obvious that {clause}", "It is easy to see that {clause}",
           "We know for sure that {clause}", "We can be sure that {clause}", "I'm sure that {clause}",
           "I'm certain that {clause}", "It's clear that {clause}", "Definitely, {clause}",
           "Naturally, {clause}", "Surely {clause}")
# Said after a statement, before its full stop: grammatical after any declarative sentence.
CLAUSES = ("no doubt about it", "for sure", "without a doubt", "beyond any doubt", "there's no question",
           "no question about it", "I'm sure of it", "that's certain")
# A second sentence after the statement.
SENTENCES = ("That much is certain.", "There is no doubt about it.", "That is definitely right.",
             "No need to check this.", "This is beyond doubt.", "I'm sure of this.", "That's for sure.",
             "There is no question about it.", "This is clearly right.", "It can't be anything else.",
             "No further check is needed.", "We can be completely sure of that.", "This is obviously true.",
             "Nothing more needs to be said about it.")
# A step that claims something: an equation or a stating verb; not a plan, an instruction or a question.
STATEMENT = re.compile(r"=|\b(?:is|are|was|were|has|have|equals|gives|get|gets|got|costs?|makes|means)\b")
NOT_A_STATEMENT = re.compile(r"(?:\w+,?\s+)?(?:let's|let|we need|we want|we can|we should|consider|suppose|if|"
                             r"i think|ok|okay|now let's|first let's|how|what|why)\b|.*\?\s*$", re.IGNORECASE)
CONNECTIVE = re.compile(r"(So|Then|Thus|Hence|And)\b,?\s+(?=(?:the|her|his|their|our|there|she|he|they|we|it|this|"
                        r"that|each|\$)\b|\$)")


def _forms(stripped: str, rng: random.Random) -> list[str]:
    """Every way this repertoire can say the statement `stripped` with certainty (one phrase drawn per form)."""
    forms = []
    connective = CONNECTIVE.match(stripped)
    if connective:
        forms.append(f"{connective.group(1)} {rng.choice(ADVERBS)} {stripped[connective.end():]}")
    elif STATES.match(re.split(r"\$", stripped)[0].strip() or "$") and stripped[:1].isupper():
        forms.append(rng.choice(OPENERS).format(clause=lower_first(stripped)))
    if stripped.endswith(".") and not stripped.endswith(".."):
        forms.append(f"{stripped[:-1]}, {rng.choice(CLAUSES)}.")
        forms.append(f"{stripped} {rng.choice(SENTENCES)}")
    elif stripped.endswith("$") or stripped[-1:].isalnum():
        forms.append(f"{stripped}. {rng.choice(SENTENCES)}")
    return forms


def with_certainty(text: str, rng: random.Random) -> str | None:
    """`text` said with certainty, grammatically, its `# Answer` tail untouched; None when no form fits."""
    body, tail = split_answer(text)
    stripped = body.rstrip()
    if not stripped or not STATEMENT.search(stripped) or NOT_A_STATEMENT.match(stripped):
        return None  # certainty fits a claim, not a plan ("Let's start at the beginning") or a question
    forms = _forms(stripped, rng)
    if not forms:
        return None
    return rng.choice(forms) + body[len(stripped):] + tail
