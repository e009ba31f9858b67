"""Loaders: PRM800K selection, PRMBench ids, our JSONL, field mapping, Hugging Face inputs, errors, streaming."""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before anything imports `datasets`: tests never reach the network
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

from injector.util.errors import InputError, UserError  # noqa: E402
from injector.util.resources import bundled_data_path  # noqa: E402
from injector.sources import detect_format, load_trajectories  # noqa: E402
from injector.sources.registry import bundled_format_names, format_names, get_format  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
PRM800K_REAL = FIXTURES / "prm800k" / "prm800k-real-examples.jsonl"
PRMBENCH_DIR = FIXTURES / "prmbench"
MULTI_SOLUTIONS = PRMBENCH_DIR / "prm_test_p12_multi_solutions.first10.jsonl"


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8")
    return path


def at(path: Path, line: int) -> str:
    """Regex for the `FILE:LINE: ` prefix of an InputError."""
    return rf"^{re.escape(str(path))}:{line}: "


def read_raw(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# ---- PRM800K ----------------------------------------------------------------------------------------------

def chosen(text: str, rating: int | None = 1) -> dict:
    decoy = {"text": "a rejected alternative", "rating": -1, "flagged": False}
    return {"completions": [decoy, {"text": text, "rating": rating, "flagged": False}],
            "human_completion": None, "chosen_completion": 1}


def human(text: str) -> dict:
    return {"completions": [{"text": "wrong", "rating": -1, "flagged": False}],
            "human_completion": {"text": text, "rating": None, "source": "human", "flagged": False},
            "chosen_completion": None}


def unlabelled() -> dict:
    return {"completions": [{"text": "never rated", "rating": None, "flagged": False}],
            "human_completion": None, "chosen_completion": None}


def prm800k_record(steps: list[dict], *, finish: str = "solution", truth: str = "5", problem: str = "What is 2+3?",
                   quality_control: bool = False, screening: bool = False) -> dict:
    return {"labeler": "x", "timestamp": "t", "generation": None, "is_quality_control_question": quality_control,
            "is_initial_screening_question": screening, "question": {"problem": problem, "ground_truth_answer": truth},
            "label": {"steps": steps, "total_time": 1, "finish_reason": finish}}


def test_prm800k_real_records_select_exactly_the_two_fully_correct():
    raw = read_raw(PRM800K_REAL)
    source = load_trajectories(PRM800K_REAL)
    selected = list(source)

    assert [t.id for t in selected] == ["prm800k:prm800k-real-examples:1", "prm800k:prm800k-real-examples:3"]
    first, third = selected
    assert first.question == raw[0]["question"]["problem"]
    assert first.answer == "29" and third.answer == "40_9"
    steps = raw[0]["label"]["steps"]
    assert first.steps[0] == steps[0]["completions"][0]["text"]
    assert first.steps[1] == steps[1]["human_completion"]["text"]  # no chosen completion: the human one
    assert first.steps[5] == steps[5]["completions"][4]["text"]  # chosen index 4 of 5
    assert first.meta == {"idx": first.id, "source_format": "prm800k"}
    assert source.format == "prm800k" and source.format_detected
    assert source.stats.as_dict() == {"read": 12, "selected": 2, "invalid": 0, "skipped": {"not_solved": 10}}
    assert source.describe() == (f"{PRM800K_REAL}: prm800k (detected); read 12, selected 2, skipped 10 "
                                 "(not_solved 10)")


def test_prm800k_real_records_strict_keeps_both():
    # Every chosen completion of the two correct records is rated 1; the rest are human completions.
    source = load_trajectories(PRM800K_REAL, "prm800k", strict=True)
    assert len(list(source)) == 2
    assert not source.format_detected


def synthetic_prm800k(tmp_path: Path) -> Path:
    answer = "So the sum is 5.\n\n# Answer\n\n5"
    return write_jsonl(tmp_path / "phase9_train.jsonl", [
        prm800k_record([chosen("2+3 is 5."), human(answer)]),                        # 1 selected
        prm800k_record([chosen("x"), chosen(answer)], quality_control=True),          # 2 quality_control
        prm800k_record([chosen("x"), chosen(answer)], screening=True),                # 3 screening
        prm800k_record([chosen("x"), chosen("y", -1)], finish="found_error"),         # 4 not_solved
        prm800k_record([unlabelled(), chosen(answer)]),                               # 5 missing_step
        prm800k_record([chosen("wrong", -1), chosen(answer)]),                        # 6 rated_wrong
        prm800k_record([chosen("neutral", 0), chosen(answer)]),                       # 7 selected unless strict
        prm800k_record([chosen("2+3 is 6."), chosen("# Answer\n\n6")]),               # 8 answer_mismatch
        prm800k_record([chosen("2+3 is 5."), human(answer)]),                         # 9 duplicate of 1
        prm800k_record([human("Divide."), human("# Answer\n\n\\frac 59")], truth="\\dfrac{5}{9}",
                       problem="What is 5/9?"),                                       # 10 selected, human only
    ])


def test_prm800k_every_skip_reason(tmp_path):
    source = load_trajectories(synthetic_prm800k(tmp_path))
    selected = list(source)

    assert [t.id for t in selected] == ["prm800k:phase9_train:1", "prm800k:phase9_train:7", "prm800k:phase9_train:10"]
    assert selected[0].steps == ["2+3 is 5.", "So the sum is 5.\n\n# Answer\n\n5"]
    assert selected[2].answer == "\\dfrac{5}{9}"  # the ground truth, not the step's spelling
    assert source.stats.skipped == {"quality_control": 1, "screening": 1, "not_solved": 1, "missing_step": 1,
                                    "rated_wrong": 1, "answer_mismatch": 1, "duplicate": 1}


def test_prm800k_strict_requires_chosen_rated_one_but_accepts_human(tmp_path):
    source = load_trajectories(synthetic_prm800k(tmp_path), strict=True)
    assert [t.id for t in source] == ["prm800k:phase9_train:1", "prm800k:phase9_train:10"]
    assert source.stats.skipped["not_rated_correct"] == 1


def test_prm800k_bad_chosen_index_is_an_input_error(tmp_path):
    step = chosen("x")
    step["chosen_completion"] = 7
    path = write_jsonl(tmp_path / "bad.jsonl", [prm800k_record([step])])
    with pytest.raises(InputError, match=at(path, 1) + r"label\.steps\[0\]\.chosen_completion is 7"):
        list(load_trajectories(path))


# ---- PRMBench ---------------------------------------------------------------------------------------------

def text_hash(question: str, steps: list[str]) -> str:
    return hashlib.sha256((question + "\n" + "\n".join(steps)).encode("utf-8")).hexdigest()[:8]


def test_prmbench_ids_carry_the_text_hash_and_steps_stay_verbatim():
    path = PRMBENCH_DIR / "prm800k_train_p1_first400_4o_circular.jsonl"
    raw = read_raw(path)
    trajectories = list(load_trajectories(path))

    first = trajectories[0]
    assert first.id == f"{raw[0]['idx']}-{text_hash(raw[0]['original_question'], raw[0]['original_process'])}"
    assert first.steps == raw[0]["original_process"]
    assert first.question == raw[0]["original_question"]
    assert first.answer is None
    assert first.meta == {"idx": raw[0]["idx"], "question": raw[0]["question"], "classification": "circular",
                          "source_format": "prmbench"}


def test_prmbench_same_idx_with_different_texts_gives_two_trajectories():
    by_idx: dict[str, set] = {}
    for path in sorted(PRMBENCH_DIR.glob("*.jsonl")):
        for record in read_raw(path):
            text = (record["original_question"], tuple(record["original_process"]))
            by_idx.setdefault(record["idx"], set()).add(text)
    idx, texts = next((idx, texts) for idx, texts in by_idx.items() if len(texts) > 1)

    trajectories = [t for t in load_trajectories(PRMBENCH_DIR) if t.meta["idx"] == idx]

    assert sorted(t.id for t in trajectories) == sorted(f"{idx}-{text_hash(q, list(s))}" for q, s in texts)


def test_prmbench_directory_drops_identical_echoes_across_category_files():
    records = [r for path in sorted(PRMBENCH_DIR.glob("*.jsonl")) for r in read_raw(path)]
    distinct = {(r["original_question"], tuple(r["original_process"])) for r in records}
    source = load_trajectories(PRMBENCH_DIR)
    assert len(list(source)) == len(distinct)
    assert source.stats.skipped == {"duplicate": len(records) - len(distinct)}


def test_prmbench_multi_solution_ground_truth_becomes_the_answer():
    raw = read_raw(MULTI_SOLUTIONS)
    trajectories = list(load_trajectories(MULTI_SOLUTIONS))
    assert [t.answer for t in trajectories] == [r["ground_truth"] for r in raw]
    assert trajectories[0].meta["classification"] == "multi_solutions"


def test_prmbench_reads_original_question_not_the_raw_question(tmp_path):
    record = {"original_question": "What is $2+3$?", "question": "What is 2+3?", "original_process": ["1. Add.", "5"],
              "idx": "p_0"}
    trajectory = next(iter(load_trajectories(write_jsonl(tmp_path / "b.jsonl", [record]))))
    assert trajectory.question == "What is $2+3$?"
    assert trajectory.steps == ["1. Add.", "5"]
    assert trajectory.meta["question"] == "What is 2+3?"


# ---- our trajectories format and field mapping ------------------------------------------------------------

def test_trajectories_format_defaults_id_and_meta_idx(tmp_path):
    path = write_jsonl(tmp_path / "mine.jsonl", [
        {"id": "a", "question": "Q1", "steps": ["s1"], "answer": "1", "meta": {"level": 3}},
        "",  # a blank line is ignored but still counts as a line
        {"question": "Q2", "steps": ["s1", "s2"], "images": ["https://example.org/fig.png"]},
    ])
    source = load_trajectories(path)
    first, second = list(source)
    assert first.meta == {"level": 3, "idx": "a"}
    assert second.id == "mine:3" and second.meta == {"idx": "mine:3"}
    assert second.images == ["https://example.org/fig.png"]
    assert source.format == "trajectories" and source.stats.read == 2


def test_field_mapping_with_dotted_sources(tmp_path):
    record = {"uid": 17, "problem": "Q", "response": {"steps": ["a", "b"], "score": 1}, "answer": "b", "level": 2}
    path = write_jsonl(tmp_path / "foreign.jsonl", [record])
    source = load_trajectories(path, fields={"question": "problem", "steps": "response.steps", "id": "uid"})
    (trajectory,) = list(source)
    assert (trajectory.id, trajectory.question, trajectory.steps, trajectory.answer) == ("17", "Q", ["a", "b"], "b")
    assert source.format == "trajectories" and not source.format_detected


def test_field_mapping_errors(tmp_path):
    path = write_jsonl(tmp_path / "foreign.jsonl", [{"problem": "Q", "steps": ["a"]}])
    with pytest.raises(UserError, match="unknown target 'solution'"):
        load_trajectories(path, fields={"solution": "steps"})
    with pytest.raises(UserError, match="cannot be used with 'prmbench'"):
        load_trajectories(path, "prmbench", fields={"question": "problem"})
    with pytest.raises(InputError, match=at(path, 1) + r"missing field 'response.steps' \(mapped to steps"):
        list(load_trajectories(path, fields={"question": "problem", "steps": "response.steps"}))


# ---- Hugging Face -----------------------------------------------------------------------------------------

def test_hf_save_to_disk_directory(tmp_path):
    import datasets

    rows = [{"id": f"r{i}", "question": f"Q{i}", "steps": ["s"], "answer": None} for i in range(3)]
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "ds"))
    source = load_trajectories(tmp_path / "ds")
    assert [t.id for t in source] == ["r0", "r1", "r2"]
    assert source.format == "trajectories" and source.stats.read == 3


def test_hf_dataset_dict_needs_a_split_when_it_has_several(tmp_path):
    import datasets

    def part(name: str) -> datasets.Dataset:
        return datasets.Dataset.from_list([{"problem": f"{name} Q", "solution_steps": ["s"]}])

    datasets.DatasetDict({"train": part("train"), "test": part("test")}).save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(UserError, match="choose a split; available splits: train, test"):
        load_trajectories(tmp_path / "dd")
    fields = {"question": "problem", "steps": "solution_steps"}
    (trajectory,) = list(load_trajectories(tmp_path / "dd", fields=fields, split="test"))
    assert trajectory.question == "test Q" and trajectory.id == "dd_test:1"
    with pytest.raises(UserError, match="no split 'dev'"):
        load_trajectories(tmp_path / "dd", fields=fields, split="dev")


def test_hf_name_not_cached_offline_is_a_user_error():
    with pytest.raises(UserError, match="cannot load Hugging Face dataset 'no-such-org/no-such-set'"):
        load_trajectories("hf:no-such-org/no-such-set:train")


# ---- detection, errors, invalid records ------------------------------------------------------------------

def test_detect_format():
    assert detect_format(read_raw(PRM800K_REAL)[0]) == "prm800k"
    assert detect_format(read_raw(MULTI_SOLUTIONS)[0]) == "prmbench"
    assert detect_format({"question": "Q", "steps": ["s"]}) == "trajectories"
    assert detect_format({"problem": "Q"}) is None
    assert detect_format({"question": "Q", "response": {"steps": ["s"], "process_correctness": [1]}}) == \
        "visualprocessbench"
    assert detect_format({"question": "Q", "process_evaluation": [["s", "1", "", ""]]}) == "projudgebench"


def test_every_bundled_format_declares_itself_under_its_file_name():
    assert set(bundled_format_names()) <= set(format_names())
    for name in bundled_format_names():
        declared = get_format(name)
        assert declared.name == name and declared.description


def test_an_unknown_format_name_is_a_user_error_naming_the_choices():
    choices = re.escape(", ".join(format_names()))
    with pytest.raises(UserError, match=rf"^unknown input format 'prmbnech' \(did you mean 'prmbench'\?\); "
                                        rf"choose one of: {choices}$"):
        load_trajectories(None, "prmbnech")
    with pytest.raises(UserError, match=rf"^unknown input format 'nothing-like-it'; choose one of: {choices}$"):
        get_format("nothing-like-it")


def test_an_option_the_format_does_not_take_is_refused(tmp_path):
    path = write_jsonl(tmp_path / "bench.jsonl", [{"original_question": "Q", "original_process": ["s"]}])
    with pytest.raises(UserError, match=r"^--strict applies to the prm800k format, not to 'prmbench'; drop it"):
        load_trajectories(path, strict=True)
    with pytest.raises(UserError, match=r"--field maps records onto the trajectories format; it cannot be used "
                                        "with 'prmbench'"):
        load_trajectories(path, "prmbench", fields={"question": "original_question"})


def test_unknown_format_names_the_line_and_the_option(tmp_path):
    path = write_jsonl(tmp_path / "odd.jsonl", ["", {"problem": "Q", "solution": "S"}])
    known = re.escape(", ".join(format_names()))
    with pytest.raises(InputError, match=at(path, 2) + r"cannot tell the record format \(keys: problem, solution\)"
                                         f".*known formats: {known}; choose one with --input-format"):
        load_trajectories(path)


@pytest.mark.parametrize("bad_line, format, message", [
    ('{"question": "Q", "steps": ', None, "malformed JSON: Expecting value"),
    ({"question": "Q"}, "trajectories", "missing field 'steps'"),
    ({"question": "Q", "steps": []}, None, "field 'steps': the step list is empty"),
    ({"question": "Q", "steps": ["s"], "solution": "x"}, None, "unknown field 'solution'"),
    ({"question": "Q", "steps": "one string"}, None, "field 'steps': Input should be a valid list"),
    ([1, 2], None, "expected a JSON object, found list"),
    ({"original_question": "Q"}, "prmbench", "missing field 'original_process' (PRMBench records need "
                                             "original_question and original_process); use --input-format"),
    ({"original_question": "Q", "original_process": []}, "prmbench", "original_process is empty"),
])
def test_bad_records_raise_with_file_and_line(tmp_path, bad_line, format, message):
    good = {"question": "Q", "steps": ["s"]} if format != "prmbench" else {"original_question": "Q",
                                                                           "original_process": ["s"]}
    path = write_jsonl(tmp_path / "in.jsonl", [good, "", bad_line])
    with pytest.raises(InputError) as raised:
        list(load_trajectories(path, format))
    assert str(raised.value).startswith(f"{path}:3: {message}")
    assert (raised.value.path, raised.value.line) == (str(path), 3)


def test_skip_invalid_counts_and_continues(tmp_path):
    path = write_jsonl(tmp_path / "in.jsonl", [
        "{not json", {"question": "Q", "steps": ["s"]}, {"question": "Q", "steps": []},
        {"question": "Q", "steps": ["s"]}, {"question": "Q2", "steps": ["s"]},
    ])
    source = load_trajectories(path, skip_invalid=True)  # detection passes over the malformed first line
    assert [t.question for t in source] == ["Q", "Q2"]
    assert source.stats.as_dict() == {"read": 5, "selected": 2, "invalid": 2, "skipped": {"duplicate": 1}}
    assert source.describe() == (f"{path}: trajectories (detected); read 5, selected 2, skipped 1 (duplicate 1), "
                                 "invalid 2")


def test_missing_file_unknown_format_and_split_on_a_file(tmp_path):
    with pytest.raises(UserError, match="no such file"):
        load_trajectories(tmp_path / "absent.jsonl")
    path = write_jsonl(tmp_path / "in.jsonl", [{"question": "Q", "steps": ["s"]}])
    choices = re.escape(", ".join(format_names()))
    with pytest.raises(UserError, match=f"unknown input format 'csv'; choose one of: {choices}"):
        load_trajectories(path, "csv")
    with pytest.raises(UserError, match="a split applies only to Hugging Face datasets"):
        load_trajectories(path, split="train")
    empty = write_jsonl(tmp_path / "empty.jsonl", ["", ""])
    with pytest.raises(UserError, match="empty.jsonl: no records to read"):
        load_trajectories(empty)
    assert list(load_trajectories(empty, "trajectories")) == []


def test_gzip_and_json_suffixes(tmp_path):
    record = json.dumps({"question": "Q", "steps": ["s"]}) + "\n"
    with gzip.open(tmp_path / "zipped.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.write(record)
    (tmp_path / "plain.json").write_text(record, encoding="utf-8")
    assert [t.id for t in load_trajectories(tmp_path / "zipped.jsonl.gz")] == ["zipped:1"]
    assert [t.id for t in load_trajectories(tmp_path / "plain.json")] == ["plain:1"]


def test_a_gz_input_that_is_not_gzip_is_a_file_line_error(tmp_path):
    path = write_jsonl(tmp_path / "plain.jsonl.gz", [{"question": "Q", "steps": ["s"]}])
    with pytest.raises(InputError, match=at(path, 1) + "not gzip data, though the name ends in .gz"):
        load_trajectories(path)


def gzipped_lines(path: Path, count: int) -> bytes:
    # Random-looking text, so that the compressed stream is long enough to cut in the middle of a line.
    lines = [json.dumps({"question": f"Q{i} " + hashlib.sha256(str(i).encode()).hexdigest() * 8, "steps": ["s"]})
             for i in range(count)]
    data = gzip.compress("".join(line + "\n" for line in lines).encode())
    path.write_bytes(data)
    return data


def test_a_truncated_gz_input_is_a_file_line_error_after_the_lines_it_holds(tmp_path):
    path = tmp_path / "cut.jsonl.gz"
    data = gzipped_lines(path, 2000)
    path.write_bytes(data[: len(data) // 2])
    read = []
    with pytest.raises(InputError, match=r"cut\.jsonl\.gz:(\d+): the gzip data ends early") as raised:
        for trajectory in load_trajectories(path):
            read.append(trajectory.id)
    assert 0 < len(read) < 2000 and raised.value.line == len(read) + 1


def test_a_corrupted_gz_input_is_a_file_line_error(tmp_path):
    path = tmp_path / "bad.jsonl.gz"
    data = bytearray(gzipped_lines(path, 2000))
    data[len(data) // 2: len(data) // 2 + 64] = bytes(64)  # a run of zeros in the middle of the stream
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match=r"bad\.jsonl\.gz:\d+: damaged gzip data"):
        list(load_trajectories(path))


# ---- streaming --------------------------------------------------------------------------------------------

def test_iteration_is_lazy_and_stats_grow_as_it_goes(tmp_path):
    lines = [{"question": f"Q{i}", "steps": ["s"]} for i in range(500)] + ["{broken"]
    path = write_jsonl(tmp_path / "big.jsonl", lines)
    source = load_trajectories(path)
    iterator = iter(source)
    assert next(iterator).question == "Q0"  # arrives although line 501 is malformed
    assert source.stats.read == 1 and source.stats.selected == 1
    with pytest.raises(InputError, match=at(path, 501) + r"malformed JSON"):
        list(iterator)
    with pytest.raises(RuntimeError, match="iterated once"):
        iter(source)


def bundled_sample_exists() -> bool:
    try:
        return bundled_data_path().is_file()
    except FileNotFoundError:  # no bundled taxonomy beside the package
        return False


@pytest.mark.skipif(not bundled_sample_exists(), reason="bundled sample not written yet")
def test_default_source_is_the_bundled_sample():
    source = load_trajectories()
    assert source.format == "prm800k"
    assert sum(1 for _ in source) == source.stats.selected > 0
