"""Issue 29 items 7 and 8: every run, verify, build and eval leaves its effective options as YAML in its output
directory (what `--config` reads, no key in it), `--from DIR` runs it again from them (flags override), each writes
`log.jsonl`, `--verbose` works on every command, and `inject run --log-prompts` keeps every request and answer."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from injector.cli.commands import main
from test_run_loop import GOOD, QUESTION, STEPS

KEY = "sk-test-config-secret-0123456789"
# Every option of `inject run` a run with one server can take, as a config file holds them. Left out: where to write
# (--out), how to read options (--config, --from), a dry run (writes nothing), --deployments (instead of
# --api-base), --batch and --no-wait (the batch API), --ray-workers (with --executor ray), --strict (PRM800K's
# records only, where --field does not apply: its own test below).
NOT_IN_THE_FILE = {"config", "from", "out", "dry-run", "deployments", "batch", "no-wait", "ray-workers", "help",
                   "strict"}


def every_run_option(server, tmp_path: Path) -> dict:
    images = tmp_path / "images"
    images.mkdir(exist_ok=True)
    return {
        "input": str(saved_dataset(tmp_path)), "input-format": "trajectories", "field": ["answer=answer"],
        "split": "train", "skip-invalid": True, "duplicate-ids": "first", "limit": 2,
        "category": ["counterfactual"], "taxonomy": "prmbench", "images-from": str(images), "output-mode": "edits",
        "model": "openai/scripted", "api-base": [server.api_base], "temperature": 0.5, "max-tokens": 256,
        "seed": 7, "samples": 2, "no-schema": True, "max-attempts": 2, "concurrency": 3, "timeout": 30.0,
        "max-answer-bytes": 65536, "rpm": 6000.0, "tpm": 1000000.0, "cache": str(tmp_path / "cache.sqlite"),
        "no-cache": True, "price-in": 1.0, "price-out": 2.0, "max-cost": 50.0, "max-cost-per-invocation": 40.0,
        "verbose": True, "log-prompts": True, "client": server.client, "retry-rejects": True,
        "batch-max-requests": 100, "batch-max-bytes": 100000, "batch-poll-seconds": 1.0, "executor": "local",
        "workers": 1,
    }


def trajectories(tmp_path: Path) -> Path:
    path = tmp_path / "input.jsonl"
    rows = [{"id": f"t{k}", "question": QUESTION, "steps": [*STEPS[:2], STEPS[2] + "." * k], "answer": "5"}
            for k in range(3)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def saved_dataset(tmp_path: Path) -> Path:
    """The trajectories as a `save_to_disk` DatasetDict with a train split (what `--split` picks from)."""
    import datasets

    path = tmp_path / "dataset"
    rows = [json.loads(line) for line in trajectories(tmp_path).read_text().splitlines()]
    datasets.DatasetDict({"train": datasets.Dataset.from_list(rows)}).save_to_disk(str(path))
    return path


def as_flags(options: dict) -> list[str]:
    flags: list[str] = []
    for key, value in options.items():
        for one in value if isinstance(value, list) else [value]:
            if one is True:
                flags.append(f"--{key}")
            elif one is not False:
                flags += [f"--{key}", str(one)]
    return flags


def invoke(*args: str):
    return CliRunner().invoke(main, [str(arg) for arg in args], catch_exceptions=False)


def same_run(a: Path, b: Path, cached: bool = False) -> None:
    """Two run directories from the same settings: the manifests agree but for times, command and paths (and
    what was spent, when the second's answers came from the request cache)."""
    first, second = (json.loads((path / "manifest.json").read_text()) for path in (a, b))
    for manifest in (first, second):
        for key in ("command", "started", "finished", "updated", "out", *(("totals", "spending") if cached else ())):
            manifest.pop(key, None)
    assert first == second

    def made(path: Path) -> list:
        lines = [json.loads(line) for line in (path / "candidates.jsonl").read_text().splitlines()]
        return sorted((line["id"], line["modified_process"], line["error_steps"]) for line in lines)

    assert made(a) == made(b)


def test_every_run_option_from_a_file_gives_the_manifest_of_the_flags(scripted_server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    scripted_server.script = lambda request: json.dumps(GOOD)
    options = every_run_option(scripted_server, tmp_path)
    declared = {flag.lstrip("-") for parameter in main.commands["run"].params for flag in parameter.opts
                if flag.startswith("--")}
    assert declared - NOT_IN_THE_FILE == set(options)  # a new option of run joins this test
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump(options))
    by_flags, by_file = tmp_path / "flags", tmp_path / "file"
    result = invoke("run", *as_flags(options), "--out", by_flags)
    assert result.exit_code == 0, result.output
    assert invoke("run", "--config", config, "--out", by_file).exit_code == 0
    same_run(by_flags, by_file)
    # What the run saved is what --config reads, and gives the same run again; no key in it.
    saved = (by_flags / "config.yaml").read_text()
    assert KEY not in saved and "out" not in yaml.safe_load(saved)
    again = tmp_path / "again"
    assert invoke("run", "--config", by_flags / "config.yaml", "--out", again).exit_code == 0
    same_run(by_flags, again)


def test_strict_from_a_file_as_from_the_flag(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text("category: circular_logic\nstrict: true\ninput-format: prm800k\nlimit: 2\n")
    assert invoke("run", "--config", config, "--out", tmp_path / "file").exit_code == 0
    assert invoke("run", "--category", "circular_logic", "--strict", "--input-format", "prm800k", "--limit", "2",
                  "--out", tmp_path / "flags").exit_code == 0
    same_run(tmp_path / "file", tmp_path / "flags")
    assert yaml.safe_load((tmp_path / "flags" / "config.yaml").read_text())["strict"] is True


def test_from_continues_a_run_and_flags_override_it(scripted_server, tmp_path):
    scripted_server.script = lambda request: json.dumps(GOOD)
    out = tmp_path / "run"
    base = ["--input", trajectories(tmp_path), "--category", "counterfactual", "--model", "openai/scripted",
            "--api-base", scripted_server.api_base, "--client", scripted_server.client, "--limit", "2"]
    assert invoke("run", *base, "--out", out).exit_code == 0
    manifest = (out / "manifest.json").read_text()
    sent = len(scripted_server.requests)
    result = invoke("run", "--from", out)
    assert result.exit_code == 0 and "0 new, 2 already there" in result.output
    assert len(scripted_server.requests) == sent  # nothing sent again
    assert json.loads((out / "manifest.json").read_text())["config_hash"] == json.loads(manifest)["config_hash"]
    result = invoke("run", "--from", out, "--limit", "3")  # a flag overrides the saved option
    assert result.exit_code == 0 and "1 new, 2 already there" in result.output
    assert yaml.safe_load((out / "config.yaml").read_text())["limit"] == 3
    elsewhere = tmp_path / "copy"
    assert invoke("run", "--from", out, "--out", elsewhere).exit_code == 0
    same_run(out, elsewhere, cached=True)


def test_a_bad_saved_config_is_one_line_naming_file_and_line(tmp_path):
    out = tmp_path / "run"
    assert invoke("run", "--category", "circular_logic", "--limit", "1", "--out", out).exit_code == 0
    saved = out / "config.yaml"
    lines = saved.read_text().splitlines()
    limit_line = next(number for number, line in enumerate(lines, 1) if line.startswith("limit:"))
    saved.write_text(saved.read_text().replace("limit: 1", "limit: 0"))
    result = CliRunner().invoke(main, ["run", "--from", str(out)])
    assert result.exit_code == 2 and f"{saved}:{limit_line}: limit:" in result.output, result.output
    saved.write_text(saved.read_text().replace("limit: 0", "limits: 1"))
    result = CliRunner().invoke(main, ["run", "--from", str(out)])
    assert result.exit_code == 2 and f"{saved}:{limit_line}: unknown option 'limits'" in result.output
    assert "Traceback" not in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(main, ["run", "--from", str(empty)])
    assert result.exit_code == 2 and "holds no config.yaml" in result.output
    saved.unlink()
    os.symlink(tmp_path / "elsewhere.yaml", saved)
    (tmp_path / "elsewhere.yaml").write_text("category: circular_logic\n")
    result = CliRunner().invoke(main, ["run", "--from", str(out)])
    assert result.exit_code == 2 and "symbolic link" in result.output


def test_log_prompts_keeps_each_request_and_raw_answer_without_the_key(scripted_server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    answers = [f"not json, and it quotes the key {KEY}", json.dumps(GOOD)]
    scripted_server.reply_in_order(answers)
    out = tmp_path / "run"
    result = invoke("run", "--input", trajectories(tmp_path), "--category", "counterfactual", "--limit", "1",
                    "--model", "openai/scripted", "--api-base", scripted_server.api_base, "--client",
                    scripted_server.client, "--log-prompts", "--out", out)
    assert result.exit_code == 0, result.output
    text = (out / "prompts.jsonl").read_text()
    assert KEY not in text and "Authorization" not in text and "Bearer" not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert [line["attempt"] for line in lines] == [1, 2]
    sent = [json.loads(json.dumps(request["body"]["messages"]).replace(KEY, "[redacted]"))
            for request in scripted_server.requests]
    assert [line["request"]["messages"] for line in lines] == sent  # the retry's feedback too, the key redacted
    assert lines[0]["answer"] == "not json, and it quotes the key [redacted]"
    assert lines[1]["answer"] == json.dumps(GOOD) and lines[1]["unit"] == "t0::counterfactual::0"
    quiet = tmp_path / "quiet"
    assert invoke("run", "--input", trajectories(tmp_path), "--category", "circular_logic", "--limit", "1",
                  "--out", quiet).exit_code == 0
    assert not (quiet / "prompts.jsonl").exists()
