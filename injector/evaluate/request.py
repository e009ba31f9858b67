"""`EvalRequest`: one `inject eval` as a typed value: the split, the report directory, what scores it (a scores
file, an LLM judge or a PRM server) with that scorer's settings, and how scores become labels. Its validators own
the rules on how these combine; the messages name settings in backticks (the CLI shows them as its flags)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from injector.util.answer_limits import DEFAULT_MAX_ANSWER_BYTES
from injector.evaluate.bootstrap import BootstrapSettings
from injector.evaluate.metrics import DEFAULT_THRESHOLD
from injector.evaluate.protocols import LabelRule, parse_label_rule, rule_for_model
from injector.evaluate.prm_server import QWEN_PRM_SEPARATOR
from injector.util.errors import UserError


class EvalConflict(UserError):
    """Eval settings that do not go together; the message names the settings in backticks."""


class EvalRequest(BaseModel):
    """What `evaluate` reads, scores with, and writes.

    The scorer is one of `scores` (a JSONL file of step scores), `judge` (an LLM, a litellm model string) and
    `prm_server` (a PRM served by vLLM, with `prm_model`); `evaluate` also takes a scorer object instead. The request
    loop's settings (`concurrency` to `max_cost`) serve the judge and the PRM server (`timeout`, the cache)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    split: Path
    out: Path | None = None
    """The report directory to write (required)."""
    split_name: str | None = None
    """Of an `inject build` directory: this split only (default all)."""
    taxonomy: str | Path | None = None
    scores: Path | None = None
    judge: str | None = None
    prm_server: str | None = None
    prm_model: str | None = None
    step_separator: str = QWEN_PRM_SEPARATOR
    threshold: float | None = Field(default=None, ge=0, le=1)
    """A step is predicted correct when its score is above this (None: 0.5)."""
    sweep: bool = False
    """Choose the threshold on a dev subset, maximising `sweep_metric`."""
    sweep_metric: Literal["prmscore", "processbench"] = "prmscore"
    protocol: Literal["prmbench", "strict"] | None = None
    label_rule: str | None = None
    plots: bool = True
    bootstrap: BootstrapSettings | None = BootstrapSettings()
    """The intervals' settings; None: no intervals."""
    # The judge's settings (and the request loop's, shared with the PRM server).
    api_base: str | None = None
    temperature: float = 0.0
    max_tokens: int = Field(default=4096, ge=1)
    use_schema: bool = True
    seed: int = 0
    concurrency: int = Field(default=16, ge=1)
    timeout: float = Field(default=300.0, gt=0)
    max_answer_bytes: int = Field(default=DEFAULT_MAX_ANSWER_BYTES, ge=1024)
    rpm: float | None = Field(default=None, gt=0)
    tpm: float | None = Field(default=None, gt=0)
    cache_path: Path | None = None
    use_cache: bool = True
    price_in: float | None = Field(default=None, ge=0)
    price_out: float | None = Field(default=None, ge=0)
    max_cost: float | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _combinations(self) -> EvalRequest:
        if self.out is None:
            raise EvalConflict("give `out`, the report directory")
        if sum(scorer is not None for scorer in (self.scores, self.judge, self.prm_server)) > 1:
            raise EvalConflict(SCORER_CHOICE)
        if (self.prm_server is None) != (self.prm_model is None):
            raise EvalConflict("`prm_server` and `prm_model` go together")
        if (self.price_in is None) != (self.price_out is None):
            raise EvalConflict("give both `price_in` and `price_out` (dollars per million tokens)")
        if self.judge and (self.threshold is not None or self.sweep):
            raise EvalConflict("a judge answers correct or incorrect per step: `threshold` and `sweep` do not apply")
        if self.label_rule and self.threshold is not None:
            raise EvalConflict("give `label_rule` or `threshold`, not both")
        if self.label_rule:
            parse_label_rule(self.label_rule)
        return self

    @property
    def report_dir(self) -> Path:
        assert self.out is not None  # the validator requires it
        return self.out

    @property
    def model_label_rule(self) -> str | None:
        """The label rule PRMBench's wrapper of `prm_model` uses, when no rule or threshold is given."""
        if self.prm_model and not self.label_rule and self.threshold is None:
            return rule_for_model(self.prm_model)
        return None

    def rule(self) -> LabelRule | None:
        """The label rule asked for (`label_rule`, else `prm_model`'s); None: `threshold:<threshold>`."""
        text = self.label_rule or self.model_label_rule
        return parse_label_rule(text) if text else None

    @property
    def threshold_used(self) -> float:
        return DEFAULT_THRESHOLD if self.threshold is None else self.threshold

    def engine_options(self) -> dict[str, Any]:
        """The judge's engine settings (`EngineSettings` field names)."""
        return dict(model=self.judge, api_bases=self.api_base, temperature=self.temperature,
                    max_tokens=self.max_tokens, use_schema=self.use_schema, timeout=self.timeout,
                    max_answer_bytes=self.max_answer_bytes, rpm=self.rpm,
                    tpm=self.tpm, use_cache=self.use_cache, cache_path=self.cache_path, price_in=self.price_in,
                    price_out=self.price_out)


SCORER_CHOICE = "give exactly one of `scores` FILE, `judge` MODEL and `prm_server` URL"
