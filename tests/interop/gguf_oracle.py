"""GGUF oracle for Tunebench's interop test: the gguf package reads our .gguf files and transformers loads
them (its GGUF path undoes llama.cpp's q/k row permutation), giving reference logits, metadata and the
tokenizer transformers derives from the file's vocabulary.

usage:
  gguf_oracle.py make-untied SRC_DIR OUT_DIR
      Copies the model folder SRC_DIR to OUT_DIR with tie_word_embeddings false and an lm_head.weight
      of the embedding plus small noise (seed 0), so that the export has an output.weight to write.
  gguf_oracle.py check CASES_JSON OUT_DIR
      CASES_JSON: [{"name", "gguf": path, "sp_model": tokenizer.model, "ids": [int], "texts": [str]}].
      Writes OUT_DIR/<name>.safetensors ("logits": fp32 [T, vocab], from the GGUF loaded in transformers)
      and prints one JSON object: {name: {"metadata": {key: value (scalars only)},
      "tensors": {name: {"shape": [...] (as stored), "type": int}}, "vocab_size", "pieces_match",
      "scores_match", "types_match", "first_mismatch", "gguf_ids": [[int]], "sp_ids": [[int]],
      "tie_word_embeddings", "warnings"}}.
"""
import json
import logging
import os
import shutil
import sys
import warnings

import gguf
import numpy as np
import sentencepiece
import torch
import transformers
from safetensors.torch import load_file, save_file


def make_untied(src, out):
    shutil.copytree(src, out, dirs_exist_ok=True)
    weights = load_file(os.path.join(src, "model.safetensors"))
    torch.manual_seed(0)
    embed = weights["model.embed_tokens.weight"]
    weights["lm_head.weight"] = embed + 0.01 * torch.randn_like(embed)
    save_file(weights, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(out, "config.json")) as f:
        config = json.load(f)
    config["tie_word_embeddings"] = False
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)


class _Collect(logging.Handler):
    def __init__(self, sink):
        super().__init__(logging.WARNING)
        self.sink = sink

    def emit(self, record):
        self.sink.append(record.getMessage())


def field_value(field):
    """A scalar or string field's value; None for arrays."""
    if field.types and field.types[0] == gguf.GGUFValueType.ARRAY:
        return None
    value = field.contents()
    if isinstance(value, (np.generic,)):
        value = value.item()
    return value


def sp_type(sp, i):
    # GGUF token_type numbering: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte.
    if sp.IsUnknown(i):
        return 2
    if sp.IsControl(i):
        return 3
    if sp.IsUnused(i):
        return 5
    if sp.IsByte(i):
        return 6
    return 1


def check_case(case, report):
    reader = gguf.GGUFReader(case["gguf"])
    report["metadata"] = {k: field_value(f) for k, f in reader.fields.items() if field_value(f) is not None}
    report["tensors"] = {t.name: {"shape": [int(d) for d in t.shape], "type": int(t.tensor_type)}
                         for t in reader.tensors}
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    scores = reader.fields["tokenizer.ggml.scores"].contents()
    types = reader.fields["tokenizer.ggml.token_type"].contents()
    sp = sentencepiece.SentencePieceProcessor(model_file=case["sp_model"])
    n = sp.get_piece_size()
    report["vocab_size"] = len(tokens)
    report["pieces_match"] = tokens[:n] == [sp.id_to_piece(i) for i in range(n)]
    report["scores_match"] = [float(s) for s in scores[:n]] == [float(np.float32(sp.get_score(i))) for i in range(n)]
    report["types_match"] = [int(t) for t in types[:n]] == [sp_type(sp, i) for i in range(n)]
    report["first_mismatch"] = next(
        (i for i in range(n) if tokens[i] != sp.id_to_piece(i) or int(types[i]) != sp_type(sp, i)), -1)

    folder, name = os.path.split(case["gguf"])
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32).eval()
    report["tie_word_embeddings"] = bool(model.config.tie_word_embeddings)
    ids = torch.tensor([case["ids"]], dtype=torch.int64)
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)
    report["gguf_ids"] = [tokenizer(t).input_ids for t in case["texts"]]
    # sentencepiece itself, with the BOS the file says to add.
    report["sp_ids"] = [[sp.bos_id()] + sp.encode(t) for t in case["texts"]]
    return logits


def check(cases_json, out_dir):
    with open(cases_json) as f:
        cases = json.load(f)
    result = {}
    for case in cases:
        report = {"warnings": []}
        handler = _Collect(report["warnings"])
        loggers = [logging.getLogger(), logging.getLogger("transformers")]
        for logger in loggers:
            logger.addHandler(handler)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = check_case(case, report)
        for logger in loggers:
            logger.removeHandler(handler)
        report["warnings"] += [str(w.message) for w in caught]
        save_file({"logits": out.contiguous()}, os.path.join(out_dir, case["name"] + ".safetensors"))
        result[case["name"]] = report
    print(json.dumps(result))


def main():
    mode = sys.argv[1]
    if mode == "make-untied":
        make_untied(sys.argv[2], sys.argv[3])
    elif mode == "check":
        check(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(f"unknown mode {mode!r} (make-untied | check)")


if __name__ == "__main__":
    main()
