"""Issue 24, "Done when": a received run directory made of every attack at once is stated, reviewed, built,
verified and audited through the real CLI (a subprocess per command) with exit 2 and a one-line FILE[:LINE] message
or a clean result: never a traceback or exit 1, nothing written or changed outside `--out` (victim files and a
sentinel directory hashed before and after), never a hang.

Two directories: every name of a run directory a symlink to a victim file, a FIFO or /dev/zero (the link targets
hold hostile records too), and one of regular files whose contents are hostile: traversal and absolute paths in
every record field that could become a path, 5,000-digit integers and 5,000-deep arrays in records, side files,
decisions (stored and imported) and, in two variants of their own, the manifest.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from scripted_server import ScriptedServer
from test_verify import make_run  # a run directory as `inject run` writes one (12 candidates, a typed manifest)

from injector.curate.review.store import FIELDS, ReviewStore

BIG = "9" * 5000
DEEP = "[" * 5000 + "]" * 5000
CLI = [sys.executable, "-c", "from injector.cli import main; main()"]
HANG_GUARD = 60
"""Seconds a command may take before it counts as hung: a failure guard, not a timing assertion."""

ERROR_LINE = re.compile(r"error: (?:cannot write )?(/[^:]+)(?::\d+)?: ")
"""The one line of a refusal: FILE or FILE:LINE, then what is wrong."""


@dataclass
class Case:
    """A received run directory with its surroundings: victim files outside it, a sentinel directory that
    traversal and absolute paths point into, and the only place commands may write (`out`)."""

    root: Path

    @property
    def run(self) -> Path:
        return self.root / "received" / "run"

    @property
    def victims(self) -> Path:
        return self.root / "victims"

    @property
    def sentinel(self) -> Path:
        return self.root / "sentinel"

    @property
    def out(self) -> Path:
        return self.root / "out"

    @property
    def decisions(self) -> Path:
        """A decision file to import, hostile too."""
        return self.root / "received" / "decisions.jsonl"


# Record fields that a careless reader could turn into a path, each pointed into the sentinel directory: relative
# (from build's staging/prmbench/, from the run directory) and absolute.
def _path_attacks(case: Case) -> dict[str, list[str]]:
    sentinel = case.sentinel
    return {
        "classification": ["../../../sentinel/escaped", "../../sentinel/escaped", str(sentinel / "absolute")],
        "category": ["../../../sentinel/category", str(sentinel / "category")],
        "id": ["../../../sentinel/id", str(sentinel / "id")],
        "trajectory_id": ["../../sentinel/trajectory", str(sentinel / "trajectory")],
        "idx": ["../../../sentinel/idx"],
        "problem_key": ["../../../sentinel/problem"],
        "images": [[str(case.victims / "victim.txt"), "../../victims/victim.txt", "/dev/zero"]],
    }


def hostile_candidate_lines(case: Case, good: list[str]) -> list[str]:
    """Candidate lines, each a valid candidate but for one hostile field, then lines past the JSON bounds."""
    base = json.loads(good[0])
    lines = []
    for number, (name, values) in enumerate(_path_attacks(case).items()):
        for variant, value in enumerate(values):
            record = {**base, "id": f"hostile-{number}-{variant}", name: value}
            lines.append(json.dumps(record))
    lines.append(json.dumps({**base, "id": "hostile-big"}).replace('"error_steps": [', f'"error_steps": [{BIG}, '))
    lines.append(json.dumps({**base, "id": "hostile-deep"}).replace('"reason": ', f'"reason": {DEEP}, "r": '))
    lines += [BIG, DEEP, '{"id": ' + BIG + "}"]
    return lines


def side_lines(case: Case) -> list[str]:
    """Lines for a side file (rejects, verify, batches, log): hostile paths, then lines past the JSON bounds."""
    reject = {"id": "../../../sentinel/reject", "trajectory_id": str(case.sentinel / "t"), "idx": "../x",
              "category": "../../../sentinel/category", "codes": ["../../x"], "messages": []}
    verdict = {"id": "t1::counterfactual::0", "verdict": "../../../sentinel/verdict"}
    batch = {"batch_id": "../../../sentinel/batch", "input_file_id": str(case.sentinel / "input"),
             "state": "submitted", "units": ["../../x"]}
    return [json.dumps(reject), json.dumps(verdict), json.dumps(batch), BIG, DEEP, '{"n": ' + BIG + "}",
            '{"codes": ' + DEEP + "}"]


def hostile_decisions(case: Case) -> list[tuple[str, ...]]:
    """Decision rows (FIELDS order) a received store or an imported file may hold."""
    return [
        ("t1::counterfactual::0", "accept", "", "[" + BIG + "]", None, "ann", "2026-01-01T00:00:00Z", "review"),
        ("t1::counterfactual::0", "accept", "", None, '{"1": ' + DEEP + "}", "ann", "2026-01-01T00:00:00Z",
         "review"),
        ("../../../sentinel/id", "reject", str(case.sentinel / "x"), None, None, "../../x", "9999-12-31T00:00:00Z",
         "review"),
        ("t2::counterfactual::0", "accept", "", "[2]", None, "ann", "2026-01-01T00:00:00Z", "adjudication"),
    ]


def write_victims(case: Case, good: list[str], manifest: bytes) -> None:
    """Files outside the run directory that a followed link would read or write: a text file, another SQLite
    database, a candidates file (hostile) and a valid manifest."""
    case.victims.mkdir(parents=True)
    (case.victims / "victim.txt").write_text("keep me\nwhole")  # no final newline: an append would cut it
    with sqlite3.connect(case.victims / "victim.sqlite") as db:
        db.execute("CREATE TABLE mine (x)")
    db.close()
    (case.victims / "candidates.jsonl").write_text("\n".join(good + hostile_candidate_lines(case, good)) + "\n")
    (case.victims / "manifest.json").write_bytes(manifest)
    case.sentinel.mkdir()
    (case.sentinel / "marker").write_text("untouched")


def _decision_file(case: Case) -> None:
    """The hostile decisions as an export file would hold them (raw JSON text: 5,000 digits cannot be dumped)."""
    raw = ("corrected_error_steps", "edited_steps")
    lines = []
    for row in hostile_decisions(case):
        parts = [f'"{key}": {value if key in raw and value else json.dumps(value)}' for key, value in zip(FIELDS, row)]
        lines.append("{" + ", ".join(parts) + "}")
    case.decisions.write_text("\n".join(lines + [BIG, DEEP]) + "\n")


# Every name a run directory may hold, and what stands there in the all-in-one directory.
LINKED = {
    "candidates.jsonl": "candidates.jsonl", "manifest.json": "manifest.json", "rejects.jsonl": "victim.txt",
    "review.sqlite": "victim.sqlite", "review.sqlite-wal": "victim.txt", "log.jsonl": "victim.txt",
    ".lock": "victim.txt", ".verify.lock": "victim.txt", "manifest.json.tmp": "victim.txt",
    "verify-summary.json.tmp": "victim.txt", "rejects.jsonl.tmp": "victim.txt", "review-plan.json": "victim.txt",
    "verify-config.yaml": "victim.txt", "verify-config.yaml.tmp": "victim.txt",
}
FIFOS = ("verify-summary.json", "batches.jsonl", "review.sqlite-shm", "review-gold.jsonl")
DEV_ZERO = ("verify.jsonl", "review.sqlite-journal", "taxonomy.yaml")


def all_in_one(case: Case) -> None:
    """Every name a symlink to a victim, a FIFO or /dev/zero."""
    make_run(case.run)
    good = (case.run / "candidates.jsonl").read_text().splitlines()
    manifest = json.loads((case.run / "manifest.json").read_text())
    manifest["config"]["taxonomy_path"] = "taxonomy.yaml"  # read, if the link were followed: /dev/zero
    write_victims(case, good, json.dumps(manifest).encode())
    for name in (*LINKED, *FIFOS, *DEV_ZERO):
        (case.run / name).unlink(missing_ok=True)
    for name, victim in LINKED.items():
        (case.run / name).symlink_to(case.victims / victim)
    for name in FIFOS:
        os.mkfifo(case.run / name)
    for name in DEV_ZERO:
        (case.run / name).symlink_to("/dev/zero")
    _decision_file(case)


def hostile_contents(case: Case, manifest_attack: str = "paths") -> None:
    """Regular files only, with hostile contents; the manifest holds hostile paths (valid otherwise), a
    5,000-digit integer or a 5,000-deep array."""
    make_run(case.run)
    good = (case.run / "candidates.jsonl").read_text().splitlines()
    write_victims(case, good, (case.run / "manifest.json").read_bytes())
    (case.run / "candidates.jsonl").write_text("\n".join(good + hostile_candidate_lines(case, good)) + "\n")
    for name in ("rejects.jsonl", "verify.jsonl", "batches.jsonl", "log.jsonl"):
        (case.run / name).write_text("\n".join(side_lines(case)) + "\n")
    manifest = json.loads((case.run / "manifest.json").read_text())
    manifest["config"]["taxonomy_path"] = "../../victims/victim.txt"
    manifest["image_base"] = "../../victims"
    manifest["categories"]["counterfactual"]["classification"] = "../../../sentinel/manifest"
    text = json.dumps(manifest)
    if manifest_attack == "big":
        text = text[:-1] + ', "n": ' + BIG + "}"
    elif manifest_attack == "deep":
        text = text[:-1] + ', "n": ' + DEEP + "}"
    (case.run / "manifest.json").write_text(text)
    ReviewStore(case.run)  # a real store, then rows no review ever wrote
    with sqlite3.connect(case.run / "review.sqlite") as db:
        db.executemany(f"INSERT INTO decisions ({', '.join(FIELDS)}) VALUES ({', '.join('?' * len(FIELDS))})",
                       hostile_decisions(case))
    db.close()
    _decision_file(case)


MAKERS = {"all_in_one": all_in_one, "contents": hostile_contents,
          "manifest_big": lambda case: hostile_contents(case, "big"),
          "manifest_deep": lambda case: hostile_contents(case, "deep")}

# command -> (arguments, names of the run directory it may write: its own files, never through a link)
COMMANDS = {
    "status": (["status", "{run}"], ()),
    "stats": (["stats", "{run}"], ()),
    "export": (["review", "{run}", "--export", "{out}/decisions.jsonl"], ("review.sqlite", "review.sqlite-wal",
                                                                        "review.sqlite-shm")),
    "import": (["review", "{run}", "--import", "{decisions}"], ("review.sqlite", "review.sqlite-wal",
                                                                "review.sqlite-shm")),
    "build": (["build", "{run}", "--include-unreviewed", "--out", "{out}/split"], ()),
    "verify": (["verify", "{run}", "--model", "openai/judge", "--api-base", "{api_base}", "--timeout", "20"],
               ("verify.jsonl", "verify-summary.json", ".verify.lock", "log.jsonl", "verify-config.yaml")),
    "audit": (["audit", "{run}/candidates.jsonl", "--report-only"], ()),
    "audit_steps": (["audit", "--steps", "{run}", "--report-only"], ()),
}
REVIEW_FILES = ("review.sqlite", "review.sqlite-wal", "review.sqlite-shm")


def snapshot(root: Path) -> dict[str, str]:
    """What every name under `root` is: a link and its target, a file's hash, a directory, or something else."""
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            found[str(path)] = "link to " + os.readlink(path)
        elif path.is_file():
            found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            found[str(path)] = "directory" if path.is_dir() else "special"
    return found


def changes_outside(case: Case, before: dict[str, str], allowed: tuple[str, ...]) -> list[str]:
    """Names whose content or kind changed, appeared or went, except under `out` and the run's own `allowed`
    files (a followed link would change its victim, which is never allowed)."""
    after = snapshot(case.root)
    mine = {str(case.run / name) for name in allowed}
    return sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name)
                  and not name.startswith(str(case.out)) and name not in mine)


def inject(args: list[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=HANG_GUARD,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"inject {' '.join(args)} did not return within {HANG_GUARD} s (a hang)")


def check_outcome(result: subprocess.CompletedProcess, case: Case) -> None:
    """Exit 0, or exit 2 with one `error:` line naming a file of the case; never a traceback or exit 1."""
    output = result.stdout + result.stderr
    assert "Traceback" not in output and "internal error" not in output, output
    assert result.returncode in (0, 2), output
    if result.returncode == 2:
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and result.stderr.rstrip().endswith(errors[0]), result.stderr
        named = ERROR_LINE.match(errors[0])
        assert named and named.group(1).startswith(str(case.root)), errors[0]


@pytest.fixture(scope="module")
def judge():
    """A judge on 127.0.0.1 that finds every solution's first error at step 2."""
    server = ScriptedServer().start()
    server.script = lambda request: json.dumps({"first_error_step": 2, "reason": "scripted"})
    yield server
    server.stop()


def _case(tmp_path: Path, maker: str) -> Case:
    case = Case(tmp_path / "case")
    case.out.mkdir(parents=True)
    MAKERS[maker](case)
    return case


# The manifest variants only where a manifest is read (audit reads the files it is given, never a manifest).
CASES = [(maker, command) for maker in MAKERS for command in COMMANDS
         if not (maker.startswith("manifest_") and command.startswith("audit"))]


@pytest.mark.parametrize("maker, command", CASES)
def test_a_hostile_run_directory_is_refused_or_read_safely(tmp_path, judge, maker, command):
    case = _case(tmp_path, maker)
    arguments, allowed = COMMANDS[command]
    values = {"run": case.run, "out": case.out, "decisions": case.decisions, "api_base": judge.api_base}
    before = snapshot(case.root)
    result = inject([part.format(**values) for part in arguments])
    check_outcome(result, case)
    assert changes_outside(case, before, allowed) == [], result.stdout + result.stderr


@pytest.mark.parametrize("maker", list(MAKERS))
def test_the_review_app_starts_on_a_hostile_run_directory_or_refuses_it(tmp_path, maker):
    """`inject review RUN --no-browser`: it refuses the directory (exit 2, one line), or serves its first page;
    SIGINT then stops it (exit 0)."""
    case = _case(tmp_path, maker)
    before = snapshot(case.root)
    process = subprocess.Popen([*CLI, "review", str(case.run), "--no-browser", "--reviewer", "ann"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    guard = threading.Timer(HANG_GUARD, process.kill)  # the hang guard of reading its start-up lines
    guard.start()
    try:
        url = _served_url(process)
        if url is not None:
            with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(url, timeout=HANG_GUARD) as page:
                assert page.status == 200
            process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=HANG_GUARD)
    finally:
        guard.cancel()
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode != -signal.SIGKILL, f"inject review did not start or stop within {HANG_GUARD} s"
    check_outcome(subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr), case)
    assert changes_outside(case, before, REVIEW_FILES) == [], stderr


def _served_url(process: subprocess.Popen) -> str | None:
    """The app's URL from its start-up lines, or None when it exits first (a refusal)."""
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("open http"):
            return line.split(" ", 1)[1].strip()
    return None
