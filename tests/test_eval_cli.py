"""`inject eval` from the command line: the three input kinds, the report directory, --compare, and bad score files
(one line naming FILE:LINE, exit 2)."""
from __future__ import annotations

import json
import re
import math
import runpy
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from injector.cli.commands import main

ROOT = Path(__file__).resolve().parent.parent
PRMBENCH = ROOT / "tests" / "fixtures" / "prmbench"


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def row(item_id, category, steps, errors):
    return {"id": item_id, "category": category, "classification": category, "modified_question": "q",
            "modified_process": steps, "error_steps": errors}


@pytest.fixture
def split(tmp_path) -> Path:
    """A split in `inject build`'s JSONL export form: two error solutions, a multi-solution and a control."""
    path = tmp_path / "split.jsonl"
    rows = [row("a::circular_logic::0", "circular_logic", ["s1", "s2", "s3"], [2, 3]),
            row("b::redundancy::0", "redundancy", ["s1", "s2"], [2]),
            row("c::multi_solution::0", "multi_solution", ["s1", "s2"], []),
            row("a::correct", "correct", ["s1", "s2", "s3"], [])]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def write_scores(path: Path, lines: list) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


GOOD = [{"id": "a::circular_logic::0", "step_scores": [0.9, 0.2, 0.6]}, {"id": "b::redundancy::0", "step_scores": [1, 0]},
        {"id": "c::multi_solution::0", "step_scores": [0.8, 0.7]}, {"id": "a::correct", "step_scores": [0.9, 0.9, 0.4]}]


def test_a_scores_file_gives_the_report_directory(split, tmp_path):
    scores = write_scores(tmp_path / "scores.jsonl", GOOD)
    out = tmp_path / "report"
    result = invoke("eval", str(split), "--scores", str(scores), "--out", str(out))
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    # Pooled over a, b, c (the control apart): a: T F F vs T F T -> TP1 TN1 FP1; b: T F vs T F -> TP1 TN1;
    # c: T T vs T T -> TP2. TP 4, TN 2, FP 1, FN 0: F1 8/9, F1_neg 4/5, PRMScore 0.5*8/9 + 0.4 = 38/45.
    overall = metrics["prmbench"]["overall"]
    assert overall["n_steps"] == 7 and overall["f1"] == pytest.approx(8 / 9, abs=1e-9)
    assert overall["f1_neg"] == pytest.approx(4 / 5, abs=1e-9)
    assert overall["prmscore"] == pytest.approx(38 / 45, abs=1e-9)
    assert set(metrics["prmbench"]["per_category"]) == {"circular_logic", "redundancy", "multi_solution"}
    assert metrics["prmbench"]["correct"]["n_steps"] == 3
    # ProcessBench: a -> step 2 (right), b -> step 2 (right), c -> none (right), control -> step 3 (wrong).
    assert metrics["processbench"] == {**metrics["processbench"], "acc_error": 1.0, "acc_correct": 0.5,
                                       "n_error": 2, "n_correct": 2}
    assert metrics["processbench"]["f1"] == pytest.approx(2 / 3, abs=1e-9)
    assert metrics["threshold"] == 0.5 and metrics["validity"] is None
    assert sorted(p.name for p in out.iterdir()) == ["error_detection_pr.png", "eval-config.yaml", "log.jsonl",
                                                     "metrics.json", "metrics.md", "per_category.png",
                                                     "predictions.jsonl"]
    predictions = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert predictions[0]["predicted_error_steps"] == [2] and predictions[0]["first_error"] == 2
    # Each figure with its bootstrap interval (whole solutions resampled within each category).
    assert re.search(r"\| \*\*overall\*\* \| 3 \| 0 \| 7 \| 0\.889 \[[0-9.]+, [0-9.]+\] \| 0\.800 \[[0-9.]+, [0-9.]+\] \| "
                     r"0\.844 \[[0-9.]+, [0-9.]+\] \|", result.output), result.output
    assert metrics["protocol"] == "strict" and metrics["label_rule"] == "threshold:0.5"
    assert (out / "per_category.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("lines, message", [
    (GOOD[:3], "scores.jsonl: no scores for 1 of the split's 4 solutions ('a::correct')"),
    ([GOOD[0], {"id": "b::redundancy::0", "step_scores": [0.5]}], "scores.jsonl:2: id 'b::redundancy::0': 1 step "
                                                                  "scores for a solution of 2 steps"),
    ([GOOD[0], '{"id": "b::redundancy::0", "step_scores": [NaN, 0.1]}'], "scores.jsonl:2: id 'b::redundancy::0': "
                                                                         "step 1: score nan is not a finite number"),
    ([{"id": "b::redundancy::0", "step_scores": [0.5, 1.5]}], "scores.jsonl:1: id 'b::redundancy::0': step 2: "
                                                              "score 1.5 is outside 0..1"),
    ([{"id": "b::redundancy::0", "step_scores": [0.5, "high"]}], "scores.jsonl:1: id 'b::redundancy::0': step 2: "
                                                                 'score "high" is not a number'),
    ([GOOD[0], "{not json"], "scores.jsonl:2: not JSON"),
    ([GOOD[0], GOOD[0]], "scores.jsonl:2: id 'a::circular_logic::0' again (first on line 1)"),
    ([{"step_scores": [0.5]}], "scores.jsonl:1: expected an object with a string `id`"),
])
def test_a_bad_scores_file_is_one_line_naming_file_and_line(split, tmp_path, lines, message):
    scores = write_scores(tmp_path / "scores.jsonl", lines)
    out = tmp_path / "report"
    result = invoke("eval", str(split), "--scores", str(scores), "--out", str(out))
    assert result.exit_code == 2
    assert result.output.startswith(f"error: {scores.parent}/{message}"), result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    assert not out.exists()  # nothing written


def test_a_bad_split_record_names_file_and_line(tmp_path):
    path = tmp_path / "split.jsonl"
    path.write_text(json.dumps(row("a", "circular_logic", ["s1"], [1])) + "\n"
                    + json.dumps(row("b", "circular_logic", "not a list", [1])) + "\n")
    result = invoke("eval", str(path), "--scores", str(path), "--out", str(tmp_path / "r"))
    assert result.exit_code == 2
    assert result.output == f"error: {path}:2: `modified_process` must be a non-empty list of step texts\n"


def test_usage_errors(split, tmp_path):
    scores = write_scores(tmp_path / "scores.jsonl", GOOD)
    assert invoke("eval", str(split), "--out", str(tmp_path / "r")).exit_code == 2
    both = invoke("eval", str(split), "--scores", str(scores), "--judge", "gpt-4o", "--out", str(tmp_path / "r"))
    assert both.exit_code == 2 and "exactly one of --scores" in both.output
    no_out = invoke("eval", str(split), "--scores", str(scores))
    assert no_out.exit_code == 2 and "--out" in no_out.output


def test_prmbench_files_are_read_with_their_ids_and_our_category_ids(tmp_path):
    files = [PRMBENCH / "prm800k_train_p1_first400_4o_circular.jsonl",
             PRMBENCH / "prm_test_p12_multi_solutions.first10.jsonl"]
    directory = tmp_path / "prmbench"
    directory.mkdir()
    for file in files:
        (directory / file.name).write_bytes(file.read_bytes())
    from injector.evaluate import load_split

    loaded = load_split(directory)
    ids = [item.id for item in loaded.items]
    assert len(ids) == 35 and len(set(ids)) == 35
    first = json.loads(files[0].read_text().splitlines()[0])
    assert ids[0] == f"{first['idx']}::circular"
    assert {item.category for item in loaded.items} == {"circular_logic", "multi_solution"}
    scores = write_scores(tmp_path / "s.jsonl", [{"id": item.id, "step_scores": [0.9] * len(item.steps)}
                                                 for item in loaded.items])
    out = tmp_path / "r"
    result = invoke("eval", str(directory), "--scores", str(scores), "--out", str(out))
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    # Every step scored correct: no true hit of the error class, so F1_neg is PRMBench's -1 (prmbench protocol, the
    # default for its files), flagged; strict gives 0. No redundancy file here, so no correct controls.
    assert metrics["protocol"] == "prmbench" and metrics["prmbench"]["overall"]["f1_neg"] == -1.0
    assert metrics["prmbench"]["overall"]["no_hit"] == ["f1_neg"] and "F1 written as -1" in result.output
    strict = invoke("eval", str(directory), "--scores", str(scores), "--out", str(tmp_path / "s"), "--protocol",
                    "strict")
    assert strict.exit_code == 0, strict.output
    assert json.loads((tmp_path / "s" / "metrics.json").read_text())["prmbench"]["overall"]["f1_neg"] == 0.0
    assert metrics["prmbench"]["per_category"]["multi_solution"]["f1"] == 1.0
    assert metrics["processbench"]["acc_error"] == 0.0 and metrics["processbench"]["acc_correct"] == 1.0


def test_compare_puts_reports_side_by_side(split, tmp_path):
    good = write_scores(tmp_path / "good.jsonl", GOOD)
    flat = write_scores(tmp_path / "flat.jsonl", [{**line, "step_scores": [0.9] * len(line["step_scores"])}
                                                  for line in GOOD])
    assert invoke("eval", str(split), "--scores", str(good), "--out", str(tmp_path / "good")).exit_code == 0
    assert invoke("eval", str(split), "--scores", str(flat), "--out", str(tmp_path / "flat")).exit_code == 0
    result = invoke("eval", "--compare", str(tmp_path / "good"), str(tmp_path / "flat"), "--out", str(tmp_path / "c"))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "| | good | flat |"
    # flat: every step predicted correct: TP 4, FP 3, TN 0 -> F1 8/11, F1_neg 0, PRMScore 4/11.
    assert "| PRMScore | 0.844 | 0.364 |" in lines
    assert "| F1_neg | 0.800 | 0.000 |" in lines
    assert "| scorer | good.jsonl | flat.jsonl |" in lines
    written = tmp_path / "c" / "comparison.md"
    assert result.output == written.read_text() + f"wrote {written}\n"


def test_the_manuals_demo_scores_match_a_fresh_run_and_build(tmp_path, monkeypatch):
    """The demo of docs/evaluate.md: an offline run of the bundled data, a build, and the committed scores (same ids, same
    numbers as `python data/make_demo_scores.py` gives now)."""
    monkeypatch.chdir(tmp_path)
    assert invoke("run", "--category", "all", "--out", "runs/demo").exit_code == 0
    assert invoke("build", "runs/demo", "--out", "splits/demo", "--include-unreviewed",
                  "--include-sources").exit_code == 0
    script = runpy.run_path(str(ROOT / "data" / "make_demo_scores.py"))
    committed = (ROOT / "data" / "demo_scores.jsonl").read_text()
    assert "".join(script["demo_lines"]("splits/demo")) == committed
    result = invoke("eval", "splits/demo", "--scores", str(ROOT / "data" / "demo_scores.jsonl"),
                    "--out", "reports/demo")
    assert result.exit_code == 0, result.output
    metrics = json.loads(Path("reports/demo/metrics.json").read_text())
    assert metrics["n_items"] == 53 and metrics["prmbench"]["overall"]["n_steps"] == 267
    overall, processbench = metrics["prmbench"]["overall"], metrics["processbench"]
    assert math.isclose(processbench["acc_correct"], 2 / 20)
    swept = invoke("eval", "splits/demo", "--scores", str(ROOT / "data" / "demo_scores.jsonl"), "--sweep",
                   "--out", "reports/demo-sweep")
    assert swept.exit_code == 0, swept.output
    sweep = json.loads(Path("reports/demo-sweep/metrics.json").read_text())
    assert (sweep["threshold"], sweep["sweep"]["dev"]["n_items"], sweep["sweep"]["held_out"]["n_items"]) == (0.45, 11, 42)
    # The table of the demo's figures in docs/evaluate.md.
    page = " ".join((ROOT / "docs" / "evaluate.md").read_text().split())
    figures = [overall["prmscore"], overall["f1"], overall["f1_neg"], sweep["prmbench"]["overall"]["prmscore"],
               sweep["prmbench"]["overall"]["f1"], sweep["prmbench"]["overall"]["f1_neg"], processbench["f1"],
               processbench["acc_error"], processbench["acc_correct"], sweep["processbench"]["f1"],
               sweep["processbench"]["acc_error"], sweep["processbench"]["acc_correct"],
               metrics["prmbench"]["correct"]["f1"]]
    shown = "| PRMScore (F1 / F1_neg) | {:.3f} ({:.3f} / {:.3f}) | {:.3f} ({:.3f} / {:.3f}) | " \
            "| ProcessBench F1 (acc_error / acc_correct) | {:.3f} ({:.3f} / {:.3f}) | {:.3f} ({:.3f} / {:.3f}) | " \
            "| correct originals, F1 (not pooled) | {:.3f} | |".format(*figures)
    assert shown in page
    # The same split read from its JSONL export gives the same figures.
    export = invoke("eval", "splits/demo/jsonl", "--scores", str(ROOT / "data" / "demo_scores.jsonl"),
                    "--out", "reports/jsonl")
    assert export.exit_code == 0, export.output
    again = json.loads(Path("reports/jsonl/metrics.json").read_text())
    assert again["prmbench"] == metrics["prmbench"] and again["processbench"] == metrics["processbench"]
    # One split of the DatasetDict, by name; an unknown name is one line.
    one = invoke("eval", "splits/demo", "--split", "redundancy", "--scores", str(ROOT / "data" / "demo_scores.jsonl"),
                 "--out", "reports/redundancy")
    assert one.exit_code == 0, one.output
    def point(figures):  # the intervals differ: the full split resamples every category
        return {key: value for key, value in figures.items() if key != "ci"}

    assert point(json.loads(Path("reports/redundancy/metrics.json").read_text())["prmbench"]["overall"]) \
        == point(metrics["prmbench"]["per_category"]["redundancy"])
    unknown = invoke("eval", "splits/demo", "--split", "train", "--scores", "data/none.jsonl", "--out", "reports/x")
    assert unknown.exit_code == 2 and unknown.output.startswith("error: splits/demo: no split 'train'; it has ")
    # And from its ProcessBench export (0-based labels, -1 for none): the same first-error figures, no PRMScore.
    pb = invoke("eval", "splits/demo/processbench", "--scores", str(ROOT / "data" / "demo_scores.jsonl"),
                "--out", "reports/processbench")
    assert pb.exit_code == 0, pb.output
    processbench_export = json.loads(Path("reports/processbench/metrics.json").read_text())
    assert processbench_export["prmbench"] is None
    assert {key: processbench_export["processbench"][key] for key in ("f1", "acc_error", "acc_correct", "n_error",
                                                                      "n_correct")} \
        == {key: processbench[key] for key in ("f1", "acc_error", "acc_correct", "n_error", "n_correct")}


def test_without_matplotlib_the_report_has_no_plots_and_says_so(split, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    scores = write_scores(tmp_path / "scores.jsonl", GOOD)
    out = tmp_path / "report"
    result = CliRunner().invoke(main, ["eval", str(split), "--scores", str(scores), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "note: matplotlib is not installed: no plots" in result.output
    assert sorted(p.name for p in out.iterdir()) == ["eval-config.yaml", "log.jsonl", "metrics.json", "metrics.md",
                                                     "predictions.jsonl"]


def test_a_run_directory_is_not_a_split(tmp_path):
    """Issue 29: `inject eval runs/x` says it is a run directory and how to build a split from it."""
    out = tmp_path / "run"
    assert invoke("run", "--category", "redundancy", "--limit", "1", "--out", str(out)).exit_code == 0
    for given in (out, out / "candidates.jsonl"):
        result = invoke("eval", str(given), "--scores", str(tmp_path / "s.jsonl"), "--out", str(tmp_path / "r"))
        assert result.exit_code == 2, result.output
        assert "this is a run directory" in result.output and f"inject build {out} --out" in result.output


def test_a_split_without_correct_solutions_says_how_to_get_processbench_f1(tmp_path):
    path = tmp_path / "split.jsonl"
    path.write_text(json.dumps(row("a::circular_logic::0", "circular_logic", ["s1", "s2", "s3"], [2])) + "\n")
    scores = write_scores(tmp_path / "scores.jsonl", [{"id": "a::circular_logic::0", "step_scores": [0.9, 0.2, 0.6]}])
    out = tmp_path / "report"
    assert invoke("eval", str(path), "--scores", str(scores), "--out", str(out), "--no-plots").exit_code == 0
    assert "build the split with `--include-sources`" in (out / "metrics.md").read_text()
    with_control = tmp_path / "both.jsonl"
    with_control.write_text(path.read_text() + json.dumps(row("a::correct", "correct", ["s1", "s2", "s3"], [])) + "\n")
    scores = write_scores(tmp_path / "s2.jsonl", [*map(json.loads, scores.read_text().splitlines()),
                                                  {"id": "a::correct", "step_scores": [0.9, 0.9, 0.9]}])
    assert invoke("eval", str(with_control), "--scores", str(scores), "--out", str(tmp_path / "r2"),
                  "--no-plots").exit_code == 0
    assert "--include-sources" not in (tmp_path / "r2" / "metrics.md").read_text()
