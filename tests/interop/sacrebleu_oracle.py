"""Scores a corpus with sacrebleu itself (BLEU, chrF, chrF++, TER with their defaults), corpus and
per sentence, for test_sacrebleu_interop.

Usage: sacrebleu_oracle.py CORPUS_JSON

Input: a JSON object: "examples", a list of {"hyp": str, "refs": [str, ...]} (one or more
references each), and "codepoints", a list of code points.
stdout: a JSON object:
  "version": sacrebleu's version;
  "bleu": {"score", "precisions", "bp", "sys_len", "ref_len"} of the corpus;
  "chrf", "chrf++", "ter": corpus scores;
  "sentence": {"bleu", "chrf", "chrf++", "ter"}: one score per example (sentence BLEU with
    effective order, as sacrebleu.sentence_bleu);
  "tok13a": per example, the 13a tokens of the hypothesis and of each reference, as BLEU sees them;
  "lower": per code point, str.lower() of it;
  "sigma": per code point, its class in str.lower()'s Final_Sigma context, found by lowering
    capital sigmas next to it: 0 case-ignorable, 1 cased (and not case-ignorable), 2 neither.
"""
import json
import sys

import sacrebleu
from sacrebleu.metrics import BLEU, CHRF, TER


def transpose(examples):
    """Per-example references as sacrebleu's reference streams, None where an example has fewer."""
    streams = max(len(e["refs"]) for e in examples)
    return [[e["refs"][k] if k < len(e["refs"]) else None for e in examples]
            for k in range(streams)]


def sigma_class(ch):
    """Final sigma after "A" + ch: ch is case-ignorable or cased; before ch: ignorable or not cased."""
    after = ("A" + ch + "\u03a3").lower()[-1] == "\u03c2"
    before = ("A\u03a3" + ch).lower()[1] == "\u03c2"
    return 0 if after and before else 1 if after else 2


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        given = json.load(f)
    examples = given["examples"]
    hyps = [e["hyp"] for e in examples]
    refs = transpose(examples)

    bleu = BLEU().corpus_score(hyps, refs)
    out = {
        "version": sacrebleu.__version__,
        "bleu": {"score": bleu.score, "precisions": bleu.precisions, "bp": bleu.bp,
                 "sys_len": bleu.sys_len, "ref_len": bleu.ref_len},
        "chrf": CHRF().corpus_score(hyps, refs).score,
        "chrf++": CHRF(word_order=2).corpus_score(hyps, refs).score,
    }
    sentence_bleu = BLEU(effective_order=True)
    metrics = {"bleu": sentence_bleu, "chrf": CHRF(), "chrf++": CHRF(word_order=2)}
    out["sentence"] = {name: [m.sentence_score(e["hyp"], e["refs"]).score for e in examples]
                       for name, m in metrics.items()}

    # TER, by far the slowest, takes the steps of corpus_score and sentence_score once: the
    # per-segment statistics, then the score of their sum and of each one.
    ter = TER()
    stats = ter._extract_corpus_statistics(hyps, refs)
    out["ter"] = ter._aggregate_and_compute(stats).score
    out["sentence"]["ter"] = [ter._compute_score_from_stats(s).score for s in stats]
    for i, e in enumerate(examples[:100]):  # the public calls agree
        assert TER().sentence_score(e["hyp"], e["refs"]).score == out["sentence"]["ter"][i], i

    def tokens(text):
        return sentence_bleu._preprocess_segment(text).split()

    out["tok13a"] = [[tokens(e["hyp"])] + [tokens(r) for r in e["refs"]] for e in examples]
    out["lower"] = [chr(c).lower() for c in given["codepoints"]]
    out["sigma"] = [sigma_class(chr(c)) for c in given["codepoints"]]
    json.dump(out, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
