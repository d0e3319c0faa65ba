#!/usr/bin/env python3
"""Assistant token masks as transformers computes them from a template's {% generation %} blocks.

Usage: chat_mask_oracle.py MODEL_DIR CONVERSATIONS_JSON
MODEL_DIR holds a tokenizer (tokenizer.json + tokenizer_config.json whose chat_template has
generation blocks). Prints one JSON object: {conversation id: {"text": str, "ids": [int],
"mask": [0|1]}} from apply_chat_template(messages, tokenize=True, return_dict=True,
return_assistant_tokens_mask=True); conversations with tools or kwargs are skipped.
"""
import json
import sys

from transformers import AutoTokenizer


def main():
    model_dir, conversations = sys.argv[1], sys.argv[2]
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    out = {}
    for conv in json.load(open(conversations, encoding="utf-8")):
        if conv.get("tools") or conv.get("kwargs"):
            continue
        messages = conv["messages"]
        if not any(m.get("role") == "assistant" for m in messages):
            continue
        if any(not isinstance(m.get("content"), str) for m in messages):
            continue
        text = tokenizer.apply_chat_template(messages, tokenize=False)
        enc = tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True,
                                            return_assistant_tokens_mask=True)
        out[conv["id"]] = {"text": text, "ids": list(enc["input_ids"]),
                           "mask": list(enc["assistant_masks"])}
    print(json.dumps(out, ensure_ascii=True))


if __name__ == "__main__":
    main()
