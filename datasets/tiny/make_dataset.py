#!/usr/bin/env python3
"""Writes the bundled tiny fine-tuning dataset (train.jsonl, val.jsonl, text.jsonl), deterministic.

A small template grammar over names, animals, colours and places from TinyStories, so the
260K-parameter stories260k Llama (512-token vocabulary) can learn it in well under a minute on a
CPU. Every answer is a fixed function of its instruction; val.jsonl uses (name, animal) pairs that
never occur in train.jsonl, so its loss measures whether the model learned to fill the template
rather than memorised rows.

Usage: python3 make_dataset.py [--out DIR]   (stdlib only; same output on every run and platform)
"""

import argparse
import json
import os
import random

SEED = 260
TRAIN_ROWS = 500
VAL_ROWS = 80
TEXT_ROWS = 50
VAL_PAIR_FRACTION = 0.15  # share of (name, animal) pairs held out for validation

GIRLS = ["Lily", "Sue", "Anna", "Mia", "Lucy", "Sara", "Kim", "Jane", "Amy", "Zoe", "Emma"]
BOYS = ["Tim", "Ben", "Sam", "Tom", "Max", "Jack", "Bob", "Leo", "Mark"]
NAMES = GIRLS + BOYS
ANIMALS = ["cat", "dog", "bird", "fish", "frog", "duck", "bunny", "bear", "pig", "cow",
           "horse", "mouse", "lion", "sheep", "fox"]
COLOURS = ["red", "blue", "green", "yellow", "pink", "brown", "white", "black"]
PLACES = ["park", "beach", "pond", "farm", "lake", "zoo", "river", "school"]

# (instruction, input, output) templates; every slot of the output appears in the instruction or
# input, so the answer is determined by the prompt.
TEMPLATES = [
    ("Tell me about {name} and the {animal}.", "",
     "{name} had a little {animal}. They played in the park every day."),
    ("Tell me about {name} and the {colour} {animal}.", "",
     "{name} had a {colour} {animal}. The {animal} was very happy."),
    ("Where did {name} and the {animal} play?", "The {place}.",
     "{name} and the {animal} played at the {place}."),
    ("Write about {name}, a {animal} and the {place}.", "",
     "{name} saw a big {animal} at the {place}. {name} said hello."),
]

# Two-sentence TinyStories-like texts for text.jsonl (a "general" holdout, not the task).
TEXT_OPENINGS = [
    "Once upon a time, there was a little {child} named {name}.",
    "One day, {name} went to the {place} with mom.",
    "{name} was a happy child who liked to play.",
]
TEXT_MIDDLES = [
    "{pronoun} saw a {colour} {animal} near a big tree.",
    "{pronoun} found a {colour} ball in the grass.",
    "The sun was warm and the sky was blue.",
    "A little {animal} came to say hello.",
]
TEXT_ENDINGS = [
    "They played together all day and were very happy.",
    "At the end of the day, they went home to sleep.",
    "{name} smiled and said, \"This is the best day ever!\"",
    "From that day on, they were best friends.",
]


def held_out_pairs(rng):
    pairs = [(n, a) for n in NAMES for a in ANIMALS]
    rng.shuffle(pairs)
    return set(pairs[: int(len(pairs) * VAL_PAIR_FRACTION)])


def make_row(rng, name, animal):
    instruction, input_, output = rng.choice(TEMPLATES)
    slots = {"name": name, "animal": animal, "colour": rng.choice(COLOURS),
             "place": rng.choice(PLACES)}
    row = {"instruction": instruction.format(**slots)}
    if input_:
        row["input"] = input_.format(**slots)
    row["output"] = output.format(**slots)
    return row


def make_rows(rng, pairs, count):
    rows, seen = [], set()
    while len(rows) < count:
        row = make_row(rng, *rng.choice(pairs))
        key = json.dumps(row, sort_keys=True)
        if key not in seen:  # no duplicate rows within a split
            seen.add(key)
            rows.append(row)
    return rows


def make_text(rng, count):
    rows, seen = [], set()
    while len(rows) < count:
        name = rng.choice(NAMES)
        girl = name in GIRLS
        slots = {"name": name, "animal": rng.choice(ANIMALS), "colour": rng.choice(COLOURS),
                 "place": rng.choice(PLACES), "child": "girl" if girl else "boy",
                 "pronoun": "She" if girl else "He"}
        parts = [rng.choice(TEXT_OPENINGS), rng.choice(TEXT_MIDDLES + TEXT_ENDINGS)]
        text = " ".join(p.format(**slots) for p in parts)
        if text not in seen:
            seen.add(text)
            rows.append({"text": text})
    return rows


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
    train = make_rows(rng, train_pairs, TRAIN_ROWS)
    val = make_rows(rng, sorted(val_pairs), VAL_ROWS)
    text = make_text(rng, TEXT_ROWS)

    write_jsonl(os.path.join(args.out, "train.jsonl"), train)
    write_jsonl(os.path.join(args.out, "val.jsonl"), val)
    write_jsonl(os.path.join(args.out, "text.jsonl"), text)
    print(f"train {len(train)}, val {len(val)} ({len(val_pairs)} held-out pairs), text {len(text)}")


if __name__ == "__main__":
    main()
