"""Export oracle for Tunebench's interop test: Hugging Face PEFT and transformers load our exported
adapter and merged folders, compute reference logits and report any mismatch with what PEFT expects.

usage:
  export_oracle.py make-gpt2 OUT_DIR TOKENIZER_DIR
      Saves a tiny random GPT2LMHeadModel (vocab 50257, n_embd 32, 2 layers) to OUT_DIR with the
      tokenizer files of TOKENIZER_DIR (tokenizer.json, tokenizer_config.json).
  export_oracle.py make-untied SRC_DIR OUT_DIR
      Copies the model folder SRC_DIR to OUT_DIR with an untied head (lm_head = embedding + small noise).
  export_oracle.py make-gemma3 SRC_DIR OUT_DIR
      Saves a tiny random Gemma 3 text model with the tokenizer of the model folder SRC_DIR (vocab 512).
  export_oracle.py make-phi3 SRC_DIR OUT_DIR
      The same for a tiny random Phi-3 (fused projections, LongRoPE, half-rotary heads, a window).
  export_oracle.py logits CASES_JSON OUT_DIR
      CASES_JSON: [{"name", "kind": "peft" | "merged", "dir", "base" (peft only), "ids": [int]}].
      Writes OUT_DIR/<name>.safetensors ("logits": fp32 [T, vocab]) and prints one JSON object:
      {name: {"missing_keys", "unexpected_keys", "unknown_config_keys", "shape_mismatches",
              "virtual_tokens", "token_rows", "warnings"}}; token_rows: per module PEFT wrapped for
      trainable tokens, its token indices, whether it is tied to another module's rows, and how far
      its rows moved from the base weights (max |values - originals|).
"""
import dataclasses
import json
import logging
import os
import shutil
import sys
import warnings

import torch
import transformers
from safetensors.torch import load_file, save_file


def make_gpt2(out_dir, tokenizer_dir, n_embd=32, n_head=2, initializer_range=0.1, bias_std=0.0):
    """A random 2-layer GPT-2 (tied head) around the GPT-2 tokenizer files of tokenizer_dir; bias_std > 0 draws
    every bias (LayerNorms' included) from N(0, bias_std), so that dropping or misplacing one shows."""
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=50257, n_embd=n_embd, n_layer=2, n_head=n_head, n_positions=128,
                                  initializer_range=initializer_range, bos_token_id=50256, eos_token_id=50256,
                                  tie_word_embeddings=True)
    cfg.dtype = torch.float32
    model = transformers.GPT2LMHeadModel(cfg).eval()
    if bias_std > 0:
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith(".bias"):
                    p.normal_(0.0, bias_std)
    model.save_pretrained(out_dir, safe_serialization=True)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(tokenizer_dir, f), os.path.join(out_dir, f))


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


def make_gemma3(src, out):
    """A random Gemma 3 text model of the bundled model's vocabulary, with its tokenizer: sliding layers with a
    rotary base of their own, norm weights drawn (they start at zero), embeddings scaled by sqrt(hidden)."""
    torch.manual_seed(0)
    cfg = transformers.Gemma3TextConfig(
        vocab_size=512, hidden_size=64, intermediate_size=172, num_hidden_layers=3, num_attention_heads=8,
        num_key_value_heads=4, head_dim=8, max_position_embeddings=512, initializer_range=0.1, sliding_window=6,
        query_pre_attn_scalar=12, tie_word_embeddings=True, bos_token_id=1, eos_token_id=2, pad_token_id=None,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 10000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 1000.0}})
    cfg.dtype = torch.float32
    model = transformers.AutoModelForCausalLM.from_config(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.normal_(0.0, 0.3)
    model.save_pretrained(out, safe_serialization=True)
    for f in ("tokenizer.model", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(src, f), os.path.join(out, f))


def make_phi3(src, out):
    """A random Phi-3 of the bundled model's vocabulary, with its tokenizer, laid out as Phi-4-mini: q, k, v and
    gate, up fused, half of each head rotating, LongRoPE whose original context (8) the test's ids pass, a window on
    every layer, tied."""
    torch.manual_seed(0)
    cfg = transformers.Phi3Config(
        vocab_size=512, hidden_size=64, intermediate_size=172, num_hidden_layers=3, num_attention_heads=8,
        num_key_value_heads=4, max_position_embeddings=512, original_max_position_embeddings=8,
        initializer_range=0.1, sliding_window=6, tie_word_embeddings=True, bos_token_id=1, eos_token_id=2,
        pad_token_id=None,
        rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "partial_rotary_factor": 0.5,
                         "short_factor": [1.0, 1.5], "long_factor": [3.0, 5.0]})
    cfg.dtype = torch.float32
    transformers.AutoModelForCausalLM.from_config(cfg).save_pretrained(out, safe_serialization=True)
    for f in ("tokenizer.model", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(src, f), os.path.join(out, f))


def token_rows(model):
    """The trainable-token layers PEFT made: {module: {"indices", "tied", "moved"}}."""
    from peft.tuners.trainable_tokens import TrainableTokensLayer

    out = {}
    for name, module in model.named_modules():
        if isinstance(module, TrainableTokensLayer):
            layer = module.tied_adapter or module
            values = layer.trainable_tokens_delta["default"]
            original = layer.trainable_tokens_original["default"]
            out[name.removesuffix(".token_adapter")] = {
                "indices": list(layer.token_indices["default"]),
                "tied": module.tied_adapter is not None,
                "moved": float((values - original).abs().max()),
            }
    return out


class _Collect(logging.Handler):
    def __init__(self, sink):
        super().__init__(logging.WARNING)
        self.sink = sink

    def emit(self, record):
        self.sink.append(record.getMessage())


def peft_logits(case, report):
    import peft
    from peft.utils import get_peft_model_state_dict

    adapter = case["dir"]
    with open(os.path.join(adapter, "adapter_config.json")) as f:
        raw = json.load(f)
    # Keys of our adapter_config.json that PEFT's config class does not know (it drops them, warning).
    cls = peft.PEFT_TYPE_TO_CONFIG_MAPPING[peft.PeftType(raw["peft_type"])]
    known = {f.name for f in dataclasses.fields(cls)}
    report["unknown_config_keys"] = sorted(k for k in raw if k not in known)

    base = transformers.AutoModelForCausalLM.from_pretrained(case["base"], dtype=torch.float32)
    base.eval()
    model = peft.PeftModel.from_pretrained(base, adapter).eval()
    # The tensor names and shapes PEFT would save for this config vs those in our file.
    expected = get_peft_model_state_dict(model)
    ours = load_file(os.path.join(adapter, "adapter_model.safetensors"))
    report["missing_keys"] = sorted(k for k in expected if k not in ours)
    report["unexpected_keys"] = sorted(k for k in ours if k not in expected)
    report["shape_mismatches"] = sorted(
        f"{k}: expected {list(expected[k].shape)}, ours {list(ours[k].shape)}"
        for k in expected if k in ours and tuple(expected[k].shape) != tuple(ours[k].shape))
    ids = torch.tensor([case["ids"]], dtype=torch.int64)
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float()
    # Prompt tuning: PEFT prepends the virtual tokens and returns their logits too.
    prompt = raw["peft_type"] == "PROMPT_TUNING"
    virtual = model.peft_config["default"].num_virtual_tokens if prompt else 0
    report["virtual_tokens"] = virtual
    report["token_rows"] = token_rows(model)
    return logits[virtual:]


def merged_logits(case, report):
    model = transformers.AutoModelForCausalLM.from_pretrained(case["dir"], dtype=torch.float32)
    model.eval()
    ids = torch.tensor([case["ids"]], dtype=torch.int64)
    with torch.no_grad():
        return model(input_ids=ids).logits[0].float()


def logits(cases_json, out_dir):
    with open(cases_json) as f:
        cases = json.load(f)
    result = {}
    for case in cases:
        report = {"missing_keys": [], "unexpected_keys": [], "unknown_config_keys": [],
                  "shape_mismatches": [], "virtual_tokens": 0, "token_rows": {}, "warnings": []}
        handler = _Collect(report["warnings"])
        loggers = [logging.getLogger(), logging.getLogger("transformers"), logging.getLogger("peft")]
        for logger in loggers:
            logger.addHandler(handler)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn = peft_logits if case["kind"] == "peft" else merged_logits
            out = fn(case, report)
        for logger in loggers:
            logger.removeHandler(handler)
        report["warnings"] += [str(w.message) for w in caught]
        if out.shape[0] != len(case["ids"]):
            raise SystemExit(f"{case['name']}: {out.shape[0]} logit rows for {len(case['ids'])} ids")
        path = os.path.join(out_dir, case["name"] + ".safetensors")
        save_file({"logits": out.contiguous()}, path)
        result[case["name"]] = report
    print(json.dumps(result))


def main():
    mode = sys.argv[1]
    if mode == "make-gpt2":
        make_gpt2(sys.argv[2], sys.argv[3])
    elif mode == "make-untied":
        make_untied(sys.argv[2], sys.argv[3])
    elif mode == "make-gemma3":
        make_gemma3(sys.argv[2], sys.argv[3])
    elif mode == "make-phi3":
        make_phi3(sys.argv[2], sys.argv[3])
    elif mode == "logits":
        logits(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(f"unknown mode {mode!r} (make-gpt2 | make-untied | make-gemma3 | make-phi3 | logits)")


if __name__ == "__main__":
    main()
