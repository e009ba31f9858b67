"""`inject verify` against a scripted judge on the real litellm -> HTTP path: every verdict kind, votes and ties,
unparseable answers, rollouts, originals critiqued once per trajectory and kind, resume, budget, dry run, and the
run's own files left as they were."""
from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any, Callable

import pytest
from click.testing import CliRunner
from scripted_server import Reply

from injector.cli.commands import main
from injector.triage.critique import critique_kind, majority, parse_judgement, UnreadableJudgement, verdict_of
from injector.records.directory import RunDirectory
from injector.records.models import Candidate, RunManifest
from injector.taxonomy import Taxonomy
from injector.triage.verdicts import VERIFY_FILE, VERIFY_SUMMARY_FILE, JudgeAnswer, read_verdicts

Q1 = "What is $2 + 3 + 4$?"
T1 = ["Let $x = 2 + 3 = 5$.", "Then $x + 4 = 9$.", "So the answer is 9.\n\n# Answer\n\n9"]
Q2 = "What is $6 \\cdot 7$?"
T2 = ["Six sevens are $6 \\cdot 7 = 42$.", "So the answer is 42.\n\n# Answer\n\n42"]
Q3 = "What is $10 - 4$?"
T3 = ["Take 4 from 10: $10 - 4 = 6$.", "Check: $6 + 4 = 10$.", "So the answer is 6.\n\n# Answer\n\n6"]

# (candidate name, trajectory, category, modified steps, error steps)
CANDIDATES = [
    ("cf", "t1", "counterfactual", [T1[0], "Then $x + 4 = 10$.", "So the answer is 10.\n\n# Answer\n\n10"], [2, 3]),
    ("conf", "t1", "confidence", ["Clearly $x = 2 + 3 = 6$.", "Then $x + 4 = 10$.",
                                   "So the answer is 10.\n\n# Answer\n\n10"], [1, 2, 3]),
    ("dec", "t1", "deception", [T1[0], "Then $x + 4 = 8$.", "So the answer is 8.\n\n# Answer\n\n8"], [2, 3]),
    ("sc", "t1", "step_contradiction", [T1[0], "Then $x + 4 = 11$.", "So the answer is 11.\n\n# Answer\n\n11"],
     [2, 3]),
    ("red", "t1", "redundancy", [T1[0], "Also $3 + 2 = 5$.", *T1[1:]], [2]),
    ("circ", "t1", "circular_logic", [T1[0], "Since the answer is 9, $x + 4 = 9$.", T1[2]], [2]),
    ("multi", "t1", "multi_solution", ["First $3 + 4 = 7$.", "Then $7 + 2 = 9$.", "So 9.\n\n# Answer\n\n9"], []),
    ("mc", "t1", "missing_condition", [T1[0], "Then $x + 4 = 19$.", "So the answer is 19.\n\n# Answer\n\n19"], [2, 3]),
    ("dom", "t1", "domain_inconsistency", [T1[0], "Then $x + 4 = 54$.", "So the answer is 54.\n\n# Answer\n\n54"],
     [2, 3]),
    ("flag", "t2", "counterfactual", ["Six sevens are $6 \\cdot 7 = 48$.", "So the answer is 48.\n\n# Answer\n\n48"],
     [1, 2]),
    ("multi2", "t2", "multi_solution", ["Seven sixes: $7 \\cdot 6 = 42$.", "So 42.\n\n# Answer\n\n42"], []),
    ("tie", "t3", "counterfactual", [T3[0], "Check: $6 + 4 = 11$.", "So the answer is 7.\n\n# Answer\n\n7"], [2, 3]),
]
SOURCES = {"t1": (Q1, T1), "t2": (Q2, T2), "t3": (Q3, T3)}

# What the judge says, per (critique kind, steps): one answer for every sample, or a list by sample. A list of
# two strings for one sample is an unreadable first answer and the re-ask's answer.
JudgeScript = dict[tuple[str, tuple[str, ...]], Any]


def _steps(name: str) -> tuple[str, ...]:
    return tuple(next(c[3] for c in CANDIDATES if c[0] == name))


def judge_table() -> JudgeScript:
    return {
        ("error", tuple(T1)): -1, ("redundancy", tuple(T1)): -1, ("circular", tuple(T1)): -1,
        ("error", tuple(T2)): 1,  # the source itself looks wrong to the judge: original_flagged
        ("error", tuple(T3)): -1,
        ("error", _steps("cf")): 2,                              # confirmed
        ("error", _steps("conf")): -1,                           # missed
        ("error", _steps("dec")): 1,                             # early
        ("error", _steps("sc")): 3,                              # late
        ("redundancy", _steps("red")): 2,                        # confirmed (asked for the removable step)
        ("circular", _steps("circ")): [["no idea", "still no idea"]],  # unparseable, after one re-ask
        ("error", _steps("multi")): -1,                          # alternative: confirmed
        ("error", _steps("mc")): [['{"first_error_step": 99, "reason": "x"}', '{"first_error_step": 2}']],
        ("error", _steps("dom")): [1, 2, 2],                     # early, then two votes confirmed
        ("error", _steps("flag")): 1,                            # (the original decides: original_flagged)
        ("error", _steps("multi2")): 2,                          # alternative: flagged
        ("error", _steps("tie")): [1, 3, -1],                    # early, late, missed: disputed
    }


def _kind_of(system: str) -> str:
    if "can be removed without affecting" in system:
        return "redundancy"
    if "assumes what it sets out to show" in system:
        return "circular"
    return "error"


def shown_steps(user: str) -> tuple[str, ...]:
    return tuple(m.group(2) for m in re.finditer(r"<step_(\d+)>\n(.*?)\n</step_\1>", user, re.DOTALL))


def _answer(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps({"first_error_step": value, "reason": f"said {value}"})


def judge(table: JudgeScript, rollout: Callable[[tuple[str, ...], int], str] | None = None):
    """A scripted blind judge: it reads only the prompt (kind from the system message, steps from the user one)."""

    def script(request: dict) -> Reply | str:
        messages = request["messages"]
        system, user = messages[0]["content"], messages[1]["content"]
        sample = request["seed"]
        if system.startswith("You solve problems"):
            assert rollout is not None, "no rollout expected"
            return rollout(shown_steps(user), sample)
        assert request["response_format"]["json_schema"]["strict"] is True
        value = table[(_kind_of(system), shown_steps(user))]
        if isinstance(value, list):
            value = value[sample] if sample < len(value) else value[-1]
        if isinstance(value, list):  # [unreadable first answer, answer to the re-ask]
            value = value[1] if len(messages) > 2 else value[0]
        return _answer(value)

    return script


def make_run(path: Path, names: list[str] | None = None) -> Path:
    """A run directory holding the CANDIDATES (all, or those named), as `inject run` writes one."""
    taxonomy = Taxonomy.load()
    chosen = [c for c in CANDIDATES if names is None or c[0] in names]
    categories = sorted({c[2] for c in chosen})
    config = {"taxonomy": "prmbench", "categories": categories, "engine": "test"}
    digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]
    directory = RunDirectory(path)
    directory.prepare(digest)
    directory.write_manifest(RunManifest(
        command=["test"], config=config, config_hash=digest, toolkit_version="0", started="now", status="finished",
        categories={cid: {"name": taxonomy.category(cid).name, "domain": taxonomy.category(cid).domain,
                          "classification": taxonomy.category(cid).classification} for cid in categories}))
    for name, tid, cid, steps, errors in chosen:
        question, original = SOURCES[tid]
        category = taxonomy.category(cid)
        changed = [k for k, step in enumerate(steps, 1) if step not in original] if errors else []
        directory.append(Candidate(
            original_question=question, modified_question=question, original_process=original,
            modified_process=steps, modified_steps=changed, error_steps=errors, reason=name, idx=tid,
            question=question, classification=category.classification, id=f"{tid}::{cid}::0", category=cid,
            trajectory_id=tid, sample=0))
    directory.release()
    return path


def verify_cli(server, run: Path, *extra: str):
    return CliRunner().invoke(main, ["verify", str(run), "--model", "openai/judge", "--api-base", server.api_base,
                                     *extra], catch_exceptions=False)


def files_of(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(run.iterdir()) if p.name in
            ("manifest.json", "candidates.jsonl", "rejects.jsonl")}


def _by_name(run: Path) -> dict[str, Any]:
    verdicts = read_verdicts(run)
    return {name: verdicts[f"{tid}::{cid}::0"] for name, tid, cid, *_ in CANDIDATES if f"{tid}::{cid}::0" in verdicts}


def _requests_by_steps(server) -> Counter:
    return Counter((_kind_of(r["body"]["messages"][0]["content"]), shown_steps(r["body"]["messages"][1]["content"]),
                    r["body"]["seed"], len(r["body"]["messages"])) for r in server.requests)


def test_every_verdict_kind_votes_and_ties(scripted_server, tmp_path):
    run = make_run(tmp_path / "run")
    before = files_of(run)
    scripted_server.script = judge(judge_table())
    result = verify_cli(scripted_server, run, "--votes", "3")
    assert result.exit_code == 0, result.output
    got = {name: record.verdict for name, record in _by_name(run).items()}
    assert got == {"cf": "confirmed", "conf": "missed", "dec": "early", "sc": "late", "red": "confirmed",
                   "circ": "unparseable", "multi": "confirmed", "mc": "confirmed", "dom": "confirmed",
                   "flag": "original_flagged", "multi2": "flagged", "tie": "disputed"}
    records = _by_name(run)
    assert records["dom"].votes == [1, 2, 2] and records["dom"].verdict_votes == [
        "early", "confirmed", "confirmed"]
    assert records["dom"].judge_modified.first_error_step == 2  # the majority's answer is shown
    assert records["tie"].votes == [1, 3, -1]
    assert records["cf"].votes == [2]  # confirmed at once: no votes spent on it
    assert records["dec"].votes == [1, 1, 1] and records["dec"].verdict == "early"  # a unanimous vote stays early
    assert records["circ"].judge_modified.first_error_step is None
    assert records["circ"].judge_modified.raw == "still no idea"
    assert records["mc"].judge_modified.first_error_step == 2  # 99 is out of range: asked again once
    assert records["flag"].judge_original.first_error_step == 1
    assert records["multi"].judge_original is None and records["multi"].kind == "alternative"
    assert records["red"].kind == "redundancy" and records["circ"].kind == "circular"
    assert records["cf"].declared_first_error == 2 and records["conf"].declared_first_error == 1
    assert records["cf"].reason == "said 2"
    # The run's own files, and so its configuration hash, are untouched.
    assert files_of(run) == before
    summary = json.loads((run / VERIFY_SUMMARY_FILE).read_text())
    assert summary["verdicts"]["counterfactual"] == {"original_flagged": 1, "disputed": 1, "confirmed": 1}
    assert summary["status"] == "finished" and summary["verified"] == 12 and summary["candidates"] == 12
    assert summary["usage"]["requests"] == len(scripted_server.requests)
    assert "counterfactual" in result.output and "original_flagged" in result.output


def test_each_original_is_critiqued_once_per_trajectory_and_kind(scripted_server, tmp_path):
    run = make_run(tmp_path / "run")
    scripted_server.script = judge(judge_table())
    assert verify_cli(scripted_server, run, "--concurrency", "8").exit_code == 0
    asked = _requests_by_steps(scripted_server)
    originals = {key: n for key, n in asked.items() if key[1] in (tuple(T1), tuple(T2), tuple(T3))}
    # t1 is shared by nine categories: six error critiques, one redundancy, one circular, one alternative.
    assert originals == {("error", tuple(T1), 0, 2): 1, ("redundancy", tuple(T1), 0, 2): 1,
                         ("circular", tuple(T1), 0, 2): 1, ("error", tuple(T2), 0, 2): 1,
                         ("error", tuple(T3), 0, 2): 1}
    # Twelve modified critiques, five originals, and the re-asks of the two unreadable first answers.
    assert len(scripted_server.requests) == 12 + 5 + 2
    # The judge is blind: no request shows a label.
    for request in scripted_server.requests:
        text = json.dumps(request["body"]["messages"])
        assert "error_steps" not in text and "counterfactual" not in text and "modified" not in text


def test_a_rerun_sends_nothing_and_other_settings_verify_again(scripted_server, tmp_path):
    run = make_run(tmp_path / "run")
    scripted_server.script = judge(judge_table())
    assert verify_cli(scripted_server, run).exit_code == 0
    first = len(scripted_server.requests)
    lines = (run / VERIFY_FILE).read_text()
    result = verify_cli(scripted_server, run, "--no-cache")
    assert result.exit_code == 0 and len(scripted_server.requests) == first  # 0 requests, cache or not
    assert "0 verified now, 12 already verified" in result.output
    assert (run / VERIFY_FILE).read_text() == lines
    # With votes the settings differ: verified again, the first samples come from the cache.
    assert verify_cli(scripted_server, run, "--votes", "3").exit_code == 0
    assert _by_name(run)["tie"].verdict == "disputed"
    assert len((run / VERIFY_FILE).read_text().splitlines()) == 24  # appended; the later line wins


def test_rollouts_score_both_prefixes(scripted_server, tmp_path):
    run = make_run(tmp_path / "run", ["cf", "red", "multi", "flag"])
    rollouts: list[tuple[tuple[str, ...], int]] = []

    def rollout(prefix: tuple[str, ...], sample: int) -> str:
        rollouts.append((prefix, sample))
        carried = any("= 10" in step or "= 48" in step for step in prefix)
        # Through the error, one continuation in four still reaches the right answer (in another notation).
        right = "$9$" if prefix and prefix[0] == T1[0] else "42"
        return "Then we are done.\n\n# Answer\n\n" + (right if not carried or sample == 3 else "10")

    scripted_server.script = judge(judge_table(), rollout)
    result = verify_cli(scripted_server, run, "--rollouts", "4", "--rollout-model", "openai/roller")
    assert result.exit_code == 0, result.output
    models = Counter((r["body"]["model"], r["body"]["messages"][0]["content"].startswith("You solve"))
                     for r in scripted_server.requests)
    assert set(models) == {("judge", False), ("roller", True)} and models[("roller", True)] == 16
    records = _by_name(run)
    assert records["cf"].mc.model_dump() == {"n": 4, "before": 1.0, "through": 0.25, "before_correct": 4, "through_correct": 1,
                                "answer": "9"}
    # t2's counterfactual edits step 1: the prefix before it is empty, through it carries 48.
    assert records["flag"].mc.before == 1.0 and records["flag"].mc.through == 0.25
    assert records["red"].mc is None and records["multi"].mc is None  # final answer unchanged: no rollouts
    assert sorted(len(prefix) for prefix, _ in rollouts) == [0] * 4 + [1] * 8 + [2] * 4
    assert records["cf"].usage.requests == 1 + 1 + 8  # its critique, t1's error original, its rollouts


def test_max_cost_stops_with_exit_3_and_the_same_command_continues(scripted_server, tmp_path):
    run = make_run(tmp_path / "run")
    scripted_server.script = judge(judge_table())
    prices = ["--price-in", "10", "--price-out", "20", "--concurrency", "1"]  # $0.002 a request
    result = verify_cli(scripted_server, run, *prices, "--max-cost", "0.005")
    assert result.exit_code == 3, result.output
    assert "reaching --max-cost $0.005; run the same command again to continue" in result.output
    summary = json.loads((run / VERIFY_SUMMARY_FILE).read_text())
    assert summary["status"] == "budget_exceeded" and 0 < summary["verified"] < 12
    result = verify_cli(scripted_server, run, *prices, "--max-cost", "1")
    assert result.exit_code == 0, result.output
    assert len(read_verdicts(run)) == 12


def test_max_cost_needs_a_price(scripted_server, tmp_path):
    run = make_run(tmp_path / "run", ["cf"])
    result = verify_cli(scripted_server, run, "--max-cost", "1")
    assert result.exit_code == 2 and "--max-cost needs a price" in result.output
    assert scripted_server.requests == []


def test_dry_run_counts_and_sends_nothing(scripted_server, tmp_path):
    run = make_run(tmp_path / "run")
    result = verify_cli(scripted_server, run, "--dry-run", "--price-in", "1", "--price-out", "2", "--rollouts", "2")
    assert result.exit_code == 0, result.output
    assert "candidates to verify  12 (0 already verified)" in result.output
    assert "critiques            17 (12 modified, 5 originals)" in result.output
    assert "rollout candidates   8" in result.output  # all but redundancy, circular logic and the alternatives
    assert "up to 66 requests" in result.output  # (12 + 5) critiques and their re-asks, 8 x 2 prefixes x 2
    assert scripted_server.requests == [] and not (run / VERIFY_FILE).exists()


def test_not_a_run_directory_is_exit_2(scripted_server, tmp_path):
    result = verify_cli(scripted_server, tmp_path)
    assert result.exit_code == 2
    assert result.output == f"error: {tmp_path}: not a run directory (no manifest.json); start it with `inject run`\n"


def test_transient_failures_leave_candidates_unverified_for_a_rerun(scripted_server, tmp_path):
    run = make_run(tmp_path / "run", ["cf", "conf"])
    scripted_server.script = lambda request: Reply(status=400, error="bad request")
    result = verify_cli(scripted_server, run)
    assert result.exit_code == 5 and "no candidate was verified" in result.output
    assert read_verdicts(run) == {}
    scripted_server.script = judge(judge_table())
    assert verify_cli(scripted_server, run).exit_code == 0 and len(read_verdicts(run)) == 2


def test_parse_judgement_reads_tolerantly_and_checks_the_index_strictly():
    assert parse_judgement('```json\n{"first_error_step": 3, "reason": "$\\frac12$"}\n```', 4) == JudgeAnswer(
        first_error_step=3, reason="$\\frac12$")
    assert parse_judgement('I think {"first_error_step": "-1", "reason": "fine"}.', 4).first_error_step == -1
    assert parse_judgement('{"first_error_step": 2.0}', 4).first_error_step == 2
    for bad, why in [('{"first_error_step": 0}', "numbered 1 to 4"), ('{"first_error_step": 5}', "numbered 1 to 4"),
                     ('{"first_error_step": -2}', "numbered 1 to 4"), ('{"first_error_step": 2.5}', "not an integer"),
                     ('{"first_error_step": true}', "not a step number"), ('{"reason": "x"}', "missing"),
                     ('{"first_error_step": "two"}', "not an integer"), ("no json here", "readable JSON")]:
        with pytest.raises(UnreadableJudgement, match=why):
            parse_judgement(bad, 4)


def test_verdict_precedence_and_majority():
    def a(step):
        return JudgeAnswer(first_error_step=step)

    assert verdict_of("error", 2, a(None), a(1)) == "original_flagged"  # the source first
    assert verdict_of("error", 2, a(2), a(None)) == "unparseable"
    assert verdict_of("error", 2, a(-1), a(-1)) == "missed"
    assert [verdict_of("redundancy", 2, a(k), a(-1)) for k in (1, 2, 3)] == ["early", "confirmed", "late"]
    assert verdict_of("alternative", None, a(-1), None) == "confirmed"
    assert verdict_of("alternative", None, a(1), None) == "flagged"
    assert majority(["early", "confirmed", "confirmed"]) == "confirmed"
    assert majority(["early", "late"]) == "disputed" and majority(["late"]) == "late"


def test_critique_kinds_come_from_the_taxonomy():
    taxonomy = Taxonomy.load()
    kinds = {c.id: critique_kind(c) for c in taxonomy.categories}
    assert kinds == {"redundancy": "redundancy", "circular_logic": "circular", "counterfactual": "error",
                     "step_contradiction": "error", "domain_inconsistency": "error", "confidence": "error",
                     "missing_condition": "error", "deception": "error", "multi_solution": "alternative"}
    projudge = Taxonomy.load("projudge")
    assert {critique_kind(c) for c in projudge.categories} == {"error"}
    custom = taxonomy.category("redundancy").model_copy(update={"variables": {"critique": "circular"}})
    assert critique_kind(custom) == "circular"


def test_verify_appends_beside_a_run_that_holds_the_directory(scripted_server, tmp_path):
    # `inject run` holds the run lock for as long as it runs; a verify pass appends beside it without taking it.
    run = make_run(tmp_path / "run", ["cf", "red"])
    manifest = json.loads((run / "manifest.json").read_text())
    holder = RunDirectory(run)
    holder.prepare(manifest["config_hash"])
    try:
        scripted_server.script = judge(judge_table())
        result = verify_cli(scripted_server, run)
        assert result.exit_code == 0, result.output
        holder.append(Candidate(**{**json.loads((run / "candidates.jsonl").read_text().splitlines()[0]),
                                   "id": "t1::counterfactual::1", "sample": 1}))
    finally:
        holder.release()
    assert len(read_verdicts(run)) == 2
    assert len((run / "candidates.jsonl").read_text().splitlines()) == 3
    scripted_server.requests.clear()
    assert verify_cli(scripted_server, run).exit_code == 0  # the candidate written since is verified now
    # Same texts as sample 0: both its critiques (modified, and t1's original) come from the request cache.
    assert len(read_verdicts(run)) == 3 and scripted_server.requests == []


def test_interrupt_exits_130_and_the_summary_says_so(scripted_server, tmp_path, monkeypatch):
    run = make_run(tmp_path / "run", ["cf"])

    async def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("injector.triage.judging.Judge.verify_one", interrupted)
    result = verify_cli(scripted_server, run)
    assert result.exit_code == 130
    assert "interrupted; nothing written is lost. Run the same command again to continue" in result.output
    assert json.loads((run / VERIFY_SUMMARY_FILE).read_text())["status"] == "interrupted"


def test_a_full_disk_stops_with_exit_2_naming_the_file_and_a_rerun_completes(scripted_server, tmp_path,
                                                                             monkeypatch):
    import errno

    from injector.records import directory as records

    run = make_run(tmp_path / "run")
    scripted_server.script = judge(judge_table())
    real_append = records._append_whole

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(records, "_append_whole", full)
    result = verify_cli(scripted_server, run)
    assert result.exit_code == 2
    assert f"error: cannot write {run / VERIFY_FILE}: No space left on device;" in result.output
    assert read_verdicts(run) == {}
    monkeypatch.setattr(records, "_append_whole", real_append)
    assert verify_cli(scripted_server, run).exit_code == 0 and len(read_verdicts(run)) == 12


# --- the judge's prompts: snapshots (tests/snapshots/verify/), a static system part, steps shown bare --------------

SNAPSHOT_DIR = Path(__file__).parent / "snapshots" / "verify"
SNAPSHOT_QUESTION = "Let $f(x) = \\frac{x}{2} + 1$. What is $f(f(4))$?"
SNAPSHOT_STEPS = ["First, $f(4) = \\frac{4}{2} + 1 = 3$.", "Then $f(3) = \\frac{3}{2} + 1 = \\frac{5}{2}$.",
                  "So $f(f(4)) = \\frac{5}{2}$.\n\n# Answer\n\n\\frac{5}{2}"]


@pytest.mark.parametrize("kind", ["error", "redundancy", "circular", "rollout"])
def test_verify_prompts_match_snapshots(kind):
    from snapshots import assert_snapshot

    from injector.triage.critique import critique_messages, rollout_messages

    if kind == "rollout":
        messages = rollout_messages(SNAPSHOT_QUESTION, SNAPSHOT_STEPS[:2], ["figures/graph.png"])
    else:
        messages = critique_messages(kind, SNAPSHOT_QUESTION, SNAPSHOT_STEPS, ["figures/graph.png"])
    text = f"=== system ===\n{messages[0]['content']}\n=== user ===\n{messages[1]['content']}\n"
    assert_snapshot(text, SNAPSHOT_DIR / f"{kind}.txt", "tests/test_verify.py")


def test_the_judge_sees_a_static_system_part_and_bare_numbered_steps():
    from injector.triage.critique import critique_messages

    one = critique_messages("error", Q1, [f"Step {k}: {step}" for k, step in enumerate(T1, 1)], [])
    two = critique_messages("error", Q2, T2, [])
    assert one[0] == two[0]  # byte-identical system message: a cacheable prefix
    assert shown_steps(one[1]["content"]) == tuple(T1)  # "Step k:" labels stripped, the prompt numbers the steps
    assert critique_messages("alternative", Q2, T2, []) == two  # the alternative's critique gives nothing away


def test_a_judge_that_never_follows_the_format_exits_2(scripted_server, tmp_path):
    """Issue 29: every critique unreadable is no triage: exit 2, saying what the judge returned."""
    run = make_run(tmp_path / "run", [CANDIDATES[0][0]])
    scripted_server.script = lambda request: "Step 2 looks wrong to me."
    result = verify_cli(scripted_server, run, "--no-cache")
    assert result.exit_code == 2, result.output
    assert "never answered in the format asked for" in result.output
    assert "its last answer: 'Step 2 looks wrong to me.'" in result.output


def test_a_pass_holds_the_candidates_in_flight_not_the_run(scripted_server, tmp_path):
    """Issue 30: verify streams. While the judge answers, the process holds about as many `Candidate`s as requests
    in flight (here one), not every candidate of the run (12), which at 100k candidates was 1.1 GB."""
    run = make_run(tmp_path / "run")
    before, alive = alive_while_judging(scripted_server, run, Candidate)
    assert len(alive) >= 12 and max(alive) - before <= 2, (before, alive)


def alive_while_judging(scripted_server, run, kind: type) -> tuple[int, list[int]]:
    """`inject verify` on `run`, one request at a time: how many `kind` objects the process held before it, and at
    each request the judge got (what earlier tests still hold is in `before`)."""
    import gc

    answer = judge(judge_table())
    alive: list[int] = []

    def live() -> int:
        gc.collect()  # what earlier tests left unreachable is not held by verify
        return sum(isinstance(thing, kind) for thing in gc.get_objects())

    def counting(request: dict) -> Reply | str:
        alive.append(live())
        return answer(request)

    scripted_server.script = counting
    before = live()
    result = verify_cli(scripted_server, run, "--concurrency", "1")
    assert result.exit_code == 0, result.output
    return before, alive


def test_a_pass_reads_the_candidates_through_one_handle(scripted_server, tmp_path, monkeypatch):
    """Each pending candidate is read back from its offset as its turn comes, through one open handle of
    candidates.jsonl, not one open per candidate."""
    import injector.records.jsonl as jsonl

    run = make_run(tmp_path / "run")
    opens: list[str] = []
    real_open = jsonl.open_read

    def counting(path, *args, **kwargs):
        opens.append(Path(path).name)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(jsonl, "open_read", counting)
    scripted_server.script = judge(judge_table())
    result = verify_cli(scripted_server, run, "--concurrency", "1")
    assert result.exit_code == 0, result.output
    # Two scans (what is pending, the summary) and one handle for the 12 reads; one open per candidate made 14.
    assert opens.count("candidates.jsonl") == 3, opens
