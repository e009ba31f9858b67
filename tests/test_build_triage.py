"""`inject build --require / --dedup / --decontaminate`, and verdict counts in `inject stats` and the card."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from injector.curate.build import BuildRequest
from injector.curate.build import build as build_split
from injector.cli.commands import main
from injector.triage.dedup import normalise
from injector.triage.verdicts import VERDICTS

ASSIGNED = ("confirmed", "missed", "late", "confirmed", "original_flagged")


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def candidates(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "candidates.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory) -> Path:
    """An offline run of the bundled sample, every category, one sample each (as the README's first command)."""
    out = tmp_path_factory.mktemp("runs") / "sample"
    result = invoke("run", "--category", "all", "--samples", "1", "--out", str(out))
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture
def verified(sample_run: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A copy of the sample run with a verdict for every candidate but the last (verdicts dealt in turn)."""
    copy = tmp_path / "verified"
    shutil.copytree(sample_run, copy)
    rows = candidates(copy)
    verdicts = {row["id"]: ASSIGNED[n % len(ASSIGNED)] for n, row in enumerate(rows[:-1])}
    lines = [json.dumps({"id": cid, "category": cid.split("::")[1], "trajectory_id": cid.split("::")[0],
                         "verdict": verdict, "kind": "error", "declared_first_error": 2,
                         "judge_modified": {"first_error_step": 2, "reason": "r"}, "judge_original": None})
             for cid, verdict in verdicts.items()]
    (copy / "verify.jsonl").write_text("\n".join(lines) + "\n")
    return copy, verdicts


def split_ids(split: Path) -> set[str]:
    return {json.loads(line)["id"] for path in (split / "jsonl").glob("*.jsonl")
            for line in path.read_text().splitlines()}


# -- --require ---------------------------------------------------------------------------------------------------

def test_require_keeps_only_those_verdicts_and_the_card_says_what_it_left_out(verified, tmp_path):
    run_dir, verdicts = verified
    out = tmp_path / "split"
    result = invoke("build", str(run_dir), "--out", str(out), "--include-unreviewed", "--require",
                    "confirmed,late")
    assert result.exit_code == 0, result.output
    kept = {cid for cid, verdict in verdicts.items() if verdict in ("confirmed", "late")}
    assert split_ids(out) == kept and kept
    left_out = len(candidates(run_dir)) - len(kept)
    assert f"{left_out} left out by --require" in result.output
    card = (out / "README.md").read_text()
    assert f"`--require confirmed,late` kept only candidates with those verdicts; it left out {left_out}:" in card
    left_table = card.split("## Left out")[1].split("##")[0]
    assert "| category | missed | original_flagged | unverified |" in left_table
    # the split's own rows, by verdict
    triage = card.split("## Triage verdicts")[1].split("##")[0]
    assert "| category | late | confirmed |" in triage
    assert f"| **total** | {sum(v == 'late' for v in verdicts.values())} | " \
           f"{sum(v == 'confirmed' for v in verdicts.values())} |" in triage


def test_require_errors(verified, sample_run, tmp_path):
    run_dir, _ = verified
    result = invoke("build", str(run_dir), "--out", str(tmp_path / "a"), "--include-unreviewed", "--require",
                    "confirmed,certain")
    assert result.exit_code == 2
    assert f"error: --require certain: not a verdict; choose from {', '.join(VERDICTS)} (comma-separated)" \
        in result.output
    result = invoke("build", str(sample_run), "--out", str(tmp_path / "b"), "--include-unreviewed", "--require",
                    "confirmed")
    assert result.exit_code == 2
    assert (f"error: {sample_run}: no verify.jsonl, so --require has no verdicts to keep; run `inject verify "
            f"{sample_run} --model MODEL` first") in result.output
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_stats_show_verdict_counts_per_category(verified, sample_run):
    run_dir, verdicts = verified
    result = invoke("stats", str(run_dir), "--json")
    numbers = json.loads(result.output)["verdicts"]
    last = candidates(run_dir)[-1]
    expected: dict[str, dict[str, int]] = {}
    for cid, verdict in verdicts.items():
        row = expected.setdefault(cid.split("::")[1], {})
        row[verdict] = row.get(verdict, 0) + 1
    expected[last["category"]]["unverified"] = 1
    assert {c: dict(sorted(r.items())) for c, r in numbers.items()} == \
        {c: dict(sorted(r.items())) for c, r in expected.items()}
    assert list(numbers["redundancy"]) == [v for v in (*VERDICTS, "unverified") if v in numbers["redundancy"]]
    table = invoke("stats", str(run_dir)).output
    assert "verdicts (inject verify):" in table
    verdict_lines = table.split("verdicts (inject verify):", 1)[1].splitlines()
    total = next(line for line in verdict_lines if line.startswith("total ")).split()  # the verdict table's total
    assert sum(map(int, total[1:])) == len(candidates(run_dir))
    # an unverified run shows none
    assert "verdicts" not in json.loads(invoke("stats", str(sample_run), "--json").output)
    assert "verdicts (inject verify)" not in invoke("stats", str(sample_run)).output


# -- --dedup -------------------------------------------------------------------------------------------------------

def test_dedup_on_the_bundled_sample_drops_nothing(sample_run, tmp_path):
    report = build_split(BuildRequest(run_dirs=[sample_run], out=tmp_path / "split", include_unreviewed=True,
                                       dedup=True, dedup_threshold=0.9))
    assert report.dropped == []
    assert len(report.rows) == len(candidates(sample_run)) > 25  # the offline categories on the bundled sample
    assert "`--dedup` (MinHash Jaccard over word 5-grams ≥ 0.9" in (tmp_path / "split" / "README.md").read_text()


def _variant(text: str) -> str:
    """The same text as `normalise` sees it: case, white space and LaTeX spacing changed."""
    return text.upper().replace(" = ", "=").replace("+", " \\, + \\, ").replace(" ", "  ")


def test_planted_near_duplicates_are_all_dropped(sample_run, tmp_path):
    run_dir = tmp_path / "planted"
    shutil.copytree(sample_run, run_dir)
    rows = candidates(run_dir)
    planted = []
    for n, row in enumerate(rows[:12:3]):
        # the same error, written again: its text differs only in case, spacing and LaTeX spacing
        again = {**row, "id": f"{row['id']}~again", "sample": 7,
                 "modified_process": [_variant(step) for step in row["modified_process"]]}
        # the same problem from another source (the source data holds it twice; it sorts after the first: the
        # first in the split's order is kept)
        twice = {**row, "id": f"zz-copy{n}::{row['category']}::0", "trajectory_id": f"zz-copy{n}",
                 "idx": f"zz-copy{n}",
                 "original_question": _variant(row["original_question"]),
                 "modified_question": _variant(row["modified_question"])}
        planted += [again, twice]
    # one word changed in the longest solution: still the same item
    longest = max(rows, key=lambda r: len(" ".join(r["modified_process"]).split()))
    assert len(" ".join(longest["modified_process"]).split()) > 200
    steps = list(longest["modified_process"])
    steps[-2] = steps[-2].replace(" ", " really ", 1)
    planted.append({**longest, "id": f"{longest['id']}~edited", "sample": 8, "modified_process": steps})
    with (run_dir / "candidates.jsonl").open("a") as handle:
        handle.writelines(json.dumps(row) + "\n" for row in planted)

    out = tmp_path / "split"
    result = invoke("build", str(run_dir), "--out", str(out), "--include-unreviewed", "--dedup")
    assert result.exit_code == 0, result.output
    assert split_ids(out) == {row["id"] for row in rows}  # every planted one dropped, every original kept
    assert f"{len(planted)} dropped by --decontaminate/--dedup" in result.output
    card = (out / "README.md").read_text()
    for row in planted:
        assert f"| `{row['id']}` | {row['category']} | duplicate_" in card
    assert card.count("| duplicate_solution |") == 5 and card.count("| duplicate_question |") == 4
    # --by train-test dedups within each split as well
    report = build_split(BuildRequest(run_dirs=[run_dir], out=tmp_path / "tt", include_unreviewed=True, dedup=True,
                                       dedup_threshold=0.9, by="train-test", test_size=0.3))
    assert {d.id for d in report.dropped} <= {row["id"] for row in planted}
    assert {d.id for d in report.dropped if d.rule == "duplicate_solution"} == {
        row["id"] for row in planted if "~" in row["id"]}


def _split_order(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: (r["category"], r["trajectory_id"], r.get("sample", 0), r["id"]))


def test_dedup_streams_a_split_and_keeps_signatures_not_rows(sample_run):
    """`near_duplicates` reads a split's rows one at a time and keeps none of them (before: every row of the split
    held, grouped by category, so `build --dedup` held a split's records): counted, not timed."""
    import gc

    from injector.triage.dedup import near_duplicates

    alive = [0]

    class Row(dict):
        """A row that counts itself while it is alive."""

        def __del__(self) -> None:
            alive[0] -= 1

    rows = _split_order([{**row, "trajectory_id": f"{row['trajectory_id']}-c{copy}", "id": f"{row['id']}-c{copy}"}
                         for row in candidates(sample_run) for copy in range(3)])
    most = 0

    def stream():
        nonlocal most
        for row in rows:
            gc.collect()
            most = max(most, alive[0])
            alive[0] += 1
            yield Row(row)

    assert len(rows) >= 30
    assert near_duplicates(stream(), 0.9) == near_duplicates(rows, 0.9)
    assert most <= 1, most  # before: every row seen so far


def test_dedup_refuses_rows_not_grouped_by_trajectory(sample_run):
    """It keeps one trajectory's solutions at a time, so rows out of the split's order are an error, not a miss."""
    from injector.triage.dedup import near_duplicates

    first, second = _split_order(candidates(sample_run))[:2]
    assert first["category"] == second["category"] and first["trajectory_id"] != second["trajectory_id"]
    with pytest.raises(ValueError, match="grouped by category and trajectory"):
        near_duplicates([first, second, {**first, "id": first["id"] + "~again"}], 0.9)


def test_dedup_threshold_is_checked(sample_run, tmp_path):
    result = invoke("build", str(sample_run), "--out", str(tmp_path / "s"), "--dedup", "--dedup-threshold", "1.5")
    assert result.exit_code == 2 and "1.5 is not in the range" in result.output


# -- --decontaminate -------------------------------------------------------------------------------------------------

def test_normalise_ignores_case_spacing_and_latex_spacing():
    assert normalise("What is  $2 + 3$?") == normalise("what is $2\\,+\\,3$ ?") == normalise("WHAT IS $2+3$?")
    assert normalise("Let $x \\! = \\ 4$.") == normalise("let $x=4$.")
    assert normalise("What is $2 + 3$?") != normalise("What is $2 + 4$?")


def test_decontaminate_drops_benchmark_questions_and_the_card_says_why(sample_run, tmp_path):
    rows = candidates(sample_run)
    questions = list(dict.fromkeys(row["original_question"] for row in rows))
    equal = questions[0]
    long = next(q for q in questions[1:] if len(q.split()) >= 20)
    words = long.split()
    jsonl = tmp_path / "bench.jsonl"
    jsonl.write_text(json.dumps({"problem": _variant(equal), "answer": "1"}) + "\n\n"
                     + json.dumps({"question": "What is the capital of France?"}) + "\n")
    array = tmp_path / "bench.json"
    # 13 consecutive words of another question, inside a question of its own
    array.write_text(json.dumps([{"original_question": "Unrelated."},
                                 {"original_question": "Consider: " + " ".join(words[3:16]) + " and more."}],
                                indent=1))
    out = tmp_path / "split"
    result = invoke("build", str(sample_run), "--out", str(out), "--include-unreviewed", "--decontaminate",
                    str(jsonl), "--decontaminate", str(array))
    assert result.exit_code == 0, result.output
    expected = {row["id"] for row in rows if row["original_question"] in (equal, long)}
    assert split_ids(out) == {row["id"] for row in rows} - expected
    card = (out / "README.md").read_text()
    assert f"the 4 questions of `{jsonl}`, `{array}`" in card and f"{len(expected)} dropped" in card
    for row in rows:
        if row["original_question"] == equal:
            assert f"| `{row['id']}` | {row['category']} | benchmark_question | question equal to {jsonl}:1 " \
                   "after normalisation |" in card
        elif row["original_question"] == long:
            # the line its element starts on
            assert f"| `{row['id']}` | {row['category']} | benchmark_ngram | shares \"" in card
            assert f"with {array}:5 |" in card


@pytest.mark.parametrize("content, field, message", [
    ('{"question": "a"}\n{"question": "b"\n', None, ":2: not valid JSON"),
    ('{"question": "a"}\n\n{"prompt": "b"}\n', None, ":3: no text in question or problem or original_question or "
     "modified_question; name the question's field with --decontaminate-field (a dotted name"),
    ('{"question": {"problem": "a"}}\n', None, ":1: no text in question or problem"),
    ('[\n {"question": "a"},\n {"question": 3}\n]', None, ":3: no text in question"),
    ('[\n {"question": "a"},\n {"question": "b"}\n', None, ":3: not valid JSON (the array is not closed with ])"),
    ('[\n {"question": "a"}\n {"question": "b"}]', None, ":3: not valid JSON (expected , or ] after an element)"),
    ('[1]', None, ":1: not a JSON object"),
    ('{"question": "a"}\n', "stem", ":1: no text in stem; check the field name"),
])
def test_a_bad_benchmark_file_names_its_line(sample_run, tmp_path, content, field, message):
    bench = tmp_path / "bench.jsonl"
    bench.write_text(content)
    args = ["build", str(sample_run), "--out", str(tmp_path / "s"), "--include-unreviewed", "--decontaminate",
            str(bench)] + (["--decontaminate-field", field] if field else [])
    result = invoke(*args)
    assert result.exit_code == 2
    assert f"error: {bench}{message}" in result.output
    assert not (tmp_path / "s").exists()


def test_decontaminate_field_names_the_question(sample_run, tmp_path):
    question = candidates(sample_run)[0]["original_question"]
    bench = tmp_path / "bench.jsonl"
    bench.write_text(json.dumps({"stem": question, "question": "something else entirely"}) + "\n")
    report = build_split(BuildRequest(run_dirs=[sample_run], out=tmp_path / "s", include_unreviewed=True,
                                       decontaminate=[bench], decontaminate_field="stem"))
    assert report.dropped and all(d.detail == f"question equal to {bench}:1 after normalisation"
                                  for d in report.dropped)
    # a dotted name reaches into nested objects: the bundled sample is PRM800K-shaped (question.problem), so
    # decontaminating the run against its own source drops every candidate
    sample = Path(__file__).parent.parent / "data" / "sample.jsonl"
    result = invoke("build", str(sample_run), "--out", str(tmp_path / "u"), "--include-unreviewed",
                    "--decontaminate", str(sample), "--decontaminate-field", "question.problem")
    assert result.exit_code == 2 and not (tmp_path / "u").exists()
    assert (f"error: all {len(candidates(sample_run))} candidates were left out by --decontaminate or --dedup, so "
            "nothing was built") in result.output
    result = invoke("build", str(sample_run), "--out", str(tmp_path / "t"), "--include-unreviewed",
                    "--decontaminate", str(tmp_path / "missing.jsonl"))
    assert result.exit_code == 2 and "missing.jsonl: no such file" in result.output
