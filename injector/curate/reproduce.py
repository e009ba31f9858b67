"""The card's "Reproduce" section: the `inject run` commands that made the candidates (from each run directory's
manifest), the `inject build` command, the toolkit version, the figures a rebuild should match, and the cost.

Everything a manifest holds is data a stranger may have written: it is read as JSON only (nothing it names is
imported or executed), every secret is redacted again, every argument is shell-quoted with its control characters
escaped (`$'…'`), and the code block's fence is longer than any run of backticks inside it, so no value ends the
block or starts Markdown of its own.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any, Iterable

from pydantic import BaseModel

from injector.records.directory import RunDirectory
from injector.records.models import RunManifest
from injector.util.money import money
from injector.util.redaction import redact, redact_command
from injector.util.version import __version__


class RunOrigin(BaseModel):
    """What the card says of one run directory the split was built from."""

    path: str
    command: list[str]
    reconstructed: bool
    """True when the manifest holds no `inject run` command (a run made from Python): `command` is rebuilt from
    the recorded settings."""
    toolkit_version: str | None = None
    status: str = ""
    candidates: int = 0
    rejects: int = 0
    spent: float | None = None
    """Dollars the run directory spent over its invocations (None: unknown)."""
    server: str | None = None
    """The host of the model's server a run made from Python recorded (its `--api-base` is not kept whole)."""


def run_origins(run_dirs: Iterable[str | Path]) -> list[RunOrigin]:
    """One `RunOrigin` per run directory, from its manifest (a directory without one is left out)."""
    origins = []
    for path in run_dirs:
        manifest = RunDirectory(path).read_manifest()
        if manifest is None:
            continue
        recorded = _is_inject_run(manifest.command)
        spent = manifest.spending.total if manifest.spending is not None else (
            manifest.totals.cost if manifest.totals.cost_known else None)
        origins.append(RunOrigin(
            path=str(path), command=redact_command(manifest.command) if recorded else _rebuilt(manifest, path),
            reconstructed=not recorded, toolkit_version=manifest.toolkit_version, status=manifest.status,
            candidates=manifest.counts.candidates, rejects=manifest.counts.rejects, spent=spent,
            server=None if recorded or not isinstance(host := manifest.config.get("api_base_host"), str) else host))
    return origins


def _is_inject_run(command: list[str]) -> bool:
    return len(command) >= 2 and Path(command[0]).name == "inject" and command[1] == "run"


def _rebuilt(manifest: RunManifest, path: str | Path) -> list[str]:
    """An `inject run` command with the settings a manifest recorded (for a run made from Python)."""
    config = manifest.config
    words = ["inject", "run"]
    source = config.get("input")
    if isinstance(source, dict) and isinstance(source.get("input"), str):
        words += ["--input", source["input"]]
        if isinstance(source.get("format"), str):
            words += ["--input-format", source["format"]]
    if isinstance(config.get("taxonomy_path"), str):
        words += ["--taxonomy", config["taxonomy_path"]]
    for category in config.get("categories") or []:
        words += ["--category", str(category)]
    for key, flag in (("model", "--model"), ("temperature", "--temperature"), ("max_tokens", "--max-tokens"),
                      ("output_mode", "--output-mode"), ("samples", "--samples"), ("seed", "--seed")):
        if config.get(key) is not None:
            words += [flag, str(config[key])]
    if config.get("schema") is False:
        words.append("--no-schema")
    return redact_command([*words, "--out", str(path)])


def shell_word(word: str) -> str:
    """`word` quoted for a POSIX shell, on one line: `shlex.quote`, or bash's `$'…'` when it holds a character
    that is not printable (a newline, an escape, a line separator), written as its escape."""
    if word.isprintable():
        return shlex.quote(word)
    escaped = "".join(_ansi_c(char) for char in word)
    return f"$'{escaped}'"


def _ansi_c(char: str) -> str:
    if char in "\\'":
        return "\\" + char
    if char.isprintable():
        return char
    named = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
    if char in named:
        return named[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x80 else (f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")


def one_line(text: str) -> str:
    """Free text (a path, a version) for a comment line: redacted, its unprintable characters escaped."""
    return "".join(char if char.isprintable() else _ansi_c(char) for char in redact(text))


def fenced(lines: list[str], info: str = "bash") -> str:
    """`lines` as a fenced code block whose fence (backticks) is longer than any run of backticks in them."""
    longest = max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n" + "\n".join(lines) + f"\n{fence}\n"


def _run_lines(origins: list[RunOrigin]) -> list[str]:
    lines = []
    for number, origin in enumerate(origins, 1):
        spent = "cost unknown" if origin.spent is None else f"spent {money(origin.spent)}"
        lines.append(f"# run {number}: {one_line(origin.path)} (prm-injector {one_line(origin.toolkit_version or '?')}"
                     f", {one_line(origin.status)}, {origin.candidates} candidates, {origin.rejects} rejects, "
                     f"{spent})")
        if origin.reconstructed:
            lines.append("# made from Python: this command is rebuilt from the settings its manifest recorded"
                         + (f" (server host {one_line(origin.server)}: add its --api-base)" if origin.server else ""))
        if "--config" in origin.command or any(word.startswith("--config=") for word in origin.command):
            lines.append("# the options in its --config file are part of this command")
        lines.append(" ".join(shell_word(word) for word in origin.command))
    return lines


def reproduce_section(report: Any, command: list[str], cues: dict[str, Any] | None) -> str:
    """The card's "Reproduce" section for the split `report` describes (`command`: the build's own)."""
    origins: list[RunOrigin] = getattr(report, "runs", None) or []
    lines = [*_run_lines(origins), "# the split", " ".join(shell_word(word) for word in redact_command(command))]
    text = (f"## Reproduce\n\nBuilt with prm-injector {__version__}. The runs that made the candidates (each command "
            "as its run directory's manifest recorded it, secrets redacted; run from the same working directory, "
            "with the same inputs), then the build:\n\n" + fenced(lines))
    return text + "\nFigures a rebuild should match:\n\n" + "\n".join(_figures(report, origins, cues)) + "\n"


def _figures(report: Any, origins: list[RunOrigin], cues: dict[str, Any] | None) -> list[str]:
    splits = ", ".join(f"{name} {count}" for name, count in sorted(report.splits.items()))
    lines = [f"- rows: {len(report.rows)} ({splits})"]
    funnel = getattr(report, "funnel", None)
    if funnel:
        total = funnel["total"]
        lines.append("- funnel: " + " → ".join(f"{stage} {total[stage]}" for stage in
                                                ("units", "valid", "verified", "reviewed", "accepted")))
    if cues is None:
        lines.append("- cue AUC: not computed")
    else:
        per_category = ", ".join(f"{category} {'-' if cue.get('auc') is None else format(cue['auc'], '.2f')}"
                                 for category, cue in sorted(cues["per_category"].items()))
        overall = cues["overall"]["auc"]
        lines.append(f"- cue AUC: {'-' if overall is None else format(overall, '.2f')} over all categories"
                     + (f" ({per_category})" if per_category else ""))
    lines.append(_cost_line(report, origins))
    return lines


def _cost_line(report: Any, origins: list[RunOrigin]) -> str:
    """What the runs spent (their manifests' recorded spend, over every invocation), and per candidate kept."""
    kept = [row for row in report.rows if row.category != "correct"]
    accepted = sum(row.reviewed for row in kept)
    which = (f"per accepted candidate ({accepted} in the split" if accepted == len(kept) else
             f"per candidate in the split ({len(kept)}, {accepted} of them accepted by reviewers")
    spent = [origin.spent for origin in origins]
    if not origins or any(value is None for value in spent):
        return f"- cost: unknown (a run recorded no price); {len(kept)} candidates in the split"
    total = sum(value for value in spent if value is not None)
    return (f"- cost: {money(total)} spent by the {len(origins)} run{'s' if len(origins) != 1 else ''} (their "
            f"manifests' recorded spend, every invocation); {money(total / len(kept)) if kept else '-'} {which}, "
            "correct controls not counted)")
