"""Reference scores for test_eval_metrics_interop: ROUGE-1/2/L F-measure from Google's rouge-score
(RougeScorer.score_multi, with and without its Porter stemmer), SQuAD v1.1 exact match and token
F1 written here from the official evaluation script's definitions (normalize_answer, f1_score,
exact_match_score, metric_max_over_ground_truths), nltk's PorterStemmer as rouge-score builds it,
and numpy.quantile's default (linear) method.

Usage: eval_metrics_oracle.py INPUT_JSON

Input: {"cases": [{"prediction": str, "references": [str, ...]}, ...],
        "words": [str, ...], "quantiles": [{"values": [float], "q": [float]}, ...]}.
stdout: {"cases": [{"rouge1": F, "rouge2": F, "rougeL": F, "rouge1_stem": F, "rouge2_stem": F,
                    "rougeL_stem": F, "exact_match": 0|1, "f1": F}, ...],
         "means": {same keys: the mean over cases},
         "stems": [[word, stem], ...]  (the input words, then the distinct words of Python's own
                                         pydoc topics text),
         "quantiles": [[value per q], ...]}.
"""
import collections
import json
import re
import string
import sys

import numpy as np
from pydoc_data import topics
from rouge_score import rouge_scorer, tokenizers

ROUGE_TYPES = ["rouge1", "rouge2", "rougeL"]


# SQuAD v1.1 (evaluate-v1.1.py), from its published definition.
def normalize_answer(s):
    lowered = s.lower()
    punctuation = set(string.punctuation)
    no_punc = "".join(ch for ch in lowered if ch not in punctuation)
    no_articles = re.sub(r"\b(a|an|the)\b", " ", no_punc)
    return " ".join(no_articles.split())


def f1_score(prediction, ground_truth):
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    common = collections.Counter(prediction_tokens) & collections.Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def exact_match_score(prediction, ground_truth):
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def metric_max_over_ground_truths(metric_fn, prediction, ground_truths):
    return max(metric_fn(prediction, gt) for gt in ground_truths)


def pydoc_words():
    text = " ".join(topics.topics.values()).lower()
    return sorted(set(re.findall(r"[a-z]+", text)))


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        data = json.load(f)
    plain = rouge_scorer.RougeScorer(ROUGE_TYPES, use_stemmer=False)
    stemmed = rouge_scorer.RougeScorer(ROUGE_TYPES, use_stemmer=True)
    cases = []
    for case in data["cases"]:
        pred, refs = case["prediction"], case["references"]
        out = {}
        for suffix, scorer in (("", plain), ("_stem", stemmed)):
            scores = scorer.score_multi(refs, pred)
            for t in ROUGE_TYPES:
                out[t + suffix] = scores[t].fmeasure
        out["exact_match"] = float(metric_max_over_ground_truths(exact_match_score, pred, refs))
        out["f1"] = float(metric_max_over_ground_truths(f1_score, pred, refs))
        cases.append(out)
    keys = list(cases[0].keys()) if cases else []
    means = {k: sum(c[k] for c in cases) / len(cases) for k in keys}
    # the stemmer exactly as rouge-score's tokenizer constructs it
    stemmer = tokenizers.DefaultTokenizer(use_stemmer=True)._stemmer
    words = list(data["words"]) + pydoc_words()
    stems = [[w, stemmer.stem(w)] for w in words]
    quantiles = [
        [float(np.quantile(np.asarray(q["values"], dtype=np.float64), x)) for x in q["q"]]
        for q in data["quantiles"]
    ]
    json.dump({"cases": cases, "means": means, "stems": stems, "quantiles": quantiles},
              sys.stdout)


if __name__ == "__main__":
    main()
