"""How a run shows itself: a rich progress bar on a terminal, plain periodic lines otherwise, a summary table."""
from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from injector.model.codes import ReasonCode
from injector.runner.estimates import LONG_RUN_SECONDS, limits_text, long_run_advice, rate_limited_seconds
from injector.runner.loop import DryRunReport, RunProgress

PLAIN_INTERVAL_SECONDS = 10.0
BAR_INTERVAL_SECONDS = 0.25
"""The bar is redrawn at most this often (its status line costs ~0.1 ms to build): at a fixed rate, not per unit."""


def _cost(cost: float | None) -> str:
    return "unknown" if cost is None else f"${cost:.4f}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def status_line(progress: RunProgress) -> str:
    planned = f"/{progress.planned}" if progress.planned is not None else ""
    return (f"{progress.done}{planned} done, {progress.accepted} accepted, {progress.rejected} rejected, "
            f"{progress.retries()} retries, {progress.prompt_tokens + progress.completion_tokens} tokens, "
            f"{_cost(progress.cost)}, {progress.rate():.1f}/s, ETA {_duration(progress.eta_seconds())}")


class ProgressDisplay:
    """A context manager whose `update` is the run's `on_progress` callback."""

    def __init__(self, stream: TextIO = sys.stderr, interactive: bool | None = None):
        self.stream = stream
        self.interactive = stream.isatty() if interactive is None else interactive
        self._bar: Any = None
        self._task: Any = None
        self._last_line = 0.0
        self._last_bar = 0.0
        self._pending: RunProgress | None = None
        """The latest progress not yet shown on the bar (shown at exit)."""
        self._last: RunProgress | None = None

    def shown(self) -> RunProgress:
        """The latest progress this display was given (an empty one before the first unit): the summary of a run
        stopped by an exception, which returns no result."""
        return self._last if self._last is not None else RunProgress()

    def __enter__(self) -> "ProgressDisplay":
        if self.interactive:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn

            # No TimeRemainingColumn: the status line has the ETA already (two ETAs that disagree help nobody).
            self._bar = Progress(TextColumn("[bold]inject"), BarColumn(), TextColumn("{task.description}"),
                                 console=Console(file=self.stream), transient=False)
            self._bar.__enter__()
            self._task = self._bar.add_task("starting", total=None)
        return self

    def update(self, progress: RunProgress) -> None:
        self._last = progress
        now = time.monotonic()
        if self._bar is not None:
            self._pending = progress
            if now - self._last_bar >= BAR_INTERVAL_SECONDS:
                self._last_bar = now
                self._draw(progress)
        elif now - self._last_line >= PLAIN_INTERVAL_SECONDS:
            self._last_line = now
            print(status_line(progress), file=self.stream, flush=True)

    def _draw(self, progress: RunProgress) -> None:
        self._pending = None
        self._bar.update(self._task, completed=progress.done, total=progress.planned,
                         description=status_line(progress))

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            if self._pending is not None:  # the bar ends on the last count, not the last one drawn
                self._draw(self._pending)
            self._bar.__exit__(*exc)


def summary_table(progress: RunProgress) -> str:
    """Outcomes of this invocation by category, then by reason code, as plain aligned text."""
    lines = [f"{'category':24} {'accepted':>9} {'rejected':>9}"]
    for category, counts in sorted(progress.by_category.items()):
        lines.append(f"{category:24} {counts['accepted']:9d} {counts['rejected']:9d}")
    lines.append(f"{'total':24} {progress.accepted:9d} {progress.rejected:9d}")
    if progress.codes:
        lines.append("")
        lines.append(f"{'reason code':24} {'rejects':>9}")
        for code, count in sorted(progress.codes.items(), key=lambda item: -item[1]):
            lines.append(f"{code:24} {count:9d}")
    lines.append("")
    per_candidate = ("" if progress.cost is None or not progress.accepted
                     else f" (${progress.cost / progress.accepted:.4f} per candidate)")
    lines.append(f"tokens: {progress.prompt_tokens} prompt + {progress.completion_tokens} completion; "
                 f"cost {_cost(progress.cost)}{per_candidate}; {progress.retries()} transient retries")
    if progress.provider_unreachable():
        lines.append(f"no candidates: {progress.codes[ReasonCode.TRANSIENT_FAILURE]} of {progress.done} units failed "
                     f"transiently after every retry (last: {progress.transient_message}); the provider looks "
                     "unreachable: check --api-base and the network, then run the same command again")
    return "\n".join(lines)


def dry_run_table(report: DryRunReport, rpm: float | None = None, tpm: float | None = None) -> str:
    """The dry run's figures; with `rpm` / `tpm`, also the time those limits imply (a warning above an hour)."""
    requests = (f"{report.units}" if report.max_attempts == 1
                else f"{report.units} (up to {report.units * report.max_attempts} with re-asks)")
    return "\n".join([
        f"units to run       {report.units} ({report.skipped_existing} already in the run directory)",
        f"requests           {requests}",
        f"prompt tokens      {report.prompt_tokens}",
        f"completion tokens  ~{report.completion_tokens_estimate} ({report.completion_estimate_source}"
        + (f"; pooled fit for {', '.join(report.pooled_categories)}, which PRMBench lacks"
           if report.pooled_categories else "") + ")",
        f"estimated cost     {_cost(report.cost_estimate)} for one attempt per unit",
        *_rate_limit_lines(report, rpm, tpm),
        *([f"already spent      ${report.spent_before:.4f} in this run directory (--max-cost caps the total)"]
          if report.spent_before else []),
        *([f"refused            the run would stop here: {report.refusal}"] if report.refusal else []),
    ])


def _rate_limit_lines(report: DryRunReport, rpm: float | None, tpm: float | None) -> list[str]:
    seconds = rate_limited_seconds(report.units, report.prompt_tokens + report.completion_tokens_estimate, rpm, tpm)
    if seconds is None:
        return []
    lines = [f"time at the limits at least {_duration(seconds)} ({limits_text(rpm, tpm)}, one attempt per unit)"]
    if seconds > LONG_RUN_SECONDS:
        lines.append(f"warning: {long_run_advice(rpm, tpm)}")
    return lines
