"""Surface-cue probe (`inject stats --cues`): how well a bag-of-words model finds error steps from wording alone.

The recipe is fixed so that anyone can reproduce a figure:
- samples: every step of every modified solution that has at least one error step; label: the step is an error step;
- tokens: lower-cased words of two or more letters (`[A-Za-z]{2,}`); TF-IDF over word 1–2-grams, min_df 2;
- logistic regression, C = 1, class_weight balanced;
- 5-fold grouped cross-validation, groups = the source trajectory (`trajectory_id`, else `idx`), the groups dealt
  to folds round-robin in an order shuffled with `SEED`;
- ROC AUC over the pooled out-of-fold scores; one model per category, and one over everything for "overall".

An AUC near 0.5 means wording does not give the error steps away; near 1 means it does. scikit-learn is imported
only here, and only when a probe runs.
"""
from __future__ import annotations

from typing import Any, Iterable

from injector.util.errors import InputError

TOKEN = r"[A-Za-z]{2,}"
FOLDS = 5
SEED = 0
TOP = 10


def cue_records(loaded: Iterable[tuple[dict[str, Any], str]]) -> list[dict[str, Any]]:
    """The probe's records from `stats.load_records`: modified solutions, without validation rejects and
    candidates reviewers rejected."""
    return [_ours(record, number) for number, (record, status) in enumerate(loaded, 1)
            if status not in ("rejected_by_validation", "rejected_by_reviewer")]


def _ours(record: dict[str, Any], number: int) -> dict[str, Any]:
    """The probe's view of one record, its fields checked (an unreadable record is an input error, not a crash)."""
    where: tuple[Any, int | None] = record.get("_where") or ("(record)", None)
    steps, errors = record.get("modified_process"), record.get("error_steps")
    if not isinstance(steps, list) or not all(isinstance(step, str) for step in steps):
        raise InputError(*where, "modified_process must be a list of step strings")
    if not isinstance(errors, list) or not all(isinstance(k, int) and not isinstance(k, bool) for k in errors):
        raise InputError(*where, "error_steps must be a list of 1-based step numbers")
    # Published files hold error step numbers past the last step (PRMBench's train-phase-1 files do); they
    # label no step, so they are dropped and counted rather than fatal.
    inside = sorted({k for k in errors if 1 <= k <= len(steps)})
    group = record.get("trajectory_id") or record.get("idx")
    if group is None:
        group = f"record {number}"  # no id at all: the record is its own group
    return {"category": str(record.get("category")), "group": str(group), "steps": steps,
            "error_steps": inside, "outside": len(set(errors)) - len(inside)}


def samples(records: Iterable[dict[str, Any]]) -> list[tuple[str, str, str, int]]:
    """(category, group, step text, label) for every step of every record with at least one error step."""
    rows = []
    for record in records:
        if not record["error_steps"]:
            continue
        errors = set(record["error_steps"])
        rows += [(record["category"], record["group"], step, int(number in errors))
                 for number, step in enumerate(record["steps"], 1)]
    return rows


def probe(texts: list[str], labels: list[int], groups: list[str], *, folds: int = FOLDS, seed: int = SEED,
          top: int = TOP) -> dict[str, Any]:
    """{auc, n, top} of the recipe on these samples; auc None with a `reason` when it cannot be measured."""
    result: dict[str, Any] = {"auc": None, "n": len(texts), "top": []}
    distinct = sorted(set(groups))
    if len(set(labels)) < 2:
        result["reason"] = ("every step is an error step" if labels and all(labels) else
                            "no error steps" if labels else "no solution with an error step") + \
            ": the AUC needs both classes"
        return result
    if len(distinct) < folds:
        result["reason"] = (f"{len(distinct)} source {'trajectory' if len(distinct) == 1 else 'trajectories'}, "
                            f"fewer than the {folds} folds")
        return result

    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.pipeline import make_pipeline

    def model() -> Any:
        return make_pipeline(
            TfidfVectorizer(lowercase=True, token_pattern=TOKEN, ngram_range=(1, 2), min_df=2),
            LogisticRegression(C=1.0, class_weight="balanced", max_iter=2000, random_state=seed))

    order = np.random.default_rng(seed).permutation(len(distinct))
    fold_of_group = {distinct[i]: rank % folds for rank, i in enumerate(order)}
    fold = np.array([fold_of_group[g] for g in groups])
    y = np.array(labels)
    scores = np.zeros(len(texts))
    try:
        for k in range(folds):
            train, test = fold != k, fold == k
            if len(set(y[train])) < 2:
                result["reason"] = f"fold {k + 1}'s training part holds only one class"
                return result
            fitted = model().fit([texts[i] for i in np.flatnonzero(train)], y[train])
            scores[test] = fitted.decision_function([texts[i] for i in np.flatnonzero(test)])
        full = model().fit(texts, y) if top else None
    except ValueError as exc:  # e.g. an empty vocabulary: no word occurs in two steps
        result["reason"] = f"cannot fit the model ({exc})"
        return result
    result["auc"] = round(float(roc_auc_score(y, scores)), 4)
    if full is None:
        return result
    vocabulary = full[0].get_feature_names_out()
    weights = full[1].coef_[0]
    best = sorted(range(len(weights)), key=lambda i: (-weights[i], vocabulary[i]))[:top]
    result["top"] = [[str(vocabulary[i]), round(float(weights[i]), 4)] for i in best if weights[i] > 0]
    return result


def cue_report(records: Iterable[dict[str, Any]], *, folds: int = FOLDS, seed: int = SEED) -> dict[str, Any]:
    """{"overall": {auc, n[, reason]}, "per_category": {id: {auc, n, top[, reason]}}}; `overall` also counts
    the error step numbers that pointed past the last step and were dropped (`dropped_error_steps`)."""
    records = list(records)
    rows = samples(records)
    per_category = {}
    for category in sorted({record["category"] for record in records}):
        mine = [row for row in rows if row[0] == category]
        per_category[category] = probe([r[2] for r in mine], [r[3] for r in mine], [r[1] for r in mine],
                                       folds=folds, seed=seed)
    overall = probe([r[2] for r in rows], [r[3] for r in rows], [r[1] for r in rows], folds=folds, seed=seed,
                    top=0)
    overall.pop("top")
    overall["dropped_error_steps"] = sum(record.get("outside", 0) for record in records)
    return {"overall": overall, "per_category": per_category}
