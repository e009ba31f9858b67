"""The funnel (issue 27 item 7): units -> valid -> verified -> reviewed -> accepted per category, what each stage
cost, the cost per accepted item and reviewer minutes per item by solution length, in `inject stats` (table,
--json, --plots) and the dataset card; figures pinned on a fixture worked out by hand below."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from injector.cli.commands import main
from injector.curate.funnel import funnel
from injector.curate.review.store import Decision, ReviewStore
from injector.util.money import money
from test_review import STEPS, candidate, make_run
from test_review_triage import verify_line

LONG = [f"Step {k}: $x_{{{k}}} = {k}$." for k in range(1, 30)] + ["So the answer is $29$.\n\n# Answer\n\n29"]
MEDIUM = [f"Step {k}: $y_{{{k}}} = {k}$." for k in range(1, 14)] + ["So the answer is $14$.\n\n# Answer\n\n14"]


def _priced(cid: str, cost: float, category: str = "counterfactual", steps: list[str] | None = None) -> dict:
    modified = None if steps is None else [*steps[:1], steps[1].replace("=", "= 1 +"), *steps[2:]]
    return candidate(cid, category, steps=steps, modified=modified,
                     provenance={"engine": "litellm", "model": "m", "cost": cost})


def _verified(cid: str, verdict: str, cost: float) -> str:
    return json.dumps({**json.loads(verify_line(cid, verdict)), "usage": {"requests": 2, "cost": cost}})


def _at(cid: str, decision: str, reviewer: str, clock: str, role: str = "review") -> Decision:
    return Decision(cid, decision, reason="not an error" if decision == "reject" else "", reviewer=reviewer,
                    time=f"2026-01-05T{clock}.000+00:00", role=role)


C = [f"c{k}::counterfactual::0" for k in range(4)]
R0 = "r0::redundancy::0"
# ann's times: c0 10:00 (no start known), c1 +1 min, c2 +2, r0 +4, c3 +8; bo's: c0 10:00, c1 +2, r0 +3, c3 +12,
# c2 after 43 min (a pause: left out). Minutes by length: <=12 steps (c1, c2) [1, 2, 2]: median 2, p90 2;
# 13-26 (r0, 14 steps) [3, 4]: median 3.5, p90 3.9; >26 (c3, 30 steps) [8, 12]: median 10, p90 11.6.
DECISIONS = [
    _at(C[0], "accept", "ann", "10:00:00"), _at(C[1], "accept", "ann", "10:01:00"),
    _at(C[2], "reject", "ann", "10:03:00"), _at(R0, "accept", "ann", "10:07:00"),
    _at(C[3], "accept", "ann", "10:15:00"),
    _at(C[0], "accept", "bo", "10:00:00"), _at(C[1], "reject", "bo", "10:02:00"), _at(R0, "accept", "bo", "10:05:00"),
    _at(C[3], "accept", "bo", "10:17:00"), _at(C[2], "reject", "bo", "11:00:00"),
    _at(C[1], "accept", "judy", "10:30:00", "adjudication"),  # the tie on c1, settled
]


@pytest.fixture
def funnel_run(tmp_path: Path) -> Path:
    """Counterfactual: 4 candidates ($0.002, $0.002, $0.002, $0.003) and 1 reject ($0.001); verified c0 twice and c1
    ($0.0005 each); accepted c0, c1 (adjudicated) and c3. Redundancy: r0 ($0.004), verified ($0.001), accepted."""
    run = make_run(tmp_path / "run", [_priced(C[0], 0.002), _priced(C[1], 0.002), _priced(C[2], 0.002),
                                      _priced(C[3], 0.003, steps=LONG), _priced(R0, 0.004, "redundancy", MEDIUM)])
    reject = {"id": "c9::counterfactual::0", "trajectory_id": "c9", "idx": "c9", "category": "counterfactual",
              "sample": 0, "codes": ["label_leak"], "provenance": {"engine": "litellm", "model": "m", "cost": 0.001}}
    (run / "rejects.jsonl").write_text(json.dumps(reject) + "\n", encoding="utf-8")
    lines = [_verified(C[0], "missed", 0.0005), _verified(C[0], "confirmed", 0.0005), _verified(C[1], "missed", 0.0005),
             _verified(R0, "confirmed", 0.001)]
    (run / "verify.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    ReviewStore(run).add_all(DECISIONS)
    return run


EXPECTED = {
    "counterfactual": {"units": 5, "valid": 4, "verified": 2, "verdicts": {"confirmed": 1, "missed": 1},
                       "reviewed": 4, "accepted": 3, "generation_cost": 0.01, "verify_cost": 0.0015,
                       "cost_per_accepted": 0.003833},
    "redundancy": {"units": 1, "valid": 1, "verified": 1, "verdicts": {"confirmed": 1}, "reviewed": 1,
                   "accepted": 1, "generation_cost": 0.004, "verify_cost": 0.001, "cost_per_accepted": 0.005},
    "total": {"units": 6, "valid": 5, "verified": 3, "verdicts": {"confirmed": 2, "missed": 1}, "reviewed": 5,
              "accepted": 4, "generation_cost": 0.014, "verify_cost": 0.0025, "cost_per_accepted": 0.004125},
}
MINUTES = [{"length": "steps ≤12", "items": 3, "median": 2.0, "p90": 2.0},
           {"length": "steps 13–26", "items": 2, "median": 3.5, "p90": 3.9},
           {"length": "steps >26", "items": 2, "median": 10.0, "p90": 11.6}]


def test_the_funnels_figures_are_the_hand_counted_ones(funnel_run: Path) -> None:
    figures = funnel([funnel_run])
    assert figures is not None
    dumped = figures.model_dump()
    rows = {row["category"]: row for row in [*dumped["categories"], dumped["total"]]}
    assert {name: {k: v for k, v in row.items() if k != "category"} for name, row in rows.items()} == EXPECTED
    assert dumped["minutes"] == MINUTES


def test_a_consensus_rule_decides_what_counts_as_accepted(funnel_run: Path) -> None:
    figures = funnel([funnel_run], "3-of-3")  # nobody had three reviewers: only the adjudicated c1 stands
    assert figures is not None and figures.total.accepted == 1 and figures.consensus == "3-of-3"


def test_a_priced_record_without_a_cost_makes_the_cost_unknown(funnel_run: Path) -> None:
    with (funnel_run / "verify.jsonl").open("a", encoding="utf-8") as out:
        out.write(json.dumps({**json.loads(verify_line(R0, "confirmed")), "usage": {"cost": None}}) + "\n")
    figures = funnel([funnel_run])
    assert figures is not None
    redundancy = figures.categories[1]
    assert redundancy.verify_cost is None and redundancy.cost_per_accepted is None
    assert figures.categories[0].cost_per_accepted == 0.003833 and figures.total.verify_cost is None


def test_stats_show_the_funnel_as_a_table_json_and_plots(funnel_run: Path, tmp_path: Path) -> None:
    shown = CliRunner().invoke(main, ["stats", str(funnel_run), "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output)["funnel"]["total"]["cost_per_accepted"] == 0.004125
    table = CliRunner().invoke(main, ["stats", str(funnel_run), "--plots", str(tmp_path / "plots")])
    assert table.exit_code == 0, table.output
    assert ("counterfactual              5      4        2        4        3    $0.0100    $0.0015    $0.0038  "
            "missed 1, confirmed 1") in table.output  # reviewer order, as stats' verdict table
    assert "steps 13–26         2    3.50    3.90" in table.output
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == [
        "counts_by_category.png", "error_positions.png", "funnel.png", "reject_codes.png"]


def test_the_card_has_the_funnel(funnel_run: Path, tmp_path: Path) -> None:
    built = CliRunner().invoke(main, ["build", str(funnel_run), "--out", str(tmp_path / "split"), "--no-cues"])
    assert built.exit_code == 0, built.output
    card = (tmp_path / "split" / "README.md").read_text(encoding="utf-8")
    assert "## Funnel and cost" in card and "$0.0041" in card and "steps >26" in card
    assert "0.0038330000" not in card and "000000001" not in card


def test_money_is_shown_to_four_decimals() -> None:
    assert money(0.008145000000000001) == "$0.0081" and money(None) == "unknown" and money(None, "-") == "-"


def test_split_stats_count_correct_controls_apart(funnel_run: Path, tmp_path: Path) -> None:
    built = CliRunner().invoke(main, ["build", str(funnel_run), "--out", str(tmp_path / "split"), "--no-cues",
                                      "--include-sources"])
    assert built.exit_code == 0, built.output
    rows = [json.loads(line) for path in (tmp_path / "split" / "jsonl").glob("*.jsonl")
            for line in path.read_text(encoding="utf-8").splitlines()]
    controls = sum(row["category"] == "correct" for row in rows)
    shown = CliRunner().invoke(main, ["stats", str(tmp_path / "split"), "--json"])
    total = json.loads(shown.output)["total"]
    assert controls > 0 and total["correct_control"] == controls
    assert total["accepted"] == len(rows) - controls and total["in_split"] == len(rows)


def test_a_status_has_one_colour_in_every_plot(funnel_run: Path, tmp_path: Path, monkeypatch) -> None:
    """Blue once meant "unreviewed" in a run's plot and "accepted" in a split's: colours went by order of
    appearance. Now each status has its palette colour whatever else is drawn."""
    from matplotlib.axes import Axes

    from injector.curate.palette import STATUS_COLOURS

    drawn: dict[str, set[str]] = {}
    original = Axes.bar

    def bar(self, *args, **kwargs):
        if kwargs.get("label"):
            drawn.setdefault(kwargs["label"], set()).add(kwargs.get("color"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Axes, "bar", bar)
    (funnel_run / "review.sqlite").unlink()  # a run nobody reviewed: unreviewed is the first status drawn
    assert CliRunner().invoke(main, ["stats", str(funnel_run), "--plots", str(tmp_path / "a")]).exit_code == 0
    ReviewStore(funnel_run).add_all(DECISIONS)
    built = CliRunner().invoke(main, ["build", str(funnel_run), "--out", str(tmp_path / "s"), "--no-cues"])
    assert built.exit_code == 0
    assert CliRunner().invoke(main, ["stats", str(tmp_path / "s"), "--plots", str(tmp_path / "b")]).exit_code == 0
    assert drawn["unreviewed"] == {STATUS_COLOURS["unreviewed"]}
    assert drawn["accepted"] == {STATUS_COLOURS["accepted"]}
    assert all(len(colours) == 1 for colours in drawn.values())  # the funnel's "accepted" is the status's green
    assert len({colour for colours in drawn.values() for colour in colours}) == len(drawn)  # no colour twice


def test_a_run_never_verified_holds_nothing_per_candidate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The funnel kept every candidate's id (a map to its category, for verify costs) even when the run has no
    verify.jsonl: ~50 MB at 300k candidates, the peak of `inject stats`."""
    from injector.records.directory import RunDirectory

    run = make_run(tmp_path / "run")
    expected = funnel([run])

    class Id(str):
        alive = most = 0

        def __new__(cls, value: str) -> "Id":
            Id.alive += 1
            Id.most = max(Id.most, Id.alive)
            return super().__new__(cls, value)

        def __del__(self) -> None:
            Id.alive -= 1

    real = RunDirectory.candidates
    monkeypatch.setattr(RunDirectory, "candidates",
                        lambda self: (c.model_copy(update={"id": Id(c.id)}) for c in real(self)))
    assert funnel([run]) == expected and expected is not None and expected.total.units >= 3
    assert Id.most <= 2


VERIFIED_LINES = 3_000


def _verified_run(tmp_path: Path, last_two: tuple[str, str]) -> Path:
    """A run of C[0] and C[1] whose verify.jsonl has `VERIFIED_LINES` lines of other ids, then C[0]'s `last_two`
    verdicts (the latest counts); C[1] is unverified."""
    run = make_run(tmp_path / "run", [_priced(C[0], 0.002), _priced(C[1], 0.002)])
    lines = [_verified(f"x{k}::counterfactual::0", "confirmed", 0.001) for k in range(VERIFIED_LINES)]
    lines += [_verified(C[0], verdict, 0.001) for verdict in last_two]
    (run / "verify.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return run


def _peak_per_line(read: Any) -> tuple[Any, float]:
    """What `read()` gives, and its peak of traced memory per verify line."""
    import tracemalloc

    tracemalloc.start()
    try:
        return read(), tracemalloc.get_traced_memory()[1] / VERIFIED_LINES
    finally:
        tracemalloc.stop()


def test_a_verified_runs_readers_hold_a_verdict_in_a_few_dozen_bytes(tmp_path: Path) -> None:
    """build, stats, the funnel and calibration read each candidate's latest verdict: as a dict of every verify
    record (~3 KB each) that was over 2 GB for a `build` of 300k verified candidates. Now the id's digest and the
    verdict's number; the peak of `stats`' verdict counts, per verify line, measured with tracemalloc."""
    from injector.triage.verdicts import verdict_counts

    run = _verified_run(tmp_path, ("missed", "late"))
    counts, peak = _peak_per_line(lambda: verdict_counts(run))
    assert counts == {"counterfactual": {"late": 1, "unverified": 1}}
    assert peak < 250, peak
    from injector.triage.verdicts import latest_verdicts

    verdicts = latest_verdicts(run)
    assert len(verdicts) == VERIFIED_LINES + 1 and verdicts.get(C[0]) == "late" and verdicts.get(C[1]) is None


def test_verify_costs_come_back_per_candidate_in_file_order() -> None:
    from injector.curate.funnel import VerifyCosts

    costs = VerifyCosts()
    for cid, cost in [("a", 0.1), ("b", None), ("a", None), ("c", 0.3), ("a", 0.2), ("b", 0.5)]:
        costs.add(cid, cost)
    assert list(costs.get("a")) == [0.1, None, 0.2] and list(costs.get("b")) == [None, 0.5]
    assert list(costs.get("c")) == [0.3] and list(costs.get("d")) == []


def test_the_triage_routing_of_a_verified_run_holds_no_verify_record_per_candidate(tmp_path: Path) -> None:
    """`inject stats` routes each candidate of a verified run from its latest verify record: a dict of every record
    made it hold ~3 KB a verify line (with its verdict counts, 1.8 GB at 300k verified candidates). Now two
    opinions per id digest; the peak of the routing, per verify line, measured with tracemalloc."""
    from injector.triage.step_audit.routing import routing_agreement, run_routing

    run = _verified_run(tmp_path, ("confirmed", "missed"))
    table, peak = _peak_per_line(lambda: routing_agreement(run_routing(run)))
    assert table["counterfactual"]["route=review_first"] == 1
    assert table["counterfactual"]["algebra=silent judge=disagree rollouts=silent"] == 1
    assert table["counterfactual"]["algebra=silent judge=silent rollouts=silent"] == 1
    assert peak < 250, peak
