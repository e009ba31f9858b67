"""Other disciplines and images: image parts reach the model, images are recorded by reference, image-only
categories skip text trajectories, explanations are required and exported ProJudge-style, and the VisualProcessBench
and ProJudgeBench loaders keep only fully correct solutions."""
from __future__ import annotations

import asyncio
import base64
import json
import struct
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner

from injector import Category, LLMEngine, Rules, Taxonomy, inject_one, load_trajectories
from injector.cli.commands import main
from injector.records.models import Candidate, Rejection

STEPS = ["The graph shows a line through $(0, 1)$ and $(2, 5)$.", "Its slope is $\\frac{5 - 1}{2 - 0} = 2$.",
         "So the slope is 2.\n\n# Answer\n\n2"]
ANSWER = {"question": None, "edits": [{"op": "replace", "step": 2, "text": "Its slope is $\\frac{5 - 1}{2 - 0} = 3$.",
                                        "error": True, "explanation": "4 / 2 is 2, not 3"}], "reason": "slip"}


def tiny_png() -> bytes:
    """A valid 1x1 PNG, made here so the test needs no binary fixture."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + \
        chunk(b"IEND", b"")


@pytest.fixture
def image_input(tmp_path: Path) -> Path:
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "line.png").write_bytes(tiny_png())
    path = tmp_path / "input.jsonl"
    path.write_text(json.dumps({"id": "v1", "question": "What is the slope of the line in the figure?",
                                "steps": STEPS, "answer": "2", "images": ["figures/line.png"],
                                "subject": "math"}) + "\n")
    return path


@pytest.fixture
def taxonomy() -> Taxonomy:
    taxonomy = Taxonomy.load()
    taxonomy.add(Category(id="figure_slip", name="Visual Interpretation Error", definition="Misread the figure.",
                          template_text='{% extends "_base.j2" %}', rules=Rules(requires_images=True,
                                                                                 require_explanations=True)))
    return taxonomy


def test_image_parts_reach_the_server_and_are_recorded_by_reference(image_input, taxonomy, scripted_server):
    [trajectory] = list(load_trajectories(image_input))
    image = str((image_input.parent / "figures" / "line.png").resolve())
    assert trajectory.images == [image] and trajectory.subject == "math"  # resolved against the input file
    scripted_server.script = lambda request: json.dumps(ANSWER)
    engine = LLMEngine("openai/vision", api_base=scripted_server.api_base, backoff_seconds=0)
    engine.check_ready()
    record = asyncio.run(inject_one(taxonomy, taxonomy.category("figure_slip"), trajectory, engine))
    assert isinstance(record, Candidate), record
    content = scripted_server.requests[0]["body"]["messages"][1]["content"]
    assert content[0]["type"] == "text" and "What is the slope" in content[0]["text"]
    assert content[1] == {"type": "image_url", "image_url": {
        "url": "data:image/png;base64," + base64.b64encode(tiny_png()).decode()}}
    assert record.images == [image] and record.subject == "math"  # a reference, never the data
    assert record.explanations == {"2": "4 / 2 is 2, not 3"}
    assert "base64" not in record.model_dump_json()


def test_a_category_that_needs_an_image_skips_text_trajectories(taxonomy, scripted_server):
    [trajectory] = list(load_trajectories())[:1]
    engine = LLMEngine("openai/vision", api_base=scripted_server.api_base, backoff_seconds=0)
    engine.check_ready()
    record = asyncio.run(inject_one(taxonomy, taxonomy.category("figure_slip"), trajectory, engine))
    assert isinstance(record, Rejection) and record.codes == ["not_applicable"]
    assert scripted_server.requests == []


def test_render_lists_image_parts_without_inlining_them(image_input):
    result = CliRunner().invoke(main, ["render", "--category", "counterfactual", "--input", str(image_input)])
    assert result.exit_code == 0
    assert "--- image part ---\n" + str((image_input.parent / "figures" / "line.png").resolve()) in result.output
    assert "base64" not in result.output


def test_missing_explanations_are_reasons_and_exported_projudge_style(image_input, taxonomy, scripted_server,
                                                                      tmp_path):
    from injector import RunSpec, run

    no_explanation = json.loads(json.dumps(ANSWER))
    del no_explanation["edits"][0]["explanation"]
    scripted_server.reply_in_order([json.dumps(no_explanation), json.dumps(ANSWER)])
    engine = LLMEngine("openai/vision", api_base=scripted_server.api_base, backoff_seconds=0)
    out = tmp_path / "run"
    run(load_trajectories(image_input), RunSpec(taxonomy=taxonomy, categories=taxonomy.select(["figure_slip"]),
                                                out=out), engine)
    [candidate] = [json.loads(l) for l in (out / "candidates.jsonl").read_text().splitlines()]
    assert candidate["provenance"]["attempts"] == [{"codes": ["missing_explanation"]}, {"codes": []}]
    assert "has no explanation" in scripted_server.requests[1]["body"]["messages"][-1]["content"]
    result = CliRunner().invoke(main, ["build", str(out), "--out", str(tmp_path / "split"), "--include-unreviewed"])
    assert result.exit_code == 0, result.output
    [item] = [json.loads(l) for l in (tmp_path / "split" / "projudge" / "figure_slip.jsonl").read_text().splitlines()]
    assert item["subject"] == "math" and item["image_paths"] == candidate["images"]
    assert item["process_evaluation"] == [
        [STEPS[0], "1", "", ""],
        ["Its slope is $\\frac{5 - 1}{2 - 0} = 3$.", "0", "Visual Interpretation Error", "4 / 2 is 2, not 3"],
        [STEPS[2], "1", "", ""],
    ]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_visualprocessbench_loader_keeps_only_fully_correct(tmp_path):
    (tmp_path / "a.png").write_bytes(tiny_png())
    rows = [
        {"image": ["a.png"], "question": "Q1", "answer": "3",
         "response": {"steps": ["s1", "s2"], "process_correctness": [1, 1]}, "policy_model": "m"},
        {"image": ["b.png"], "question": "Q2", "answer": "4",
         "response": {"steps": ["s1", "s2"], "process_correctness": [1, 0]}},
        {"image": "c.png", "question": "Q3", "answer": 5,
         "response": {"steps": ["s1"], "process_correctness": [-1]}},
    ]
    source = load_trajectories(write_jsonl(tmp_path / "vpb.jsonl", rows))
    [kept] = list(source)
    assert source.format == "visualprocessbench" and source.format_detected
    assert kept.question == "Q1" and kept.steps == ["s1", "s2"] and kept.answer == "3"
    assert kept.images == [str((tmp_path / "a.png").resolve())]
    assert kept.meta["policy_model"] == "m"
    assert source.stats.read == 3 and source.stats.skipped == {"not_all_correct": 2}


def test_projudgebench_loader_keeps_only_fully_correct(tmp_path):
    (tmp_path / "img.png").write_bytes(tiny_png())
    rows = [
        {"id": "p1", "question": "Q1", "subject": "chemistry", "image_paths": ["img.png"],
         "process_evaluation": [["s1", "1", "", ""], ["s2", "1", "", ""]]},
        {"id": "p2", "question": "Q2", "subject": "physics", "image_paths": [],
         "process_evaluation": [["s1", "1", "", ""], ["s2", "0", "Knowledge Error", "wrong law"]]},
    ]
    source = load_trajectories(write_jsonl(tmp_path / "pjb.jsonl", rows))
    [kept] = list(source)
    assert source.format == "projudgebench"
    assert kept.id == "p1" and kept.subject == "chemistry" and kept.steps == ["s1", "s2"]
    assert kept.images == [str((tmp_path / "img.png").resolve())]
    assert source.stats.skipped == {"not_all_correct": 1}
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"question": "Q", "process_evaluation": [["s1"]]}])
    from injector.util.errors import InputError
    with pytest.raises(InputError, match=f"{bad}:1: process_evaluation step 1 must be"):
        list(load_trajectories(bad))


def test_projudge_visual_interpretation_needs_an_image(scripted_server):
    taxonomy = Taxonomy.load("projudge")
    [trajectory] = list(load_trajectories())[:1]
    engine = LLMEngine("openai/vision", api_base=scripted_server.api_base, backoff_seconds=0)
    engine.check_ready()
    record = asyncio.run(inject_one(taxonomy, taxonomy.category("visual_interpretation"), trajectory, engine))
    assert isinstance(record, Rejection) and record.codes == ["not_applicable"] and scripted_server.requests == []


def test_attached_images_are_announced_as_attached(image_input, taxonomy, scripted_server):
    [trajectory] = list(load_trajectories(image_input))
    scripted_server.script = lambda request: json.dumps(ANSWER)
    engine = LLMEngine("openai/vision", api_base=scripted_server.api_base, backoff_seconds=0)
    engine.check_ready()
    asyncio.run(inject_one(taxonomy, taxonomy.category("counterfactual"), trajectory, engine))
    text = scripted_server.requests[0]["body"]["messages"][1]["content"][0]["text"]
    assert "attached after this message" in text and "cannot see" not in text
    assert "Subject: math" in text


@pytest.mark.parametrize("mode", ["edits", "full"])
def test_explanations_are_in_the_strict_schema_when_required(mode, image_input, taxonomy, scripted_server):
    from injector.answer.contract import parse_answer, response_schema

    schema = response_schema(edits=mode == "edits", explanations=True)
    if mode == "edits":
        replace = schema["properties"]["edits"]["items"]["anyOf"][0]
        assert "explanation" in replace["required"]
    else:
        assert "explanations" in schema["required"]
        listed = parse_answer(json.dumps({"modified_question": "q", "modified_process": ["a"], "modified_steps": [1],
                                          "error_steps": [1], "reason": "r",
                                          "explanations": [{"step": 1, "text": "why"}]}))
        assert listed.explanations == {"1": "why"}
    assert "explanation" not in json.dumps(response_schema(edits=mode == "edits"))
