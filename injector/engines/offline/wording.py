"""Wording of the steps the offline operators write: an opener and a frame, each drawn (seeded) from a pool.

The pools use the words PRM800K's own steps use most ("so", "and", "right", "we have", "that means", "we know
that"), each in few of the frames, so that no word is much commoner in an inserted step than in the solutions'
own steps: a bag-of-words probe (`inject stats --cues`) then finds the operator's steps by their mathematics, not by
their wording. Words the solutions (nearly) never write ("hence", "also", "this gives", "putting ... into",
"suppose", "plugging in") are left out for the same reason.
"""
from __future__ import annotations

import random

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
