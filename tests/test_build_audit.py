"""The step audit wired into the tool: `inject run` records it on every candidate, `inject stats` and the card count
the flags, `inject build --require-audit-clean` drops flagged candidates.

The planted false relation (`$12 \\cdot 5 = 65$`, appended to a source step) was written for this test; the
trajectories are the toolkit's bundled PRM800K samples (see injector's bundled data)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from injector import load_trajectories
from injector.cli.commands import main

PLANTED = " Note that $12 \\cdot 5 = 65$."


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """An offline redundancy run over 8 bundled trajectories, the false relation planted in step 1 of 4 of them."""
    folder = tmp_path_factory.mktemp("audit")
    rows = []
    for number, trajectory in enumerate(list(load_trajectories())[:8]):
        steps = list(trajectory.steps)
        if number % 2 == 0:
            steps[0] += PLANTED
        rows.append({"id": f"{trajectory.id}:{'planted' if number % 2 == 0 else 'clean'}",
                     "question": trajectory.question, "steps": steps, "answer": trajectory.answer})
    source = folder / "in.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = invoke("run", "--category", "redundancy", "--input", str(source), "--out", str(folder / "run"))
    assert result.exit_code == 0, result.output
    return folder / "run"


def candidates(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "candidates.jsonl").read_text().splitlines()]


def test_run_records_the_audit_on_every_candidate(run_dir):
    written = candidates(run_dir)
    assert written and all("step_audit" in c for c in written)
    for candidate in written:
        kinds = [(f["kind"], f["relation"]) for f in candidate["step_audit"]["findings"]]
        planted_step = candidate["modified_process"].index(next(s for s in candidate["modified_process"]
                                                                if PLANTED.strip() in s)) + 1 \
            if candidate["trajectory_id"].endswith("planted") else None
        if planted_step is None:
            assert kinds == []
        else:
            assert planted_step not in candidate["error_steps"]
            assert kinds == [("unlabelled_false_step", "12 \\cdot 5 = 65")]


def test_stats_count_the_flags(run_dir):
    result = invoke("stats", str(run_dir))
    flagged = sum(bool(c["step_audit"]["findings"]) for c in candidates(run_dir))
    assert f"step audit (flagged / audited candidates): redundancy {flagged}/{len(candidates(run_dir))}" in \
        result.output
    assert json.loads(invoke("stats", str(run_dir), "--json").output)["total"]["audit_flagged"] == flagged


def test_build_require_audit_clean_drops_exactly_the_flagged(run_dir, tmp_path):
    written = candidates(run_dir)
    flagged = {c["id"] for c in written if c["step_audit"]["findings"]}
    assert flagged and len(flagged) < len(written)
    result = invoke("build", str(run_dir), "--out", str(tmp_path / "clean"), "--include-unreviewed",
                    "--require-audit-clean")
    assert result.exit_code == 0 and f"{len(flagged)} left out by --require-audit-clean" in result.output
    kept = {json.loads(line)["id"] for line in (tmp_path / "clean" / "jsonl" / "redundancy.jsonl").read_text()
            .splitlines()}
    assert kept == {c["id"] for c in written} - flagged
    card = (tmp_path / "clean" / "README.md").read_text()
    assert f"`--require-audit-clean` left out {len(flagged)} candidates" in card
    everything = invoke("build", str(run_dir), "--out", str(tmp_path / "all"), "--include-unreviewed")
    assert everything.exit_code == 0
    card = (tmp_path / "all" / "README.md").read_text()
    assert f"| redundancy | {len(written)} | {len(flagged)} |" in card.split("## Step audit")[1]


def test_a_run_written_before_the_audit_is_audited_at_build(run_dir, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(run_dir, old)
    lines = [{k: v for k, v in c.items() if k != "step_audit"} for c in candidates(old)]
    (old / "candidates.jsonl").write_text("".join(json.dumps(c) + "\n" for c in lines))
    result = invoke("build", str(old), "--out", str(tmp_path / "split"), "--include-unreviewed",
                    "--require-audit-clean")
    assert result.exit_code == 0
    kept = [json.loads(line) for line in (tmp_path / "split" / "jsonl" / "redundancy.jsonl").read_text().splitlines()]
    assert kept and all(not row["trajectory_id"].endswith("planted") for row in kept)


def test_stats_route_each_candidate_from_the_three_signals(run_dir, tmp_path):
    verified = tmp_path / "verified"
    shutil.copytree(run_dir, verified)
    written = candidates(verified)
    planted = [c for c in written if c["step_audit"]["findings"]]
    clean = [c for c in written if not c["step_audit"]["findings"]]

    def verdict(candidate: dict, name: str, mc: dict | None = None) -> str:
        return json.dumps({"id": candidate["id"], "category": candidate["category"],
                           "trajectory_id": candidate["trajectory_id"], "verdict": name, "kind": "error",
                           "declared_first_error": candidate["error_steps"][0], "judge_modified": None,
                           "judge_original": None, "mc": mc}) + "\n"

    (verified / "verify.jsonl").write_text(
        verdict(planted[0], "confirmed")  # the judge agrees, the algebra disagrees: review first
        + verdict(clean[0], "confirmed", {"n": 8, "before": 0.9, "through": 0.2})  # agree: fast track
        + verdict(clean[1], "unparseable", {"n": 8, "before": 0.6, "through": 0.6}))  # rollouts alone: review
    routing = json.loads(invoke("stats", str(verified), "--json").output)["routing"]["redundancy"]
    assert routing["route=review_first"] == len(planted)  # every flagged candidate, verified or not
    assert routing["route=fast_track"] == 1
    assert routing["route=review"] == len(clean) - 1
    assert routing["algebra=disagree judge=agree rollouts=silent"] == 1
    assert routing["algebra=silent judge=silent rollouts=disagree"] == 1
    assert "triage routing" in invoke("stats", str(verified)).output


def test_the_review_page_shows_the_flag_beside_its_step(run_dir):
    from injector.curate.review.diff import DiffBudget
    from injector.curate.review.render import _steps_table
    from injector.records.models import Candidate

    flagged = Candidate.model_validate(next(c for c in candidates(run_dir) if c["step_audit"]["findings"]))
    step = flagged.step_audit.findings[0].step
    html = _steps_table(flagged, flagged, False, DiffBudget())  # a flagged unchanged step is never folded away
    row = next(part for part in html.split("<tr ") if f'data-step="{step}"' in part.split(">")[0])
    assert "audit flag" in row and "step audit: step" in row and "12 \\cdot 5 = 65 (left side = 60)" in row
    clean = Candidate.model_validate(next(c for c in candidates(run_dir) if not c["step_audit"]["findings"]))
    assert "audit flag" not in _steps_table(clean, clean, False, DiffBudget())
