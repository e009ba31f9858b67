"""The production run loop against the scripted server: re-asks with feedback, cache, resume, budgets, dry run,
key redaction, progress output, interruption."""
from __future__ import annotations

import errno
import io
import json
import os
import sqlite3
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner
from scripted_server import Reply

from injector.records import directory as records
from injector.cli.commands import main
from injector.runner.loop import RunProgress
from injector.runner.progress import ProgressDisplay, summary_table
from injector.records.directory import RunDirectory

QUESTION = "What is $2 + 3$?"
STEPS = ["Let $x = 2$.", "Then $x + 3 = 5$.", "So the answer is 5.\n\n# Answer\n\n5"]
GOOD = {"question": None, "edits": [{"op": "replace", "step": 2, "text": "Then $x + 3 = 6$.", "error": True}],
        "reason": "2 + 3 is 5, not 6."}
UNFLAGGED = dict(GOOD, edits=[{"op": "replace", "step": 2, "text": "Then $x + 3 = 6$."}])  # no error step


@pytest.fixture
def input_file(tmp_path: Path) -> Path:
    path = tmp_path / "input.jsonl"
    rows = [{"id": f"t{k}", "question": QUESTION, "steps": [*STEPS[:2], STEPS[2] + "." * k], "answer": "5"}
            for k in range(4)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def run_cli(server, input_file, out, *extra, env=None):
    args = ["run", "--category", "counterfactual", "--input", str(input_file), "--model", "openai/scripted",
            "--api-base", server.api_base, "--out", str(out), *extra]
    return CliRunner().invoke(main, args, env=env, catch_exceptions=False)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_failed_answer_is_sent_back_with_the_validators_words(scripted_server, input_file, tmp_path):
    scripted_server.reply_in_order([json.dumps(UNFLAGGED), json.dumps(GOOD)])
    out = tmp_path / "run"
    assert run_cli(scripted_server, input_file, out, "--limit", "1").exit_code == 0
    [candidate] = read_jsonl(out / "candidates.jsonl")
    assert candidate["provenance"]["attempts"] == [{"codes": ["no_error_steps"]}, {"codes": []}]
    assert candidate["provenance"]["usage"] == {"prompt_tokens": 200, "completion_tokens": 100}
    assert read_jsonl(out / "rejects.jsonl") == []  # accepted on a later attempt: a candidate only
    second = scripted_server.requests[1]["body"]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[2]["content"] == json.dumps(UNFLAGGED)
    assert "there is no error step: mark every erroneous step" in second[3]["content"]


def test_parse_errors_are_fed_back_too(scripted_server, input_file, tmp_path):
    scripted_server.reply_in_order(["I think step 2 could be changed.", json.dumps(GOOD)])
    out = tmp_path / "run"
    assert run_cli(scripted_server, input_file, out, "--limit", "1").exit_code == 0
    [candidate] = read_jsonl(out / "candidates.jsonl")
    assert candidate["provenance"]["attempts"][0]["codes"] == ["parse_error"]
    assert "JSON object" in scripted_server.requests[1]["body"]["messages"][-1]["content"]


def test_the_cache_never_pays_twice_and_no_cache_bypasses_it(scripted_server, input_file, tmp_path):
    scripted_server.script = lambda request: json.dumps(GOOD)
    cache = tmp_path / "cache.sqlite"
    assert run_cli(scripted_server, input_file, tmp_path / "a", "--cache", str(cache)).exit_code == 0
    assert len(scripted_server.requests) == 4
    result = run_cli(scripted_server, input_file, tmp_path / "b", "--cache", str(cache))
    assert result.exit_code == 0 and len(scripted_server.requests) == 4  # all four answers came from the cache
    [first, *_] = read_jsonl(tmp_path / "b" / "candidates.jsonl")
    assert first["provenance"]["cached"] is True and first["provenance"]["cost"] == 0.0
    assert run_cli(scripted_server, input_file, tmp_path / "c", "--no-cache").exit_code == 0
    assert len(scripted_server.requests) == 8
    # Another api base is another key: a different server's answer is never reused.
    other = run_cli(scripted_server, input_file, tmp_path / "d", "--cache", str(cache), "--temperature", "0.5")
    assert other.exit_code == 0 and len(scripted_server.requests) == 12


def test_no_api_key_reaches_cache_manifest_or_outputs(scripted_server, input_file, tmp_path, monkeypatch):
    secret = "sk-test-SECRET-9f8e7d6c"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    scripted_server.reply_in_order([json.dumps(UNFLAGGED), json.dumps(GOOD), Reply(status=400, error="nope")])
    cache = tmp_path / "cache.sqlite"
    out = tmp_path / "run"
    assert run_cli(scripted_server, input_file, out, "--cache", str(cache), "--limit", "2").exit_code == 0
    headers = {k.lower(): v for k, v in scripted_server.requests[0]["headers"].items()}
    assert headers["authorization"] == f"Bearer {secret}"  # it was used...
    files = [cache, *sorted(out.iterdir())]
    for path in files:  # ...and written nowhere
        assert secret.encode() not in path.read_bytes(), path
    rows = sqlite3.connect(cache).execute("SELECT key, text, usage FROM answers").fetchall()
    assert rows and all(secret not in " ".join(map(str, row)) for row in rows)


def test_transient_failures_are_retried_on_resume_validation_rejects_are_not(scripted_server, input_file,
                                                                             tmp_path, monkeypatch):
    out = tmp_path / "run"
    from injector import LLMEngine, RunSpec, Taxonomy, load_trajectories, run

    def engine():
        return LLMEngine("openai/scripted", api_base=scripted_server.api_base, backoff_seconds=0,
                         transient_attempts=2)

    taxonomy = Taxonomy.load()
    categories = taxonomy.select(["counterfactual"])
    scripted_server.script = lambda request: Reply(status=502)
    run(load_trajectories(input_file), RunSpec(taxonomy=taxonomy, categories=categories, out=out, limit=1), engine())
    [reject] = read_jsonl(out / "rejects.jsonl")
    assert reject["codes"] == ["transient_failure"]
    scripted_server.script = lambda request: json.dumps(UNFLAGGED)
    run(load_trajectories(input_file), RunSpec(taxonomy=taxonomy, categories=categories, out=out, limit=2), engine())
    rejects = read_jsonl(out / "rejects.jsonl")
    assert sorted(r["id"] for r in rejects) == ["t0::counterfactual::0", "t1::counterfactual::0"]  # one line each
    assert all(r["codes"] == ["no_error_steps"] for r in rejects)
    before = len(scripted_server.requests)
    result = run(load_trajectories(input_file), RunSpec(taxonomy=taxonomy, categories=categories, out=out, limit=2),
                 engine())
    assert len(scripted_server.requests) == before and result.progress.skipped_existing == 2


def test_resume_after_a_crash_mid_write(scripted_server, input_file, tmp_path, caplog):
    scripted_server.script = lambda request: json.dumps(GOOD)
    out = tmp_path / "run"
    assert run_cli(scripted_server, input_file, out, "--limit", "2").exit_code == 0
    # Simulate a kill during the write of a third record: a torn, newline-less last line.
    with (out / "candidates.jsonl").open("a") as handle:
        handle.write('{"id": "t2::counterfactual::0", "original_que')
    result = run_cli(scripted_server, input_file, out)
    assert result.exit_code == 0, result.output
    assert "dropping a torn last line" in caplog.text
    ids = [c["id"] for c in read_jsonl(out / "candidates.jsonl")]
    assert sorted(ids) == [f"t{k}::counterfactual::0" for k in range(4)]  # nothing lost, nothing duplicated
    assert len(scripted_server.requests) == 4


def test_max_cost_stops_with_exit_3_and_resumes(scripted_server, input_file, tmp_path):
    scripted_server.script = lambda request: json.dumps(GOOD)
    out = tmp_path / "run"
    # 100 prompt + 50 completion tokens at $10 / $20 per million = $0.002 per request.
    prices = ["--price-in", "10", "--price-out", "20"]
    result = run_cli(scripted_server, input_file, out, *prices, "--max-cost", "0.003", "--concurrency", "1")
    assert result.exit_code == 3, result.output
    # A second unit could pass the cap: the run stops at $0.002, under it (--max-cost caps the run's total).
    assert "has spent $0.0020 of --max-cost $0.003 ($0.0020 in this invocation)" in result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "budget_exceeded" and manifest["counts"]["candidates"] == 1
    assert manifest["totals"]["cost"] == pytest.approx(0.002)
    result = run_cli(scripted_server, input_file, out, *prices, "--max-cost", "1", "--concurrency", "1")
    assert result.exit_code == 0 and len(read_jsonl(out / "candidates.jsonl")) == 4


def test_max_cost_refuses_an_unknown_price(scripted_server, input_file, tmp_path):
    result = run_cli(scripted_server, input_file, tmp_path / "run", "--max-cost", "1")
    assert result.exit_code == 2
    assert "--max-cost needs a price" in result.output and "--price-in and --price-out" in result.output
    assert scripted_server.requests == []


def test_unknown_price_is_unknown_not_zero(scripted_server, input_file, tmp_path):
    scripted_server.script = lambda request: json.dumps(GOOD)
    result = run_cli(scripted_server, input_file, tmp_path / "run", "--limit", "1")
    assert "cost unknown" in result.output
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["totals"]["cost_known"] is False


def test_dry_run_counts_and_sends_nothing(scripted_server, input_file, tmp_path):
    out = tmp_path / "run"
    result = run_cli(scripted_server, input_file, out, "--dry-run", "--price-in", "1", "--price-out", "2")
    assert result.exit_code == 0, result.output
    assert "units to run       4 (0 already in the run directory)" in result.output
    assert "requests           4 (up to 12 with re-asks)" in result.output
    tokens = int(result.output.split("prompt tokens")[1].split()[0])
    assert tokens > 4 * 500  # four system prompts of over a thousand tokens each
    assert "estimated cost     $" in result.output
    assert scripted_server.requests == [] and not out.exists()


def test_interrupt_exits_130_and_says_how_to_resume(scripted_server, input_file, tmp_path, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("injector.run", interrupted)
    result = run_cli(scripted_server, input_file, tmp_path / "run")
    assert result.exit_code == 130
    assert "interrupted; nothing written is lost. Resume with: inject" in result.output


def test_a_second_process_on_the_same_directory_is_refused(tmp_path):
    first, second = RunDirectory(tmp_path / "r"), RunDirectory(tmp_path / "r")
    first.prepare("abc")
    with pytest.raises(Exception, match="being written by another inject process"):
        second.prepare("abc")
    first.release()
    second.prepare("abc")


def test_plain_progress_lines_and_summary(capsys):
    import io

    stream = io.StringIO()
    progress = RunProgress(planned=10)
    progress.done, progress.accepted, progress.rejected = 3, 2, 1
    progress.codes = {"label_leak": 1}
    progress.by_category = {"confidence": {"accepted": 2, "rejected": 1}}
    with ProgressDisplay(stream=stream, interactive=False) as display:
        display.update(progress)
    assert stream.getvalue().startswith("3/10 done, 2 accepted, 1 rejected, 0 retries")
    table = summary_table(progress)
    assert "confidence" in table and "label_leak" in table


def run_cli_guarded(*args, **kwargs):
    """`run_cli` in a thread: a run that hangs fails the test (the guard) instead of hanging the suite."""
    outcome: dict = {}

    def target():
        try:
            outcome["result"] = run_cli(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout=120)
    assert not thread.is_alive(), "the run did not end"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


class DiskFillsUp:
    """`os` as injector.records.directory sees it, on a disk that fills up during the `full_at`th write: that write lands
    half, the next one fails with ENOSPC (what write(2) does on a full disk)."""

    def __init__(self, full_at: int):
        self.full_at, self.writes = full_at, 0

    def __getattr__(self, name):
        return getattr(os, name)

    def write(self, fd, data):
        self.writes += 1
        if self.writes < self.full_at:
            return os.write(fd, data)
        if self.writes == self.full_at:
            return os.write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def assert_one_error_line(output: str, expected: str) -> None:
    errors = [line for line in output.splitlines() if line.startswith(("error:", "internal error:", "Traceback"))]
    assert errors == [expected]


@pytest.mark.parametrize("concurrency", ["1", "16"])
def test_a_full_disk_stops_the_run_with_exit_2_and_a_rerun_completes(scripted_server, input_file, tmp_path,
                                                                      monkeypatch, concurrency):
    scripted_server.script = lambda request: json.dumps(GOOD)
    out = tmp_path / "run"
    monkeypatch.setattr(records, "os", DiskFillsUp(full_at=3))
    result = run_cli_guarded(scripted_server, input_file, out, "--concurrency", concurrency)
    assert result.exit_code == 2, result.output
    path = out / "candidates.jsonl"
    assert_one_error_line(result.output, f"error: cannot write {path}: No space left on device; free space or fix "
                                         "the permissions, then run the same command again to continue")
    data = path.read_bytes()
    assert data.endswith(b"\n") and len(read_jsonl(path)) == 2  # two whole lines; the torn third was cut off
    assert json.loads((out / "manifest.json").read_text())["status"] == "failed"
    monkeypatch.undo()  # space freed
    result = run_cli_guarded(scripted_server, input_file, out)
    assert result.exit_code == 0, result.output
    assert "torn" not in result.output
    ids = [c["id"] for c in read_jsonl(path)]
    assert sorted(ids) == [f"t{k}::counterfactual::0" for k in range(4)]  # none lost, none twice


def test_when_the_manifest_cannot_be_written_either_the_first_failure_is_reported(scripted_server, input_file,
                                                                                   tmp_path, monkeypatch):
    scripted_server.script = lambda request: json.dumps(GOOD)
    out = tmp_path / "run"
    from injector.util import safe_files

    real_create = safe_files.create_temporary

    def create_on_a_full_disk(path):
        if str(path).endswith("manifest.json.tmp") and (out / "manifest.json").exists():
            with real_create(path) as handle:
                handle.write(b'{"command": ')  # half a manifest lands, then the disk is full
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real_create(path)

    monkeypatch.setattr(records, "os", DiskFillsUp(full_at=2))
    monkeypatch.setattr(safe_files, "create_temporary", create_on_a_full_disk)
    result = run_cli_guarded(scripted_server, input_file, out, "--concurrency", "1")
    assert result.exit_code == 2, result.output
    assert_one_error_line(result.output, f"error: cannot write {out / 'candidates.jsonl'}: No space left on device; "
                                         "free space or fix the permissions, then run the same command again to "
                                         "continue")
    assert sorted(p.name for p in out.iterdir()) == [".candidates.jsonl.idx", ".lock", "candidates.jsonl", "config.yaml",
                                                     "log.jsonl",
                                                     "manifest.json"]  # no .tmp
    assert json.loads((out / "manifest.json").read_text())["status"] == "running"  # the last whole manifest
    monkeypatch.undo()
    result = run_cli_guarded(scripted_server, input_file, out)
    assert result.exit_code == 0, result.output
    assert sorted(c["id"] for c in read_jsonl(out / "candidates.jsonl")) == [
        f"t{k}::counterfactual::0" for k in range(4)]


class FullDatabase:
    """A request cache connection on a full disk: reads work, every insert fails as SQLite reports it."""

    def __init__(self, db):
        self.db = db

    def execute(self, sql, *args):
        if sql.startswith("INSERT"):
            raise sqlite3.OperationalError("database or disk is full")
        return self.db.execute(sql, *args)

    def close(self):
        self.db.close()


def test_a_full_cache_disk_stops_the_run_with_exit_2(scripted_server, input_file, tmp_path, monkeypatch):
    scripted_server.script = lambda request: json.dumps(GOOD)
    real_connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *args, **kwargs: FullDatabase(real_connect(*args, **kwargs)))
    cache, out = tmp_path / "cache.sqlite", tmp_path / "run"
    result = run_cli_guarded(scripted_server, input_file, out, "--cache", str(cache), "--concurrency", "1")
    assert result.exit_code == 2, result.output
    assert_one_error_line(result.output, f"error: cannot write {cache}: database or disk is full; free space or fix "
                                         "the permissions, choose another --cache, or pass --no-cache")
    assert read_jsonl(out / "candidates.jsonl") == []  # stopped at the first unit
    monkeypatch.undo()
    result = run_cli_guarded(scripted_server, input_file, out, "--cache", str(cache))
    assert result.exit_code == 0, result.output
    assert sorted(c["id"] for c in read_jsonl(out / "candidates.jsonl")) == [
        f"t{k}::counterfactual::0" for k in range(4)]


@pytest.fixture
def read_only_dir(tmp_path, monkeypatch) -> Path:
    """A directory on a read-only file system: creating or writing anything under it fails with EROFS. Emulated
    at the calls the toolkit makes (os.mkdir, os.open, io.open, sqlite3.connect), since chmod binds no root."""
    root = tmp_path / "read-only"
    root.mkdir()
    real_mkdir, real_open, real_io_open, real_connect = os.mkdir, os.open, io.open, sqlite3.connect

    def under_root(path) -> bool:
        return isinstance(path, (str, os.PathLike)) and Path(path).resolve().is_relative_to(root)

    def refuse(path):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    def mkdir(path, *args, **kwargs):
        if under_root(path) and not os.path.exists(path):
            refuse(path)
        return real_mkdir(path, *args, **kwargs)

    def os_open(path, flags, *args, **kwargs):
        if under_root(path) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            refuse(path)
        return real_open(path, flags, *args, **kwargs)

    def io_open(file, mode="r", *args, **kwargs):
        if under_root(file) and any(flag in mode for flag in "wax+"):
            refuse(file)
        return real_io_open(file, mode, *args, **kwargs)

    def connect(path, *args, **kwargs):
        if under_root(path):
            return real_connect(f"file:{path}?mode=ro", *args, uri=True, **kwargs)
        return real_connect(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(io, "open", io_open)
    monkeypatch.setattr(sqlite3, "connect", connect)
    return root


def test_a_read_only_out_is_exit_2_naming_the_path(scripted_server, input_file, read_only_dir):
    out = read_only_dir / "run"
    result = run_cli(scripted_server, input_file, out)
    assert result.exit_code == 2, result.output
    assert_one_error_line(result.output, f"error: cannot write {out}: Read-only file system; choose another --out, "
                                         "or fix its permissions")
    assert scripted_server.requests == []


def test_a_read_only_cache_is_exit_2_naming_the_path(scripted_server, input_file, read_only_dir, tmp_path):
    cache = read_only_dir / "cache.sqlite"
    result = run_cli(scripted_server, input_file, tmp_path / "run", "--cache", str(cache))
    assert result.exit_code == 2, result.output
    assert_one_error_line(result.output, f"error: cannot write {cache}: unable to open database file; free space or "
                                         "fix the permissions, choose another --cache, or pass --no-cache")
    assert scripted_server.requests == []


def test_a_failed_write_does_not_wait_for_the_requests_in_flight(scripted_server, input_file, tmp_path,
                                                                   monkeypatch):
    answered, release = [], threading.Event()

    def first_answer_only(request):
        if not answered:
            answered.append(request)
            return json.dumps(GOOD)
        release.wait(timeout=600)  # the provider is slow: these answers come long after the disk filled up
        return json.dumps(GOOD)

    scripted_server.script = first_answer_only
    monkeypatch.setattr(records, "os", DiskFillsUp(full_at=1))
    try:
        result = run_cli_guarded(scripted_server, input_file, tmp_path / "run", "--concurrency", "4")
    finally:
        release.set()
    assert result.exit_code == 2 and "No space left on device" in result.output
    assert read_jsonl(tmp_path / "run" / "candidates.jsonl") == []
