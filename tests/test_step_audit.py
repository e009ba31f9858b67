"""The step audit: parser pitfalls (pinned to the parser version), planted false relations, the Wilson interval."""
from __future__ import annotations

import json
from importlib.metadata import version

import pytest

from injector.triage.step_audit import audit_candidate, audit_steps
from injector.triage.step_audit.noise import estimate_label_noise, wilson_interval
from injector.triage.step_audit.routing import route, route_rank
from injector.triage.verdicts import VerifyRecord


def test_parser_versions_are_the_ones_the_pitfall_tests_pin():
    # The pitfalls below are latex2sympy2_extended 1.11 / sympy 1.14 behaviour; a new version must be re-checked.
    assert version("latex2sympy2_extended").startswith("1.11")
    assert version("sympy").startswith("1.14")


def statuses(text: str) -> list[tuple[str, str]]:
    return [(check.relation, check.status) for check in audit_steps([text]).steps[0].checks]


@pytest.mark.parametrize("text, expected", [
    (r"$2(3)(4) = 24$", "true"),  # juxtaposition is a product, never the mixed number 9
    (r"$2(3)(4) = 9$", "false"),
    (r"$\binom52\binom31 = 30$", "true"),  # not 13
    (r"$58_9 = 53$", "true"),  # base 9, not 58
    (r"$58_9 = 58$", "false"),
    (r"$\sin 30^\circ = \frac12$", "true"),  # degrees, not radians
    (r"$\arcsin(1/2) = 30^\circ$", "true"),
    (r"$\arcsin(1/2) = 30$", "true"),  # read in degrees
    (r"$17\%5 = 2$", "true"),  # a remainder
    (r"$50\% \cdot 10 = 5$", "true"),  # a percentage
    (r"$1\,000 + 1 = 1001$", "true"),  # digit grouping
    (r"$1{,}000 = 1000$", "true"),
    ("100 ÷ 60 = 1 with a remainder of 40", "true"),
    ("2520 divided by 30 is 84", "true"),
    ("2520 divided by 30 is 85", "false"),
    (r"$5476/3=1825\frac{1}{3}$", "true"),  # a mixed number standing alone
    (r"$\sqrt{50} = 5\sqrt2$", "true"),
    (r"$1024 < 2000$", "true"),
    (r"$7 \le 6$", "false"),
    (r"$3 \neq 3$", "false"),
    (r"$\pi \approx 3.14$", "true"),  # within 1 %
    (r"$1 \equiv 84 \pmod{83}$", "true"),
])
def test_pitfalls(text, expected):
    assert [status for _, status in statuses(text)] == [expected]


@pytest.mark.parametrize("text", [r"$e = 2$", r"$f(3) = 5$", r"$x = 5$", r"$2x + 1 = 7$"])
def test_relations_with_free_symbols_are_skipped(text):
    audit = audit_steps([text])
    assert audit.steps[0].checks == [] and audit.steps[0].skipped == 1


def test_chains_are_checked_link_by_link():
    assert statuses(r"$4^4 = 4 \cdot 4 \cdot 4 \cdot 4 = 16$") == [
        (r"4^4 = 4 \cdot 4 \cdot 4 \cdot 4", "true"), (r"4 \cdot 4 \cdot 4 \cdot 4 = 16", "false")]
    assert statuses(r"$x = 2 + 3 = 5$") == [("2 + 3 = 5", "true")]


@pytest.mark.parametrize("steps, uncertainty", [
    ([r"Then $3 + 4 = 8$, which is clearly not true."], "hypothetical"),
    ([r"So, $125^2+120^2=117^2$?"], "hypothetical"),
    ([r"That is about $22/7 = 3$."], "hedged"),
    ([r"So $3 \cdot 7 = 20$.", "Wait, that's not right."], "rejected"),
    ([r"$\frac{1}{3} = 0.333$"], "rounded"),
])
def test_qualified_false_relations_are_uncertain(steps, uncertainty):
    check = audit_steps(steps).steps[0].checks[0]
    assert (check.status, check.uncertainty) == ("uncertain", uncertainty)


# Written for this test (not from any benchmark): a value plugged in, worked through two steps, then rejected.
PLUG_IN_AND_REJECT = ["Try $n = 3$ in $n^2 = 2n + 5$.", "If we plug in $3$, we get $3^2 = 2(3) + 5$.",
                      "That simplifies to $9 = 6 + 5$.", "So the equation becomes $9 = 11$.",
                      "This is incorrect, so $n$ cannot be $3$."]


def test_a_plugged_in_value_worked_through_and_rejected_later_is_uncertain_not_false():
    """Found on the dev part (a PRM800K solution plugs in a value, simplifies twice, then rejects it): the middle
    steps read false without the hypothesis two steps back and the rejection two steps on."""
    checks = [(check.step, check.status, check.uncertainty) for step in audit_steps(PLUG_IN_AND_REJECT).steps
              for check in step.checks if check.status != "true"]
    assert checks == [(2, "uncertain", "hypothetical"), (3, "uncertain", "rejected"), (4, "uncertain", "rejected")]
    # without the rejection, or without the hypothesis, a false relation stays false
    unrejected = audit_steps([*PLUG_IN_AND_REJECT[:4], "So $n = 3$ works."]).steps
    assert [check.status for check in unrejected[2].checks] == ["false"]
    asserted = audit_steps(["We have $n = 3$.", "So $3^2 = 11$.", "So $9 = 11$.", "This is incorrect."]).steps
    assert [check.status for check in asserted[1].checks] == ["false"]


# Written for this test (not taken from any benchmark): each candidate's step 3 is labelled correct; the planted
# version makes its arithmetic false.
PLANTED = [
    (["A box holds 12 eggs.", "There are 5 boxes.", "So there are $12 \\cdot 5 = {}$ eggs.", "The answer is 60."],
     "60", "65"),
    (["Each ticket costs 7 dollars.", "We buy 9 tickets.", "That is 7 * 9 = {} dollars.", "We pay 63."], "63", "62"),
    (["The side is 11.", "The area is the side squared.", "So the area is $11^2 = {}$.", "It is 121."], "121", "111"),
    (["We split 2520 among 30 people.", "Each gets an equal share.", "2520 divided by 30 is {}.", "So 84."],
     "84", "48"),
    (["The angle is $30^\\circ$.", "We need its sine.", "$\\sin 30^\\circ = {}$.", "So one half."],
     "\\frac{1}{2}", "\\frac{1}{3}"),
]


def candidate(steps: list[str], value: str) -> dict:
    process = [step.replace("{}", value) for step in steps]
    return {"idx": "planted", "modified_process": process, "original_process": process, "modified_steps": [1],
            "error_steps": [1], "classification": "counterfactual"}


@pytest.mark.parametrize("steps, right, wrong", PLANTED)
def test_planted_false_relation_in_an_unlabelled_step_is_flagged(steps, right, wrong):
    flagged = audit_candidate(candidate(steps, wrong), "counterfactual").findings
    assert [(finding.kind, finding.step) for finding in flagged] == [("unlabelled_false_step", 3)]
    assert audit_candidate(candidate(steps, right), "counterfactual").findings == []


def test_error_step_past_the_end_and_true_error_step_are_flagged():
    record = {"idx": "x", "modified_process": ["So $2 + 2 = 4$.", "Done."], "error_steps": [1, 5],
              "modified_steps": [1]}
    kinds = sorted(finding.kind for finding in audit_candidate(record, "confidence").findings)
    assert kinds == ["error_step_out_of_range", "error_step_true"]
    assert [f.kind for f in audit_candidate(record, "circular_logic").findings] == ["error_step_out_of_range"]


def test_wilson_interval_matches_the_textbook_value():
    # Newcombe (1998), Statistics in Medicine 17:857, example: 81 of 263 -> 0.2553 to 0.3662
    low, high = wilson_interval(81, 263)
    assert (round(low, 4), round(high, 4)) == (0.2553, 0.3662)
    assert wilson_interval(0, 0) == (0.0, 0.0)


def test_label_noise_estimate_on_prmbench_and_processbench_files(tmp_path):
    steps, right, wrong = PLANTED[0]
    prmbench = tmp_path / "prmbench.jsonl"
    prmbench.write_text("\n".join(json.dumps(candidate(steps, value)) for value in (wrong, right, right, right)))
    estimate = estimate_label_noise([prmbench])
    (category,) = estimate.categories
    assert (category.category, category.items, category.flagged_items, category.per_100) == ("counterfactual", 4, 1, 25)
    assert category.low_per_100 < 25 < category.high_per_100 and 0 < category.coverage < 1
    processbench = tmp_path / "processbench.jsonl"
    processbench.write_text(json.dumps({"id": "p", "steps": [s.replace("{}", wrong) for s in steps], "label": -1}))
    assert estimate_label_noise([processbench]).overall.flagged_items == 1


def test_routing_puts_disagreements_first_and_rollouts_never_mark_alone():
    steps, right, wrong = PLANTED[0]
    clean = audit_candidate(candidate(steps, right), "counterfactual")
    flagged = audit_candidate(candidate(steps, wrong), "counterfactual")
    def verdict(name: str, mc: dict | None = None) -> VerifyRecord:
        return VerifyRecord(id="c", category="counterfactual", trajectory_id="t", verdict=name, kind="error",
                            declared_first_error=1, judge_modified=None, judge_original=None, mc=mc)
    fast = route("a", "counterfactual", clean, verdict("confirmed", {"n": 8, "before": 0.9, "through": 0.1}))
    first = route("b", "counterfactual", flagged, verdict("confirmed"))
    rollouts_only = route("c", "counterfactual", clean, verdict("unparseable", {"n": 8, "before": 0.5, "through": 0.5}))
    assert (fast.route, first.route, first.disagreeing) == ("fast_track", "review_first", ["algebra"])
    assert rollouts_only.route == "review" and rollouts_only.disagreeing == ["rollouts"]
    assert [r.id for r in sorted([fast, rollouts_only, first], key=route_rank)] == ["b", "c", "a"]


@pytest.mark.parametrize("line", ['{"modified_process": ["1 = 1"], "error_steps": [' + "9" * 5000 + ']}',
                                  "[" * 5000 + "]" * 5000, b'{"id": "\xff"}'.decode("latin-1")])
def test_a_hostile_line_in_an_audited_file_is_file_line_not_a_crash(tmp_path, line):
    """The file reader of `estimate_label_noise` reads through the bounded reader (a 5,000-digit integer used to
    escape as Python's int-to-str ValueError, a deep array as RecursionError)."""
    from injector.util.errors import InputError

    path = tmp_path / "hostile.jsonl"
    path.write_bytes(b'{"idx": "1", "classification": "confidence", "modified_process": ["2 + 2 = 4"], "error_steps": []}\n' + line.encode("latin-1") + b"\n")
    with pytest.raises(InputError, match=r"hostile\.jsonl:2: "):
        estimate_label_noise([path])


def test_in_a_daemonic_process_a_sympy_link_is_checked_by_its_own_worker(monkeypatch):
    """`inject run --workers N` runs units in daemonic processes, which multiprocessing forbids children: the
    sympy worker there is a plain subprocess (before, such a link was skipped: \\log_{3} 81 = 4 went unchecked)."""
    import multiprocessing

    from injector.triage.step_audit.worker import SympyWorker

    monkeypatch.setitem(multiprocessing.current_process()._config, "daemon", True)
    worker = SympyWorker()
    try:
        audit = audit_steps(["So $\\log_{3} 81 = 4$ and $2 + 2 = 5$ and $\\log_{2} 32 = 6$."], worker)
    finally:
        worker.close()
    (step,) = audit.steps
    assert [(check.relation, check.status) for check in step.checks] == [
        ("\\log_{3} 81 = 4", "true"), ("2 + 2 = 5", "false"), ("\\log_{2} 32 = 6", "false")]
    assert step.skipped == 0 and audit.skip_reasons == {}


# Written for this test: step 1 plants a false relation only sympy evaluates (a logarithm); the scripted model
# edits step 2, so step 1 stays unlabelled.
SYMPY_PLANTED = ["Let $x = 2$; note that $\\log_{3} 81 = {}$.", "Then $x + 3 = 5$.", "So the answer is 5.\n\n# Answer\n\n5"]
EDIT_STEP_2 = json.dumps({"question": None, "reason": "2 + 3 is 5, not 6.",
                          "edits": [{"op": "replace", "step": 2, "text": "Then $x + 3 = 6$.", "error": True}]})


def _audits(out) -> dict[str, list[tuple[str, int, str]]]:
    lines = (out / "candidates.jsonl").read_text().splitlines()
    return {record["id"]: [(f["kind"], f["step"], f["relation"]) for f in record["step_audit"]["findings"]]
            for record in map(json.loads, lines)}


@pytest.mark.parametrize("value, flagged", [("5", True), ("4", False)])
def test_a_false_relation_needing_sympy_is_flagged_with_workers_as_without(scripted_server, tmp_path, monkeypatch,
                                                                           value, flagged):
    from click.testing import CliRunner

    from injector.cli.commands import main

    # No sympy worker and no cached sympy answer in this process, which forked run workers would inherit: each of
    # them must start its own worker.
    monkeypatch.setattr("injector.triage.step_audit.audit._WORKER", None)
    monkeypatch.setattr("injector.triage.step_audit.check._SYMPY_CACHE", {})
    scripted_server.script = lambda request: EDIT_STEP_2
    rows = [{"id": f"t{k}", "question": "What is $2 + 3$?", "answer": "5",
             "steps": [SYMPY_PLANTED[0].replace("{}", value), SYMPY_PLANTED[1], SYMPY_PLANTED[2] + "." * k]}
            for k in range(4)]
    source = tmp_path / "input.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    found = {}
    for name, extra in (("two", ["--workers", "2"]), ("one", [])):
        result = CliRunner().invoke(main, ["run", "--category", "counterfactual", "--input", str(source), "--model",
                                           "openai/scripted", "--api-base", scripted_server.api_base, "--out",
                                           str(tmp_path / name), "--no-cache", *extra], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        found[name] = _audits(tmp_path / name)
    planted = [("unlabelled_false_step", 1, "\\log_{3} 81 = 5")] if flagged else []
    assert found["one"] == {f"t{k}::counterfactual::0": planted for k in range(4)}
    assert found["two"] == found["one"]
