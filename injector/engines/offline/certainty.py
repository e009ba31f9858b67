"""Certainty said about a step, in many ways, inside its own sentence: the offline confidence operator's false
assertion and its decoys on correct steps draw from the same repertoire, so that no phrase, opener or tag marks the
error step.

A form is an adverb after the step's connective ("So clearly the total is ..."), a sentence opener ("It is easy to
see that ..."), an adverb at the step's verb ("the total is certainly ...", "we obviously get ...") or a modal in
place of its copula ("the total must be ..."). Nothing is bolted on after the statement: tags such as ", no doubt
about it." or a second sentence ("That much is certain.") marked the error step by their words alone (a
bag-of-words probe found confidence errors with AUC 0.83 on the dev part, 0.78 with the tags struck out), and read
as stuck on. Each phrase is one of many, none much commoner than another, so a probe finds the error by its
mathematics, not by a certainty word (the decoys carry the same phrases on true statements).
"""
from __future__ import annotations

import random
import re

from injector.engines.offline.equations import STATES
from injector.engines.offline.text import lower_first, split_answer

ADVERBS = ("clearly", "certainly", "of course", "obviously", "surely", "definitely", "evidently", "undoubtedly",
           "naturally", "plainly", "unquestionably")
OPENERS = ("Clearly, {clause}", "Obviously, {clause}", "Of course, {clause}", "Certainly, {clause}",
           "Without a doubt, {clause}", "Without question, {clause}", "It is certain that {clause}",
           "There is no doubt that {clause}", "It is obvious that {clause}", "It is easy to see that {clause}",
           "We know for sure that {clause}", "We can be sure that {clause}", "I'm sure that {clause}",
           "I'm certain that {clause}", "It's clear that {clause}", "Definitely, {clause}",
           "Naturally, {clause}", "Surely {clause}", "Evidently, {clause}", "Plainly, {clause}",
           "Undoubtedly, {clause}", "It is plain that {clause}", "Anyone can see that {clause}",
           "It goes without saying that {clause}", "We can see right away that {clause}")
# Adverbs that sit well at a verb: after "is" ("is clearly $5$"), before "get" ("we clearly get $5$").
# ("clearly", the commonest of them in PRMBench's confidence errors, only after a connective or as an opener.)
AT_VERB = ("certainly", "obviously", "surely", "definitely", "evidently", "undoubtedly", "plainly", "of course",
           "unquestionably", "without question")
BEFORE_VERB = tuple(a for a in AT_VERB if a not in ("of course", "without question"))  # not "we of course get"
COPULA = re.compile(r"\b(?:is|are|was|were)\b(?! not\b| also\b)")
VERB = re.compile(r"\b(?:get|gets|got|have|has|gives|equals|means|makes)\b")
# "is" / "are" a modal may replace: not "is not", "is also", and not after "that"/"which" ("so that is" reads oddly).
MODAL = re.compile(r"(?<!\bthat )(?<!\bwhich )\b(?:is|are)\b(?= (?:\$|\d|the\b|a\b|an\b|equal\b|our\b))")
# A step that claims something: an equation or a stating verb; not a plan, an instruction or a question.
STATEMENT = re.compile(r"=|\b(?:is|are|was|were|has|have|equals|gives|get|gets|got|costs?|makes|means)\b")
NOT_A_STATEMENT = re.compile(r"(?:\w+,?\s+)?(?:let's|let|we need|we want|we can|we should|consider|suppose|if|"
                             r"i think|ok|okay|now let's|first let's|how|what|why)\b|.*\?\s*$", re.IGNORECASE)
CONNECTIVE = re.compile(r"(So|Then|Thus|Hence|And)\b,?\s+(?=(?:the|her|his|their|our|there|she|he|they|we|it|this|"
                        r"that|each|\$)\b|\$)")


def _prose(text: str) -> list[tuple[int, int]]:
    """(start, end) of the parts of `text` outside `$...$`."""
    parts, start = [], 0
    for match in re.finditer(r"(?<!\\)\$[^$]*(?<!\\)\$", text):
        parts.append((start, match.start()))
        start = match.end()
    return parts + [(start, len(text))]


def _at_verb(stripped: str, rng: random.Random) -> list[tuple[str, str]]:
    """The statement with an adverb at its last verb (the one that states the result: "since there are 60 seconds
    in a minute, then there are clearly ..."), or a modal for that copula; in prose, never in math. A (kind, text)
    pair: "copula" or "verb"."""
    found = [(start + m.start(), start + m.end(), kind) for start, end in _prose(stripped)
             for kind, pattern in (("copula", COPULA), ("verb", VERB))
             for m in pattern.finditer(stripped[start:end])]
    if not found:
        return []
    at, end, kind = max(found)
    if kind == "verb":
        return [("verb", f"{stripped[:at]}{rng.choice(BEFORE_VERB)} {stripped[at:]}")]
    # "must be" is one phrase among the adverbs, no commoner than one of them.
    if MODAL.match(stripped, at) and rng.randrange(len(AT_VERB) + 1) == 0:
        return [("copula", f"{stripped[:at]}must be{stripped[end:]}")]
    return [("copula", f"{stripped[:end]} {rng.choice(AT_VERB)}{stripped[end:]}")]


def _forms(stripped: str, rng: random.Random) -> list[tuple[str, str]]:
    """Every way this repertoire can say the statement `stripped` with certainty (one phrase drawn per form), each
    with its kind: "connective" (an adverb after it), "opener", "copula" or "verb" (at the verb)."""
    forms = []
    connective = CONNECTIVE.match(stripped)
    if connective:
        forms.append(("connective", f"{connective.group(1)} {rng.choice(ADVERBS)} {stripped[connective.end():]}"))
    elif STATES.match(re.split(r"\$", stripped)[0].strip() or "$") and stripped[:1].isupper():
        forms.append(("opener", rng.choice(OPENERS).format(clause=lower_first(stripped))))
    return forms + _at_verb(stripped, rng)


def certainty_forms(text: str, rng: random.Random) -> dict[str, str]:
    """`text` said with certainty, grammatically, its `# Answer` tail untouched, in each kind of form that fits
    ({kind: text}; empty when none does)."""
    body, tail = split_answer(text)
    stripped = body.rstrip()
    if not stripped or not STATEMENT.search(stripped) or NOT_A_STATEMENT.match(stripped):
        return {}  # certainty fits a claim, not a plan ("Let's start at the beginning") or a question
    return {kind: said + body[len(stripped):] + tail for kind, said in _forms(stripped, rng)}


def with_certainty(text: str, rng: random.Random) -> str | None:
    """`text` said with certainty in one of the forms that fit (drawn), or None when none does."""
    forms = certainty_forms(text, rng)
    return forms[rng.choice(sorted(forms))] if forms else None
