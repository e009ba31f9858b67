"""The cue probe's cost (issue 30: `build` no slower than 3x `stats`): every step is tokenised once for all the word
probes of a report, and the figures are the recipe's (injector/triage/cues.py's docstring: a TF-IDF vectorizer
fitted on each fold's training part, logistic regression, binned error rates) exactly. Counted, never timed."""
from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from injector.triage import cues
from test_cues import FILLER, _solutions


def _mixed(count: int, *, seed: int, category: str) -> list[dict[str, Any]]:
    """Solutions whose error steps carry a weak cue (a word more often there than elsewhere) and varied lengths."""
    rng = random.Random(seed)
    records = _solutions(count, seed=seed, category=category, random_labels=True)
    for record in records:
        record["group"] = f"g{rng.randrange(count // 3)}"  # several solutions per source problem
        record["steps"] = [step + " thus" * (rng.random() < (0.5 if k + 1 in record["error_steps"] else 0.2))
                           + " " + " ".join(rng.choice(FILLER) for _ in range(rng.randrange(12)))
                           for k, step in enumerate(record["steps"])]
    return records


def _reference_word_probe(texts: list[str], labels: list[int], groups: list[str], top: int) -> dict[str, Any]:
    """The recipe as a scikit-learn pipeline refitted on each fold's texts (what the probe did before it shared one
    tokenisation)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.pipeline import make_pipeline

    def model() -> Any:
        return make_pipeline(
            TfidfVectorizer(lowercase=True, token_pattern=cues.TOKEN, ngram_range=(1, 2), min_df=2),
            LogisticRegression(C=1.0, class_weight="balanced", max_iter=2000, random_state=cues.SEED))

    fold, y = cues._fold_of(groups, cues.FOLDS, cues.SEED), np.array(labels)
    scores = np.zeros(len(texts))
    for k in range(cues.FOLDS):
        train, test = np.flatnonzero(fold != k), np.flatnonzero(fold == k)
        fitted = model().fit([texts[i] for i in train], y[train])
        scores[test] = fitted.decision_function([texts[i] for i in test])
    full = model().fit(texts, y)
    vocabulary, weights = full[0].get_feature_names_out(), full[1].coef_[0]
    best = sorted(range(len(weights)), key=lambda i: (-weights[i], vocabulary[i]))[:top]
    return {"auc": round(float(roc_auc_score(y, scores)), 4), "n": len(texts),
            "top": [[str(vocabulary[i]), round(float(weights[i]), 4)] for i in best if weights[i] > 0]}


def _reference_binned(bins: list[Any], labels: list[int], groups: list[str]) -> float:
    """The binned probe as it was written: per-sample counts in Python."""
    from sklearn.metrics import roc_auc_score

    fold, y = cues._fold_of(groups, cues.FOLDS, cues.SEED), np.array(labels)
    scores = np.zeros(len(bins))
    for k in range(cues.FOLDS):
        counts: dict[Any, list[int]] = {}
        for i in np.flatnonzero(fold != k):
            counts.setdefault(bins[i], [0, 0])
            counts[bins[i]][0] += int(y[i])
            counts[bins[i]][1] += 1
        prior = float(y[fold != k].mean())
        for i in np.flatnonzero(fold == k):
            errors, seen = counts.get(bins[i], (0, 0))
            scores[i] = (errors + prior) / (seen + 1)
    return round(float(roc_auc_score(y, scores)), 4)


@pytest.mark.parametrize("seed", [1, 2])
def test_the_probes_give_the_recipes_figures(seed):
    records = _mixed(90, seed=seed, category="counterfactual") + _mixed(60, seed=seed + 10, category="redundancy")
    report = cues.cue_report(records)
    for category in ("counterfactual", "redundancy"):
        rows = cues._steps([r for r in records if r["category"] == category])
        texts, labels, groups = [r[2] for r in rows], [r[3] for r in rows], [r[1] for r in rows]
        mine = report["per_category"][category]
        assert {key: mine[key] for key in ("auc", "n", "top")} == _reference_word_probe(texts, labels, groups,
                                                                                         cues.TOP)
        assert mine["position"]["auc"] == _reference_binned([cues.position_bin(r[4]) for r in rows], labels, groups)
        assert mine["length"]["auc"] == _reference_binned([cues.length_bin(r[2]) for r in rows], labels, groups)
    rows = cues._steps(records)
    assert report["overall"]["auc"] == _reference_word_probe([r[2] for r in rows], [r[3] for r in rows],
                                                             [r[1] for r in rows], 0)["auc"]


def test_a_length_bin_counts_the_edges_below_the_length():
    for length in range(0, 800):
        assert cues.length_bin("x" * length) == sum(length > edge for edge in cues.LENGTH_EDGES)


def test_a_report_tokenises_every_step_once(monkeypatch):
    from sklearn.feature_extraction.text import CountVectorizer

    tokenised = []
    real = CountVectorizer._count_vocab

    def counting(self, raw_documents, fixed_vocab):
        documents = list(raw_documents)
        tokenised.append(len(documents))
        return real(self, documents, fixed_vocab)

    monkeypatch.setattr(CountVectorizer, "_count_vocab", counting)
    records = _mixed(60, seed=3, category="counterfactual") + _mixed(60, seed=4, category="redundancy")
    cues.cue_report(records)
    assert tokenised == [len(cues._steps(records))]  # one pass over every step; before: 12 passes per category


def test_a_split_without_any_word_says_why():
    records = [{"category": "c", "group": f"g{n}", "steps": ["1 + 1 = 2", "2 * 3 = 6"], "error_steps": [n % 2 + 1]}
               for n in range(20)]
    report = cues.cue_report(records)
    assert report["per_category"]["c"]["auc"] is None
    assert report["per_category"]["c"]["reason"] == ("cannot fit the model (empty vocabulary; perhaps the documents "
                                                     "only contain stop words)")


def _three_categories() -> list[dict[str, Any]]:
    return (_mixed(90, seed=5, category="counterfactual") + _mixed(60, seed=6, category="redundancy")
            + _mixed(45, seed=7, category="domain_inconsistency"))


def test_a_sampled_overall_leaves_every_category_figure_as_it_was():
    records = _three_categories()
    whole = cues.cue_report(records)
    sampled = cues.cue_report(records, overall_sample=80)
    assert sampled["per_category"] == whole["per_category"]
    assert sampled["overall"]["sample"] == {"records": 80, "of": len(records)}
    drawn = cues.overall_records(records, 80)
    assert drawn == cues.overall_records(records, 80) and len({id(r) for r in drawn}) == 80  # seeded, no repeats
    on_the_sample = cues.cue_report(drawn)["overall"]  # the recipe on the drawn records, nothing else
    assert {key: sampled["overall"][key] for key in ("auc", "n", "position", "length", "problems")} == \
        {key: on_the_sample[key] for key in ("auc", "n", "position", "length", "problems")}
    everything = cues.cue_report(records, overall_sample=len(records))["overall"]
    assert everything.pop("sample") == {"records": len(records), "of": len(records)} and everything == whole["overall"]


def _held_rows(monkeypatch) -> list[int]:
    """After each `word_counts`, the rows of every count matrix still alive (the probe's memory, counted)."""
    import weakref

    alive: list[weakref.ref] = []
    held: list[int] = []
    real = cues.word_counts

    def counting(texts):
        counts = real(texts)
        if counts is not None:
            alive.append(weakref.ref(counts.matrix))
            held.append(sum(matrix.shape[0] for matrix in (ref() for ref in alive) if matrix is not None))
        return counts

    monkeypatch.setattr(cues, "word_counts", counting)
    return held


def test_the_cards_probe_holds_one_categorys_counts_at_a_time(monkeypatch):
    from types import SimpleNamespace

    from injector.curate.card import _cue_figures

    records = _three_categories()
    held = _held_rows(monkeypatch)
    report, note = _cue_figures(SimpleNamespace(cue_sample=60, cue_rows=lambda: records))
    largest = max(len(cues._steps([r for r in records if r["category"] == c])) for c in
                  ("counterfactual", "redundancy", "domain_inconsistency"))
    assert len(held) == 4 and max(held) <= largest  # before: one matrix of all 195 solutions' steps
    assert report["overall"]["sample"] == {"records": 60, "of": 195}
    assert "on a seeded sample of 60 of the 195 sampled rows with an error step" in note
    assert f"over all categories {report['overall']['auc']:.2f}" in note


def test_the_cards_probe_fits_only_the_folds_models_and_gives_the_same_aucs(monkeypatch):
    from types import SimpleNamespace

    from sklearn.linear_model import LogisticRegression

    from injector.curate.card import _cue_figures

    records = _three_categories()
    whole = cues.cue_report(records, overall_sample=60)
    fitted = []
    real = LogisticRegression.fit

    def counting(self, X, y, sample_weight=None):
        fitted.append(X.shape[0])
        return real(self, X, y, sample_weight)

    monkeypatch.setattr(LogisticRegression, "fit", counting)
    report, _ = _cue_figures(SimpleNamespace(cue_sample=60, cue_rows=lambda: records))
    assert len(fitted) == 4 * cues.FOLDS  # before: a sixth model per category, on all its steps, for its top words
    for category, figures in whole["per_category"].items():
        assert {**report["per_category"][category], "top": figures["top"]} == figures
    assert report["overall"] == whole["overall"]
