"""Model oracle for Tunebench's interop test: Hugging Face transformers creates tiny random models of each
supported architecture, saves them, and records reference logits and greedy generations.

usage: model_oracle.py OUT_DIR BUNDLED_MODEL_DIR
Writes OUT_DIR/<variant>/ (a model folder), OUT_DIR/<variant>/reference.safetensors (input ids and fp32 logits)
and prints one JSON object: {variant: {"dir", "ids", "greedy", "num_parameters"}}.
"""
import json
import os
import sys

import torch
import transformers
from safetensors.torch import save_file

GREEDY_PROMPT = [1, 5, 9, 2, 7, 3, 11, 4]
GREEDY_NEW = 24


def variants():
    common = dict(vocab_size=320, hidden_size=64, intermediate_size=176, num_hidden_layers=3,
                  num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=256,
                  initializer_range=0.25, bos_token_id=1, eos_token_id=None, pad_token_id=None)
    yield "llama", transformers.LlamaConfig(**common, tie_word_embeddings=False, rms_norm_eps=1e-5)
    yield "llama_tied", transformers.LlamaConfig(**common, tie_word_embeddings=True, rms_norm_eps=1e-6)
    rope = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 32}
    try:
        cfg = transformers.LlamaConfig(**common, tie_word_embeddings=True, rope_parameters=rope)
    except TypeError:
        cfg = transformers.LlamaConfig(**common, tie_word_embeddings=True, rope_scaling=rope, rope_theta=500000.0)
    yield "llama3_rope", cfg
    yield "mistral", transformers.MistralConfig(**common, tie_word_embeddings=False, sliding_window=None)
    # Sliding windows shorter than the 40 reference ids and the 32 greedy positions: Mistral's on every
    # layer, Qwen2's on the layers from max_window_layers on.
    yield "mistral_window", transformers.MistralConfig(**common, tie_word_embeddings=False, sliding_window=6)
    yield "qwen2", transformers.Qwen2Config(**common, tie_word_embeddings=True)
    yield "qwen2_window", transformers.Qwen2Config(**common, tie_word_embeddings=True, use_sliding_window=True,
                                                   sliding_window=5, max_window_layers=1)
    yield "qwen3", transformers.Qwen3Config(**{**common, "num_key_value_heads": 4}, head_dim=16,
                                            tie_word_embeddings=False)
    # Gemma 3 text: sandwich norms scaling by (1 + weight), scaled embeddings, sliding layers with a
    # rotary base of their own, linear scaling on the full layers only, query_pre_attn_scalar other
    # than head_dim. Its norm weights are randomised below (they start at zero).
    yield "gemma3", transformers.Gemma3TextConfig(
        **{**common, "num_key_value_heads": 2}, head_dim=16, sliding_window=6, query_pre_attn_scalar=20,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        rope_parameters={"full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 50000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 1000.0}},
        tie_word_embeddings=True)
    # SmolLM3: Llama with layers that have no rotary embedding (NoPE; here every second one), and a
    # variant whose NoPE layers attend through a sliding window (its default layer_types).
    four = {**common, "num_hidden_layers": 4}
    yield "smollm3", transformers.SmolLM3Config(**four, no_rope_layer_interval=2, tie_word_embeddings=True)
    yield "smollm3_window", transformers.SmolLM3Config(**four, no_rope_layers=[1, 0, 1, 0], use_sliding_window=True,
                                                       sliding_window=6, tie_word_embeddings=False)
    # Phi-3: q, k, v and gate, up as one layer each. The second as Phi-4-mini: half of each head
    # rotates, LongRoPE whose original context (16) the 40 reference ids pass (long factors) and the
    # greedy run crosses (short factors, then its cache built again with the long ones), tied, and a
    # window on every layer.
    yield "phi3", transformers.Phi3Config(**common, tie_word_embeddings=False)
    yield "phi3_longrope", transformers.Phi3Config(
        **common, tie_word_embeddings=True, sliding_window=10, original_max_position_embeddings=16,
        rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "partial_rotary_factor": 0.5,
                         "short_factor": [1.0, 1.7], "long_factor": [2.5, 6.0]})
    gpt = dict(vocab_size=320, n_embd=64, n_layer=3, n_head=4, n_positions=128, initializer_range=0.25,
               bos_token_id=1, eos_token_id=None, pad_token_id=None)
    yield "gpt2", transformers.GPT2Config(**gpt, tie_word_embeddings=True)
    yield "gpt2_untied", transformers.GPT2Config(**gpt, tie_word_embeddings=False)


def reference(model, out_dir, vocab):
    torch.manual_seed(1)
    ids = torch.randint(0, vocab, (1, 40))
    with torch.no_grad():
        logits = model(ids).logits[0].float()
        gen = model.generate(torch.tensor([GREEDY_PROMPT]), do_sample=False, max_new_tokens=GREEDY_NEW,
                             min_new_tokens=GREEDY_NEW, eos_token_id=None, pad_token_id=0)
    save_file({"ids": ids[0].to(torch.int64).contiguous(), "logits": logits.contiguous()},
              os.path.join(out_dir, "reference.safetensors"))
    return ids[0].tolist(), gen[0, len(GREEDY_PROMPT):].tolist()


def main():
    out, bundled = sys.argv[1], sys.argv[2]
    torch.manual_seed(0)
    result = {}
    for name, cfg in variants():
        cfg.dtype = torch.float32
        model = transformers.AutoModelForCausalLM.from_config(cfg).eval()
        if name.startswith("gemma"):
            with torch.no_grad():
                for n, p in model.named_parameters():
                    if n.endswith("norm.weight"):
                        p.normal_(0.0, 0.3)
        d = os.path.join(out, name)
        model.save_pretrained(d, safe_serialization=True)
        ids, greedy = reference(model, d, cfg.vocab_size)
        result[name] = {"dir": d, "ids": ids, "greedy": greedy, "num_parameters": model.num_parameters()}
        if name == "llama":
            # The same model as a sharded checkpoint (model.safetensors.index.json + shards).
            sharded = os.path.join(out, "llama_sharded")
            model.save_pretrained(sharded, safe_serialization=True, max_shard_size="200KB")
            ids, greedy = reference(model, sharded, cfg.vocab_size)
            result["llama_sharded"] = {"dir": sharded, "ids": ids, "greedy": greedy,
                                       "num_parameters": model.num_parameters()}
    # The converted bundled model, loaded by transformers as any Llama folder.
    model = transformers.AutoModelForCausalLM.from_pretrained(bundled, dtype=torch.float32).eval()
    d = os.path.join(out, "stories260k")
    os.makedirs(d, exist_ok=True)
    prompt = [1, 403, 407, 261, 378]  # <s> + "Once upon a time"
    with torch.no_grad():
        logits = model(torch.tensor([prompt])).logits[0].float()
        gen = model.generate(torch.tensor([prompt]), do_sample=False, max_new_tokens=92, eos_token_id=None,
                             pad_token_id=0)
    save_file({"ids": torch.tensor(prompt, dtype=torch.int64), "logits": logits.contiguous()},
              os.path.join(d, "reference.safetensors"))
    result["stories260k"] = {"dir": bundled, "ids": prompt, "greedy": gen[0, len(prompt):].tolist(),
                             "num_parameters": model.num_parameters()}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
