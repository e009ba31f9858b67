"""`--gold FILE`: known-label items mixed into every queue, looking like any other, and each reviewer's accuracy on
them (PRMBench fixture: tests/fixtures/prmbench, see its ATTRIBUTION.md)."""
from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from injector.curate.review.assign import read_plan
from injector.curate.review.gold import GOLD_FILE, gold_scores, read_gold
from injector.curate.review.store import Decision, ReviewStore
from test_review import candidate, cli, decide, http, make_run, running  # noqa: F401 - cli is a fixture

GOLD = Path(__file__).parent / "fixtures" / "prmbench" / "prm800k_train_p1_first400_4o_counterfactual.jsonl"
IDS = [f"c{n:02d}::counterfactual::0" for n in range(30)]


def planned(cli, tmp_path: Path, gold: Path = GOLD) -> Path:
    run = make_run(tmp_path / "run", [candidate(cid) for cid in IDS])
    result = CliRunner().invoke(cli, ["review", str(run), "--reviewers", "ann,bo", "--gold", str(gold),
                                      "--gold-rate", "0.1"])
    assert result.exit_code == 0, result.output
    assert "2 gold items mixed in" in result.output
    return run


def test_gold_items_are_mixed_into_every_queue(cli, tmp_path: Path) -> None:
    run = planned(cli, tmp_path)
    plan = read_plan(run)
    assert plan is not None and len(plan.gold) == 2 and (run / GOLD_FILE).is_file()
    for queue in plan.queues.values():
        assert len(queue) == 17 and set(plan.gold) <= set(queue)
        assert [cid for cid in queue if cid not in plan.gold] == [cid for cid in IDS if cid in queue]
    assert all(label.decision == "accept" and label.error_steps for label in plan.gold.values())


def test_a_gold_item_looks_like_any_other_and_a_wrong_answer_lowers_accuracy(cli, tmp_path: Path) -> None:
    run = planned(cli, tmp_path)
    plan = read_plan(run)
    gold_id, other_gold = plan.gold
    real = plan.queues["ann"][0] if plan.queues["ann"][0] not in plan.gold else plan.queues["ann"][1]
    with running([run], reviewer="ann", queue=True) as server:
        pages = [http(server, f"/?key=0/{cid}")[2] for cid in (gold_id, real)]
        for page in pages:  # the same sections on both: no provenance, no judge, no sign of gold
            assert "provenance" not in page and "gold" not in page.lower() and "blind judge:" not in page
        assert decide(server, gold_id, decision="reject", reason="not an error")[0] == 200  # wrong
        assert decide(server, other_gold, decision="accept")[0] == 200  # right
    with running([run], reviewer="bo", queue=True) as server:
        for cid in plan.gold:
            assert decide(server, cid, decision="accept")[0] == 200
    scores = {score.reviewer: score for score in gold_scores(run)}
    assert (scores["ann"].answered, scores["ann"].decision_right, scores["ann"].flagged) == (2, 1, True)
    assert (scores["bo"].accuracy, scores["bo"].steps_right, scores["bo"].flagged) == (1.0, 2, False)
    assert scores["bo"].first_step_right == 2


def test_an_earlier_reviewed_round_is_a_gold_file(tmp_path: Path) -> None:
    earlier = make_run(tmp_path / "earlier", [candidate(f"g{n}::counterfactual::0") for n in range(3)])
    store = ReviewStore(earlier)
    store.record(Decision("g0::counterfactual::0", "accept", corrected_error_steps=[2, 3]))
    store.record(Decision("g1::counterfactual::0", "reject", reason="not an error"))
    labels = {c.id: label for c, label in read_gold(earlier / "candidates.jsonl")}
    assert set(labels) == {"g0::counterfactual::0", "g1::counterfactual::0"}  # g2 was never reviewed
    assert labels["g0::counterfactual::0"].error_steps == [2, 3]
    assert labels["g1::counterfactual::0"].decision == "reject"


def test_a_bad_gold_line_names_its_line_and_an_inconsistent_record_is_left_out(cli, tmp_path: Path,
                                                                              caplog) -> None:
    run = make_run(tmp_path / "run", [candidate(cid) for cid in IDS])
    lines = GOLD.read_text(encoding="utf-8").splitlines()
    assert len(read_gold(GOLD)) == len(lines) - 1  # line 15's modified_steps lie past its steps
    assert "counterfactual.jsonl:15: not used as a gold item" in caplog.text
    bad = tmp_path / "gold.jsonl"
    bad.write_text(lines[0] + "\n[1, 2]\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["review", str(run), "--reviewers", "ann", "--gold", str(bad)])
    assert result.exit_code == 2 and "gold.jsonl:2: expected a JSON object" in result.output
    assert read_plan(run) is None
