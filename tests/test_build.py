"""`inject build`, `inject stats` and `inject audit`: splits load with datasets, PRMBench files have exactly
PRMBench's fields, builds are reproducible, reviewers' corrections are applied, the card and stats count right."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from injector.engines.offline import WITHDRAWN_OPERATORS
from injector import OfflineEngine, RunSpec, Taxonomy, load_trajectories, run
from injector.engines.base import NotApplicable
from injector.cli.commands import main
from injector.curate.review.store import Decision, ReviewStore
from injector.sources import load_trajectories as load
from injector.curate.exports import PRMBENCH_FIELDS

PRMBENCH = Path(__file__).parent / "fixtures" / "prmbench"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """An offline run over a few bundled trajectories and three categories (missing_condition fits none of them:
    its units are the run's not_applicable rejects)."""
    out = tmp_path_factory.mktemp("runs") / "run"
    taxonomy = Taxonomy.load()
    # Bundled trajectories where the offline counterfactual operator applies (it needs a formula or constant from
    # its table).
    engine = OfflineEngine(operators=WITHDRAWN_OPERATORS)
    counterfactual, redundancy = taxonomy.category("counterfactual"), taxonomy.category("redundancy")

    def applies(trajectory, category) -> bool:
        try:
            return engine.perturb(trajectory, category, seed=0, sample=0) is not None
        except NotApplicable:
            return False

    trajectories = [t for t in load_trajectories() if applies(t, counterfactual)][:6]
    # Three more where redundancy applies (the counterfactual table applies to only three bundled trajectories).
    trajectories += [t for t in load_trajectories() if not applies(t, counterfactual) and applies(t, redundancy)][:3]
    categories = taxonomy.select(["counterfactual", "redundancy", "missing_condition"])
    # missing_condition is withdrawn from the offline engine: an operator with no options stands in, so the
    # category's units are all not_applicable rejects.
    run(trajectories, RunSpec(taxonomy=taxonomy, categories=categories, out=out),
        OfflineEngine(operators={"counterfactual": WITHDRAWN_OPERATORS["counterfactual"],
                                 "missing_condition": lambda trajectory: []}))
    return out


def candidates(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "candidates.jsonl").read_text().splitlines()]


@pytest.fixture
def reviewed(run_dir: Path, tmp_path: Path) -> Path:
    """A copy of the run with decisions: 4 accepted (one with corrected error steps), 2 rejected, the rest open."""
    import shutil

    copy = tmp_path / "reviewed"
    shutil.copytree(run_dir, copy)
    store = ReviewStore(copy)
    counterfactual = [c for c in candidates(copy) if c["category"] == "counterfactual"]
    redundancy = [c for c in candidates(copy) if c["category"] == "redundancy"]
    store.record(Decision(id=counterfactual[0]["id"], decision="reject", reason="not an error", reviewer="ann"))
    store.record(Decision(id=counterfactual[0]["id"], decision="accept", reviewer="ann"))  # the latest wins
    store.record(Decision(id=counterfactual[1]["id"], decision="reject", reason="not this category", reviewer="ann"))
    # A correction: the reviewer edits another step into a second error and marks both.
    first_error = counterfactual[2]["error_steps"][0]
    other = 1 if first_error != 1 else 2
    edited = counterfactual[2]["modified_process"][other - 1] + " So the total is 7."
    store.record(Decision(id=counterfactual[2]["id"], decision="accept", reviewer="bob",
                          corrected_error_steps=sorted([first_error, other]), edited_steps={other: edited}))
    store.record(Decision(id=redundancy[0]["id"], decision="accept", reviewer="bob"))
    store.record(Decision(id=redundancy[1]["id"], decision="accept", reviewer="bob"))
    store.record(Decision(id=redundancy[2]["id"], decision="reject", reason="unreadable", reviewer="bob"))
    return copy


def build(*args: str):
    return CliRunner().invoke(main, ["build", *args], catch_exceptions=False)


def test_build_loads_with_datasets_and_keeps_only_accepted(reviewed, tmp_path):
    import datasets

    out = tmp_path / "split"
    result = build(str(reviewed), "--out", str(out))
    assert result.exit_code == 0, result.output
    dataset = datasets.load_from_disk(str(out))
    assert sorted(dataset) == ["counterfactual", "redundancy"]
    assert dataset["counterfactual"].num_rows == 2 and dataset["redundancy"].num_rows == 2
    assert all(dataset["counterfactual"]["reviewed"])
    assert "2 rejected by reviewers" in result.output
    parquet = datasets.Dataset.from_parquet(str(out / "parquet" / "redundancy.parquet"))
    assert parquet.num_rows == 2


def test_prmbench_files_have_exactly_prmbench_fields_and_unique_idx(reviewed, tmp_path):
    out = tmp_path / "split"
    build(str(reviewed), "--out", str(out), "--include-unreviewed")
    names = sorted(p.name for p in (out / "prmbench").iterdir())
    assert names == ["counterfactual.jsonl", "redundency.jsonl"]
    for path in (out / "prmbench").iterdir():
        records = [json.loads(line) for line in path.read_text().splitlines()]
        assert all(list(record) == list(PRMBENCH_FIELDS) for record in records)
        assert len({r["idx"] for r in records}) == len(records)
        # Our own prmbench loader reads the export back: the round trip of the format.
        trajectories = list(load(path, "prmbench"))
        assert [t.steps for t in trajectories] == [r["original_process"] for r in records]


def test_several_candidates_of_one_source_get_suffixed_idx(run_dir, tmp_path):
    taxonomy = Taxonomy.load()
    out = tmp_path / "samples"
    run(load_trajectories(), RunSpec(taxonomy=taxonomy, categories=taxonomy.select(["redundancy"]), out=out,
                                     limit=1, samples=3), OfflineEngine(operators=WITHDRAWN_OPERATORS))
    build(str(out), "--out", str(tmp_path / "split"), "--include-unreviewed")
    records = [json.loads(line) for line in (tmp_path / "split" / "prmbench" / "redundency.jsonl")
               .read_text().splitlines()]
    assert sorted(r["idx"] for r in records) == ["prm800k:sample:1", "prm800k:sample:1_2", "prm800k:sample:1_3"]


def test_corrections_from_the_review_database_are_applied(reviewed, tmp_path):
    out = tmp_path / "split"
    build(str(reviewed), "--out", str(out))
    store = ReviewStore(reviewed)
    corrected = {d.id: d for d in store.latest().values() if d.corrected_error_steps}
    rows = {json.loads(line)["id"]: json.loads(line) for line in (out / "jsonl" / "counterfactual.jsonl")
            .read_text().splitlines()}
    assert len(corrected) == 1
    for candidate_id, decision in corrected.items():
        row = rows[candidate_id]
        assert row["error_steps"] == decision.corrected_error_steps and row["reviewer"] == "bob"
        [(step, text)] = decision.edited_steps.items()
        assert row["modified_process"][step - 1] == text and step in row["modified_steps"]


def test_train_test_split_is_deterministic_and_keeps_sources_apart(run_dir, tmp_path):
    first, second, other = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    args = ["--include-unreviewed", "--by", "train-test", "--test-size", "0.5"]
    for out, seed in ((first, "1"), (second, "1"), (other, "2")):
        assert build(str(run_dir), "--out", str(out), *args, "--seed", seed).exit_code == 0
    for split in ("train", "test"):
        assert (first / "jsonl" / f"{split}.jsonl").read_bytes() == (second / "jsonl" / f"{split}.jsonl").read_bytes()
    train = {json.loads(l)["trajectory_id"] for l in (first / "jsonl" / "train.jsonl").read_text().splitlines()}
    test = {json.loads(l)["trajectory_id"] for l in (first / "jsonl" / "test.jsonl").read_text().splitlines()}
    assert train and test and not train & test
    other_test = {json.loads(l)["trajectory_id"] for l in (other / "jsonl" / "test.jsonl").read_text().splitlines()}
    # The split is a hash of (seed, source problem key): pinned (the bundled sample's test side for seeds 1 and 2),
    # so it is the same on every machine and in every version, whichever sources a run covers.
    sources = train | test
    pinned = {1: (2, 3, 5, 6, 8, 10, 14, 15, 16, 19, 21, 22, 23, 24, 25, 28),
              2: (1, 3, 7, 8, 9, 10, 12, 16, 19, 21, 22, 23, 24, 25, 26)}
    assert test == sources & {f"prm800k:sample:{k}" for k in pinned[1]}
    assert other_test == sources & {f"prm800k:sample:{k}" for k in pinned[2]} and other_test != test


def test_the_card_lists_the_right_counts(reviewed, tmp_path):
    out = tmp_path / "split"
    build(str(reviewed), "--out", str(out), "--license", "apache-2.0")
    card = (out / "README.md").read_text()
    assert card.startswith("---\nlicense: apache-2.0\n")
    assert "| counterfactual | soundness | 2 | 2 |" in card and "| redundancy | simplicity | 2 | 2 |" in card
    assert "rejected by reviewers: 2" in card
    assert "| not this category | 1 |" in card and "| unreadable | 1 |" in card
    assert "| not_applicable |" in card  # run rejects of missing_condition
    assert f"inject build {reviewed} --out {out} --license apache-2.0" in card.split("## Reproduce")[1]
    assert "path: parquet/counterfactual.parquet" in card
    rows = sum(1 for line in (out / "jsonl" / "counterfactual.jsonl").read_text().splitlines()) + \
        sum(1 for line in (out / "jsonl" / "redundancy.jsonl").read_text().splitlines())
    assert f"**{rows} rows were made by the rule-based offline engine: smoke-test negatives" in card


def test_the_card_calls_only_offline_rows_smoke_test_negatives():
    from types import SimpleNamespace

    from injector.curate.card import _models_section

    llm = {("litellm", "openai/gpt-4o", "counterfactual", "abc", "json"): 40}
    mixed = {**llm, ("offline", "offline", "redundancy", "def", "json"): 7}
    assert "smoke-test" not in _models_section(SimpleNamespace(models=llm))
    assert "**7 rows were made by the rule-based offline engine" in _models_section(SimpleNamespace(models=mixed))


def test_sources_and_neighbouring_formats(run_dir, tmp_path):
    out = tmp_path / "split"
    build(str(run_dir), "--out", str(out), "--include-unreviewed", "--include-sources")
    correct = [json.loads(l) for l in (out / "processbench" / "correct.jsonl").read_text().splitlines()]
    units = [json.loads(line) for name in ("candidates.jsonl", "rejects.jsonl")
             for line in (run_dir / name).read_text().splitlines()]
    sources = len({unit["trajectory_id"] for unit in units})  # every source trajectory of the run, once
    assert len(correct) == sources and all(r["label"] == -1 and r["final_answer_correct"] for r in correct)
    flawed = [json.loads(l) for l in (out / "processbench" / "counterfactual.jsonl").read_text().splitlines()]
    rows = [json.loads(l) for l in (out / "jsonl" / "counterfactual.jsonl").read_text().splitlines()]
    assert [r["label"] for r in flawed] == [min(r["error_steps"]) - 1 for r in rows]
    assert set(flawed[0]) == {"id", "generator", "problem", "steps", "final_answer_correct", "label"}
    judge = [json.loads(l) for l in (out / "judge" / "counterfactual.jsonl").read_text().splitlines()]
    for item, row in zip(judge, rows):
        assert [t["step"] for t in item["target"] if t["label"] == "incorrect"] == row["error_steps"]
        assert item["prompt"].startswith("Question: ") and "Step 1: " in item["prompt"]


def test_push_to_hub_delivers_the_dataset_the_card_and_the_exports(run_dir, tmp_path, monkeypatch):
    # Through huggingface_hub to a local stand-in of the Hub's HTTP API (tests/hub_standin.py).
    import sys

    import huggingface_hub.constants

    sys.path.insert(0, str(Path(__file__).parent))
    from hub_standin import HubStandIn

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_TOKEN", "hf_stand_in")
    with HubStandIn() as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        result = build(str(run_dir), "--out", str(tmp_path / "s"), "--include-unreviewed", "--push-to-hub",
                       "me/bench", "--private")
    assert result.exit_code == 0, result.output
    repo = hub.state.repos["me/bench"]
    files = set(repo["files"])
    assert repo["private"] is True and repo["type"] == "dataset"
    assert {"README.md", "parquet/counterfactual.parquet", "parquet/redundancy.parquet", "jsonl/redundancy.jsonl",
            "prmbench/counterfactual.jsonl", "processbench/redundancy.jsonl", "judge/redundancy.jsonl",
            "projudge/redundancy.jsonl"} <= files
    assert repo["files"]["README.md"] == (tmp_path / "s" / "README.md").read_bytes()  # the card, as written
    assert repo["files"]["parquet/redundancy.parquet"] == (tmp_path / "s" / "parquet" / "redundancy.parquet").read_bytes()
    assert not any(name.endswith(".arrow") for name in files)  # the save_to_disk copy stays local
    assert build(str(run_dir), "--out", str(tmp_path / "t"), "--include-unreviewed", "--private").exit_code == 2


def test_build_errors(run_dir, tmp_path):
    result = build(str(run_dir), "--out", str(tmp_path / "s"))
    assert result.exit_code == 2 and "no accepted candidates" in result.output
    result = build(str(tmp_path), "--out", str(tmp_path / "s"))
    assert result.exit_code == 2 and "not a run directory" in result.output
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    result = build(str(run_dir), "--out", str(tmp_path / "full"), "--include-unreviewed")
    assert result.exit_code == 2 and "--overwrite" in result.output


def test_stats_json_matches_a_hand_count(reviewed, tmp_path):
    result = CliRunner().invoke(main, ["stats", str(reviewed), "--json", "--plots", str(tmp_path / "plots")])
    assert result.exit_code == 0, result.output
    numbers = json.loads(result.output[: result.output.rindex("}") + 1])
    records = candidates(reviewed)
    rejects = [json.loads(l) for l in (reviewed / "rejects.jsonl").read_text().splitlines()]
    counterfactual = numbers["categories"]["counterfactual"]
    hand = [c for c in records if c["category"] == "counterfactual"]
    assert counterfactual["accepted"] == 2 and counterfactual["rejected_by_reviewer"] == 1
    assert counterfactual["unreviewed"] == len(hand) - 3
    assert counterfactual["mean_steps"] == round(sum(len(c["modified_process"]) for c in hand) / len(hand), 3)
    positions = [min(c["error_steps"]) / len(c["modified_process"]) for c in hand]
    assert counterfactual["mean_error_position"] == round(sum(positions) / len(positions), 3)
    assert sum(counterfactual["error_position_histogram"].values()) == len(hand)
    unfit = numbers["categories"]["missing_condition"]
    assert unfit["rejected_by_validation"] == sum(r["category"] == "missing_condition" for r in rejects)
    assert unfit["reject_codes"] == {"not_applicable": unfit["rejected_by_validation"]}
    assert numbers["total"]["records"] == len(records) + len(rejects) and numbers["total"]["cost"] == 0.0
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == [
        "counts_by_category.png", "error_positions.png", "funnel.png", "reject_codes.png"]  # the run had rejects


def test_audit_audits_prmbench_and_gates_on_failures(tmp_path):
    path = PRMBENCH / "prm800k_train_p1_first400_4o_step_contradiction.jsonl"
    result = CliRunner().invoke(main, ["audit", str(path)])
    assert result.exit_code == 4  # records fail the audit: a pipeline can gate on it (1 is an internal error)
    lines = [l for l in result.stdout.splitlines() if l.startswith(str(path))]
    assert len(lines) == 25 and sum(l.endswith("\tvalid") for l in lines) == 2  # as pinned in test_prmbench_verdicts
    assert "step_contradiction          25      2      23" in result.stdout
    assert result.stderr == f"error: {path}: 23 of 25 records fail the audit (exit 4; --report-only exits 0)\n"
    result = CliRunner().invoke(main, ["audit", "--report-only", str(path)])
    assert result.exit_code == 0 and "step_contradiction          25      2      23" in result.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"original_question": "q"}\n')
    result = CliRunner().invoke(main, ["audit", str(bad)])
    assert result.exit_code == 2 and f"{bad}:1: missing field" in result.output


def _leftovers(parent: Path) -> list[str]:
    """Staging or set-aside directories a build left beside its --out."""
    return sorted(p.name for p in parent.iterdir() if ".building-" in p.name or ".replaced-" in p.name)


def _tree(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_stored_decisions_the_app_would_refuse_stop_the_build(reviewed, tmp_path):
    """Decisions written around the app (an old import, a script): none ships, the build names each, and an
    existing split is left as it was. An error step past the end used to crash the card with StopIteration."""
    out = tmp_path / "split"
    assert build(str(reviewed), "--out", str(out)).exit_code == 0
    before = _tree(out)
    # Three candidates the `reviewed` fixture left undecided (its first three of each of the two categories).
    undecided = [c for category in ("counterfactual", "redundancy")
                 for c in [c for c in candidates(reviewed) if c["category"] == category][3:]]
    store = ReviewStore(reviewed)
    bad = {undecided[0]["id"]: Decision(undecided[0]["id"], "accept", corrected_error_steps=[]),
           undecided[1]["id"]: Decision(undecided[1]["id"], "accept", edited_steps={1: ""}),
           undecided[2]["id"]: Decision(undecided[2]["id"], "accept", corrected_error_steps=[99])}
    for decision in bad.values():
        store.record(decision)  # the store's own format checks pass; the app's rules are not the store's
    result = build(str(reviewed), "--out", str(out), "--overwrite")
    assert result.exit_code == 2, result.output
    assert "3 reviewer decision(s) fail the review app's checks, so nothing was built" in result.output
    for candidate_id, code in zip(bad, ("no_error_steps", "empty_step", "index_out_of_range")):
        line = next(line for line in result.output.splitlines() if repr(candidate_id) in line)
        assert f"review.sqlite: candidate {candidate_id!r}: " in line and f"[{code}]" in line
    assert "internal error" not in result.output
    assert _tree(out) == before and _leftovers(tmp_path) == []
    # a decision made again in the app (the latest wins) clears the way
    for candidate_id in bad:
        store.record(Decision(candidate_id, "reject", reason="not an error"))
    assert build(str(reviewed), "--out", str(out), "--overwrite").exit_code == 0


def test_a_failed_write_leaves_nothing_half_written(reviewed, tmp_path, monkeypatch):
    """The split is written beside --out and renamed into place: a full disk midway leaves no split directory
    (or the previous one, untouched), no staging directory, and a message with exit 2."""
    import errno

    from injector.curate import exports

    out = tmp_path / "split"
    written = []
    real_write = exports._open_export

    def full_disk(path):
        if len(written) == 3:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        written.append(path)
        return real_write(path)

    monkeypatch.setattr(exports, "_open_export", full_disk)
    result = build(str(reviewed), "--out", str(out))
    assert result.exit_code == 2, result.output
    assert f"error: {out}: cannot write the split (No space left on device writing " in result.output
    assert "nothing was written" in result.output and "internal error" not in result.output
    assert not out.exists() and _leftovers(tmp_path) == []
    # over an existing split with --overwrite: the old one stays whole
    monkeypatch.setattr(exports, "_open_export", real_write)
    assert build(str(reviewed), "--out", str(out)).exit_code == 0
    (out / "stray.txt").write_text("from an older build")
    before = _tree(out)
    written.clear()
    monkeypatch.setattr(exports, "_open_export", full_disk)
    assert build(str(reviewed), "--out", str(out), "--overwrite").exit_code == 2
    assert _tree(out) == before and _leftovers(tmp_path) == []
    # and a build that succeeds replaces it whole (the stray file is gone, nothing is left beside it)
    monkeypatch.setattr(exports, "_open_export", real_write)
    assert build(str(reviewed), "--out", str(out), "--overwrite").exit_code == 0
    assert not (out / "stray.txt").exists() and (out / "README.md").is_file() and _leftovers(tmp_path) == []


def test_an_unwritable_out_is_a_user_error(reviewed, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    result = build(str(reviewed), "--out", str(blocker / "split"))
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: {blocker / 'split'}: cannot create the split beside it in {blocker}")
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_out_parent_is_a_user_error(reviewed, tmp_path):
    parent = tmp_path / "read-only"
    parent.mkdir()
    parent.chmod(0o555)
    try:
        result = build(str(reviewed), "--out", str(parent / "split"))
    finally:
        parent.chmod(0o755)
    assert result.exit_code == 2 and "Permission denied" in result.output and "internal error" not in result.output
    assert list(parent.iterdir()) == []


@pytest.mark.parametrize("change, message", [
    (lambda c: c.pop("category"), "not a candidate record (category: Field required)"),
    (lambda c: c.update(error_steps=[99]), "not a candidate record (error_steps [99] lie outside steps 1.."),
    (lambda c: c.update(explanations=["x"]), "not a candidate record (explanations: Input should be a valid dict"),
    (lambda c: c.update(explanations={"two": "x"}), "not a candidate record (explanations: expected an object"),
    (lambda c: c.update(subject=3), "not a candidate record (subject: Input should be a valid string"),
])
def test_a_malformed_candidate_line_is_named(run_dir, tmp_path, change, message):
    """A received run directory's candidates file may be hand-edited: FILE:LINE and exit 2, not a KeyError or a
    StopIteration from the card (an error step past the end, with --include-unreviewed)."""
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    records = candidates(copy)
    change(records[2])
    (copy / "candidates.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    result = build(str(copy), "--out", str(tmp_path / "split"), "--include-unreviewed")
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: {copy / 'candidates.jsonl'}:3: {message}")
    assert not (tmp_path / "split").exists()


def test_a_line_that_is_not_utf8_is_skipped_as_torn(run_dir, tmp_path, caplog):
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    with (copy / "candidates.jsonl").open("ab") as handle:
        handle.write(b'{"id": "\xe9"}\n')
    result = build(str(copy), "--out", str(tmp_path / "split"), "--include-unreviewed")
    assert result.exit_code == 0, result.output
    assert f"candidates.jsonl:{len(candidates(run_dir)) + 1}: ignoring a torn line" in caplog.text


def test_overwrite_through_a_symlink_replaces_the_directory_it_names(reviewed, tmp_path):
    real = tmp_path / "v1"
    assert build(str(reviewed), "--out", str(real)).exit_code == 0
    (real / "stray.txt").write_text("old")
    link = tmp_path / "latest"
    link.symlink_to(real, target_is_directory=True)
    assert build(str(reviewed), "--out", str(link), "--overwrite").exit_code == 0
    assert link.is_symlink() and (real / "README.md").is_file() and not (real / "stray.txt").exists()
    assert _leftovers(tmp_path) == []


def test_an_empty_out_directory_is_kept_and_filled(reviewed, tmp_path, monkeypatch):
    """`--out .` (or a directory prepared for the split) is filled in place, not replaced under the shell."""
    out = tmp_path / "prepared"
    out.mkdir()
    inode = out.stat().st_ino
    monkeypatch.chdir(out)
    result = build(str(reviewed), "--out", ".")
    assert result.exit_code == 0, result.output
    assert out.stat().st_ino == inode and (out / "README.md").is_file() and (out / "dataset_dict.json").is_file()
    assert _leftovers(tmp_path) == []


def test_audit_of_a_clean_file_exits_0(tmp_path):
    path = PRMBENCH / "prm800k_train_p1_first400_4o_step_contradiction.jsonl"
    valid = [line for line in path.read_text(encoding="utf-8").splitlines()
             if line and json.loads(line)["idx"] in _valid_idx(path)]
    clean = tmp_path / "clean.jsonl"
    clean.write_text("\n".join(valid) + "\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["audit", "--json", str(clean)])
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["valid"] for line in result.output.splitlines() if line.startswith("{")] == [True, True]


def _valid_idx(path: Path) -> set:
    result = CliRunner().invoke(main, ["audit", "--json", "--report-only", str(path)])
    return {record["idx"] for record in map(json.loads, result.stdout.splitlines()) if record["valid"]}


def test_validate_is_a_hidden_alias_of_audit():
    path = PRMBENCH / "prm800k_train_p1_first400_4o_step_contradiction.jsonl"
    result = CliRunner().invoke(main, ["validate", "--report-only", str(path)])
    assert result.exit_code == 0 and "step_contradiction          25      2      23" in result.stdout
    assert result.stderr.count("`inject validate` is now `inject audit`") == 1
    assert CliRunner().invoke(main, ["validate", str(path)]).exit_code == 4
    listing = CliRunner().invoke(main, ["--help"]).output
    assert "  audit " in listing and "  validate " not in listing


def test_the_cards_cue_figures_come_from_a_sample_or_not_at_all(run_dir, tmp_path):
    from injector.curate.card import cue_sample

    rows = [{"id": f"r{k}", "category": "a" if k % 3 else "b"} for k in range(30)]
    picked = cue_sample(rows, 5)
    assert sorted(r["category"] for r in picked) == ["a"] * 5 + ["b"] * 5
    assert {r["id"] for r in picked} == {r["id"] for r in cue_sample(list(reversed(rows)), 5)}  # any order
    assert sorted(cue_sample(rows, 100), key=lambda r: int(r["id"][1:])) == rows  # fewer rows than the cap: all
    result = build(str(run_dir), "--out", str(tmp_path / "s"), "--include-unreviewed", "--no-cues")
    assert result.exit_code == 0, result.output
    card = (tmp_path / "s" / "README.md").read_text()
    assert "Cue AUC: not computed (`--no-cues`)" in card
    saved = (tmp_path / "s" / "build-config.yaml").read_text()
    assert "no-cues: true" in saved and "cue-sample" not in saved  # a default that means nothing here
    both = build(str(run_dir), "--out", str(tmp_path / "u"), "--include-unreviewed", "--no-cues", "--cue-sample", "50")
    assert both.exit_code == 2 and "--no-cues leaves out" in both.output and not (tmp_path / "u").exists()
    result = build(str(run_dir), "--out", str(tmp_path / "t"), "--include-unreviewed", "--cue-sample", "50")
    assert "on at most 50 rows per category" in (tmp_path / "t" / "README.md").read_text()
