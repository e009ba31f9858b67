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
    config.write_text("category: redundancy\nstrict: true\ninput-format: prm800k\nlimit: 2\n")
    assert invoke("run", "--config", config, "--out", tmp_path / "file").exit_code == 0
    assert invoke("run", "--category", "redundancy", "--strict", "--input-format", "prm800k", "--limit", "2",
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
    assert invoke("run", "--category", "redundancy", "--limit", "1", "--out", out).exit_code == 0
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
    (tmp_path / "elsewhere.yaml").write_text("category: redundancy\n")
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
    assert invoke("run", "--input", trajectories(tmp_path), "--category", "redundancy", "--limit", "1",
                  "--out", quiet).exit_code == 0
    assert not (quiet / "prompts.jsonl").exists()


def log_events(directory: Path) -> list[dict]:
    return [json.loads(line) for line in (directory / "log.jsonl").read_text().splitlines()]


def test_verify_saves_its_options_logs_each_candidate_and_runs_again_from_them(scripted_server, tmp_path):
    from test_verify import judge, judge_table, make_run

    run = make_run(tmp_path / "run", ["cf", "red"])
    scripted_server.script = judge(judge_table())
    result = invoke("verify", run, "--model", "openai/judge", "--api-base", scripted_server.api_base, "--seed", "4",
                    "--verbose")
    assert result.exit_code == 0, result.output
    assert "t1::counterfactual::0: " in result.output  # --verbose: the log on the terminal
    saved = yaml.safe_load((run / "verify-config.yaml").read_text())
    assert saved["model"] == "openai/judge" and saved["seed"] == 4 and "run-dir" not in saved
    events = log_events(run)
    assert [line["event"] for line in events] == ["verify_started", "candidate_verified", "candidate_verified",
                                                  "verify_summary", "verify_finished"]
    assert {line["unit"] for line in events if line["event"] == "candidate_verified"} == {
        "t1::counterfactual::0", "t1::redundancy::0"}
    sent = len(scripted_server.requests)
    again = invoke("verify", "--from", run)
    assert again.exit_code == 0, again.output
    assert len(scripted_server.requests) == sent  # the same settings: every verdict is there already
    assert invoke("verify", "--from", run, "--seed", "5").exit_code == 0  # a flag overrides: judged again
    assert len(scripted_server.requests) > sent
    assert yaml.safe_load((run / "verify-config.yaml").read_text())["seed"] == 5


def test_build_and_eval_save_their_options_and_logs_and_run_again_from_them(tmp_path):
    run = tmp_path / "run"
    assert invoke("run", "--category", "redundancy", "--limit", "3", "--out", run).exit_code == 0
    split = tmp_path / "split"
    assert invoke("build", run, "--out", split, "--include-unreviewed", "--include-sources", "--no-cues",
                  "--verbose").exit_code == 0
    saved = yaml.safe_load((split / "build-config.yaml").read_text())
    assert saved["run-dirs"] == [str(run)] and saved["no-cues"] is True and "overwrite" not in saved
    assert [line["event"] for line in log_events(split)] == ["build_started", "build_summary", "build_finished"]
    rows = sorted(path.read_text() for path in (split / "jsonl").iterdir())
    refused = CliRunner().invoke(main, ["build", "--from", str(split)])
    assert refused.exit_code == 2 and "overwrite" in refused.output  # never replaced unasked
    assert invoke("build", "--from", split, "--overwrite").exit_code == 0
    assert sorted(path.read_text() for path in (split / "jsonl").iterdir()) == rows
    scores = tmp_path / "scores.jsonl"
    import datasets

    items = [row for name, part in datasets.load_from_disk(str(split)).items() for row in part]
    scores.write_text("".join(json.dumps({"id": item["id"], "step_scores": [0.9] * len(item["modified_process"])})
                              + "\n" for item in items))
    report = tmp_path / "report"
    assert invoke("eval", split, "--scores", scores, "--out", report, "--bootstrap", "10").exit_code == 0
    saved = yaml.safe_load((report / "eval-config.yaml").read_text())
    assert saved["paths"] == [str(split)] and saved["scores"] == str(scores) and saved["bootstrap"] == 10
    assert [line["event"] for line in log_events(report)] == ["eval_started", "eval_summary", "eval_finished"]
    metrics = (report / "metrics.json").read_text()
    assert invoke("eval", "--from", report).exit_code == 0
    assert (report / "metrics.json").read_text() == metrics


def test_verbose_on_a_command_without_a_log(tmp_path):
    run = tmp_path / "run"
    assert invoke("run", "--category", "redundancy", "--limit", "1", "--out", run).exit_code == 0
    assert invoke("stats", run, "--verbose").exit_code == 0


def test_a_refused_build_leaves_the_split_there_untouched(tmp_path):
    run = tmp_path / "run"
    assert invoke("run", "--category", "redundancy", "--limit", "2", "--out", run).exit_code == 0
    split = tmp_path / "split"
    assert invoke("build", run, "--out", split, "--include-unreviewed", "--no-cues").exit_code == 0
    before = {path.name: path.read_bytes() for path in split.iterdir() if path.is_file()}
    refused = CliRunner().invoke(main, ["build", "--from", str(split)])
    assert refused.exit_code == 2 and "not empty" in refused.output
    assert {path.name: path.read_bytes() for path in split.iterdir() if path.is_file()} == before


def test_a_saved_config_runs_nothing_it_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("category: redundancy\nlimit: !!python/object/apply:os.system "
                                     "['touch pwned']\n")
    result = CliRunner().invoke(main, ["run", "--from", str(run)])
    assert result.exit_code == 2 and f"{run / 'config.yaml'}:2: not YAML" in result.output, result.output
    assert not (tmp_path / "pwned").exists()


def test_log_prompts_with_worker_processes_keeps_one_whole_line_per_request(tmp_path):
    out = tmp_path / "run"
    assert invoke("run", "--category", "redundancy", "--category", "counterfactual", "--limit", "3", "--workers", "2",
                  "--concurrency", "4", "--log-prompts", "--out", out).exit_code == 0
    lines = [json.loads(line) for line in (out / "prompts.jsonl").read_text().splitlines()]
    written = [json.loads(line)["id"] for name in ("candidates.jsonl", "rejects.jsonl") if (out / name).exists()
               for line in (out / name).read_text().splitlines()]
    assert sorted(line["unit"] for line in lines) == sorted(written)  # the offline engine answers once per unit
    assert all(line["request"]["messages"] and (line["answer"] is not None or line["error"]) for line in lines)
