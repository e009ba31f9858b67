"""The thin CLI: each command's options become a typed request (`api.RunRequest`, `VerifyRequest`, `BuildRequest`,
`EvalRequest`) whose validators own the combination rules; the library's messages name settings, the CLI shows
its flags; the request options run, verify and eval share are declared once."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from injector import api
from injector.cli.commands import main
from injector.engines.settings import SettingsConflict
from injector.evaluate import EvalConflict, EvalRequest
from injector.util.errors import UserError

SHARED = ("--concurrency", "--timeout", "--max-answer-bytes", "--rpm", "--tpm", "--cache", "--no-cache", "--price-in",
          "--price-out", "--max-cost")


def _option(command: str, flag: str):
    return next(param for param in main.commands[command].params if flag in param.opts)


@pytest.mark.parametrize("flag", SHARED)
def test_run_verify_and_eval_share_one_declaration_of_the_request_options(flag):
    run, verify, eval_ = (_option(name, flag) for name in ("run", "verify", "eval"))
    if flag == "--max-cost":  # run's caps the run directory over its invocations, the others' one invocation
        assert "over all its invocations" in run.help and "once this invocation has spent" in verify.help
    else:
        assert run.help == verify.help
    assert eval_.help.removeprefix("Judge: ").lower() == verify.help.lower()
    assert (run.default, run.type.__class__) == (verify.default, verify.type.__class__) == \
           (eval_.default, eval_.type.__class__)


def test_library_messages_name_settings(tmp_path):
    with pytest.raises(EvalConflict, match="give exactly one of `scores` FILE, `judge` MODEL and `prm_server` URL"):
        EvalRequest(split=tmp_path, out=tmp_path / "r", scores=tmp_path / "s.jsonl", judge="gpt-4o")
    with pytest.raises(EvalConflict, match="give `label_rule` or `threshold`, not both"):
        EvalRequest(split=tmp_path, out=tmp_path / "r", label_rule="threshold:0.3", threshold=0.4)
    with pytest.raises(SettingsConflict, match=r"`by=train-test` needs `test_size`"):
        api.BuildRequest(run_dirs=[tmp_path], out=tmp_path / "s", by="train-test")
    with pytest.raises(SettingsConflict, match="`require` sure: not a verdict"):
        api.BuildRequest(run_dirs=[tmp_path], out=tmp_path / "s", require="confirmed,sure")
    with pytest.raises(SettingsConflict, match="`consensus` and `include_unreviewed` do not go together"):
        api.BuildRequest(run_dirs=[tmp_path], out=tmp_path / "s", consensus="2-of-3", include_unreviewed=True)
    with pytest.raises(SettingsConflict, match="give both `price_in` and `price_out`"):
        api.VerifyRequest(run_dir=tmp_path, judge=api.EngineSettings(model="gpt-4o", price_in=1.0))
    with pytest.raises(SettingsConflict, match="`dedup_threshold` 1.5"):
        api.make_request(api.BuildRequest, run_dirs=[tmp_path], out=tmp_path / "s", dedup_threshold=1.5)
    with pytest.raises(SettingsConflict, match="`votes`: Input should be greater than or equal to 1"):
        api.make_request(api.VerifyRequest, run_dir=tmp_path, judge=api.EngineSettings(model="m"), votes=0)


@pytest.mark.parametrize("args, message", [
    (["build", "RUN", "--out", "OUT", "--by", "train-test"], "error: --by train-test needs --test-size between 0 and 1, "
                                                             "e.g. --test-size 0.2"),
    (["build", "RUN", "--out", "OUT", "--require", "sure"], "error: --require sure: not a verdict"),
    (["build", "RUN", "--out", "OUT", "--consensus", "2-of-3", "--include-unreviewed"],
     "error: --consensus and --include-unreviewed do not go together"),
    (["verify", "RUN", "--model", "gpt-4o", "--price-in", "1"], "error: give both --price-in and --price-out"),
    (["eval", "SPLIT", "--out", "OUT", "--prm-server", "http://127.0.0.1:9"], "error: --prm-server and --prm-model go "
                                                                               "together"),
    (["eval", "SPLIT", "--out", "OUT", "--judge", "gpt-4o", "--sweep"], "error: a judge answers correct or incorrect per "
                                                                        "step: --threshold and --sweep do not apply"),
    (["eval", "SPLIT", "--scores", "S"], "error: give --out, the report directory"),
    (["eval", "SPLIT", "--out", "OUT"], "error: give exactly one of --scores FILE, --judge MODEL and --prm-server URL"),
    (["eval", "SPLIT", "--out", "OUT", "--scores", "S", "--label-rule", "above:1"], "error: --label-rule 'above:1': "
                                                                                     "give threshold:T"),
])
def test_the_cli_shows_the_rules_with_its_flags(tmp_path, args, message):
    (tmp_path / "SPLIT").write_text(json.dumps({"id": "a", "category": "redundancy", "modified_process": ["x"],
                                                "error_steps": []}) + "\n")
    (tmp_path / "RUN").mkdir()
    args = [str(tmp_path / arg) if arg in ("RUN", "OUT", "SPLIT", "S") else arg for arg in args]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert result.output.startswith(message), result.output
    assert not (tmp_path / "OUT").exists()


def test_evaluate_takes_a_request_and_a_scorer_of_its_own(tmp_path):
    split = tmp_path / "split.jsonl"
    split.write_text(json.dumps({"id": "a", "category": "redundancy", "modified_process": ["x", "y"],
                                 "error_steps": [2]}) + "\n")
    scores = tmp_path / "scores.jsonl"
    scores.write_text(json.dumps({"id": "a", "step_scores": [0.9, 0.1]}) + "\n")
    named = api.evaluate(EvalRequest(split=split, out=tmp_path / "a", scores=scores, plots=False, bootstrap=None))

    class Fixed:
        def score(self, items, out):
            from injector.evaluate import ScoresFile

            return ScoresFile(scores).score(items, out)

    given = api.evaluate(EvalRequest(split=split, out=tmp_path / "b", plots=False, bootstrap=None), Fixed())
    assert named.metrics["prmbench"] == given.metrics["prmbench"]
    with pytest.raises(UserError, match="give exactly one of `scores`"):
        api.evaluate(EvalRequest(split=split, out=tmp_path / "c"))
