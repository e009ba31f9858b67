"""Build `data/sample.jsonl`: 30 fully correct step-by-step solutions in PRM800K label format.

Every problem and solution below was written for this project (MIT, like the code); none is copied from
PRM800K or any other dataset. Each problem is data (problem, steps, answer) plus a `check` that recomputes the
answer independently with Python/sympy. Before writing, the script also verifies every variable-free
relation (`=`, `<`, `\\le`, `\\equiv ... \\pmod m`, ...) inside the `$...$` math of the trajectory steps.

Run from anywhere, with the project installed:  python data/make_sample.py
The output is deterministic: running it again regenerates the identical file.
"""
from __future__ import annotations

import itertools
import json
import math
import re
import sys
from fractions import Fraction
from pathlib import Path

import sympy as sp
from latex2sympy2_extended import latex2sympy

OUT = Path(__file__).resolve().parent / "sample.jsonl"
ANSWER_SEP = "\n\n# Answer\n\n"
FORBIDDEN = ("incorrect", "mistake", "wrong", "error", "flawed", "deliberate", "intentional")


# --------------------------------------------------------------------------- answer formatting helpers
def frac(q) -> str:
    """A rational as the answer string PRM800K would use: `7`, `-12`, `\\frac{3}{8}`, `-\\frac{1}{2}`."""
    q = sp.Rational(q)
    if q.q == 1:
        return str(q.p)
    sign = "-" if q < 0 else ""
    return f"{sign}\\frac{{{abs(q.p)}}}{{{q.q}}}"


def in_base(n: int, b: int) -> str:
    digits = ""
    while n:
        n, r = divmod(n, b)
        digits = str(r) + digits
    return f"{digits or '0'}_{b}"


def dollars(q) -> str:
    q = Fraction(str(q)) if not isinstance(q, Fraction) else q
    cents = q * 100
    assert cents.denominator == 1, q
    return f"{cents.numerator // 100}.{cents.numerator % 100:02d}"


def same_value(a, answer: str) -> bool:
    """True when a sympy value `a` equals the LaTeX answer string."""
    b = latex2sympy(answer).subs(sp.Symbol("i"), sp.I)
    return sp.simplify(sp.sympify(a) - b) == 0


# --------------------------------------------------------------------------- the independent checks
x = sp.Symbol("x")


def check_notebooks():
    cost = 4 * Fraction("2.75") + 3 * Fraction("1.20")
    return dollars(20 - cost)


def check_train():
    speed = sp.Rational(120) / sp.Rational(5, 2)
    return frac(sp.Rational(200) / speed * 60)


def check_cafe():
    c, b, j = sp.symbols("c b j")
    s = sp.solve([c + b + j - 9, 2 * c + j - 10, c + 3 * b - 9], [c, b, j], dict=True)
    assert len(s) == 1
    s = s[0]
    return frac(2 * s[c] + 3 * s[b] + 5 * s[j])


def check_quadratic_difference():
    roots = sp.solve(x**2 - 3 * x - 28, x)
    return frac(max(roots) - min(roots))


def check_quadratic_formula():
    roots = sp.solve(2 * x**2 - 6 * x + 1, x)
    assert all(r.is_real for r in roots)
    return max(roots, key=lambda r: float(r))


def check_gcd():
    return str(math.gcd(1386, 546))


def check_power_mod():
    return str(pow(3, 100, 7))


def check_base4_sum():
    return in_base(int("213", 4) + int("132", 4), 4)


def check_path_area():
    return str((12 + 2) * (8 + 2) - 12 * 8)


def check_ladder():
    return frac(sp.sqrt(17**2 - 8**2) - sp.sqrt(17**2 - 15**2))


def check_triangle_angles():
    b = sp.solve(sp.Eq(2 * x + x + (x + 30), 180), x)[0]
    return frac(2 * b)


def check_committee():
    juniors = [f"J{k}" for k in range(8)]
    seniors = [f"S{k}" for k in range(5)]
    count = sum(
        1
        for group in itertools.combinations(juniors + seniors, 4)
        if sum(1 for m in group if m.startswith("S")) == 2
    )
    return str(count)


def check_coins():
    seqs = list(itertools.product("HT", repeat=4))
    return frac(sp.Rational(sum(1 for s in seqs if s.count("H") == 2), len(seqs)))


def check_marbles():
    bag = ["R"] * 5 + ["B"] * 3
    draws = list(itertools.permutations(range(len(bag)), 2))
    return frac(sp.Rational(sum(1 for i, k in draws if bag[i] != bag[k]), len(draws)))


def check_arithmetic_sequence():
    a, d = sp.symbols("a d")
    s = sp.solve([a + 2 * d - 11, a + 7 * d - 31], [a, d])
    return frac(sum(s[a] + k * s[d] for k in range(10)))


def check_geometric_sequence():
    r = sp.Symbol("r", real=True)
    ratios = sp.solve(162 * r**3 - 6, r)
    assert len(ratios) == 1
    return frac(162 * ratios[0] ** 5)


def check_composition():
    def f(t):
        return 3 * t - 4

    def g(t):
        return t**2 + 1

    return frac(f(g(2)) - g(f(2)))


def check_inverse():
    h = (2 * x + 3) / (x - 1)
    sols = [s for s in sp.solve(sp.Eq(h, 5), x) if s != 1]
    assert len(sols) == 1 and sp.simplify(h.subs(x, sols[0]) - 5) == 0
    return frac(sols[0])


def check_linear_inequality():
    return str(sum(1 for n in range(-1000, 1000) if -7 < 3 * n + 2 <= 17))


def check_quadratic_inequality():
    return str(sum(n for n in range(-1000, 1000) if n * n < 2 * n + 15))


def check_cyclist():
    return frac(sp.Rational(18 * 1000, 60 * 60) * 40)


def check_jacket():
    return dollars(Fraction(80) * Fraction(75, 100) * Fraction(90, 100) * Fraction(105, 100))


def check_plus_minus():
    sols = sp.solveset(sp.Eq((2 * x - 1) ** 2, 49), x, domain=sp.S.Reals)
    return frac(sp.prod(list(sols)))


def check_division_by_expression():
    sols = sp.solveset(sp.Eq(x**2 / (x - 1), 1 / (x - 1) + 4), x, domain=sp.S.Reals)
    sols = list(sols)
    assert len(sols) == 1
    return frac(sols[0])


def check_exponents():
    sols = sp.solve(sp.Eq(sp.Integer(4) ** (x + 1), sp.Integer(8) ** (x - 1)), x)
    real = [s for s in sols if s.is_real]
    assert len(real) == 1
    return frac(real[0])


def check_logarithms():
    candidates = sp.solve(x * (x - 2) - 8, x)
    valid = [c for c in candidates if c > 2 and sp.simplify(sp.log(c, 2) + sp.log(c - 2, 2) - 3) == 0]
    assert len(valid) == 1
    return frac(valid[0])


def check_complex():
    return sp.simplify((5 + 5 * sp.I) / (2 - sp.I))


def check_pipes():
    ab = Fraction(1, 6) + Fraction(1, 9)
    left = 1 - 2 * ab
    net = ab - Fraction(1, 12)
    assert net > 0
    return frac(sp.Rational(str(2 + left / net)))


def check_inclusion_exclusion():
    return str(sum(1 for n in range(1, 1001) if n % 3 and n % 5 and n % 7))


def check_altitude():
    a, b, c = sp.Point(1, 1), sp.Point(7, 9), sp.Point(10, 3)
    return frac(sp.Line(a, b).distance(c))


# --------------------------------------------------------------------------- the problems
# `envs`: known values of the solution's variables, used to verify relations with variables in the steps.
# `alts`: {step index: (chosen position, [(text, rating), ...])}: extra completions that are NOT chosen.
# `human`: {step index: [(text, rating), ...]}: that step's text becomes a human completion; the listed
#          model completions stay unchosen (`chosen_completion: null`), as in PRM800K phase 1.
PROBLEMS = [
    dict(
        topic="arithmetic word problem (money)",
        problem=r"Maya buys 4 notebooks at $\$2.75$ each and 3 pens at $\$1.20$ each. She pays with a $\$20$ bill. How much change, in dollars, does she receive?",
        steps=[
            r"The notebooks cost $4 \cdot 2.75 = 11$ dollars.",
            r"The pens cost $3 \cdot 1.20 = 3.60$ dollars.",
            r"So the total cost is $11 + 3.60 = 14.60$ dollars.",
            r"She pays with a $\$20$ bill, so her change is $20 - 14.60 = 5.40$ dollars.",
        ],
        answer="5.40",
        check=check_notebooks,
    ),
    dict(
        topic="arithmetic word problem (rate, time in minutes)",
        problem=r"A train travels 120 miles in 2.5 hours. At the same average speed, how many minutes will it take the train to travel 200 miles?",
        steps=[
            r"The average speed of the train is $\frac{120}{2.5} = 48$ miles per hour.",
            r"The question says the train keeps the same average speed, so we can use 48 miles per hour for the 200-mile trip.",
            r"The time for 200 miles is $\frac{200}{48} = \frac{25}{6}$ hours.",
            r"There are 60 minutes in an hour, so we multiply by 60 to convert to minutes.",
            r"That gives $\frac{25}{6} \cdot 60 = 250$ minutes.",
            r"So the train takes 250 minutes.",
        ],
        answer="250",
        check=check_train,
    ),
    dict(
        topic="linear system in three unknowns (word problem)",
        problem=r"At a cafe, a coffee, a bagel and a juice together cost $\$9$. Two coffees and a juice cost $\$10$. A coffee and three bagels cost $\$9$. What is the cost, in dollars, of 2 coffees, 3 bagels and 5 juices?",
        steps=[
            r"Let $c$, $b$ and $j$ be the prices in dollars of a coffee, a bagel and a juice.",
            r"The first fact gives $c + b + j = 9$.",
            r"The second fact gives $2c + j = 10$.",
            r"The third fact gives $c + 3b = 9$.",
            r"From the second equation, $j = 10 - 2c$.",
            r"From the third equation, $3b = 9 - c$, so $b = \frac{9 - c}{3}$.",
            r"Substituting both into the first equation gives $c + \frac{9 - c}{3} + (10 - 2c) = 9$.",
            r"Multiplying both sides by 3 gives $3c + (9 - c) + 3(10 - 2c) = 27$.",
            r"Expanding, $3c + 9 - c + 30 - 6c = 27$.",
            r"Collecting terms, $-4c + 39 = 27$.",
            r"So $-4c = -12$ and $c = 3$.",
            r"Then $j = 10 - 2 \cdot 3 = 4$.",
            r"And $b = \frac{9 - 3}{3} = 2$.",
            r"Check the first equation: $3 + 2 + 4 = 9$. Check the third: $3 + 3 \cdot 2 = 9$.",
            r"So a coffee costs 3 dollars, a bagel costs 2 dollars and a juice costs 4 dollars.",
            r"The order of 2 coffees, 3 bagels and 5 juices costs $2 \cdot 3 + 3 \cdot 2 + 5 \cdot 4$ dollars.",
            r"This is $6 + 6 + 20 = 32$ dollars.",
            r"So the order costs 32 dollars.",
        ],
        answer="32",
        check=check_cafe,
        envs=[{"c": 3, "b": 2, "j": 4}],
    ),
    dict(
        topic="quadratic equation by factoring",
        problem=r"What is the positive difference between the two solutions of $x^2 - 3x - 28 = 0$?",
        steps=[
            r"We look for two numbers whose product is $-28$ and whose sum is $-3$.",
            r"The numbers $-7$ and $4$ work, since $(-7) \cdot 4 = -28$ and $-7 + 4 = -3$.",
            r"So $x^2 - 3x - 28 = (x - 7)(x + 4)$.",
            r"Setting each factor equal to zero gives $x = 7$ or $x = -4$.",
            r"The positive difference between the solutions is $7 - (-4) = 11$.",
            r"So the positive difference is 11.",
        ],
        answer="11",
        check=check_quadratic_difference,
        envs=[{"x": 7}, {"x": -4}],
        alts={1: (1, [(r"The numbers $7$ and $-4$ work, since $(7)(-4) = -28$ and $7 + (-4) = 3$.", -1)])},
    ),
    dict(
        topic="quadratic formula (simplest radical form)",
        problem=r"Find the larger root of $2x^2 - 6x + 1 = 0$. Express your answer in simplest radical form.",
        steps=[
            r"This quadratic does not factor nicely over the integers, so we use the quadratic formula with $a = 2$, $b = -6$ and $c = 1$.",
            r"The discriminant is $b^2 - 4ac = (-6)^2 - 4 \cdot 2 \cdot 1 = 36 - 8 = 28$.",
            r"Since $28 > 0$, there are two distinct real roots.",
            r"We simplify $\sqrt{28} = \sqrt{4 \cdot 7} = 2\sqrt{7}$.",
            r"So $x = \frac{-b \pm \sqrt{28}}{2a} = \frac{6 \pm 2\sqrt{7}}{4}$.",
            r"Dividing the numerator and the denominator by 2 gives $x = \frac{3 \pm \sqrt{7}}{2}$.",
            r"The larger root uses the plus sign, since $\sqrt{7} > 0$.",
            r"So the larger root is $\frac{3 + \sqrt{7}}{2}$.",
        ],
        answer=r"\frac{3+\sqrt{7}}{2}",
        check=check_quadratic_formula,
        envs=[{"a": 2, "b": -6, "c": 1, "x": (3 + sp.sqrt(7)) / 2}, {"a": 2, "b": -6, "c": 1, "x": (3 - sp.sqrt(7)) / 2}],
    ),
    dict(
        topic="number theory: gcd by the Euclidean algorithm",
        problem=r"What is the greatest common divisor of 1386 and 546?",
        steps=[
            r"We use the Euclidean algorithm, which repeatedly replaces the larger number by its remainder on division by the smaller one.",
            r"First, $1386 = 2 \cdot 546 + 294$, so $\gcd(1386, 546) = \gcd(546, 294)$.",
            r"Next, $546 = 1 \cdot 294 + 252$, so $\gcd(546, 294) = \gcd(294, 252)$.",
            r"Then $294 = 1 \cdot 252 + 42$, so $\gcd(294, 252) = \gcd(252, 42)$.",
            r"Finally, $252 = 6 \cdot 42 + 0$, so 42 divides 252 and $\gcd(252, 42) = 42$.",
            r"So the greatest common divisor of 1386 and 546 is 42.",
        ],
        answer="42",
        check=check_gcd,
    ),
    dict(
        topic="number theory: modular arithmetic (remainder of a power)",
        problem=r"What is the remainder when $3^{100}$ is divided by 7?",
        steps=[
            r"We compute the powers of 3 modulo 7 until they repeat.",
            r"$3^1 \equiv 3 \pmod 7$ and $3^2 = 9 \equiv 2 \pmod 7$.",
            r"$3^3 \equiv 3 \cdot 2 = 6 \pmod 7$.",
            r"$3^4 \equiv 3 \cdot 6 = 18 \equiv 4 \pmod 7$, and $3^5 \equiv 3 \cdot 4 = 12 \equiv 5 \pmod 7$.",
            r"$3^6 \equiv 3 \cdot 5 = 15 \equiv 1 \pmod 7$, so the powers of 3 modulo 7 repeat with period 6.",
            r"We divide the exponent by 6: $100 = 6 \cdot 16 + 4$.",
            r"So $3^{100} = (3^6)^{16} \cdot 3^4 \equiv 1^{16} \cdot 3^4 \pmod 7$.",
            r"From the list above, $3^4 \equiv 4 \pmod 7$.",
            r"So the remainder is 4.",
        ],
        answer="4",
        check=check_power_mod,
        human={5: [(r"We divide the exponent by 6: $100 = 6 \cdot 16 + 6$.", -1)]},
    ),
    dict(
        topic="number theory: base-4 addition and base conversion",
        problem=r"Compute $213_4 + 132_4$. Express your answer in base 4.",
        steps=[
            r"We add column by column from the right, carrying whenever a column sum reaches 4.",
            r"Rightmost column: $3 + 2 = 5 = 1 \cdot 4 + 1$, so we write 1 and carry 1.",
            r"Middle column: $1 + 3 + 1 = 5 = 1 \cdot 4 + 1$, so we write 1 and carry 1.",
            r"Left column: $2 + 1 + 1 = 4 = 1 \cdot 4 + 0$, so we write 0 and carry 1.",
            r"The final carry becomes a new leading digit, so the sum is $1011_4$.",
            r"As a check in base 10: $213_4 = 2 \cdot 16 + 1 \cdot 4 + 3 = 39$ and $132_4 = 1 \cdot 16 + 3 \cdot 4 + 2 = 30$, so the sum is $39 + 30 = 69$.",
            r"And $1011_4 = 1 \cdot 64 + 0 \cdot 16 + 1 \cdot 4 + 1 = 69$, which agrees. So $213_4 + 132_4 = 1011_4$.",
        ],
        answer="1011_4",
        check=check_base4_sum,
    ),
    dict(
        topic="geometry: area (path around a rectangle)",
        problem=r"A rectangular garden is 12 meters long and 8 meters wide. A path 1 meter wide runs around the outside of the garden. What is the area of the path, in square meters?",
        steps=[
            r"The path adds 1 meter on each side, so the outer rectangle is $12 + 2 \cdot 1 = 14$ meters long.",
            r"Similarly, the outer rectangle is $8 + 2 \cdot 1 = 10$ meters wide.",
            r"The area of the outer rectangle is $14 \cdot 10 = 140$ square meters.",
            r"The area of the garden itself is $12 \cdot 8 = 96$ square meters.",
            r"The path is the region between the two rectangles, so its area is $140 - 96 = 44$ square meters.",
            r"So the area of the path is 44 square meters.",
        ],
        answer="44",
        check=check_path_area,
    ),
    dict(
        topic="geometry: Pythagorean theorem (sliding ladder)",
        problem=r"A 17-foot ladder leans against a vertical wall on level ground, with its foot 8 feet from the wall. The foot of the ladder slides away from the wall until it is 15 feet from the wall. By how many feet does the top of the ladder slide down?",
        steps=[
            r"The wall, the ground and the ladder form a right triangle with the ladder as the hypotenuse, because the wall is vertical and the ground is level.",
            r"At first, the height of the top is $\sqrt{17^2 - 8^2} = \sqrt{289 - 64} = \sqrt{225} = 15$ feet.",
            r"After sliding, the foot is 15 feet from the wall and the ladder is still 17 feet long.",
            r"The new height is $\sqrt{17^2 - 15^2} = \sqrt{289 - 225} = \sqrt{64} = 8$ feet.",
            r"The top slides down by $15 - 8 = 7$ feet.",
            r"So the top of the ladder slides down 7 feet.",
        ],
        answer="7",
        check=check_ladder,
        alts={0: (1, [("Let's draw a picture first.", 0)])},
    ),
    dict(
        topic="geometry: angles of a triangle",
        problem=r"In triangle $ABC$, angle $A$ is twice angle $B$, and angle $C$ is $30^\circ$ more than angle $B$. What is the measure of angle $A$, in degrees?",
        steps=[
            r"Let the measure of angle $B$ be $x$ degrees. Then angle $A$ is $2x$ degrees and angle $C$ is $x + 30$ degrees.",
            r"The angles of a triangle add up to $180^\circ$, so $2x + x + (x + 30) = 180$.",
            r"This simplifies to $4x + 30 = 180$, so $4x = 150$ and $x = 37.5$.",
            r"Then angle $A$ is $2 \cdot 37.5 = 75$ degrees.",
            r"So angle $A$ measures $75^\circ$.",
        ],
        answer="75",
        check=check_triangle_angles,
        envs=[{"x": sp.Rational(75, 2)}],
    ),
    dict(
        topic="counting: choosing a committee",
        problem=r"A club has 8 juniors and 5 seniors. In how many ways can it choose a committee of 4 members that includes exactly 2 seniors?",
        steps=[
            r"The committee has 4 members with exactly 2 seniors, so the other 2 members must be juniors.",
            r"The number of ways to choose 2 of the 5 seniors is $\binom{5}{2} = \frac{5 \cdot 4}{2} = 10$.",
            r"The number of ways to choose 2 of the 8 juniors is $\binom{8}{2} = \frac{8 \cdot 7}{2} = 28$.",
            r"The choice of seniors and the choice of juniors are independent, so we multiply.",
            r"That gives $10 \cdot 28 = 280$ committees.",
            r"So there are 280 possible committees.",
        ],
        answer="280",
        check=check_committee,
    ),
    dict(
        topic="probability: coin flips (fraction answer)",
        problem=r"A fair coin is flipped 4 times. What is the probability that exactly 2 of the flips are heads? Express your answer as a common fraction.",
        steps=[
            r"Each flip has 2 equally likely outcomes, so there are $2^4 = 16$ equally likely sequences of flips.",
            r"A sequence with exactly 2 heads is determined by choosing which 2 of the 4 flips are heads.",
            r"The number of such choices is $\binom{4}{2} = \frac{4 \cdot 3}{2} = 6$.",
            r"We can list them to be sure: HHTT, HTHT, HTTH, THHT, THTH, TTHH.",
            r"So the probability is $\frac{6}{16}$.",
            r"Dividing the numerator and the denominator by 2 gives $\frac{6}{16} = \frac{3}{8}$.",
            r"So the probability of exactly 2 heads is $\frac{3}{8}$.",
        ],
        answer=r"\frac{3}{8}",
        check=check_coins,
    ),
    dict(
        topic="probability: drawing without replacement",
        problem=r"A bag contains 5 red marbles and 3 blue marbles. Two marbles are drawn at random without replacement. What is the probability that the two marbles have different colors? Express your answer as a common fraction.",
        steps=[
            r"There are $5 + 3 = 8$ marbles in total.",
            r"The probability of drawing red first and then blue is $\frac{5}{8} \cdot \frac{3}{7} = \frac{15}{56}$, since after a red marble is removed, 7 marbles remain and 3 of them are blue.",
            r"The probability of drawing blue first and then red is $\frac{3}{8} \cdot \frac{5}{7} = \frac{15}{56}$.",
            r"These two cases cannot both happen, so we add their probabilities.",
            r"That gives $\frac{15}{56} + \frac{15}{56} = \frac{30}{56}$.",
            r"Simplifying, $\frac{30}{56} = \frac{15}{28}$.",
            r"So the probability that the two marbles have different colors is $\frac{15}{28}$.",
        ],
        answer=r"\frac{15}{28}",
        check=check_marbles,
    ),
    dict(
        topic="sequences: arithmetic sequence sum",
        problem=r"The third term of an arithmetic sequence is 11 and the eighth term is 31. What is the sum of the first 10 terms?",
        steps=[
            r"Let the first term be $a$ and the common difference be $d$. Then the third term is $a + 2d = 11$ and the eighth term is $a + 7d = 31$.",
            r"Subtracting the first equation from the second gives $5d = 20$, so $d = 4$.",
            r"Then $a = 11 - 2d = 11 - 8 = 3$.",
            r"The tenth term is $a + 9d = 3 + 36 = 39$.",
            r"The sum of the first 10 terms of an arithmetic sequence is 10 times the average of the first and tenth terms.",
            r"So the sum is $\frac{10(3 + 39)}{2} = 5 \cdot 42 = 210$.",
            r"So the sum of the first 10 terms is 210.",
        ],
        answer="210",
        check=check_arithmetic_sequence,
        envs=[{"a": 3, "d": 4}],
        alts={4: (0, [("We could also list all ten terms and add them one by one.", 0)])},
    ),
    dict(
        topic="sequences: geometric sequence (fraction answer)",
        problem=r"The first term of a geometric sequence of real numbers is 162 and the fourth term is 6. What is the sixth term? Express your answer as a common fraction.",
        steps=[
            r"Let the common ratio be $r$. The fourth term is the first term times $r^3$, so $162r^3 = 6$.",
            r"Dividing by 162 gives $r^3 = \frac{6}{162} = \frac{1}{27}$.",
            r"The terms are real, so $r$ is the real cube root of $\frac{1}{27}$, which is $r = \frac{1}{3}$.",
            r"The sixth term is the first term times $r^5$, which is $162 \cdot \left(\frac{1}{3}\right)^5$.",
            r"Since $3^5 = 243$, this equals $\frac{162}{243}$.",
            r"Both 162 and 243 are divisible by 81, so $\frac{162}{243} = \frac{2}{3}$.",
            r"So the sixth term is $\frac{2}{3}$.",
        ],
        answer=r"\frac{2}{3}",
        check=check_geometric_sequence,
        envs=[{"r": sp.Rational(1, 3)}],
    ),
    dict(
        topic="functions: composition",
        problem=r"Let $f(x) = 3x - 4$ and $g(x) = x^2 + 1$. What is $f(g(2)) - g(f(2))$?",
        steps=[
            r"First, $g(2) = 2^2 + 1 = 5$.",
            r"Then $f(g(2)) = f(5) = 3 \cdot 5 - 4 = 11$.",
            r"Next, $f(2) = 3 \cdot 2 - 4 = 2$, so $g(f(2)) = g(2) = 5$, which we already computed.",
            r"So $f(g(2)) - g(f(2)) = 11 - 5 = 6$.",
        ],
        answer="6",
        check=check_composition,
    ),
    dict(
        topic="functions: inverse of a rational function",
        problem=r"Let $h(x) = \frac{2x + 3}{x - 1}$ for $x \neq 1$. Find $h^{-1}(5)$.",
        steps=[
            r"The value $h^{-1}(5)$ is the number $x$ with $h(x) = 5$.",
            r"So we solve $\frac{2x + 3}{x - 1} = 5$.",
            r"Since $x \neq 1$, we can multiply both sides by $x - 1$ to get $2x + 3 = 5(x - 1)$.",
            r"Expanding gives $2x + 3 = 5x - 5$.",
            r"Then $3x = 8$, so $x = \frac{8}{3}$.",
            r"Check: $h\left(\frac{8}{3}\right) = \frac{\frac{16}{3} + 3}{\frac{8}{3} - 1} = \frac{\frac{25}{3}}{\frac{5}{3}} = 5$, as needed.",
            r"So $h^{-1}(5) = \frac{8}{3}$.",
        ],
        answer=r"\frac{8}{3}",
        check=check_inverse,
        envs=[{"x": sp.Rational(8, 3)}],
    ),
    dict(
        topic="inequalities: counting integer solutions of a linear inequality",
        problem=r"How many integers $n$ satisfy $-7 < 3n + 2 \le 17$?",
        steps=[
            r"We subtract 2 from all three parts: $-7 - 2 < 3n \le 17 - 2$, which is $-9 < 3n \le 15$.",
            r"Dividing all three parts by 3, which is positive, keeps the directions of the inequalities: $-3 < n \le 5$.",
            r"The lower bound is strict, so $n = -3$ is not allowed.",
            r"The upper bound is not strict, so $n = 5$ is allowed.",
            r"So the integers are $-2, -1, 0, 1, 2, 3, 4, 5$.",
            r"Counting them gives $5 - (-2) + 1 = 8$ integers.",
            r"So 8 integers satisfy the inequality.",
        ],
        answer="8",
        check=check_linear_inequality,
        envs=[{"n": -3}, {"n": 5}],
    ),
    dict(
        topic="inequalities: quadratic inequality",
        problem=r"Find the sum of all integers $x$ that satisfy $x^2 < 2x + 15$.",
        steps=[
            r"Moving everything to one side, the inequality becomes $x^2 - 2x - 15 < 0$.",
            r"We factor: $x^2 - 2x - 15 = (x - 5)(x + 3)$, since $(-5) \cdot 3 = -15$ and $-5 + 3 = -2$.",
            r"The product $(x - 5)(x + 3)$ is zero at $x = 5$ and at $x = -3$.",
            r"A product of two factors is negative exactly when the factors have opposite signs.",
            r"For $-3 < x < 5$, we have $x + 3 > 0$ and $x - 5 < 0$, so the product is negative.",
            r"For $x < -3$ both factors are negative, and for $x > 5$ both are positive, so the product is positive there; at $x = -3$ and $x = 5$ it equals 0, which is not less than 0.",
            r"So the solution set is $-3 < x < 5$, and the integers in it are $-2, -1, 0, 1, 2, 3, 4$.",
            r"Their sum is $(-2) + (-1) + 0 + 1 + 2 + 3 + 4 = 7$.",
            r"So the sum of the integer solutions is 7.",
        ],
        answer="7",
        check=check_quadratic_inequality,
        envs=[{"x": 5}, {"x": -3}],
    ),
    dict(
        topic="unit conversion (km/h to meters per second)",
        problem=r"A cyclist rides at a constant speed of 18 kilometers per hour. How many meters does she travel in 40 seconds?",
        steps=[
            r"One kilometer is 1000 meters, so 18 kilometers is $18 \cdot 1000 = 18000$ meters.",
            r"One hour is $60 \cdot 60 = 3600$ seconds.",
            r"So her speed is $\frac{18000}{3600} = 5$ meters per second.",
            r"Her speed is constant, so she covers 5 meters in each of the 40 seconds.",
            r"So she travels $5 \cdot 40 = 200$ meters.",
            r"So the cyclist travels 200 meters in 40 seconds.",
        ],
        answer="200",
        check=check_cyclist,
    ),
    dict(
        topic="percentages: successive discounts and sales tax",
        problem=r"A jacket has a list price of $\$80$. It is first discounted by $25\%$, and then the discounted price is reduced by a further $10\%$. Finally, a sales tax of $5\%$ is added. What is the final price, in dollars?",
        steps=[
            r"A $25\%$ discount leaves $100\% - 25\% = 75\%$ of the price.",
            r"So after the first discount the price is $0.75 \cdot 80 = 60$ dollars.",
            r"The second discount of $10\%$ applies to the discounted price of 60 dollars, not to the list price.",
            r"So the price becomes $0.90 \cdot 60 = 54$ dollars.",
            r"The $5\%$ tax adds $0.05 \cdot 54 = 2.70$ dollars.",
            r"So the final price is $54 + 2.70 = 56.70$ dollars.",
            r"The final price of the jacket is 56.70 dollars.",
        ],
        answer="56.70",
        check=check_jacket,
        alts={2: (1, [(r"The second discount of $10\%$ is taken from the list price, so it is $0.10 \cdot 80 = 8$ dollars.", -1)])},
    ),
    dict(
        topic="square-root equation (both signs of the root)",
        problem=r"Find the product of all real solutions of $(2x - 1)^2 = 49$.",
        steps=[
            r"The equation says that $2x - 1$ is a number whose square is 49.",
            r"Taking square roots, $2x - 1 = 7$ or $2x - 1 = -7$, since both $7^2$ and $(-7)^2$ equal 49.",
            r"If $2x - 1 = 7$, then $2x = 8$ and $x = 4$.",
            r"If $2x - 1 = -7$, then $2x = -6$ and $x = -3$.",
            r"Check: $(2 \cdot 4 - 1)^2 = 7^2 = 49$ and $(2 \cdot (-3) - 1)^2 = (-7)^2 = 49$.",
            r"So the real solutions are $x = 4$ and $x = -3$.",
            r"Their product is $4 \cdot (-3) = -12$.",
            r"So the product of all real solutions is $-12$.",
        ],
        answer="-12",
        check=check_plus_minus,
        envs=[{"x": 4}, {"x": -3}],
    ),
    dict(
        topic="rational equation (dividing by an expression that must be nonzero)",
        problem=r"Find all real numbers $x$ such that $\frac{x^2}{x - 1} = \frac{1}{x - 1} + 4$.",
        steps=[
            r"Both fractions have denominator $x - 1$, so the equation only makes sense for $x \neq 1$.",
            r"Subtracting $\frac{1}{x - 1}$ from both sides gives $\frac{x^2 - 1}{x - 1} = 4$.",
            r"The numerator factors as $x^2 - 1 = (x - 1)(x + 1)$.",
            r"Since $x \neq 1$, the factor $x - 1$ is not zero, so we can divide it out: $\frac{(x - 1)(x + 1)}{x - 1} = x + 1$.",
            r"So the equation becomes $x + 1 = 4$, which gives $x = 3$.",
            r"The value $x = 3$ satisfies $x \neq 1$, so it is allowed.",
            r"Check: $\frac{3^2}{3 - 1} = \frac{9}{2}$ and $\frac{1}{3 - 1} + 4 = \frac{1}{2} + 4 = \frac{9}{2}$.",
            r"So the only solution is $x = 3$.",
        ],
        answer="3",
        check=check_division_by_expression,
        envs=[{"x": 3}],
    ),
    dict(
        topic="exponential equation (common base)",
        problem=r"Solve for $x$: $4^{x+1} = 8^{x-1}$.",
        steps=[
            r"Both 4 and 8 are powers of 2: $4 = 2^2$ and $8 = 2^3$.",
            r"So $4^{x+1} = (2^2)^{x+1} = 2^{2x+2}$.",
            r"And $8^{x-1} = (2^3)^{x-1} = 2^{3x-3}$.",
            r"Since the function $2^t$ is one-to-one, the exponents must be equal: $2x + 2 = 3x - 3$.",
            r"Subtracting $2x$ and adding 3 on both sides gives $x = 5$.",
            r"Check: $4^{6} = 4096$ and $8^{4} = 4096$, so $x = 5$ works.",
        ],
        answer="5",
        check=check_exponents,
        envs=[{"x": 5}],
    ),
    dict(
        topic="logarithmic equation (domain of the logarithm)",
        problem=r"Solve $\log_2 x + \log_2 (x - 2) = 3$.",
        steps=[
            r"The logarithms are defined only when $x > 0$ and $x - 2 > 0$, so we need $x > 2$.",
            r"Using $\log_2 a + \log_2 b = \log_2 (ab)$ for positive $a$ and $b$, the equation becomes $\log_2 (x(x - 2)) = 3$.",
            r"So $x(x - 2) = 2^3 = 8$.",
            r"This gives $x^2 - 2x - 8 = 0$.",
            r"Factoring, $(x - 4)(x + 2) = 0$, so $x = 4$ or $x = -2$.",
            r"The value $x = -2$ does not satisfy $x > 2$, so we discard it.",
            r"Check: $\log_2 4 + \log_2 2 = 2 + 1 = 3$.",
            r"So the solution is $x = 4$.",
        ],
        answer="4",
        check=check_logarithms,
        envs=[{"x": 4}, {"x": -2}],
        human={
            1: [
                (r"Using $\log_2 a + \log_2 b = \log_2 (a + b)$, the equation becomes $\log_2 (2x - 2) = 3$.", -1),
                ("We can combine the two logarithms into one.", 0),
            ]
        },
    ),
    dict(
        topic="complex numbers: division",
        problem=r"Let $z = \frac{5 + 5i}{2 - i}$. Write $z$ in the form $a + bi$, where $a$ and $b$ are real numbers.",
        steps=[
            r"To divide by $2 - i$, we multiply the numerator and the denominator by its conjugate $2 + i$.",
            r"The denominator becomes $(2 - i)(2 + i) = 4 - i^2 = 4 + 1 = 5$, using $i^2 = -1$.",
            r"The numerator becomes $(5 + 5i)(2 + i) = 10 + 5i + 10i + 5i^2$.",
            r"Since $i^2 = -1$, this is $10 + 15i - 5 = 5 + 15i$.",
            r"So $z = \frac{5 + 15i}{5} = 1 + 3i$.",
            r"Check: $(1 + 3i)(2 - i) = 2 - i + 6i - 3i^2 = 2 + 5i + 3 = 5 + 5i$, as needed.",
            r"So $z = 1 + 3i$.",
        ],
        answer="1+3i",
        check=check_complex,
        envs=[{"z": 1 + 3 * sp.I}],
    ),
    dict(
        topic="work-rate word problem (pipes and a drain)",
        problem=r"Pipe A can fill a tank in 6 hours and pipe B can fill it in 9 hours. Drain C can empty the full tank in 12 hours. The tank starts empty. Pipes A and B are opened together for 2 hours; then drain C is also opened, and all three run until the tank is full. How many hours in total does it take to fill the tank? Express your answer as a common fraction.",
        steps=[
            r"We measure work in tanks, so filling the whole tank is 1 unit of work.",
            r"Pipe A fills $\frac{1}{6}$ of the tank per hour.",
            r"Pipe B fills $\frac{1}{9}$ of the tank per hour.",
            r"Drain C empties $\frac{1}{12}$ of the tank per hour.",
            r"Together, A and B fill $\frac{1}{6} + \frac{1}{9} = \frac{3}{18} + \frac{2}{18} = \frac{5}{18}$ of the tank per hour.",
            r"In the first 2 hours only A and B are open, so they fill $2 \cdot \frac{5}{18} = \frac{10}{18} = \frac{5}{9}$ of the tank.",
            r"Since the tank started empty, the part still to be filled is $1 - \frac{5}{9} = \frac{4}{9}$.",
            r"Once C is opened, the net rate is $\frac{5}{18} - \frac{1}{12}$ of the tank per hour.",
            r"With common denominator 36, this is $\frac{10}{36} - \frac{3}{36} = \frac{7}{36}$ of the tank per hour.",
            r"The net rate is positive, so the tank keeps filling.",
            r"The time to fill the remaining $\frac{4}{9}$ at this rate is $\frac{4}{9} \div \frac{7}{36} = \frac{4}{9} \cdot \frac{36}{7}$ hours.",
            r"This equals $\frac{144}{63} = \frac{16}{7}$ hours.",
            r"The total time is the first 2 hours plus this: $2 + \frac{16}{7} = \frac{14}{7} + \frac{16}{7} = \frac{30}{7}$ hours.",
            r"So the tank is full after $\frac{30}{7}$ hours in total.",
        ],
        answer=r"\frac{30}{7}",
        check=check_pipes,
    ),
    dict(
        topic="counting: inclusion-exclusion",
        problem=r"How many integers from 1 to 1000, inclusive, are divisible by none of 3, 5 and 7?",
        steps=[
            r"We count the integers from 1 to 1000 that are divisible by at least one of 3, 5 and 7, and subtract that count from 1000.",
            r"Multiples of 3: $\lfloor 1000/3 \rfloor = 333$.",
            r"Multiples of 5: $\lfloor 1000/5 \rfloor = 200$.",
            r"Multiples of 7: $\lfloor 1000/7 \rfloor = 142$.",
            r"Since 3 and 5 are coprime, the numbers divisible by both are the multiples of 15: $\lfloor 1000/15 \rfloor = 66$.",
            r"Likewise, the multiples of 21 number $\lfloor 1000/21 \rfloor = 47$.",
            r"And the multiples of 35 number $\lfloor 1000/35 \rfloor = 28$.",
            r"The numbers divisible by all three are the multiples of $3 \cdot 5 \cdot 7 = 105$: $\lfloor 1000/105 \rfloor = 9$.",
            r"By inclusion-exclusion, the count divisible by at least one of them is $333 + 200 + 142 - 66 - 47 - 28 + 9$.",
            r"We have $333 + 200 + 142 = 675$ and $66 + 47 + 28 = 141$, so this is $675 - 141 + 9 = 543$.",
            r"So the count divisible by none of 3, 5 and 7 is $1000 - 543 = 457$.",
            r"So 457 integers from 1 to 1000 are divisible by none of 3, 5 and 7.",
        ],
        answer="457",
        check=check_inclusion_exclusion,
    ),
    dict(
        topic="coordinate geometry: altitude of a triangle",
        problem=r"Triangle $ABC$ has vertices $A = (1, 1)$, $B = (7, 9)$ and $C = (10, 3)$. What is the length of the altitude from $C$ to side $AB$?",
        steps=[
            r"The altitude from $C$ is the distance from $C$ to the line through $A$ and $B$.",
            r"We can find it from the area of triangle $ABC$ and the length of $AB$, using area $= \frac{1}{2} \cdot \text{base} \cdot \text{height}$.",
            r"First, the length of $AB$. The horizontal change from $A$ to $B$ is $7 - 1 = 6$.",
            r"The vertical change from $A$ to $B$ is $9 - 1 = 8$.",
            r"By the Pythagorean theorem, $AB = \sqrt{6^2 + 8^2} = \sqrt{36 + 64} = \sqrt{100} = 10$.",
            r"Next, the area, by the shoelace formula: the area is $\frac{1}{2}|x_A y_B - x_B y_A + x_B y_C - x_C y_B + x_C y_A - x_A y_C|$.",
            r"$x_A y_B - x_B y_A = 1 \cdot 9 - 7 \cdot 1 = 2$.",
            r"$x_B y_C - x_C y_B = 7 \cdot 3 - 10 \cdot 9 = 21 - 90 = -69$.",
            r"$x_C y_A - x_A y_C = 10 \cdot 1 - 1 \cdot 3 = 7$.",
            r"The sum is $2 - 69 + 7 = -60$.",
            r"So the area is $\frac{1}{2} \cdot |-60| = 30$.",
            r"Let $h$ be the altitude from $C$. With base $AB = 10$, we get $\frac{1}{2} \cdot 10 \cdot h = 30$.",
            r"So $5h = 30$ and $h = 6$.",
            r"As a check, the line $AB$ has slope $\frac{8}{6} = \frac{4}{3}$ and passes through $(1, 1)$, so its equation is $4x - 3y - 1 = 0$.",
            r"The distance from $C = (10, 3)$ to this line is $\frac{|4 \cdot 10 - 3 \cdot 3 - 1|}{\sqrt{4^2 + 3^2}} = \frac{30}{5} = 6$, which agrees.",
            r"So the altitude from $C$ to side $AB$ has length 6.",
        ],
        answer="6",
        check=check_altitude,
        envs=[{"h": 6}],
    ),
]


# --------------------------------------------------------------------------- verification of step arithmetic
_MATH = re.compile(r"(?<!\\)\$(.+?)(?<!\\)\$")
_REL = re.compile(r"\\equiv|\\neq|\\le(?![a-z])|\\ge(?![a-z])|=|<|>")
_PMOD = re.compile(r"\\pmod\s*\{?\s*(\d+)\s*\}?")
_BASE_NUMERAL = re.compile(r"\b(\d+)_(\d+)\b")
_GCD = re.compile(r"\\gcd\((\d+),\s*(\d+)\)")
# pieces left alone: function values like f(5) (the parser reads g(f(2)) as a product), named coordinates
# (x_A), \text{...}, tuples, and the letters A-Z (the parser lower-cases them, so AB would become a*b)
_SKIP = re.compile(r"\b[fgh](\(|\\left|\^)|_[A-Za-z]|\\text|[A-Z]")


def _split_top(piece: str) -> list[str]:
    """Split at commas that are not inside brackets."""
    out, depth, cur = [], 0, ""
    for ch in piece:
        depth += ch in "({["
        depth -= ch in ")}]"
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return out + [cur]


def _parse(piece: str):
    """The sympy value of a LaTeX piece (it may contain variables), or None when it is not checkable."""
    piece = piece.strip().rstrip(".;").strip()
    if not piece or _SKIP.search(piece):
        return None
    piece = _BASE_NUMERAL.sub(lambda m: str(int(m.group(1), int(m.group(2)))), piece)
    piece = _GCD.sub(lambda m: str(math.gcd(int(m.group(1)), int(m.group(2)))), piece)
    piece = piece.replace(r"\$", "").replace(r"\%", "").replace(r"^\circ", "")
    try:
        expr = latex2sympy(piece)
    except Exception:
        return None
    if not isinstance(expr, sp.Expr) or expr.atoms(sp.core.function.AppliedUndef):
        return None
    expr = expr.subs(sp.Symbol("i"), sp.I)
    return expr.xreplace({f: sp.Rational(str(f)) for f in expr.atoms(sp.Float)})  # decimals, exactly


def _holds(a, rel: str, b, mod) -> bool:
    if rel == r"\equiv":
        return mod is not None and sp.simplify(a - b) % mod == 0
    d = sp.N(a - b, 50)
    if rel in ("=", r"\neq"):
        return (abs(d) < 1e-30) == (rel == "=")
    return {"<": d < 0, ">": d > 0, r"\le": d <= 0, r"\ge": d >= 0}[rel]


def _degree_at_most_one(expr, envs: list[dict]) -> bool:
    names = set().union(*envs)
    varying = [sp.Symbol(n) for n in sorted(names) if len({str(e.get(n)) for e in envs}) > 1]
    varying = [v for v in varying if v in expr.free_symbols]
    if not varying:
        return False
    numer = sp.fraction(sp.together(expr))[0]
    try:
        return sp.Poly(sp.expand(numer), *varying).total_degree() <= 1
    except sp.PolynomialError:
        return False


def verify_step_arithmetic(text: str, envs: list[dict] | None = None) -> int:
    """Check the relations (`=`, `<`, `\\le`, `\\equiv ... \\pmod m`, ...) inside the `$...$` math of a step.

    Variable-free relations must hold exactly. A relation with variables passes when it is an identity, or
    (for `=` and `\\neq`) when it holds after substituting the known solution values of at least one entry
    of `envs` (e.g. both roots of a quadratic). Returns how many relations were checked.
    """
    checked = 0
    for span in _MATH.findall(text):
        mod = None
        m = _PMOD.search(span)
        if m:
            mod = int(m.group(1))
            span = _PMOD.sub("", span)
        variants = [span.replace(r"\pm", "+"), span.replace(r"\pm", "-")] if r"\pm" in span else [span]
        for variant in variants:
            parts = _REL.split(variant)
            rels = _REL.findall(variant)
            for k, rel in enumerate(rels):
                # a comma-separated list inside one span holds several statements: use the last item on the
                # left of the relation and the first item on its right
                a = _parse(_split_top(parts[k])[-1])
                b = _parse(_split_top(parts[k + 1])[0])
                if a is None or b is None:
                    continue
                if not (a.free_symbols or b.free_symbols):
                    ok = _holds(a, rel, b, mod)
                elif rel != r"\equiv" and sp.simplify(a - b) == 0:
                    ok = rel in ("=", r"\le", r"\ge")  # an identity
                elif rel in ("=", r"\neq") and envs:
                    results = []
                    for env in envs:
                        subs = {sp.Symbol(name): value for name, value in env.items()}
                        a2, b2 = a.subs(subs), b.subs(subs)
                        if not (a2.free_symbols or b2.free_symbols):
                            results.append(_holds(a2, rel, b2, mod))
                    if not results:
                        continue
                    # a relation of degree <= 1 in the variables that differ between the entries (x = 7 for
                    # one root of a quadratic) must hold for one entry; any other (x^2 - 2x - 8 = 0) for all
                    ok = any(results) if _degree_at_most_one(a - b, envs) else all(results)
                else:
                    continue
                if not ok:
                    raise AssertionError(f"relation does not hold: {a} {rel} {b}   in: {text!r}")
                checked += 1
    return checked


# --------------------------------------------------------------------------- building the records
def _completion(text: str, rating) -> dict:
    return {"text": text, "rating": rating, "flagged": False}


def build_record(p: dict) -> dict:
    texts = list(p["steps"])
    texts[-1] = texts[-1] + ANSWER_SEP + p["answer"]
    alts, human = p.get("alts", {}), p.get("human", {})
    steps = []
    for k, text in enumerate(texts):
        if k in human:
            steps.append(
                {
                    "completions": [_completion(t, r) for t, r in human[k]],
                    "human_completion": {"text": text, "rating": None, "source": "human", "flagged": False},
                    "chosen_completion": None,
                }
            )
            continue
        completions = [_completion(text, 1)]
        chosen = 0
        if k in alts:
            chosen, others = alts[k]
            completions = [_completion(t, r) for t, r in others]
            completions.insert(chosen, _completion(text, 1))
        steps.append({"completions": completions, "human_completion": None, "chosen_completion": chosen})
    n_chars = sum(len(t) for t in texts)
    total_time = 40_000 + 18_000 * len(texts) + 90 * n_chars  # deterministic, plausible labelling time in ms
    return {
        "labeler": "prm-injector-sample",
        "timestamp": "2026-11-29T00:00:00",
        "generation": None,
        "is_quality_control_question": False,
        "is_initial_screening_question": False,
        "question": {"problem": p["problem"], "ground_truth_answer": p["answer"]},
        "label": {"steps": steps, "total_time": total_time, "finish_reason": "solution"},
    }


def trajectory_texts(record: dict) -> list[str]:
    """Per step: the chosen completion, else the human completion (the PRM800K reading rule)."""
    out = []
    for step in record["label"]["steps"]:
        if step["chosen_completion"] is not None:
            out.append(step["completions"][step["chosen_completion"]]["text"])
        else:
            out.append(step["human_completion"]["text"])
    return out


_ANSWER_RE = re.compile(r"\n\n# Answer\n\n(.+)$", re.S)
_FORBIDDEN_RE = re.compile("|".join(FORBIDDEN), re.I)


def validate(records: list[dict]) -> None:
    assert len(records) == 30, len(records)
    problems = [r["question"]["problem"] for r in records]
    assert len(set(problems)) == len(problems), "duplicate problem"
    for r in records:
        steps = r["label"]["steps"]
        texts = trajectory_texts(r)
        assert 4 <= len(texts) <= 20, (len(texts), r["question"]["problem"])
        assert all(t.strip() for t in texts)
        assert all(ANSWER_SEP not in t for t in texts[:-1])
        m = _ANSWER_RE.search(texts[-1])
        assert m and m.group(1) == r["question"]["ground_truth_answer"], texts[-1]
        for step in steps:
            if step["chosen_completion"] is None:
                assert step["human_completion"] and step["human_completion"]["rating"] is None
            else:
                assert step["human_completion"] is None
                assert step["completions"][step["chosen_completion"]]["rating"] == 1
            for c in step["completions"]:
                assert c["rating"] in (1, 0, -1)
        all_text = [r["question"]["problem"]] + [c["text"] for s in steps for c in s["completions"]]
        all_text += [s["human_completion"]["text"] for s in steps if s["human_completion"]]
        for t in all_text:
            assert not _FORBIDDEN_RE.search(t), t
        assert r["label"]["finish_reason"] == "solution"
    n_alt = sum(1 for r in records if any(len(s["completions"]) > 1 and s["chosen_completion"] is not None
                                          for s in r["label"]["steps"]))
    n_human = sum(1 for r in records if any(s["chosen_completion"] is None for s in r["label"]["steps"]))
    assert 3 <= n_alt <= 4 and n_human == 2, (n_alt, n_human)


def main() -> int:
    n_checked = 0
    for p in PROBLEMS:
        got = p["check"]()
        ok = got == p["answer"] if isinstance(got, str) else same_value(got, p["answer"])
        if not ok:
            raise AssertionError(f"check gives {got!r}, answer is {p['answer']!r}: {p['problem']}")
        n_checked += sum(verify_step_arithmetic(t, p.get("envs")) for t in p["steps"])
    records = [build_record(p) for p in PROBLEMS]
    validate(records)
    with OUT.open("w", encoding="utf-8", newline="\n") as fh:
        for r in records:
            fh.write(json.dumps(r) + "\n")
    counts = sorted(len(r["label"]["steps"]) for r in records)
    print(f"wrote {len(records)} records to {OUT} ({n_checked} step relations verified; step counts {counts})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
