"""Wording of the steps the offline operators write: an opener and a frame, each drawn (seeded) from a pool.

The pools use the words PRM800K's own steps use most ("so", "and", "right", "we have", "that means", "we know
that"), each in few of the frames, so that no word is much commoner in an inserted step than in the solutions'
own steps: a bag-of-words probe (`inject stats --cues`) then finds the operator's steps by their mathematics, not by
their wording. Words the solutions (nearly) never write ("hence", "also", "this gives", "putting ... into",
"suppose", "plugging in") are left out for the same reason.
"""
from __future__ import annotations

import random
import re

from injector.engines.offline.equations import CONNECTIVE
from injector.engines.offline.positions import Placed

# How a generated step may open; the empty opener (most often) leaves the frame's own first word.
OPENERS = ("", "", "", "", "So ", "And ", "Right, so ", "Now ", "Ok, so ", "Then ", "Right, and ", "Yes, and ")


def say(rng: random.Random, frames: tuple[str, ...], openers: tuple[str, ...] = OPENERS, **fields: str) -> str:
    """One frame, `str.format`ted with `fields`, after one opener, as a sentence: "So we have $x = 4$."."""
    frame = rng.choice(frames).format(**fields)
    opener = rng.choice(openers)
    if opener and frame[:1].isupper() and frame[1:2].islower() and not frame.startswith("I "):
        frame = frame[0].lower() + frame[1:]
    text = opener + frame
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "?", "!")) else text + "."


# Leading connectives a solution's own steps use ("Right, ", "So ", "Next, "), to open an inserted step the same way.
OPENER = re.compile(r"^(?:Right|So|Then|Now|And|Next|Similarly|Likewise|Finally|Also|Thus|Hence|OK|Ok|Okay|Yes|"
                    r"That's right|Great|First|Second|Alright)\b,?\s+(?=\S)")


def house_style(steps: list[str]) -> tuple[list[str], str, str]:
    """How a solution writes: the connectives its steps open with, its multiplication sign (`\\cdot` unless it
    writes `\\times` or `*` more often) and its division (`\\frac`; `\\dfrac` when it writes that more often; `/`
    when it writes no fraction command but divides with a slash)."""
    openers = [m.group(0) for step in steps if (m := OPENER.match(step))]
    text = " ".join(steps)
    signs = {"\\cdot": text.count("\\cdot"), "\\times": text.count("\\times"),
             "*": len(re.findall(r"\d\s*\*\s*\d", text))}
    times = max(signs, key=lambda sign: (signs[sign], sign == "\\cdot"))
    fractions = len(re.findall(r"\\[dt]?frac\b", text))
    divide = "\\dfrac" if text.count("\\dfrac") * 2 > fractions else "\\frac" if fractions or \
        not re.search(r"\d\s*/\s*\d", text) else "/"
    return openers, times, divide


# A fraction of two plain numbers, as the operators write one.
NUMERIC_FRACTION = re.compile(r"\\frac\{(\d+(?:\.\d+)?)\}\{(\d+(?:\.\d+)?)\}")


def in_house_style(text: str, style: tuple[list[str], str, str], rng, *, opener: bool = True) -> str:
    """A generated step opened, now and then, like the solution's own steps (when `opener`), with its
    multiplication sign and its division."""
    openers, times, divide = style
    if times != "\\cdot":
        text = text.replace("\\cdot", times if times == "\\times" else "*")
    if divide == "/":  # "\\frac{120}{10}" in a solution that writes "120/10"
        text = NUMERIC_FRACTION.sub(r"\1/\2", text)
    elif divide == "\\dfrac":
        text = NUMERIC_FRACTION.sub(r"\\dfrac{\1}{\2}", text)
    if opener and openers and rng.random() < 0.5 and not OPENER.match(text) and not CONNECTIVE.match(text) and \
            not re.match(r"(?:We|Since|As|With|From|Putting|Plugging|This|That|It|Here|For|Suppose|Let|Say|Assume)\b",
                         text):
        chosen = rng.choice(openers)
        text = chosen + (text[0].lower() + text[1:] if text[:2].istitle() or text[:1].isupper() and
                         text[1:2].islower() else text)
    return text


def styled(options: list, steps: list[str], *, openers: bool = True) -> list:
    """`options` whose generated steps are written in the solution's house style (see `in_house_style`); an
    opener only when `openers`, and never on a step that becomes step 1 (nothing precedes it to follow from)."""
    style = house_style(steps)

    def wrap(option):
        def restyled(rng):
            perturbation = option(rng)
            if perturbation is not None:
                for edit in perturbation.edits:
                    if edit.get("error") and "text" in edit:
                        first = edit.get("step") == 1 or edit.get("after") == 0
                        text = in_house_style(edit["text"], style, rng, opener=openers and not first)
                        # An opener must not turn a replacement back into the step it replaces.
                        if edit["op"] != "replace" or text != steps[edit["step"] - 1].strip():
                            edit["text"] = text
            return perturbation
        return Placed(restyled, option.first, option.length) if isinstance(option, Placed) else restyled
    return [wrap(option) for option in options]


# The plain connectives a solution's steps open with that can open any step ("First", "Finally" or "Similarly"
# say where the step stands, which a borrowed step does not).
# An opener is followed by a space or a comma: "Right." alone is a whole step, not "Right" opening "$x = 4$".
PLAIN_OPENER = re.compile(r"^(?:(?:So|And|Then|Now|Right|Ok|OK|Okay|Yes|Alright)\b(?:,\s*|\s+))+(?=\S)")


def opener_like(rng: random.Random, steps: list[str]) -> str:
    """The plain opener ("So ", "Right, so ", "") of one of the solution's own steps drawn at random: generated
    steps then open with a connective as often as the solution's own steps do, and with the same ones."""
    match = PLAIN_OPENER.match(rng.choice(steps).strip()) if steps else None
    return match.group(0) if match else ""


def opened(opener: str, text: str) -> str:
    """`text` after `opener` (its first letter lowered, unless it is "I" or LaTeX); `text` itself when the opener
    is empty or the text already opens with a connective."""
    if not opener or OPENER.match(text) or CONNECTIVE.match(text) or re.match(r"(?:That|This) means\b", text):
        return text
    if text[:1].isupper() and text[1:2].islower() and not text.startswith("I "):
        text = text[0].lower() + text[1:]
    return opener + text


def unopened(text: str) -> str:
    """`text` without its leading connectives ("That means the ..." -> "The ..."): a step with nothing before it
    follows from nothing."""
    bare = re.sub(r"^(?:(?:that means|we know that|and so)\b,?\s*)", "", text, flags=re.IGNORECASE)
    bare = CONNECTIVE.sub("", PLAIN_OPENER.sub("", bare))
    return bare[:1].upper() + bare[1:] if bare else text


def fitted(rng: random.Random, texts: list[str], lengths: list[int]) -> str:
    """Of two of `texts` (one step written several ways) drawn at random, the one whose length is closer to a
    length drawn from `lengths` (the solution's own steps'): inserted steps then run nearer the solution's length,
    so a probe that sees only a step's length finds them less, while every way keeps coming up (the closest way
    alone would make one frame the commonest, a cue to the word probe)."""
    target = rng.choice(lengths)
    pair = rng.sample(texts, min(2, len(texts)))
    return min(pair, key=lambda text: abs(len(text) - target))
