#!/usr/bin/env python3
"""Writes the bundled tiny preference dataset (train.jsonl, val.jsonl, sft.jsonl, sft_val.jsonl,
rule-suite.jsonl), deterministic.

Pairs in TRL's standard conversational layout for the 260K-parameter stories260k Llama (512-token
vocabulary). The rule the pairs teach: the chosen answer ends with the sentence "The end."; the
rejected answer is the same story ending with another closing sentence instead. Everything before
the last sentence is identical, so the rule is the only difference between chosen and rejected.
val.jsonl uses (name, animal) pairs that never occur in train.jsonl; rule-suite.jsonl holds the val
prompts with a regex check of the rule, so `tunebench eval suite` measures how often a model
follows it.

Usage: python3 make_dataset.py [--out DIR]   (stdlib only; same output on every run and platform)
"""

import argparse
import json
import os
import random

SEED = 2601
TRAIN_PAIRS = 400
VAL_PAIRS = 80
VAL_PAIR_FRACTION = 0.15  # share of (name, animal) pairs held out for validation

RULE_SENTENCE = "The end."
RULE_REGEX = r"The end\.\s*$"  # the suite's check: the answer's last sentence is "The end."
# What the rejected answers end with instead: short TinyStories sentences that no story below
# uses, so the closing sentence is the only difference.
OTHER_CLOSINGS = [
    "Then they went home.",
    "It was a fun day.",
    "They liked it a lot.",
    "Then it was time for bed.",
    "Mom was glad.",
    "They had a nap.",
]

GIRLS = ["Lily", "Sue", "Anna", "Mia", "Lucy", "Sara", "Kim", "Jane", "Amy", "Zoe", "Emma"]
BOYS = ["Tim", "Ben", "Sam", "Tom", "Max", "Jack", "Bob", "Leo", "Mark"]
NAMES = GIRLS + BOYS
ANIMALS = ["cat", "dog", "bird", "fish", "frog", "duck", "bunny", "bear", "pig", "cow",
           "horse", "mouse", "lion", "sheep", "fox"]
COLOURS = ["red", "blue", "green", "yellow", "pink", "brown", "white", "black"]
PLACES = ["park", "beach", "pond", "farm", "lake", "zoo", "river", "school"]

# (prompt, story) templates: the story is a fixed function of the prompt, as in datasets/tiny.
TEMPLATES = [
    ("Tell me a story about {name} and the {animal}.",
     "{name} had a little {animal}. They played in the park every day."),
    ("Tell me a story about {name} and the {colour} {animal}.",
     "{name} had a {colour} {animal}. The {animal} was very happy."),
    ("Write a story about {name} and the {animal} at the {place}.",
     "{name} and the {animal} played at the {place}."),
    ("Write a story about {name}, a {animal} and the {place}.",
     "{name} saw a big {animal} at the {place}. {name} said hello."),
]


def held_out_pairs(rng):
    pairs = [(n, a) for n in NAMES for a in ANIMALS]
    rng.shuffle(pairs)
    return set(pairs[: int(len(pairs) * VAL_PAIR_FRACTION)])


def make_pair(rng, name, animal):
    prompt, story = rng.choice(TEMPLATES)
    slots = {"name": name, "animal": animal, "colour": rng.choice(COLOURS),
             "place": rng.choice(PLACES)}
    story = story.format(**slots)
    return {
        "prompt": [{"role": "user", "content": prompt.format(**slots)}],
        "chosen": [{"role": "assistant", "content": f"{story} {RULE_SENTENCE}"}],
        "rejected": [{"role": "assistant", "content": f"{story} {rng.choice(OTHER_CLOSINGS)}"}],
    }


def make_pairs(rng, pairs, count):
    rows, seen = [], set()
    while len(rows) < count:
        row = make_pair(rng, *rng.choice(pairs))
        key = json.dumps(row["prompt"])
        if key not in seen:  # one pair per prompt within a split
            seen.add(key)
            rows.append(row)
    return rows


def sft_row(pair):
    return {"messages": pair["prompt"] + pair["chosen"]}


def suite_case(index, pair):
    return {"id": f"rule-{index + 1}", "prompt": pair["prompt"],
            "checks": [{"regex": RULE_REGEX}], "max_new_tokens": 48}


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    args = parser.parse_args()

    rng = random.Random(SEED)
    val_pairs = held_out_pairs(rng)
    train_pairs = sorted((n, a) for n in NAMES for a in ANIMALS if (n, a) not in val_pairs)
    train = make_pairs(rng, train_pairs, TRAIN_PAIRS)
    val = make_pairs(rng, sorted(val_pairs), VAL_PAIRS)
    for row in train + val:  # the rule holds for every chosen answer and no rejected one
        assert row["chosen"][0]["content"].endswith(RULE_SENTENCE)
        assert not row["rejected"][0]["content"].endswith(RULE_SENTENCE)

    write_jsonl(os.path.join(args.out, "train.jsonl"), train)
    write_jsonl(os.path.join(args.out, "val.jsonl"), val)
    write_jsonl(os.path.join(args.out, "sft.jsonl"), [sft_row(p) for p in train])
    write_jsonl(os.path.join(args.out, "sft_val.jsonl"), [sft_row(p) for p in val])
    write_jsonl(os.path.join(args.out, "rule-suite.jsonl"),
                [suite_case(i, p) for i, p in enumerate(val)])
    print(f"train {len(train)} pairs, val {len(val)} pairs ({len(val_pairs)} held-out name/animal "
          f"pairs), sft {len(train)} + {len(val)} rows, suite {len(val)} cases")


if __name__ == "__main__":
    main()
