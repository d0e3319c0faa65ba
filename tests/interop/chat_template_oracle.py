#!/usr/bin/env python3
"""Reference renders of real Hugging Face chat templates, through transformers' apply_chat_template.

Usage: chat_template_oracle.py TEMPLATES_DIR CONVERSATIONS_JSON TOKENIZER_OUT_DIR

Inputs
  TEMPLATES_DIR       tests/data/chat_templates: one folder per model, named like
                      "meta-llama--Llama-3.1-8B-Instruct", each with a tokenizer_config.json that holds
                      "chat_template", the model's bos_token/eos_token/unk_token/pad_token (only those it
                      sets) and "template_special_tokens" (the marker strings its template writes).
  CONVERSATIONS_JSON  tests/data/chat_templates/conversations.json: a list of
                      {"id": str, "messages": [...], "tools": [...] (optional), "kwargs": {...} (optional)}.
  TOKENIZER_OUT_DIR   a writable folder; the tokenizer of each model is saved under it (see below).

Output: one JSON document on stdout (ASCII, non-ASCII as \\u escapes):
  {"<model-id>": [case, ...], ...}   models sorted by folder name; for each model, the conversations in
                                     file order, each with add_generation_prompt false, then true.
  A case is either
    {"conversation": id, "add_generation_prompt": bool, "text": str, "ids": [int]}
  or, when rendering raised (raise_exception in the template, or any other error),
    {"conversation": id, "add_generation_prompt": bool, "error": str, "error_type": str}
  where "error" is str(exception) (for raise_exception: exactly its message) and "error_type" the
  exception's class name (TemplateError for raise_exception).

How a case is rendered: tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=...,
tokenize=False, **kwargs), the installed transformers' own code path. So, as transformers does:
  - message keys whose value is null are dropped before rendering (e.g. "content": null of a tool-call
    message: the template sees no "content" key at all);
  - the template sees messages, tools (None when the conversation has none), documents (None),
    add_generation_prompt, the tokenizer's named special tokens that are set (bos_token, eos_token,
    unk_token, pad_token; as strings), and the conversation's kwargs (e.g. enable_thinking);
  - Jinja2 ImmutableSandboxedEnvironment with trim_blocks=True, lstrip_blocks=True, the loopcontrols
    extension, a tojson filter of json.dumps(x, ensure_ascii=False, indent=..., separators=...,
    sort_keys=False), and the globals raise_exception, strftime_now, dict and namespace.

Pinned clock: strftime_now(fmt) returns FIXED_NOW.strftime(fmt) with FIXED_NOW =
datetime(2025, 3, 14, 9, 26, 53), naive local time, C-locale (English) names: "%d %b %Y" gives
"14 Mar 2025", "%B %d, %Y" gives "March 14, 2025". It is pinned by replacing the module global
`datetime` of transformers.utils.chat_template_utils (the strftime_now that transformers installs as a
Jinja global calls datetime.now() through it) with a subclass whose now() returns FIXED_NOW.

Tokenizer and ids: for each model the tokenizer is the GPT-2 tokenizer of
tests/data/tokenizers/gpt2/tokenizer.json (found beside TEMPLATES_DIR, ../tokenizers/gpt2) with the
model's bos/eos/unk/pad set as its named special tokens and its template_special_tokens added as special
tokens (AddedToken: special, normalized=False, no lstrip/rstrip/single_word), in that order (the named
ones first, as new ids from 50257 when not already in the vocabulary), and the truncation to 50 ids that
the vendored gpt2 tokenizer.json declares switched off. It is saved with save_pretrained to
TOKENIZER_OUT_DIR/<model-id>/ (tokenizer.json there is the one to load: its "truncation" is null), and
"ids" is tokenizer.encode(text, add_special_tokens=False), which is also what the tokenizers library
gives for that tokenizer.json with add_special_tokens=False.
"""
import copy
import datetime as _datetime
import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

from tokenizers import AddedToken  # noqa: E402
from transformers import PreTrainedTokenizerFast  # noqa: E402
from transformers.utils import chat_template_utils  # noqa: E402

FIXED_NOW = _datetime.datetime(2025, 3, 14, 9, 26, 53)


class _FixedDatetime(_datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        return FIXED_NOW if tz is None else FIXED_NOW.replace(tzinfo=tz)


chat_template_utils.datetime = _FixedDatetime

NAMED = ("bos_token", "eos_token", "unk_token", "pad_token")


def special(content):
    return AddedToken(content, special=True, normalized=False, lstrip=False, rstrip=False, single_word=False)


def build_tokenizer(gpt2_json, config):
    named = {k: special(config[k]) for k in NAMED if config.get(k) is not None}
    tok = PreTrainedTokenizerFast(tokenizer_file=gpt2_json, **named)
    tok.backend_tokenizer.no_truncation()  # the vendored gpt2 tokenizer.json truncates to 50 ids
    extra = [t for t in config.get("template_special_tokens", []) if t not in tok.get_vocab()]
    if extra:
        tok.add_tokens([special(t) for t in extra], special_tokens=True)
    tok.chat_template = config["chat_template"]
    return tok


def render(tok, conversation, add_generation_prompt):
    case = {"conversation": conversation["id"], "add_generation_prompt": add_generation_prompt}
    try:
        text = tok.apply_chat_template(
            copy.deepcopy(conversation["messages"]),
            tools=copy.deepcopy(conversation.get("tools")),
            add_generation_prompt=add_generation_prompt,
            tokenize=False,
            **copy.deepcopy(conversation.get("kwargs", {})),
        )
    except Exception as e:  # the template's raise_exception, or any other failure, is a result too
        case["error"] = str(e)
        case["error_type"] = type(e).__name__
        return case
    case["text"] = text
    case["ids"] = tok.encode(text, add_special_tokens=False)
    return case


def main(argv):
    if len(argv) != 4:
        sys.exit(__doc__.split("\n\n")[1])
    templates_dir, conversations_json, out_dir = argv[1:]
    gpt2_json = os.path.join(os.path.dirname(os.path.abspath(templates_dir)), "tokenizers", "gpt2",
                             "tokenizer.json")
    with open(conversations_json, encoding="utf-8") as f:
        conversations = json.load(f)
    result = {}
    for model_id in sorted(os.listdir(templates_dir)):
        config_path = os.path.join(templates_dir, model_id, "tokenizer_config.json")
        if not os.path.isfile(config_path):
            continue
        with open(config_path, encoding="utf-8") as f:
            config = json.load(f)
        tok = build_tokenizer(gpt2_json, config)
        tok.save_pretrained(os.path.join(out_dir, model_id))
        result[model_id] = [render(tok, c, agp) for c in conversations for agp in (False, True)]
    json.dump(result, sys.stdout, ensure_ascii=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv)
