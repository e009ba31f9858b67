"""`inject review RUN_DIR [RUN_DIR...]`: the review web app, or `--export` / `--import` of its decisions."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from injector.curate.review.options import ReviewOptions


def _default_reviewer() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (OSError, KeyError, ImportError):  # no login name here (no pwd entry, no pwd module, no variables)
        return ""


@click.command(name="review", epilog="Examples:\n\n\b\n" + "\n".join([  # as cli._examples writes them
    "inject review runs/a", "inject review runs/a runs/b --reviewer ann --no-browser --port 8765",
    "inject review runs/a --export decisions.csv", "inject review runs/a --import decisions.csv",
    "inject review runs/a --taxonomy my/taxonomy.yaml"]))
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(file_okay=False, path_type=Path),
                metavar="RUN_DIR [RUN_DIR...]")
@click.option("--port", type=click.IntRange(0, 65535), default=0, help="Port on 127.0.0.1 (default: a free one).")
@click.option("--no-browser", is_flag=True, help="Only print the URL; do not open a browser.")
@click.option("--reviewer", help="Name recorded with each decision (default: the OS user).")
@click.option("--export", "export_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write every decision row to FILE (.jsonl or .csv) and exit.")
@click.option("--import", "import_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Add the decision rows of FILE (.jsonl or .csv, as --export writes) and exit (before --export).")
@click.option("--taxonomy", "taxonomy_path", metavar="NAME|PATH",
              help="Check corrections with this taxonomy, its hooks included (default: each run's own, read from "
                   "its manifest for its rules only: a run directory never runs code).")
@click.option("--reviewers", metavar="NAME,NAME,...",
              help="Plan who reviews what (RUN_DIR/review-plan.json) and exit; each then runs the app with "
                   "--reviewer NAME and sees only their queue.")
@click.option("--overlap", type=click.IntRange(1, None), default=1, show_default=True,
              help="With --reviewers: how many reviewers see each candidate.")
@click.option("--seed", type=int, default=0, show_default=True, help="With --reviewers: the plan's seed.")
@click.option("--gold", "gold_path", type=click.Path(dir_okay=False, path_type=Path),
              help="With --reviewers: mix known-label items from FILE (PRMBench-format .jsonl, or the "
                   "candidates.jsonl of a reviewed run) into every queue.")
@click.option("--gold-rate", type=click.FloatRange(0, 0.5, min_open=True), default=0.05, show_default=True,
              help="With --gold: the share of each queue that is gold items.")
@click.option("--agreement", is_flag=True, help="Print inter-reviewer agreement (Krippendorff's alpha, Cohen's "
                                                 "kappa, with bootstrap intervals) and gold accuracy, and exit.")
@click.option("--bootstrap", type=click.IntRange(100, 100_000), default=1000, show_default=True,
              help="With --agreement: resamples of the candidates for each interval.")
@click.option("--adjudicate", is_flag=True, help="Open the adjudicator's queue: candidates whose reviewers "
                                                 "disagree, their decisions side by side; the adjudication is final.")
def review(run_dirs: tuple[Path, ...], **options) -> None:
    """Review candidates in a local web app: accept, reject with a reason, or correct them.

    Decisions are saved at once in RUN_DIR/review.sqlite, each reviewer's apart (a reviewer's latest decision
    replaces only their own; earlier ones are kept). The app listens on 127.0.0.1 only: for a shared machine,
    forward the port over SSH (docs/review.md).
    Keys: a accept, r reject, e correct error steps or step text, s skip, j/k next/previous, t LaTeX source.
    """
    from injector.curate.review.options import ReviewOptions  # pydantic: not loaded for --help

    run_review(ReviewOptions(run_dirs=list(run_dirs), **options))


def run_review(options: ReviewOptions) -> None:
    """`inject review` with its options checked: plan, agreement, import/export, or the app."""
    from injector.curate.review.session import ReviewSession
    from injector.curate.review.store import check_store_files

    for run_dir in options.run_dirs:  # every review command, before it reads or writes anything
        check_store_files(run_dir)
    if options.reviewers is not None:
        return plan_reviews(options)
    if options.agreement:
        from injector.curate.agreement import print_agreement

        return print_agreement(options.run_dirs, seed=options.seed, rounds=options.bootstrap)
    reviewer = options.reviewer if options.reviewer is not None else _default_reviewer()
    import_path, export_path = options.import_path, options.export_path
    serving = not (import_path or export_path)
    session = ReviewSession(options.run_dirs, reviewer, options.taxonomy_path,
                            queue=serving and not options.adjudicate)
    if options.adjudicate:
        from injector.curate.review.adjudicate import to_adjudication

        to_adjudication(session)
    for note in dict.fromkeys(run.taxonomy_note for run in session.runs if run.taxonomy_note):  # each note once
        click.echo(f"note: {note}", err=True)
    if serving:
        return serve(session, port=options.port, open_browser=not options.no_browser)
    from injector.records.directory import RunDirectory

    for run in session.runs:  # the app validates a candidate when it shows it; an import or export names them all
        for _ in RunDirectory(run.path).indexed_candidates():
            pass
    _import_export(session, import_path, export_path, only=options.reviewer)


def plan_reviews(options: ReviewOptions) -> None:
    """Write each run directory's review plan and say who reviews how many."""
    from injector.curate.review.assign import make_plan, parse_reviewers, write_plan
    from injector.records.directory import RunDirectory

    names = parse_reviewers(options.reviewers or "")
    for run_dir in options.run_dirs:
        ids = [candidate.id for _, _, candidate in RunDirectory(run_dir).indexed_candidates()]
        plan = make_plan(ids, names, options.overlap, options.seed)
        if options.gold_path is not None:
            from injector.curate.review.gold import add_gold

            plan = add_gold(run_dir, plan, options.gold_path, options.gold_rate)
        path = write_plan(run_dir, plan)
        sizes = ", ".join(f"{name} {len(queue)}" for name, queue in plan.queues.items())
        click.echo(f"{path}: {len(ids)} candidates, each to {plan.overlap} of {len(names)} reviewers "
                   f"({sizes}{f'; {len(plan.gold)} gold items mixed in' if plan.gold else ''})")
    click.echo("each reviewer runs: inject review " + " ".join(map(str, options.run_dirs)) + " --reviewer NAME")


def _import_export(session, import_path: Path | None, export_path: Path | None, *, only: str | None) -> None:
    if import_path:
        imported = import_decisions(session, import_path)
        for line in imported.refused:
            click.echo(line, err=True)
        click.echo(f"{import_path}: {imported.added} decisions added ({imported.already} already there)"
                   + (f", {len(imported.refused)} refused" if imported.refused else ""))
        if imported.refused:
            from injector.util.errors import UserError

            raise UserError(f"{import_path}: {len(imported.refused)} row(s) refused (listed above), the others "
                            "stored; fix or drop those rows and import the file again (stored rows are not "
                            "added twice), or decide those candidates in the app")
    if export_path:
        count = export_decisions(session, export_path, only=only)
        click.echo(f"{export_path}: {count} decisions written" + (f" (by {only})" if only is not None else ""))


@dataclass
class Imported:
    """What `import_decisions` did: rows stored, rows the store already held, and each refused row and why."""

    added: int = 0
    already: int = 0
    refused: list[str] = field(default_factory=list)
    """`FILE:LINE: refused: why`, one per refused row."""


def import_decisions(session, path: Path) -> Imported:
    """Add a file's decisions, each to the run holding its candidate, under exactly the app's checks.

    Every row goes through `ReviewSession.check`, the function the app's POST handler uses: a row naming no
    candidate (or one in several runs), a malformed row or a decision the app would refuse is reported and left
    out; the rest are stored, as the checks normalised them. A file that cannot be read at all is a UserError.
    """
    from injector.curate.review.session import Refused
    from injector.curate.review.decision_files import read_rows

    per_run: dict[int, list] = {}
    imported = Imported()
    for number, row in read_rows(path):
        try:
            if isinstance(row, str):
                raise Refused(row)
            entries = session.find(row.id)
            if len(entries) != 1:
                where = "none of" if not entries else "several of"
                raise Refused(f"candidate {row.id!r} is in {where} the run directories given; import into the run "
                              "directory that holds it")
            per_run.setdefault(entries[0].run, []).append(session.check(entries[0], row))
        except Refused as exc:
            imported.refused.append(f"{path}:{number}: refused: {exc}")
    imported.added = sum(session.runs[run].store.add_new(rows) for run, rows in per_run.items())
    imported.already = sum(map(len, per_run.values())) - imported.added
    return imported


def export_decisions(session, path: Path, *, only: str | None = None) -> int:
    """Write every decision row of every run (or those of reviewer `only`) to one .jsonl or .csv file; returns
    the count."""
    from injector.curate.review.decision_files import write_decisions

    rows = [decision for run in session.runs for decision in run.store.rows()
            if only is None or decision.reviewer == only]
    return write_decisions(path, rows)


def serve(session, *, port: int, open_browser: bool) -> None:
    """Run the review server until Ctrl-C; every decision is already saved when it stops."""
    import webbrowser

    from injector.curate.review.server import ReviewServer

    server = ReviewServer(session, port=port)
    total = session.size()
    runs = ", ".join(str(run.path) for run in session.runs)
    click.echo(f"reviewing {total} candidates from {runs}; decisions go to review.sqlite in each run directory")
    click.echo(f"open {server.url}")
    click.echo("press Ctrl-C to stop (nothing is lost: each decision is saved when it is made)")
    if open_browser:
        webbrowser.open(server.url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        click.echo("stopped; decisions are saved")
    finally:
        server.server_close()
