"""Build `data/sciences.jsonl`: 12 fully correct step-by-step science solutions in the `trajectories` format.

Four physics, four chemistry and four biology problems. Every problem and solution below was written for this
project (MIT, like the code); none is copied from any dataset. Each problem is data (question, steps, answer)
plus a `check` that recomputes the answer independently with exact fractions, sympy or enumeration, and names
the intermediate numbers each step must state. Before writing, the script also verifies every relation
(`=`, `\\approx`, `<`, `>`) it can parse inside the `$...$` math of the steps.

Run from anywhere, with the project installed:  python data/make_sciences.py
The output is deterministic: running it again regenerates the identical file.
"""
from __future__ import annotations

import json
import math
import re
import sys
from fractions import Fraction as F
from pathlib import Path

import sympy as sp
from latex2sympy2_extended import latex2sympy

from make_sample import _split_top  # the same bracket-aware comma split

OUT = Path(__file__).resolve().parent / "sciences.jsonl"
ANSWER_SEP = "\n\n# Answer\n\n"
FORBIDDEN = ("incorrect", "mistake", "wrong", "error", "flawed", "deliberate", "intentional")
SUBJECTS = ("physics", "chemistry", "biology")


def num(q, places: int | None = None) -> str:
    """An exact value as it is written in a step: `20`, `0.8`, or with a fixed number of decimal places."""
    q = sp.Rational(q.numerator, q.denominator) if isinstance(q, F) else sp.Rational(q)
    if places is not None:
        return f"{float(q):.{places}f}"
    if q.q == 1:
        return str(q.p)
    text = f"{float(q):.12f}".rstrip("0")
    assert sp.Rational(text) == q, f"{q} has no short decimal form"
    return text


# --------------------------------------------------------------------------- the independent checks
# Each check returns (answer, facts): `facts` maps a 1-based step number to strings that step must contain,
# all computed here from the data of the question, not copied from the steps.
t, x = sp.symbols("t x")


def check_cliff():
    g, v0, cliff = 10, 20, 25
    roots = sp.solve(sp.Eq(cliff + v0 * t - sp.Rational(g, 2) * t**2, 0), t)
    landing = [r for r in roots if r > 0]
    assert len(landing) == 1
    t_up = sp.Rational(v0, g)
    rise = sp.Rational(v0**2, 2 * g)
    top = rise + cliff
    t_down = sp.sqrt(2 * top / g)
    assert t_up + t_down == landing[0]
    facts = {2: [f"= {num(t_up)}$"], 3: [f"= {num(rise)}$"], 4: [f"= {num(top)}$"], 6: [f"t_2 = {num(t_down)}$"],
             7: [f"= {num(landing[0])}$"], 8: [f"= {num(cliff + v0 * 5 - 5 * 25 - cliff)}$"]}
    return num(landing[0]), facts


def check_ramp():
    m, g, h, mu = F(2), F("9.8"), F(5), F("0.25")
    energy = m * g * h
    normal = m * g
    friction = mu * normal
    d = energy / friction
    assert d == h / mu  # the mass and g cancel
    facts = {1: [f"= {num(energy)}$"], 3: [num(energy)], 4: [f"= {num(normal)}$"], 5: [f"= {num(friction)}$"],
             6: [f"{num(friction)} d = {num(energy)}"], 7: [f"= {num(d)}$"], 8: [f"= {num(h / mu)}$"]}
    return num(d), facts


def check_circuit():
    # nodal analysis at the junction after the 2-ohm resistor, not the series-parallel reduction of the steps
    V = sp.Symbol("V")
    emf, r_series, r_a, r_b = 18, 2, 6, 12
    node = sp.solve(sp.Eq((emf - V) / r_series, V / r_a + V / r_b), V)[0]
    power = node**2 / r_a
    current = (emf - node) / r_series
    facts = {1: [f"= {num(sp.Rational(r_a * r_b, r_a + r_b))}$"],
             2: [f"= {num(r_series + sp.Rational(r_a * r_b, r_a + r_b))}$"],
             3: [f"= {num(current)}$"], 4: [f"= {num(current * r_series)}$"], 5: [f"= {num(node)}$"],
             7: [f"= {num(power)}$"], 8: [f"= {num(node / r_a)}$", f"= {num(node / r_b)}$"]}
    return num(power), facts


def check_lens():
    d_o, f, h_o = 30, 10, sp.Rational(4)
    d_i = sp.solve(sp.Eq(sp.Rational(1, d_o) + 1 / x, sp.Rational(1, f)), x)[0]
    m = -d_i / d_o
    h_i = m * h_o
    facts = {3: [r"\frac{1}{15}$"], 4: [f"d_i = {num(d_i)}$"], 5: [f"= {num(m)}$"], 6: [f"= {num(h_i, 1)}$"],
             7: [f"{num(abs(h_i), 1)}$"]}
    return num(abs(h_i)), facts


def check_water():
    molar = {"H2": 2 * F("1.0"), "O2": 2 * F("16.0"), "H2O": 2 * F("1.0") + F("16.0")}
    moles = {"H2": F("8.0") / molar["H2"], "O2": F("48.0") / molar["O2"]}
    coefficients = {"H2": 2, "O2": 1}
    extent = min(moles[s] / coefficients[s] for s in moles)  # the limiting reactant sets how far it goes
    limiting = [s for s in moles if moles[s] / coefficients[s] == extent]
    assert limiting == ["O2"]
    water = 2 * extent
    grams = water * molar["H2O"]
    h2_used = 2 * extent
    facts = {1: [f"= {num(molar['H2'], 1)}$", f"= {num(molar['O2'], 1)}$"], 2: [f"= {num(moles['H2'], 1)}$"],
             3: [f"= {num(moles['O2'], 1)}$"], 4: [f"= {num(moles['H2'] / 2, 1)}$"], 6: [f"= {num(water, 1)}$"],
             7: [f"= {num(molar['H2O'], 1)}$"], 8: [f"= {num(grams)}$"],
             9: [f"= {num(h2_used, 1)}$", f"= {num(h2_used * molar['H2'], 1)}$", f"= {num(grams)}$"]}
    return num(grams), facts


def check_gas():
    P, V, R, T = F("4.50"), F("8.21"), F("0.0821"), F(27) + 273
    n = P * V / (R * T)
    mass = n * 2 * F("14.0")
    facts = {1: [f"= {num(T)}$"], 4: [f"= {num(R * T)}$", f"= {num(P * V)}$"], 5: [f"= {num(n, 2)}$"],
             6: [f"= {num(2 * F('14.0'), 1)}$"], 7: [f"= {num(mass, 1)}$"]}
    return num(mass), facts


def check_ph():
    acid = F("0.0500") * F("0.100")
    base = F("0.0300") * F("0.100")
    excess = acid - base
    volume = F("0.0500") + F("0.0300")
    h = excess / volume
    ph = -math.log10(h)
    facts = {2: [f"= {num(acid, 5)}$"], 3: [f"= {num(base, 5)}$"], 4: [f"= {num(excess, 5)}$"],
             5: [f"= {num(volume * 1000, 1)}$"], 6: [f"= {num(h, 4)}$"],
             8: [f"{math.log10(2.5):.3f}", f"\\approx {ph:.2f}$"]}
    return f"{ph:.2f}", facts


def check_equilibrium():
    roots = sp.solve(sp.Eq((2 * x) ** 2, 64 * (1 - x) ** 2), x)
    valid = [r for r in roots if 0 < r < 1]  # every concentration must stay positive
    assert len(valid) == 1 and len(roots) == 2
    hi = 2 * valid[0]
    rest = 1 - valid[0]
    facts = {5: [f"x = {num(valid[0], 3)}$"], 7: [f"= {num(hi, 2)}", f"= {num(rest, 3)}"],
             8: [f"= {num(hi**2 / rest**2)}$"]}
    return num(hi, 2), facts


def check_punnett():
    def gametes(genotype: str) -> list[str]:
        """The distinct gametes, one allele of each gene; with independent assortment they are equally likely."""
        made = [a + b for a in genotype[:2] for b in genotype[2:]]
        kinds = sorted(set(made))
        assert all(made.count(k) == len(made) // len(kinds) for k in kinds)
        return kinds

    boxes = [(g1, g2) for g1 in gametes("TtRr") for g2 in gametes("Ttrr")]
    wrinkled = [b for b in boxes if b[0][1] == "r" and b[1][1] == "r"]
    tall_wrinkled = [b for b in wrinkled if "T" in (b[0][0], b[1][0])]
    share = sp.Rational(len(tall_wrinkled), len(boxes))
    facts = {3: [f"= {len(boxes)}$"], 5: [f"= {len(wrinkled)}$"], 7: [f"${len(tall_wrinkled)}$ of the ${len(boxes)}$"],
             8: [r"\frac{3}{8}$"], 9: [f"= {num(240 * share)}$"]}
    assert share == sp.Rational(3, 8)
    return num(240 * share), facts


def check_hardy_weinberg():
    q = [r for r in sp.solve(sp.Eq(x**2, sp.Rational(16, 100)), x) if r >= 0][0]
    p = 1 - q
    het = 2 * p * q
    counts = [p**2 * 500, het * 500, q**2 * 500]
    assert sum(counts) == 500
    facts = {4: [f"= {num(q)}$"], 5: [f"= {num(p)}$"], 6: [f"= {num(het)}$"], 7: [f"= {num(counts[1])}$"],
             8: [f"= {num(counts[0])}$", f"= {num(counts[2])}$"]}
    return num(counts[1]), facts


def check_logistic():
    r = F("0.30") - F("0.10")
    N, K = 2000, 10000
    growth = r * N * (1 - F(N, K))
    facts = {1: [f"= {num(r, 2)}$"], 2: [f"= {num(r * N)}$"], 4: [f"= {num(F(N, K))}$", f"= {num(1 - F(N, K))}$"],
             5: [f"= {num(growth)}$"]}
    return num(growth), facts


def check_cardiac():
    stroke = 120 - 50
    per_minute = stroke * 72
    liters = F(per_minute, 1000)
    facts = {2: [f"= {stroke}$"], 3: [f"= {per_minute}$"], 4: [f"= {num(liters)}$"],
             5: [f"\\approx {stroke / 120:.2f}$"]}
    return num(liters), facts


# --------------------------------------------------------------------------- the problems
# `envs`: values of the letters used in the steps, so relations with letters (`4.9 d = 98`) are verified too.
PROBLEMS = [
    dict(
        subject="physics",
        topic="kinematics: vertical throw from a cliff (constant acceleration)",
        question=r"A stone is thrown straight up at $20 \text{ m/s}$ from the edge of a cliff that is $25 \text{ m}$ above the beach below. On the way down it misses the cliff and lands on the beach. Ignore air resistance and take $g = 10 \text{ m/s}^2$. In seconds, how long after it is thrown does the stone hit the beach?",
        steps=[
            r"Since air resistance is ignored, the only acceleration is gravity, a constant $10 \text{ m/s}^2$ downward, so the constant-acceleration formulas apply.",
            r"Take upward as positive. At the top of its flight the stone's velocity is zero, so the time to reach the top is $t_1 = \frac{20}{10} = 2$ seconds.",
            r"The height it rises above the cliff edge is $h_1 = \frac{20^2}{2 \cdot 10} = \frac{400}{20} = 20$ meters.",
            r"So at the top the stone is $20 + 25 = 45$ meters above the beach.",
            r"From the top the stone falls from rest, so the fall time $t_2$ satisfies $45 = \frac{1}{2} \cdot 10 \cdot t_2^2 = 5 t_2^2$.",
            r"So $t_2^2 = \frac{45}{5} = 9$, and taking the positive root because time after the top is positive, $t_2 = 3$ seconds.",
            r"The total time is $t_1 + t_2 = 2 + 3 = 5$ seconds.",
            r"Check: measuring $y$ from the cliff edge, $y = 20t - 5t^2$, and at $t = 5$ we get $y = 100 - 125 = -25$, which is the beach level.",
            r"So the stone hits the beach 5 seconds after it is thrown.",
        ],
        answer="5",
        check=check_cliff,
        envs={"t_1": 2, "t_2": 3, "h_1": 20},
    ),
    dict(
        subject="physics",
        topic="energy: frictionless ramp, then kinetic friction on a floor",
        question=r"A $2.0 \text{ kg}$ block is released from rest at the top of a frictionless ramp, $5.0 \text{ m}$ above a horizontal floor. At the bottom it slides onto the floor, where the coefficient of kinetic friction between the block and the floor is $0.25$. Take $g = 9.8 \text{ m/s}^2$. In meters, how far does the block slide along the floor before it stops?",
        steps=[
            r"At the top, the block's gravitational potential energy relative to the floor is $mgh = 2.0 \cdot 9.8 \cdot 5.0 = 98$ joules.",
            r"It is released from rest, so its kinetic energy at the top is zero.",
            r"The ramp is frictionless, so no energy is lost on it: at the bottom all 98 joules are kinetic energy.",
            r"On the horizontal floor the normal force balances the weight, so $N = mg = 2.0 \cdot 9.8 = 19.6$ newtons.",
            r"The kinetic friction force is $f = \mu N = 0.25 \cdot 19.6 = 4.9$ newtons.",
            r"Friction does negative work $f d$ over a sliding distance $d$, and the block stops when that work has removed all its kinetic energy: $4.9 d = 98$.",
            r"So $d = \frac{98}{4.9} = 20$ meters.",
            r"The mass and $g$ cancel, so as a check $d = \frac{h}{\mu} = \frac{5.0}{0.25} = 20$ meters, which agrees.",
            r"So the block slides 20 meters along the floor before it stops.",
        ],
        answer="20",
        check=check_ramp,
        envs={"m": "2.0", "g": "9.8", "h": "5.0", "N": "19.6", "f": "4.9", "mu": "0.25", "d": 20},
    ),
    dict(
        subject="physics",
        topic="circuits: series-parallel resistors, power in one resistor",
        question=r"An $18 \text{ V}$ battery with negligible internal resistance is connected to a $2\,\Omega$ resistor in series with a parallel combination of a $6\,\Omega$ resistor and a $12\,\Omega$ resistor. In watts, how much power is dissipated in the $6\,\Omega$ resistor?",
        steps=[
            r"The $6\,\Omega$ and $12\,\Omega$ resistors are in parallel, so their equivalent resistance is $\frac{6 \cdot 12}{6 + 12} = \frac{72}{18} = 4$ ohms.",
            r"This $4\,\Omega$ combination is in series with the $2\,\Omega$ resistor, so the total resistance is $2 + 4 = 6$ ohms.",
            r"Since the battery's internal resistance is negligible, its full 18 volts is across the $6\,\Omega$ total, and the current it drives is $I = \frac{18}{6} = 3$ amperes.",
            r"All 3 amperes pass through the series $2\,\Omega$ resistor, so the voltage across it is $3 \cdot 2 = 6$ volts.",
            r"The voltage across the parallel combination is $18 - 6 = 12$ volts; as a check, $3 \cdot 4 = 12$ volts too.",
            r"Resistors in parallel share the same voltage, so the $6\,\Omega$ resistor has 12 volts across it.",
            r"Its power is $P = \frac{V^2}{R} = \frac{12^2}{6} = \frac{144}{6} = 24$ watts.",
            r"As a check, the current through it is $\frac{12}{6} = 2$ amperes and through the $12\,\Omega$ resistor it is $\frac{12}{12} = 1$ ampere, which add up to the battery's 3 amperes.",
            r"So the $6\,\Omega$ resistor dissipates 24 watts.",
        ],
        answer="24",
        check=check_circuit,
        envs={"I": 3, "P": 24, "V": 12, "R": 6},
    ),
    dict(
        subject="physics",
        topic="optics: thin converging lens, image distance and height",
        question=r"A candle flame $4.0 \text{ cm}$ tall stands $30 \text{ cm}$ in front of a thin converging lens whose focal length is $10 \text{ cm}$. In centimeters, how tall is the image of the flame formed by the lens?",
        steps=[
            r"For a thin lens, $\frac{1}{d_o} + \frac{1}{d_i} = \frac{1}{f}$, with distances of real objects and real images counted positive; a converging lens has a positive focal length, $f = 10$ cm.",
            r"The flame is in front of the lens, so it is a real object and $d_o = 30$ cm.",
            r"So $\frac{1}{d_i} = \frac{1}{10} - \frac{1}{30} = \frac{3}{30} - \frac{1}{30} = \frac{2}{30} = \frac{1}{15}$.",
            r"So $d_i = 15$ cm; it is positive, so the image is real and forms on the far side of the lens.",
            r"The magnification is $m = -\frac{d_i}{d_o} = -\frac{15}{30} = -0.5$.",
            r"The image height is $h_i = m h_o = -0.5 \cdot 4.0 = -2.0$ cm, where the negative sign means the image is inverted.",
            r"So the image of the flame is $2.0$ cm tall, and upside down.",
        ],
        answer="2",
        check=check_lens,
        envs={"d_o": 30, "d_i": 15, "f": 10, "m": "-0.5", "h_o": "4.0", "h_i": "-2.0"},
    ),
    dict(
        subject="chemistry",
        topic="stoichiometry: limiting reactant (hydrogen and oxygen to water)",
        question=r"Hydrogen burns in oxygen according to $2\text{H}_2 + \text{O}_2 \rightarrow 2\text{H}_2\text{O}$. A mixture of $8.0 \text{ g}$ of $\text{H}_2$ and $48.0 \text{ g}$ of $\text{O}_2$ reacts until one of the reactants is used up. Using the molar masses $\text{H} = 1.0 \text{ g/mol}$ and $\text{O} = 16.0 \text{ g/mol}$, how many grams of water are formed?",
        steps=[
            r"The molar mass of $\text{H}_2$ is $2 \cdot 1.0 = 2.0$ g/mol, and that of $\text{O}_2$ is $2 \cdot 16.0 = 32.0$ g/mol.",
            r"The moles of hydrogen are $\frac{8.0}{2.0} = 4.0$ mol.",
            r"The moles of oxygen are $\frac{48.0}{32.0} = 1.5$ mol.",
            r"By the equation, 1 mol of $\text{O}_2$ reacts with 2 mol of $\text{H}_2$, so 4.0 mol of $\text{H}_2$ would need $\frac{4.0}{2} = 2.0$ mol of $\text{O}_2$.",
            r"Only 1.5 mol of $\text{O}_2$ is present, and $1.5 < 2.0$, so oxygen is the limiting reactant and some hydrogen is left over.",
            r"The equation gives 2 mol of water per mol of $\text{O}_2$, so the water formed is $2 \cdot 1.5 = 3.0$ mol.",
            r"The molar mass of water is $2 \cdot 1.0 + 16.0 = 18.0$ g/mol.",
            r"So the mass of water formed is $3.0 \cdot 18.0 = 54$ grams.",
            r"Check by conservation of mass: the hydrogen used is $2 \cdot 1.5 = 3.0$ mol, or $3.0 \cdot 2.0 = 6.0$ g, and $6.0 + 48.0 = 54$ g.",
            r"So 54 grams of water are formed.",
        ],
        answer="54",
        check=check_water,
    ),
    dict(
        subject="chemistry",
        topic="ideal gas law: mass of gas in a tank",
        question=r"A rigid $8.21 \text{ L}$ steel tank holds nitrogen gas, $\text{N}_2$, at $27^\circ\text{C}$ and a pressure of $4.50 \text{ atm}$. Treat the gas as ideal, with $R = 0.0821 \text{ L atm/(mol K)}$, and use $14.0 \text{ g/mol}$ for the molar mass of nitrogen atoms. In grams, what is the mass of the nitrogen in the tank?",
        steps=[
            r"The ideal gas law $PV = nRT$ needs the absolute temperature, so $T = 27 + 273 = 300$ K.",
            r"Solving the ideal gas law for the amount of gas gives $n = \frac{PV}{RT}$.",
            r"Substituting, $n = \frac{4.50 \cdot 8.21}{0.0821 \cdot 300}$.",
            r"The denominator is $0.0821 \cdot 300 = 24.63$ and the numerator is $4.50 \cdot 8.21 = 36.945$.",
            r"So $n = \frac{36.945}{24.63} = 1.50$ mol.",
            r"Nitrogen gas is diatomic, so the molar mass of $\text{N}_2$ is $2 \cdot 14.0 = 28.0$ g/mol.",
            r"So the mass of the gas is $1.50 \cdot 28.0 = 42.0$ grams.",
            r"So the tank holds 42 grams of nitrogen.",
        ],
        answer="42",
        check=check_gas,
        envs={"P": "4.50", "V": "8.21", "R": "0.0821", "T": 300, "n": "1.50"},
    ),
    dict(
        subject="chemistry",
        topic="pH: mixing a strong acid with a strong base",
        question=r"At $25^\circ\text{C}$, $50.0 \text{ mL}$ of $0.100 \text{ M}$ hydrochloric acid is mixed with $30.0 \text{ mL}$ of $0.100 \text{ M}$ sodium hydroxide. Assume the volumes are additive. What is the pH of the resulting solution, to two decimal places?",
        steps=[
            r"HCl is a strong acid and NaOH is a strong base, so both are fully dissociated and react one to one: $\text{H}^+ + \text{OH}^- \rightarrow \text{H}_2\text{O}$.",
            r"The acid volume is $0.0500$ L, so it supplies $0.0500 \cdot 0.100 = 0.00500$ mol of $\text{H}^+$.",
            r"The base volume is $0.0300$ L, so it supplies $0.0300 \cdot 0.100 = 0.00300$ mol of $\text{OH}^-$.",
            r"The hydroxide is fully neutralized, leaving $0.00500 - 0.00300 = 0.00200$ mol of $\text{H}^+$ in excess.",
            r"Since the volumes are additive, the total volume is $50.0 + 30.0 = 80.0$ mL, which is $0.0800$ L.",
            r"So $[\text{H}^+] = \frac{0.00200}{0.0800} = 0.0250$ M.",
            r"The pH is $-\log(0.0250) = -(\log 2.5 - 2) = 2 - \log 2.5$.",
            r"With $\log 2.5 \approx 0.398$, the pH is $2 - 0.398 = 1.602 \approx 1.60$.",
            r"So the pH of the mixture is 1.60.",
        ],
        answer="1.60",
        check=check_ph,
    ),
    dict(
        subject="chemistry",
        topic="equilibrium: ICE table with a perfect-square equilibrium expression",
        question=r"For the reaction $\text{H}_2(g) + \text{I}_2(g) \rightleftharpoons 2\text{HI}(g)$, the equilibrium constant at a certain temperature is $K_c = 64$. At that temperature, $1.00 \text{ mol}$ of $\text{H}_2$ and $1.00 \text{ mol}$ of $\text{I}_2$ are placed in an empty $1.00 \text{ L}$ flask. What is the equilibrium concentration of HI, in mol/L?",
        steps=[
            r"The flask has a volume of $1.00$ L, so the initial concentrations are $[\text{H}_2] = [\text{I}_2] = \frac{1.00}{1.00} = 1.00$ M, and $[\text{HI}] = 0$ because the flask starts with no HI.",
            r"Let $x$ be the drop in $[\text{H}_2]$. By the 1 : 1 : 2 stoichiometry, at equilibrium $[\text{H}_2] = [\text{I}_2] = 1.00 - x$ and $[\text{HI}] = 2x$.",
            r"The equilibrium expression is $K_c = \frac{[\text{HI}]^2}{[\text{H}_2][\text{I}_2]} = \frac{(2x)^2}{(1.00 - x)^2} = 64$.",
            r"Both sides are squares, and the concentrations $2x$ and $1.00 - x$ must be positive, so we take the positive square root: $\frac{2x}{1.00 - x} = 8$.",
            r"So $2x = 8 - 8x$, which gives $10x = 8$ and $x = 0.800$.",
            r"This value satisfies $0 < x < 1.00$, so no concentration is negative.",
            r"So $[\text{HI}] = 2 \cdot 0.800 = 1.60$ M, while $[\text{H}_2] = [\text{I}_2] = 1.00 - 0.800 = 0.200$ M.",
            r"Check: $\frac{1.60^2}{0.200^2} = \frac{2.56}{0.0400} = 64$, which equals $K_c$.",
            r"So the equilibrium concentration of HI is 1.60 mol/L.",
        ],
        answer="1.60",
        check=check_equilibrium,
        envs={"x": "0.8", "K_c": 64},
    ),
    dict(
        subject="biology",
        topic="Mendelian genetics: dihybrid cross TtRr x Ttrr, Punnett-square count",
        question=r"In pea plants, tall stems (T) are dominant over short stems (t), and round seeds (R) are dominant over wrinkled seeds (r). The two genes are on different chromosomes and assort independently. A plant with genotype TtRr is crossed with a plant with genotype Ttrr, and the cross produces 240 offspring. How many of the offspring are expected to be tall with wrinkled seeds?",
        steps=[
            r"Because the two genes assort independently, the TtRr parent makes four kinds of gametes in equal proportions: TR, Tr, tR and tr.",
            r"The Ttrr parent makes two kinds of gametes in equal proportions: Tr and tr.",
            r"So the Punnett square has $4 \cdot 2 = 8$ equally likely boxes.",
            r"A plant is tall when it has at least one T allele, and it has wrinkled seeds only when it is rr.",
            r"The Ttrr parent always passes on r, so a box is rr exactly when the TtRr gamete carries r, that is, Tr or tr; this gives $2 \cdot 2 = 4$ boxes.",
            r"Those 4 boxes are TTrr (Tr with Tr), Ttrr (Tr with tr), Ttrr (tr with Tr) and ttrr (tr with tr).",
            r"The first three have a T allele and are tall, while ttrr is short, so $3$ of the $8$ boxes are tall with wrinkled seeds.",
            r"The expected fraction is $\frac{3}{8}$, which agrees with $\frac{3}{4} \cdot \frac{1}{2} = \frac{3}{8}$ from the two genes taken separately.",
            r"So out of 240 offspring, we expect $240 \cdot \frac{3}{8} = 90$ to be tall with wrinkled seeds.",
        ],
        answer="90",
        check=check_punnett,
    ),
    dict(
        subject="biology",
        topic="Hardy-Weinberg: heterozygotes from the recessive phenotype frequency",
        question=r"A population of 500 deer mice is in Hardy-Weinberg equilibrium for a gene with two alleles, $A$ and $a$. The recessive phenotype (genotype $aa$) appears in $16\%$ of the mice. How many mice in the population are expected to be heterozygous ($Aa$)?",
        steps=[
            r"Let $p$ be the frequency of allele $A$ and $q$ the frequency of allele $a$, so $p + q = 1$.",
            r"Because the population is in Hardy-Weinberg equilibrium, the genotype frequencies of $AA$, $Aa$ and $aa$ are $p^2$, $2pq$ and $q^2$.",
            r"Only $aa$ mice show the recessive phenotype, so $q^2 = 0.16$.",
            r"An allele frequency cannot be negative, so we take the positive root: $q = \sqrt{0.16} = 0.4$.",
            r"Then $p = 1 - q = 1 - 0.4 = 0.6$.",
            r"The heterozygote frequency is $2pq = 2 \cdot 0.6 \cdot 0.4 = 0.48$.",
            r"So the expected number of heterozygotes is $0.48 \cdot 500 = 240$.",
            r"Check: the $AA$ mice number $0.36 \cdot 500 = 180$ and the $aa$ mice $0.16 \cdot 500 = 80$, and $180 + 240 + 80 = 500$.",
            r"So 240 mice are expected to be heterozygous.",
        ],
        answer="240",
        check=check_hardy_weinberg,
        envs={"p": "0.6", "q": "0.4"},
    ),
    dict(
        subject="biology",
        topic="population growth: logistic model",
        question=r"A rabbit population in a reserve has 2000 individuals. Its per capita birth rate is $0.30$ per year, its per capita death rate is $0.10$ per year, and the reserve's carrying capacity is $K = 10000$ rabbits. Using the logistic growth model $\frac{dN}{dt} = rN\left(1 - \frac{N}{K}\right)$, where $r$ is the per capita birth rate minus the per capita death rate, by how many rabbits per year is the population currently growing?",
        steps=[
            r"The intrinsic growth rate is the birth rate minus the death rate: $r = 0.30 - 0.10 = 0.20$ per year.",
            r"Without any limit the population would grow by $rN = 0.20 \cdot 2000 = 400$ rabbits per year.",
            r"Because the reserve has a carrying capacity, the logistic model scales this by the unused fraction of the capacity, $1 - \frac{N}{K}$.",
            r"Here $\frac{N}{K} = \frac{2000}{10000} = 0.2$, so $1 - \frac{N}{K} = 1 - 0.2 = 0.8$.",
            r"So the growth rate is $400 \cdot 0.8 = 320$ rabbits per year.",
            r"This is positive and smaller than the unlimited 400 per year, as expected for a population below its carrying capacity.",
            r"So the population is currently growing by 320 rabbits per year.",
        ],
        answer="320",
        check=check_logistic,
        envs={"r": "0.2", "N": 2000, "K": 10000},
    ),
    dict(
        subject="biology",
        topic="physiology: cardiac output from stroke volume and heart rate",
        question=r"At rest, a person's heart beats 72 times per minute. The left ventricle holds $120 \text{ mL}$ of blood at the end of filling (end-diastolic volume) and $50 \text{ mL}$ at the end of contraction (end-systolic volume). In liters per minute, what is the cardiac output?",
        steps=[
            r"The stroke volume is the blood the left ventricle ejects in one beat: the end-diastolic volume minus the end-systolic volume.",
            r"So the stroke volume is $120 - 50 = 70$ mL per beat.",
            r"Cardiac output is stroke volume times heart rate, and the heart beats 72 times per minute, so it is $70 \cdot 72 = 5040$ mL per minute.",
            r"There are 1000 mL in a liter, so this is $\frac{5040}{1000} = 5.04$ liters per minute.",
            r"As a plausibility check, the ejection fraction is $\frac{70}{120} \approx 0.58$, a normal resting value, and about 5 liters per minute is a typical resting cardiac output.",
            r"So the cardiac output is 5.04 liters per minute.",
        ],
        answer="5.04",
        check=check_cardiac,
    ),
]


# --------------------------------------------------------------------------- verification of step arithmetic
_MATH = re.compile(r"(?<!\\)\$(.+?)(?<!\\)\$")
_REL = re.compile(r"\\approx|\\neq|\\le(?![a-z])|\\ge(?![a-z])|=|<|>")
_UNITS = re.compile(r"\\(?:text|mathrm)\{[^{}]*\}|\\[,;! ]|\\%|\^\\circ|\\Omega")
_DECIMAL = re.compile(r"^-?\d+(?:\.(\d+))?$")
_LONE_I = re.compile(r"(?<![\\A-Za-z])I(?![A-Za-z])")


def _parse(piece: str, env: dict):
    """The exact value of a LaTeX piece with `env` substituted, or None when it is not a checkable number."""
    piece = _UNITS.sub(" ", piece).strip().rstrip(".;").strip()
    # concentrations like [H^+] and the derivative dN/dt are not numbers; a lone I would parse as the imaginary unit
    if not piece or "[" in piece or "dN" in piece or _LONE_I.search(piece):
        return None
    try:
        expr = latex2sympy(piece)
    except Exception:
        return None
    if not isinstance(expr, sp.Expr) or expr.atoms(sp.core.function.AppliedUndef):
        return None
    expr = expr.xreplace({f: sp.Rational(str(f)) for f in expr.atoms(sp.Float)})  # decimals, exactly
    # the parser lower-cases letters (N becomes n), so the names in `env` are matched lower-cased
    expr = expr.subs({sp.Symbol(k.lower()): sp.Rational(str(v)) for k, v in env.items()})
    return None if expr.free_symbols else expr


def _holds(a, rel: str, b, b_text: str) -> bool:
    d = sp.N(a - b, 50)
    if rel == r"\approx":
        # b is the value of a rounded to the digits it shows
        m = _DECIMAL.match(b_text.strip())
        assert m, f"the right side of \\approx must be a plain decimal: {b_text!r}"
        half_unit = sp.Rational(1, 2 * 10 ** len(m.group(1) or ""))
        return abs(d) <= half_unit and abs(d) > 1e-30
    if rel in ("=", r"\neq"):
        return (abs(d) < 1e-30) == (rel == "=")
    return {"<": d < 0, ">": d > 0, r"\le": d <= 0, r"\ge": d >= 0}[rel]


def verify_step_arithmetic(text: str, env: dict) -> int:
    """Check every relation between two parseable pieces of the step's math; returns how many were checked."""
    checked = 0
    for span in _MATH.findall(text):
        if "rightarrow" in span or "rightleftharpoons" in span:
            continue
        parts, rels = _REL.split(span), _REL.findall(span)
        for k, rel in enumerate(rels):
            left, right = _split_top(parts[k])[-1], _split_top(parts[k + 1])[0]
            a, b = _parse(left, env), _parse(right, env)
            if a is None or b is None:
                continue
            if not _holds(a, rel, b, _UNITS.sub(" ", right)):
                raise AssertionError(f"relation does not hold: {left.strip()} {rel} {right.strip()}   in: {text!r}")
            checked += 1
    return checked


# --------------------------------------------------------------------------- building and validating
_ANSWER_RE = re.compile(r"\n\n# Answer\n\n(.+)$", re.S)
_FORBIDDEN_RE = re.compile("|".join(FORBIDDEN), re.I)


def build_record(n: int, p: dict) -> dict:
    steps = list(p["steps"])
    steps[-1] = steps[-1] + ANSWER_SEP + p["answer"]
    return {"id": f"sciences:{n}", "question": p["question"], "steps": steps, "answer": p["answer"],
            "subject": p["subject"], "images": [], "meta": {"topic": p["topic"]}}


def validate(records: list[dict]) -> None:
    assert len(records) == 12, len(records)
    assert [r["subject"] for r in records] == [s for s in SUBJECTS for _ in range(4)]
    questions = [r["question"] for r in records]
    assert len(set(questions)) == len(questions), "duplicate question"
    assert len({r["id"] for r in records}) == len(records)
    for r in records:
        steps = r["steps"]
        assert 4 <= len(steps) <= 12, (len(steps), r["id"])
        assert all(s.strip() for s in steps)
        assert all(ANSWER_SEP not in s for s in steps[:-1])
        m = _ANSWER_RE.search(steps[-1])
        assert m and m.group(1) == r["answer"], (r["id"], steps[-1])
        for text in [r["question"], *steps]:
            assert not _FORBIDDEN_RE.search(text), text
            assert text.count("$") % 2 == 0, f"unbalanced $ in {text!r}"


def main() -> int:
    n_relations = n_facts = 0
    for p in PROBLEMS:
        got, facts = p["check"]()
        if got != p["answer"]:
            raise AssertionError(f"check gives {got!r}, answer is {p['answer']!r}: {p['topic']}")
        for step_no, needles in facts.items():
            for needle in needles:
                if needle not in p["steps"][step_no - 1]:
                    raise AssertionError(f"{p['topic']}: step {step_no} should state {needle!r}")
                n_facts += 1
        env = p.get("envs", {})
        assert len({k.lower() for k in env}) == len(env), f"{p['topic']}: env names clash when lower-cased"
        counts = [verify_step_arithmetic(s, env) for s in p["steps"]]
        assert sum(counts) >= 4, (p["topic"], counts)
        n_relations += sum(counts)
    records = [build_record(n, p) for n, p in enumerate(PROBLEMS, start=1)]
    validate(records)
    with OUT.open("w", encoding="utf-8", newline="\n") as fh:
        for r in records:
            fh.write(json.dumps(r) + "\n")
    print(f"wrote {len(records)} records to {OUT} ({n_facts} intermediate values recomputed, {n_relations} step "
          f"relations verified; step counts {[len(r['steps']) for r in records]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
