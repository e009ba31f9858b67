"""`--hard-for`: adversarial filtering against a panel of models (injector/curate/hard_for.py), its reading of
`inject eval` reports, the keep rule, and the ranking change of the models outside the panel."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy.stats import kendalltau

from injector.curate.hard_for import PanelAnswers, hard_filter, read_answers, summary_lines
from injector.util.errors import InputError, UserError

IDS = [f"i{k}" for k in range(8)]


def answers(name: str, wrong: set[int]) -> PanelAnswers:
    return PanelAnswers(name=name, right={item: k not in wrong for k, item in enumerate(IDS)})


def test_an_item_is_kept_when_at_least_k_panel_models_miss_it():
    panel = [answers("a", {0, 1, 2}), answers("b", {1, 2, 3}), answers("c", {2, 3, 4})]
    assert hard_filter(IDS, panel, min_wrong=3, resamples=0).kept == ["i2"]
    two = hard_filter(IDS, panel, min_wrong=2, resamples=0)
    assert two.kept == ["i1", "i2", "i3"] and two.dropped == ["i0", "i4", "i5", "i6", "i7"]
    assert hard_filter(IDS, panel, min_wrong=1, resamples=0).kept == ["i0", "i1", "i2", "i3", "i4"]
    assert hard_filter(IDS, panel, resamples=0).min_wrong == 3  # default: every panel model misses it


def test_tau_compares_the_order_of_the_models_before_and_after():
    panel = [answers("a", {0, 1, 2}), answers("b", {1, 2, 3})]
    outside = [answers("d", {0, 1}), answers("e", {5, 6, 7}), answers("f", {2})]
    result = hard_filter(IDS, panel, outside, min_wrong=1, resamples=200, seed=1)
    kept = result.kept
    assert kept == ["i0", "i1", "i2", "i3"]
    models = [*panel, *outside]
    full = [sum(m.right[i] for i in IDS) / len(IDS) for m in models]
    filtered = [sum(m.right[i] for i in kept) / len(kept) for m in models]
    assert result.tau_all["tau"] == pytest.approx(kendalltau(full, filtered).statistic)
    out_full, out_filtered = full[2:], filtered[2:]
    assert result.tau_outside["tau"] == pytest.approx(kendalltau(out_full, out_filtered).statistic)
    # e is the best model on the full set and the best on the hard items; d drops from 0.75 to 0.5.
    assert result.accuracy["d"] == {"full": 0.75, "filtered": 0.5}
    low, high = result.tau_outside["ci"]
    assert -1 <= low <= high <= 1
    again = hard_filter(IDS, panel, outside, min_wrong=1, resamples=200, seed=1)
    assert again.tau_outside == result.tau_outside  # seeded


def test_one_outside_model_gives_no_outside_tau_and_says_so():
    result = hard_filter(IDS, [answers("a", {0}), answers("b", {1})], [answers("d", {2})], min_wrong=1, resamples=10)
    assert result.tau_outside is None
    assert any("needs two or more" in line for line in summary_lines(result))


def test_bad_settings_and_missing_items_are_user_errors():
    panel = [answers("a", {0})]
    with pytest.raises(UserError, match="--hard-min-wrong 2"):
        hard_filter(IDS, panel, min_wrong=2)
    with pytest.raises(UserError, match="at least one"):
        hard_filter(IDS, [])
    short = PanelAnswers(name="short", right={"i0": True})
    with pytest.raises(UserError, match="short has no prediction for 7 of the 8 items"):
        hard_filter(IDS, [short])
    with pytest.raises(UserError, match="share a directory name"):
        hard_filter(IDS, [answers("a", set()), answers("a", {1})])


def test_reports_are_read_from_predictions_and_invalid_answers_count_as_misses(tmp_path: Path):
    report = tmp_path / "judge-x"
    report.mkdir()
    lines = [{"id": "i0", "first_error_right": True, "valid": True},
             {"id": "i1", "first_error_right": True, "valid": False},
             {"id": "i2", "first_error_right": False, "valid": True}]
    (report / "predictions.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    read = read_answers(report)
    assert read.name == "judge-x" and read.right == {"i0": True, "i1": False, "i2": False} and read.invalid == 1


@pytest.mark.parametrize("line, message", [
    ('{"id": "i0"}', ":1: no boolean `first_error_right`"),
    ('{"first_error_right": true}', ":1: not an `inject eval` prediction"),
    ('[1, 2', ":1: not valid JSON"),
    ('{"id": "i0", "first_error_right": true, "n": ' + "9" * 5000 + "}", ":1: the line"),
])
def test_a_bad_prediction_line_names_file_and_line(tmp_path: Path, line: str, message: str):
    (tmp_path / "predictions.jsonl").write_text(line + "\n")
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("`", "`")):
        read_answers(tmp_path)


def test_a_directory_without_predictions_or_a_linked_file_is_refused(tmp_path: Path):
    with pytest.raises(UserError, match="no predictions.jsonl"):
        read_answers(tmp_path)
    target = tmp_path / "elsewhere.jsonl"
    target.write_text('{"id": "i0", "first_error_right": true}\n')
    report = tmp_path / "linked"
    report.mkdir()
    (report / "predictions.jsonl").symlink_to(target)
    with pytest.raises(UserError, match="symbolic link"):
        read_answers(report)


def test_hard_for_on_the_demo_split_keeps_exactly_the_items_the_rule_says(tmp_path: Path, monkeypatch):
    """The bundled demo split, three synthetic scorers as the panel and a fourth outside it: the rebuilt split holds
    exactly the items at least two of the three miss (computed here from the scores, not from the reports), and
    the ranking change is reported."""
    import random

    from click.testing import CliRunner

    from injector.cli.commands import main

    def invoke(*args: str):
        result = CliRunner().invoke(main, list(args), catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result

    monkeypatch.chdir(tmp_path)
    invoke("run", "--category", "all", "--out", "runs/demo")
    sources = ("--include-unreviewed", "--include-sources")
    invoke("build", "runs/demo", "--out", "splits/demo", *sources)
    rows = [json.loads(line) for file in sorted(Path("splits/demo/jsonl").glob("*.jsonl"))
            for line in file.read_text().splitlines()]
    first_flags: dict[str, list] = {}
    for model, noise in (("m1", 0.15), ("m2", 0.3), ("m3", 0.45), ("m4", 0.25)):
        rng = random.Random(model)
        lines, first_flags[model] = [], []
        for row in rows:
            scores = [(0.2 if k in row["error_steps"] else 0.8) if rng.random() > noise else rng.choice([0.1, 0.9])
                      for k in range(1, len(row["modified_process"]) + 1)]
            lines.append(json.dumps({"id": row["id"], "step_scores": scores}) + "\n")
            first_flags[model].append(next((k for k, s in enumerate(scores, 1) if s <= 0.5), None))
        Path(f"{model}.jsonl").write_text("".join(lines))
        invoke("eval", "splits/demo", "--scores", f"{model}.jsonl", "--out", f"reports/{model}", "--no-plots",
               "--bootstrap", "0")
    result = invoke("build", "runs/demo", "--out", "splits/hard", *sources, "--hard-for", "reports/m1",
                    "--hard-for", "reports/m2", "--hard-for", "reports/m3", "--hard-min-wrong", "2",
                    "--hard-check", "reports/m4")

    def missed(model: str, index: int) -> bool:
        first_error = min(rows[index]["error_steps"]) if rows[index]["error_steps"] else None
        return first_flags[model][index] != first_error

    expected = {row["id"] for i, row in enumerate(rows) if sum(missed(m, i) for m in ("m1", "m2", "m3")) >= 2}
    assert 0 < len(expected) < len(rows)
    written = json.loads(Path("splits/hard/hard-for.json").read_text())
    assert set(written["kept"]) == expected and set(written["dropped"]) == {r["id"] for r in rows} - expected
    kept_rows = {json.loads(line)["id"] for file in Path("splits/hard/jsonl").glob("*.jsonl")
                 for line in file.read_text().splitlines()}
    assert kept_rows == expected
    accuracy = {m: (sum(not missed(m, i) for i in range(len(rows))) / len(rows),
                    sum(not missed(m, i) for i, r in enumerate(rows) if r["id"] in expected) / len(expected))
                for m in ("m1", "m2", "m3", "m4")}
    for model, (full, filtered) in accuracy.items():
        assert written["accuracy"][model] == {"full": pytest.approx(full), "filtered": pytest.approx(filtered)}
    tau = kendalltau([a[0] for a in accuracy.values()], [a[1] for a in accuracy.values()]).statistic
    assert written["kendall_tau_all_models"]["tau"] == pytest.approx(tau)
    assert "Kendall tau" in result.output and "m4 (outside)" in result.output
    assert "--hard-for" in Path("splits/hard/README.md").read_text()
