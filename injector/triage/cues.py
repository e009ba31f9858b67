"""Surface-cue probe (`inject stats --cues`): how well a bag-of-words model finds error steps from wording alone.

The recipe is fixed so that anyone can reproduce a figure:
- samples: every step of every modified solution that has at least one error step; label: the step is an error step;
- tokens: lower-cased words of two or more letters (`[A-Za-z]{2,}`); TF-IDF over word 1–2-grams, min_df 2;
- logistic regression, C = 1, class_weight balanced;
- 5-fold grouped cross-validation, groups = the source *problem* (`injector.model.problem.record_problem_key`:
  PRMBench's `idx`, else the normalised original question), never the trajectory: PRMBench echoes one problem
  differently in each category file, and copies of one problem in different folds would leak; the groups are
  dealt to folds round-robin in an order shuffled with `SEED`;
- ROC AUC over the pooled out-of-fold scores; one model per category, and one over everything for "overall".

Beside the word probe, two that see no words, on the same samples and folds (`position_probe`, `length_probe`):
the step's relative position (step number / solution length, plus "is the last step") and its length in
characters, each scored by the training folds' error rate in its bin. They show an error a model can find by
where it is or how long it is.

An AUC near 0.5 means the feature does not give the error steps away; near 1 means it does. AUC estimates on
small samples are biased, so two sets are compared at matched size (`matched_comparison`). scikit-learn is
imported only here, and only when a probe runs.
"""
from __future__ import annotations

from bisect import bisect_left
from typing import Any, Iterable, NamedTuple

from injector.model.problem import record_problem_key
from injector.util.errors import InputError

TOKEN = r"[A-Za-z]{2,}"
FOLDS = 5
SEED = 0
TOP = 10


NOT_PROBED = ("rejected_by_validation", "rejected_by_reviewer")


def cue_records(loaded: Iterable[tuple[dict[str, Any], str]]) -> list[dict[str, Any]]:
    """The probe's records from `stats.load_records`: modified solutions, without validation rejects and
    candidates reviewers rejected."""
    return [view for number, (record, status) in enumerate(loaded, 1)
            if (view := cue_record(record, status, number)) is not None]


def cue_record(record: dict[str, Any], status: str, number: int) -> dict[str, Any] | None:
    """The probe's view of one of `stats.iter_records`' records (`number`: its place among them, from 1), its fields
    checked; None for a validation reject or a candidate reviewers rejected (not probed)."""
    return None if status in NOT_PROBED else _ours(record, number)


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
    group = record_problem_key(record) or record.get("trajectory_id")
    if group is None:
        group = f"record {number}"  # no id at all: the record is its own group
    return {"category": str(record.get("category")), "group": str(group), "steps": steps,
            "error_steps": inside, "outside": len(set(errors)) - len(inside)}


def samples(records: Iterable[dict[str, Any]]) -> list[tuple[str, str, str, int]]:
    """(category, group, step text, label) for every step of every record with at least one error step."""
    return [(category, group, step, label) for category, group, step, label, _ in _steps(records)]


def _steps(records: Iterable[dict[str, Any]]) -> list[tuple[str, str, str, int, tuple[float, bool]]]:
    """`samples` with each step's place: (relative position number / length, is the last step)."""
    rows = []
    for record in records:
        if not record["error_steps"]:
            continue
        errors, total = set(record["error_steps"]), len(record["steps"])
        rows += [(record["category"], record["group"], step, int(number in errors), (number / total,
                                                                                    number == total))
                 for number, step in enumerate(record["steps"], 1)]
    return rows


def _unmeasurable(labels: list[int], groups: list[str], folds: int) -> str | None:
    """Why no AUC can be measured on these samples (None when it can)."""
    if len(set(labels)) < 2:
        return ("every step is an error step" if labels and all(labels) else
                "no error steps" if labels else "no solution with an error step") + ": the AUC needs both classes"
    distinct = len(set(groups))
    if distinct < folds:
        return f"{distinct} source {'problem' if distinct == 1 else 'problems'}, fewer than the {folds} folds"
    return None


def _fold_of(groups: list[str], folds: int, seed: int) -> Any:
    """Each sample's fold: its group's, the groups dealt round-robin in a seeded shuffled order."""
    import numpy as np

    distinct = sorted(set(groups))
    order = np.random.default_rng(seed).permutation(len(distinct))
    fold_of_group = {distinct[i]: rank % folds for rank, i in enumerate(order)}
    return np.array([fold_of_group[g] for g in groups])


class WordCounts(NamedTuple):
    """Texts' word 1–2-gram counts: a CSR matrix, a row per text and a column per term (`terms`, sorted)."""

    matrix: Any
    terms: Any

    def rows(self, numbers: list[int]) -> WordCounts:
        return WordCounts(self.matrix[numbers], self.terms)


def word_counts(texts: list[str]) -> WordCounts | None:
    """Every text's word 1–2-gram counts (None when no text holds a word): the texts are tokenised once, and each
    fold keeps the columns its training part holds in two texts or more, which is what the recipe's
    `TfidfVectorizer(min_df=2)` fitted on that part counts (`_fold_features`)."""
    import numpy as np
    from sklearn.feature_extraction.text import CountVectorizer

    vectorizer = CountVectorizer(lowercase=True, token_pattern=TOKEN, ngram_range=(1, 2), dtype=np.int32)
    try:
        matrix = vectorizer.fit_transform(texts)
    except ValueError:  # no word in any text: the first fold's fit says so, as the vectorizer words it
        return None
    return WordCounts(matrix, vectorizer.get_feature_names_out())


def _fold_features(counts: WordCounts | None, train: Any, test: Any | None) -> tuple[Any, Any, Any]:
    """The TF-IDF features of the training rows and of the test rows, and the kept terms' column numbers, as the
    recipe's vectorizer fitted on the training rows gives them (the same numbers, term order and idf)."""
    import numpy as np
    from sklearn.feature_extraction.text import TfidfTransformer

    if counts is None or counts.matrix[train].nnz == 0:  # the vectorizer's own words for it
        raise ValueError("empty vocabulary; perhaps the documents only contain stop words")
    part = counts.matrix[train]
    kept = np.flatnonzero(np.bincount(part.indices, minlength=part.shape[1]) >= 2)
    if not len(kept):
        raise ValueError("After pruning, no terms remain. Try a lower min_df or a higher max_df.")
    part = part[:, kept]
    tfidf = TfidfTransformer().fit(part)
    tested = None if test is None else tfidf.transform(counts.matrix[test][:, kept])
    return tfidf.transform(part), tested, kept


def probe(texts: list[str], labels: list[int], groups: list[str], *, folds: int = FOLDS, seed: int = SEED,
          top: int = TOP, counts: WordCounts | None = None) -> dict[str, Any]:
    """{auc, n, top} of the word recipe on these samples; auc None with a `reason` when it cannot be measured.
    `counts`: `word_counts(texts)` when the caller has them (the texts are then not tokenised again)."""
    result: dict[str, Any] = {"auc": None, "n": len(texts), "top": []}
    reason = _unmeasurable(labels, groups, folds)
    if reason:
        result["reason"] = reason
        return result

    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    def model() -> Any:
        return LogisticRegression(C=1.0, class_weight="balanced", max_iter=2000, random_state=seed)

    fold, y = _fold_of(groups, folds, seed), np.array(labels)
    counts = word_counts(texts) if counts is None else counts
    scores = np.zeros(len(texts))
    try:
        for k in range(folds):
            train, test = fold != k, fold == k
            if len(set(y[train])) < 2:
                result["reason"] = f"fold {k + 1}'s training part holds only one class"
                return result
            trained, tested, _ = _fold_features(counts, np.flatnonzero(train), np.flatnonzero(test))
            scores[test] = model().fit(trained, y[train]).decision_function(tested)
        if top:
            everything, _, kept = _fold_features(counts, np.arange(len(texts)), None)
            full = model().fit(everything, y)
    except ValueError as exc:  # e.g. an empty vocabulary: no word occurs in two steps
        result["reason"] = f"cannot fit the model ({exc})"
        return result
    result["auc"] = round(float(roc_auc_score(y, scores)), 4)
    if not top or counts is None:
        return result
    vocabulary, weights = counts.terms[kept], full.coef_[0]
    best = sorted(range(len(weights)), key=lambda i: (-weights[i], vocabulary[i]))[:top]
    result["top"] = [[str(vocabulary[i]), round(float(weights[i]), 4)] for i in best if weights[i] > 0]
    return result


def binned_probe(bins: list[Any], labels: list[int], groups: list[str], *, folds: int = FOLDS,
                 seed: int = SEED) -> dict[str, Any]:
    """{auc, n} of a probe that sees only each sample's bin: scored by the training folds' error rate in that bin
    (add-one smoothed; a bin unseen in training gets the training folds' overall rate)."""
    result: dict[str, Any] = {"auc": None, "n": len(bins)}
    reason = _unmeasurable(labels, groups, folds)
    if reason:
        result["reason"] = reason
        return result

    import numpy as np
    from sklearn.metrics import roc_auc_score

    fold, y = _fold_of(groups, folds, seed), np.array(labels)
    codes: dict[Any, int] = {}
    binned = np.array([codes.setdefault(b, len(codes)) for b in bins])
    scores = np.zeros(len(bins))
    for k in range(folds):
        train, test = fold != k, fold == k
        # Counts are whole numbers in float64, so each score is the same float the per-sample sums gave.
        errors = np.bincount(binned[train], weights=y[train].astype(float), minlength=len(codes))
        seen = np.bincount(binned[train], minlength=len(codes)).astype(float)
        prior = float(y[train].mean())
        scores[test] = (errors[binned[test]] + prior) / (seen[binned[test]] + 1)
    result["auc"] = round(float(roc_auc_score(y, scores)), 4)
    return result


POSITION_BINS = 10
LENGTH_EDGES = (20, 40, 60, 80, 100, 130, 160, 200, 250, 320, 400, 500, 700)  # characters


def position_bin(place: tuple[float, bool]) -> tuple[int, bool]:
    """A step's position feature: its tenth of the solution, and whether it is the last step."""
    relative, last = place
    return min(POSITION_BINS - 1, int(relative * POSITION_BINS - 1e-9)), last


def length_bin(text: str) -> int:
    """A step's length feature: its bin of characters (how many edges its length is above)."""
    return bisect_left(LENGTH_EDGES, len(text))


def _three(rows: list[tuple[str, str, str, int, tuple[float, bool]]], *, folds: int, seed: int,
           top: int, counts: WordCounts | None = None) -> dict[str, Any]:
    labels, groups = [r[3] for r in rows], [r[1] for r in rows]
    word = probe([r[2] for r in rows], labels, groups, folds=folds, seed=seed, top=top, counts=counts)
    word["position"] = binned_probe([position_bin(r[4]) for r in rows], labels, groups, folds=folds, seed=seed)
    word["length"] = binned_probe([length_bin(r[2]) for r in rows], labels, groups, folds=folds, seed=seed)
    return word


def cue_report(records: Iterable[dict[str, Any]], *, folds: int = FOLDS, seed: int = SEED,
               overall_sample: int | None = None, top: int = TOP) -> dict[str, Any]:
    """{"overall": {auc, n, position, length[, reason]}, "per_category": {id: {auc, n, top, position, length
    [, reason]}}}: `auc` is the word probe's, `position` and `length` the {auc, n[, reason]} of the probes that
    see no words; `overall` also counts the error step numbers that pointed past the last step and were dropped
    (`dropped_error_steps`) and the source problems the folds were grouped by (`problems`). Every step is
    tokenised once, for all the word probes (`word_counts`).

    `overall_sample`: "overall" probes a seeded sample of at most that many of the records with an error step
    (`overall_records`; `overall["sample"]` = {"records", "of"}), and each category's steps are counted on their
    own and released after its probe, so no count matrix holds more than one category's or the sample's steps.
    The per-category figures are the same either way (a category's columns are its own terms, in the same order).
    `top`: how many n-grams each category lists; 0 lists none and skips the model fitted on all of a category's
    steps for them (the AUCs come from the folds' models alone, so they do not change)."""
    records = list(records)
    if overall_sample is not None:
        return _sampled_report(records, overall_sample, folds=folds, seed=seed, top=top)
    rows = _steps(records)
    counts = word_counts([row[2] for row in rows]) if rows else None
    per_category = {}
    for category in sorted({record["category"] for record in records}):
        mine = [n for n, row in enumerate(rows) if row[0] == category]
        per_category[category] = _three([rows[n] for n in mine], folds=folds, seed=seed, top=top,
                                        counts=None if counts is None else counts.rows(mine))
    overall = _overall(rows, records, folds=folds, seed=seed, counts=counts)
    return {"overall": overall, "per_category": per_category}


def _overall(rows: list[tuple[str, str, str, int, tuple[float, bool]]], records: list[dict[str, Any]], *,
             folds: int, seed: int, counts: WordCounts | None) -> dict[str, Any]:
    overall = _three(rows, folds=folds, seed=seed, top=0, counts=counts)
    overall.pop("top")
    overall["dropped_error_steps"] = sum(record.get("outside", 0) for record in records)
    overall["problems"] = len({row[1] for row in rows})
    return overall


def overall_records(records: list[dict[str, Any]], size: int, *, seed: int = SEED) -> list[dict[str, Any]]:
    """At most `size` of the records with an error step (the only ones with steps to probe), drawn uniformly
    without replacement with `seed`, in their order; all of them when there are no more."""
    import numpy as np

    probed = [record for record in records if record["error_steps"]]
    if len(probed) <= size:
        return probed
    return [probed[i] for i in sorted(np.random.default_rng(seed).choice(len(probed), size, replace=False))]


def _sampled_report(records: list[dict[str, Any]], overall_sample: int, *, folds: int, seed: int,
                    top: int) -> dict[str, Any]:
    """`cue_report` with "overall" on a sample: each category tokenised, probed and released in turn."""
    per_category = {}
    for category in sorted({record["category"] for record in records}):
        rows = _steps(record for record in records if record["category"] == category)
        counts = word_counts([row[2] for row in rows]) if rows else None
        per_category[category] = _three(rows, folds=folds, seed=seed, top=top, counts=counts)
        del rows, counts  # this category's matrix goes before the next one's is made
    sampled = overall_records(records, overall_sample, seed=seed)
    rows = _steps(sampled)
    overall = _overall(rows, records, folds=folds, seed=seed,
                       counts=word_counts([row[2] for row in rows]) if rows else None)
    overall["sample"] = {"records": len(sampled), "of": sum(1 for record in records if record["error_steps"])}
    return {"overall": overall, "per_category": per_category}


PROBES = ("word", "position", "length")


def _auc_of(records: list[dict[str, Any]], which: str, folds: int, seed: int) -> float | None:
    rows = _steps(records)
    labels, groups = [r[3] for r in rows], [r[1] for r in rows]
    if which == "word":
        return probe([r[2] for r in rows], labels, groups, folds=folds, seed=seed, top=0)["auc"]
    bins = [position_bin(r[4]) if which == "position" else length_bin(r[2]) for r in rows]
    return binned_probe(bins, labels, groups, folds=folds, seed=seed)["auc"]


def matched_comparison(ours: list[dict[str, Any]], reference: list[dict[str, Any]], *, repeats: int = 20,
                       folds: int = FOLDS, seed: int = SEED) -> dict[str, Any]:
    """The three probes on two sets of one category's records at matched size: the smaller set is probed whole;
    the larger one `repeats` times, each on a random subset of its records (solutions with an error step) the
    size of the smaller set, reported as the mean AUC and its standard deviation.

    {size, ours: {word, position, length}, reference: {...}}, each probe {auc, sd, repeats} (sd 0 and repeats 1
    for the smaller set; auc None when a subset cannot be measured)."""
    import numpy as np

    ours = [r for r in ours if r["error_steps"]]
    reference = [r for r in reference if r["error_steps"]]
    size = min(len(ours), len(reference))
    rng = np.random.default_rng(seed)
    result: dict[str, Any] = {"size": size}
    for name, records in (("ours", ours), ("reference", reference)):
        subsets = [records] if len(records) == size else \
            [[records[i] for i in sorted(rng.choice(len(records), size, replace=False))] for _ in range(repeats)]
        result[name] = {}
        for which in PROBES:
            values = [v for v in (_auc_of(subset, which, folds, seed) for subset in subsets) if v is not None]
            result[name][which] = {"auc": round(float(np.mean(values)), 4) if values else None,
                                   "sd": round(float(np.std(values)), 4) if values else None,
                                   "repeats": len(values)}
    return result
