"""One unit of work: render the prompt, ask the engine, parse and validate, and re-ask with the validator's
messages until the answer passes or the attempts run out."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from injector.model.codes import ReasonCode
from injector.model.problem import trajectory_problem_key
from injector.model.provenance import Attempt, EngineInfo, Provenance, Usage
from injector.answer.contract import DEFAULT_OUTPUT_MODE, AnswerError, answer_mode, parse_answer, response_schema
from injector.engines.base import Engine, NotApplicable, Proposal, ProviderError, TransientProviderError
from injector.inject.prompts import render_messages
from injector.records.models import Candidate, Rejection, unit_id
from injector.answer.step_labels import without_labels
from injector.taxonomy import Category, Taxonomy
from injector.model.trajectory import Trajectory
from injector.inject.validation import Verdict, validate_answer
from injector.util.answer_limits import capped_text
from injector.util.clock import utc_now
from injector.util.version import __version__

DEFAULT_MAX_ATTEMPTS = 3


@dataclass
class Unit:
    """One unit of work: inject `category` into `trajectory`, the `sample`-th time."""

    trajectory: Trajectory
    category: Category
    sample: int

    @property
    def id(self) -> str:
        return unit_id(self.trajectory.id, self.category.id, self.sample)


def feedback_message(messages: list[str]) -> str:
    """The follow-up turn that tells the model what failed, in the validator's own words."""
    problems = "\n".join(f"- {message}" for message in messages)
    return (f"Your answer was not accepted:\n{problems}\n\nFix exactly these problems and keep everything else as "
            "it was. Answer again with the complete JSON object only.")


async def inject_one(
    taxonomy: Taxonomy,
    category: Category,
    trajectory: Trajectory,
    engine: Engine,
    *,
    sample: int = 0,
    seed: int = 0,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    output_mode: str = DEFAULT_OUTPUT_MODE,
    read_cache: bool = True,
) -> Candidate | Rejection:
    """Ask for one injection; return the validated candidate, or the rejection with every attempt's codes.

    Transient provider faults are retried inside the engine and are not attempts. Engines that cannot use
    feedback (the offline one) get a single attempt. `read_cache=False` asks for fresh answers (used when a
    rejected unit is retried: its cached answers are the ones that failed).
    """
    unit = Unit(trajectory, category, sample)
    # The model sees, and the validator checks against, the steps without their labels; the record gets them back.
    trajectory, labels = without_labels(trajectory)
    mode = answer_mode(category, output_mode)
    messages = render_messages(taxonomy, category, trajectory, output_mode=mode)
    schema = response_schema(multi_solution=category.rules.multi_solution, edits=mode == "edits",
                             explanations=category.rules.require_explanations)
    spent = _Spent()
    text: str | None = None
    codes: list[str] = []
    problems: list[str] = []
    tries = max_attempts if engine.takes_feedback else 1
    if category.rules.requires_images and not trajectory.images:
        tries, codes = 0, [str(ReasonCode.NOT_APPLICABLE)]
        problems = [f"{category.id} needs an image, and this trajectory has none"]
        spent.attempts.append(Attempt(codes=codes))
    for attempt in range(1, tries + 1):
        try:
            proposal = await engine.propose(messages, trajectory=trajectory, category=category, seed=seed,
                                            sample=sample, response_schema=schema, output_mode=mode,
                                            read_cache=read_cache)
        except (ProviderError, TransientProviderError, NotApplicable) as exc:
            codes, problems = [str(exc.code)], [str(exc)]
            spent.attempts.append(Attempt(codes=codes))
            break
        text = proposal.text
        spent.add(proposal)
        answer, verdict, codes, problems = _judge(taxonomy, category, trajectory, text, mode)
        # `cached` is written only when the answer came from the cache (the record's shape stays as it was)
        spent.attempts.append(Attempt(codes=codes, cached=True) if proposal.details.get("cached") else
                              Attempt(codes=codes))
        if not codes and answer is not None and verdict is not None:
            provenance = _provenance(taxonomy, category, engine, seed, mode, spent)
            if labels is not None:
                verdict.modified_process = labels.relabel(verdict.modified_process)
            return _candidate(unit, answer, verdict, provenance)
        if attempt < tries:
            messages = [*messages, {"role": "assistant", "content": text},
                        {"role": "user", "content": feedback_message(problems)}]
    provenance = _provenance(taxonomy, category, engine, seed, mode, spent)
    return Rejection(id=unit.id, trajectory_id=trajectory.id, idx=_source_idx(trajectory), category=category.id,
                     sample=sample, codes=codes, messages=problems, raw=capped_text(text), provenance=provenance)


@dataclass
class _Spent:
    """What a unit's attempts cost, summed over the engine's proposals (for the record's provenance)."""

    attempts: list[Attempt] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    cost: float | None = 0.0
    """None once any proposal's cost is unknown."""
    details: dict[str, Any] = field(default_factory=dict)

    def add(self, proposal: Proposal) -> None:
        self.usage += Usage(prompt_tokens=proposal.usage.get("prompt_tokens", 0),
                            completion_tokens=proposal.usage.get("completion_tokens", 0))
        self.cost = None if self.cost is None or proposal.cost is None else self.cost + proposal.cost
        self.details.update(proposal.details)


def _judge(taxonomy: Taxonomy, category: Category, trajectory: Trajectory, text: str, mode: str
           ) -> tuple[Any, Verdict | None, list[str], list[str]]:
    """The parsed answer, its verdict, and the failure codes and messages (both empty when the answer passes)."""
    try:
        answer = parse_answer(text, multi_solution=category.rules.multi_solution, edits=mode == "edits")
        verdict = validate_answer(taxonomy, category, trajectory, answer)
    except AnswerError as exc:
        return None, None, [str(exc.code)], [exc.message]
    return answer, verdict, list(verdict.codes), list(verdict.messages)


def _provenance(taxonomy: Taxonomy, category: Category, engine: Engine, seed: int, output_mode: str,
                spent: _Spent) -> Provenance:
    engine_info = EngineInfo.model_validate(engine.describe())
    # Validated from one flat mapping: the engine's settings and its answers' details are extra fields, in the
    # order records always had on disk.
    return Provenance.model_validate({
        **engine_info.model_dump(),
        "taxonomy": taxonomy.name,
        "taxonomy_hash": taxonomy.file_hash(),
        "template_hash": taxonomy.template_hash(category),
        "seed": seed,
        "output_mode": output_mode,
        "attempts": spent.attempts,
        "usage": spent.usage,
        "cost": spent.cost,
        **spent.details,
        "toolkit_version": __version__,
        "time": utc_now(),
    })


def _source_idx(trajectory: Trajectory) -> str:
    return str(trajectory.meta.get("idx", trajectory.id))


def _candidate(unit: Unit, answer: Any, verdict: Any, provenance: Provenance) -> Candidate:
    trajectory, category = unit.trajectory, unit.category
    extra: dict[str, Any] = {}
    if trajectory.answer is not None:  # every category: a split's ground_truth comes from here
        extra["ground_truth"] = trajectory.answer
    if verdict.explanations:
        extra["explanations"] = {str(step): text for step, text in verdict.explanations.items()}
    if trajectory.subject:
        extra["subject"] = trajectory.subject
    if trajectory.images:
        extra["images"] = list(trajectory.images)  # by reference, never the image data
    extra["problem_key"] = trajectory_problem_key(trajectory)  # a split keeps one problem on one side
    return Candidate(
        original_question=trajectory.question,
        modified_question=verdict.modified_question,
        original_process=list(trajectory.steps),
        modified_process=verdict.modified_process,
        modified_steps=verdict.modified_steps,
        error_steps=verdict.error_steps,
        reason=answer.reason,
        idx=_source_idx(trajectory),
        question=str(trajectory.meta.get("question", trajectory.question)),
        classification=category.classification,
        id=unit.id,
        category=category.id,
        trajectory_id=trajectory.id,
        sample=unit.sample,
        warnings=verdict.warnings,
        provenance=provenance,
        **extra,
    )
