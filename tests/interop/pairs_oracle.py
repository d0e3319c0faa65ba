"""Splits preference rows into prompt, chosen and rejected with TRL's own functions
(trl.data_utils.extract_prompt and maybe_extract_prompt), for test_pairs_interop.

Usage: pairs_oracle.py ROWS_JSON

Input: a JSON list of rows, each with "chosen" and "rejected" (full conversations as message
lists or Anthropic text) and optionally "prompt" and scores.
stdout: a JSON list, one entry per row: {"extract": extract_prompt's result on the row's chosen
and rejected, "maybe": maybe_extract_prompt's result on the whole row (its prompt, chosen and
rejected keys)}.
"""
import json
import sys

from trl.data_utils import extract_prompt, maybe_extract_prompt


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        rows = json.load(f)
    out = []
    for row in rows:
        extracted = extract_prompt({"chosen": row["chosen"], "rejected": row["rejected"]})
        maybe = maybe_extract_prompt(dict(row))
        out.append({
            "extract": {k: extracted[k] for k in ("prompt", "chosen", "rejected")},
            "maybe": {k: maybe[k] for k in ("prompt", "chosen", "rejected")},
        })
    json.dump(out, sys.stdout, ensure_ascii=True)


if __name__ == "__main__":
    main()
