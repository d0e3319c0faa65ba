"""The generated alpaca rows of bench/data_peer.py (and bench/data_sizes.py): Zipf-distributed words, exact copies
with case, whitespace or Unicode-form changes, near copies, planted PII; and the normalisation dedup compares.
"""
import json
import random
import unicodedata

import numpy as np

from data_peer_curate import pii_sentence

def make_vocab(rng, size):
    """size pseudo-words (frequent ones first: short function words), plus a few non-ASCII words."""
    function = ("the of and to a in is that it for on with as was be by at this from or an are not but have "
                "which one all we you can they their there more if will when so what about into than some out "
                "up other its only then two also how may new like first time these after any very most over").split()
    onsets = ["", "b", "br", "c", "ch", "d", "dr", "f", "fl", "g", "gr", "h", "j", "k", "l", "m", "n", "p", "pl",
              "pr", "qu", "r", "s", "sh", "sl", "st", "t", "th", "tr", "v", "w", "z"]
    vowels = ["a", "e", "i", "o", "u", "ai", "ea", "ou", "io", "y"]
    codas = ["", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ck", "ng", "rt"]
    words, seen = list(function), set(function)
    while len(words) < size:
        n = rng.choice((1, 1, 2, 2, 2, 3))
        w = "".join(rng.choice(onsets) + rng.choice(vowels) + rng.choice(codas) for _ in range(n))
        if 2 <= len(w) <= 14 and w not in seen:
            seen.add(w)
            words.append(w)
    # Non-ASCII words spread over the frequency ranks: they take utf8proc's / unicodedata's slow path.
    extra = ["café", "naïve", "Straße", "résumé", "Ångström", "über", "façade", "piñata", "Zürich", "crème",
             "smörgåsbord", "déjà", "jalapeño", "Köln", "señor", "fiancée", "Éire", "øre", "Æsir", "Ærø"]
    for k, w in enumerate(extra):
        words.insert(60 + k * 150, w)
    return words[:size]


class TextSource:
    """Sentences of Zipf-distributed words, drawn in large numpy blocks."""

    def __init__(self, seed, vocab_size=4000):
        self.rng = random.Random(seed)
        self.np_rng = np.random.default_rng(seed)
        self.vocab = make_vocab(self.rng, vocab_size)
        weights = 1.0 / (np.arange(vocab_size) + 2.7) ** 1.05
        self.cdf = np.cumsum(weights / weights.sum())
        self.block, self.pos = np.empty(0, np.int64), 0

    def words(self, n):
        if self.pos + n > len(self.block):
            u = self.np_rng.random(1 << 20)
            self.block = np.minimum(np.searchsorted(self.cdf, u), len(self.vocab) - 1)
            self.pos = 0
        out = self.block[self.pos:self.pos + n]
        self.pos += n
        return [self.vocab[i] for i in out]

    def sentence(self):
        n = max(4, min(32, int(self.rng.gauss(13, 5))))
        ws = self.words(n)
        for k in range(1, n - 1):
            if self.rng.random() < 0.06:
                ws[k] += ","
        ws[0] = ws[0][:1].upper() + ws[0][1:]
        r = self.rng.random()
        return " ".join(ws) + ("." if r < 0.85 else "?" if r < 0.95 else "!")

    def paragraph(self, lo, hi):
        return " ".join(self.sentence() for _ in range(self.rng.randint(lo, hi)))

    def row(self):
        inp = "" if self.rng.random() < 0.4 else self.paragraph(1, 2)
        return {"instruction": self.paragraph(1, 2), "input": inp, "output": self.paragraph(2, 5)}


def normalise(text):
    """The text dedup compares: NFC, full case folding, whitespace runs to one space, trimmed."""
    return " ".join(unicodedata.normalize("NFC", text).casefold().split())


def shingle_set(text, k=3):
    ws = normalise(text).split(" ")
    return {tuple(ws[i:i + k]) for i in range(max(1, len(ws) - k + 1))}


def record_text(row):
    return "\n".join(row[f] for f in ("instruction", "input", "output") if row.get(f))


def exact_variant(rng, row):
    """A copy that is equal after normalisation: case, whitespace or Unicode-form changes, or none."""
    row = dict(row)
    how = rng.randrange(4)
    if how == 1:  # case
        f = rng.choice(("instruction", "output"))
        row[f] = row[f].upper() if rng.random() < 0.5 else row[f].lower()
    elif how == 2:  # whitespace: doubled spaces, a tab or line break, trailing space
        f = rng.choice(("instruction", "output"))
        ws = row[f].split(" ")
        for _ in range(3):
            k = rng.randrange(1, len(ws))
            ws[k] = rng.choice(("  ", "\t", "\n", " \u00a0")) + ws[k]
        row[f] = " ".join(ws) + rng.choice((" ", "\n", ""))
    elif how == 3:  # decomposed Unicode (NFD) and swapped case of one field
        row["output"] = unicodedata.normalize("NFD", row["output"]).swapcase()
    return row, ("plain", "case", "whitespace", "unicode")[how]


def near_variant(rng, src, row):
    """A copy with 1-5 % of its words replaced by other vocabulary words."""
    row = dict(row)
    fields = [f for f in ("instruction", "input", "output") if row[f]]
    split = {f: row[f].split(" ") for f in fields}
    slots = [(f, k) for f in fields for k in range(len(split[f]))]
    rate = rng.uniform(0.01, 0.05)
    for f, k in rng.sample(slots, max(1, round(rate * len(slots)))):
        while True:
            w = src.vocab[rng.randrange(len(src.vocab))]
            if w != split[f][k].lower():
                break
        split[f][k] = w
    for f in fields:
        row[f] = " ".join(split[f])
    return row


def generate(path, records, seed, threshold):
    """Writes the JSONL; returns what was planted (and how many near copies are within the threshold)."""
    src = TextSource(seed)
    rng = random.Random(seed + 1)
    pii_rng = random.Random(seed + 2)  # its own stream: the words and copies stay as without it
    rows, originals = [], []
    planted = {"exact": 0, "exact_by_change": {}, "near": 0, "near_within_threshold": 0, "pii": 0}
    for i in range(records):
        u = rng.random()
        if i >= 50 and u < 0.02:
            row, how = exact_variant(rng, rows[rng.choice(originals)])
            planted["exact"] += 1
            planted["exact_by_change"][how] = planted["exact_by_change"].get(how, 0) + 1
        elif i >= 50 and u < 0.05:
            original = rows[rng.choice(originals)]
            row = near_variant(rng, src, original)
            planted["near"] += 1
            a, b = shingle_set(record_text(original)), shingle_set(record_text(row))
            planted["near_within_threshold"] += len(a & b) / len(a | b) >= threshold
        else:
            row = src.row()
            if pii_rng.random() < 0.01:
                row["output"] += " " + pii_sentence(pii_rng)
                planted["pii"] += 1
            originals.append(i)
        rows.append(row)
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return planted
