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


def house_style(steps: list[str]) -> tuple[list[str], str]:
    """How a solution writes: the connectives its steps open with, and its multiplication sign (`\\cdot` unless it
    writes `\\times` or `*` more often)."""
    openers = [m.group(0) for step in steps if (m := OPENER.match(step))]
    text = " ".join(steps)
    signs = {"\\cdot": text.count("\\cdot"), "\\times": text.count("\\times"),
             "*": len(re.findall(r"\d\s*\*\s*\d", text))}
    times = max(signs, key=lambda sign: (signs[sign], sign == "\\cdot"))
    return openers, times


def in_house_style(text: str, style: tuple[list[str], str], rng) -> str:
    """A generated step opened, now and then, like the solution's own steps, with its multiplication sign."""
    openers, times = style
    if times != "\\cdot":
        text = text.replace("\\cdot", times if times == "\\times" else "*")
    if openers and rng.random() < 0.5 and not OPENER.match(text) and not CONNECTIVE.match(text) and \
            not re.match(r"(?:We|Since|As|With|From|Putting|Plugging|This|That|It|Here|For|Suppose|Let|Say|Assume)\b",
                         text):
        opener = rng.choice(openers)
        text = opener + (text[0].lower() + text[1:] if text[:2].istitle() or text[:1].isupper() and
                         text[1:2].islower() else text)
    return text


def styled(options: list, steps: list[str]) -> list:
    """`options` whose generated steps are written in the solution's house style (see `in_house_style`)."""
    style = house_style(steps)

    def wrap(option):
        def restyled(rng):
            perturbation = option(rng)
            if perturbation is not None:
                for edit in perturbation.edits:
                    if edit.get("error") and "text" in edit:
                        text = in_house_style(edit["text"], style, rng)
                        # An opener must not turn a replacement back into the step it replaces.
                        if edit["op"] != "replace" or text != steps[edit["step"] - 1].strip():
                            edit["text"] = text
            return perturbation
        return Placed(restyled, option.first, option.length) if isinstance(option, Placed) else restyled
    return [wrap(option) for option in options]


def fitted(rng: random.Random, texts: list[str], lengths: list[int]) -> str:
    """Of two of `texts` (one step written several ways) drawn at random, the one whose length is closer to a
    length drawn from `lengths` (the solution's own steps'): inserted steps then run nearer the solution's length,
    so a probe that sees only a step's length finds them less, while every way keeps coming up (the closest way
    alone would make one frame the commonest, a cue to the word probe)."""
    target = rng.choice(lengths)
    pair = rng.sample(texts, min(2, len(texts)))
    return min(pair, key=lambda text: abs(len(text) - target))
