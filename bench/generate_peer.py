"""Side-by-side generation benchmark: `tunebench bench generate` against Hugging Face transformers and against
llama.cpp (llama-cpp-python, on the f32 GGUF that `tunebench convert gguf` writes) on the same models, prompt
length and token budget, in the same run on the same machine.

usage: python bench/generate_peer.py [--tunebench build/bin/tunebench] [--prompt-tokens 128] [--new-tokens 128]
                                     [--repeats 5] [--precisions fp32,bf16] [--models stories260k,random-llama-25m]
Models: the bundled stories260k and a random ~25M-parameter Llama (created here with transformers and saved,
so every side loads the same weights). Precisions: fp32 (Tunebench and transformers in fp32, llama.cpp on the f32
GGUF) and bf16 (Tunebench `--dtype bf16` and transformers in bf16, llama.cpp on the f16 GGUF: the same 16-bit
weight width). Prints prefill and decode tokens/s and the ratios (ours / peer).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import transformers

from common import ROOT, random_llama


DTYPES = {"fp32": (torch.float32, "fp32", "f32"), "bf16": (torch.bfloat16, "bf16", "f16")}


def peer(path, prompt_tokens, new_tokens, repeats, precision="fp32"):
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=DTYPES[precision][0]).eval()
    gen = torch.Generator().manual_seed(1234)
    ids = torch.randint(3, model.config.vocab_size, (1, prompt_tokens), generator=gen)
    prefill, decode = [], []
    with torch.inference_mode():
        for i in range(repeats + 1):  # first pass warms up
            t0 = time.perf_counter()
            out = model(ids, use_cache=True)
            t1 = time.perf_counter()
            past, token = out.past_key_values, out.logits[:, -1].argmax(-1, keepdim=True)
            for _ in range(new_tokens - 1):
                out = model(token, past_key_values=past, use_cache=True)
                past, token = out.past_key_values, out.logits[:, -1].argmax(-1, keepdim=True)
            t2 = time.perf_counter()
            if i:
                prefill.append(prompt_tokens / (t1 - t0))
                decode.append(new_tokens / (t2 - t1))
    return statistics.median(prefill), statistics.median(decode)


def llama_cpp_peer(binary, path, tmp, prompt_tokens, new_tokens, repeats, precision="fp32"):
    """llama.cpp on the same weights (the f32 or f16 GGUF `tunebench convert gguf` writes), as many threads as
    the others, in a process of its own (bench/llama_cpp_peer.py)."""
    if not any(os.path.exists(os.path.join(path, f)) for f in ("tokenizer.model", "tokenizer.json")):
        # GGUF carries a vocabulary: the random model's 32,000 ids get the Llama 2 sentencepiece model's pieces
        # (the benchmark feeds token ids, so which pieces they are does not matter).
        shutil.copy(os.path.join(ROOT, "tests", "data", "tokenizers", "llama2", "tokenizer.model"), path)
    kind = DTYPES[precision][2]
    gguf = os.path.join(tmp, f"{os.path.basename(path)}-{kind}.gguf")
    subprocess.run([binary, "convert", "gguf", "--model", path, "--out", gguf, "--dtype", kind], check=True,
                   capture_output=True)
    out = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "llama_cpp_peer.py"), gguf, str(prompt_tokens),
                          str(new_tokens), str(repeats), str(torch.get_num_threads())],
                         check=True, capture_output=True, text=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return r["prefill_tokens_per_s"], r["decode_tokens_per_s"]


def ours(binary, path, prompt_tokens, new_tokens, repeats, precision="fp32"):
    out = subprocess.run([binary, "bench", "generate", "--model", path, "--prompt-tokens", str(prompt_tokens),
                          "--new-tokens", str(new_tokens), "--repeats", str(repeats), "--device", "cpu",
                          "--dtype", DTYPES[precision][1], "--json"],
                         check=True, capture_output=True, text=True).stdout
    r = json.loads(out)["results"][0]
    return r["prefill_tokens_per_s"], r["decode_tokens_per_s"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tunebench", default=os.path.join(ROOT, "build", "bin", "tunebench"))
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--precisions", default="fp32", help="comma-separated: fp32, bf16")
    ap.add_argument("--models", default="stories260k,random-llama-25m")
    a = ap.parse_args()
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, threads {torch.get_num_threads()}, "
          f"prompt {a.prompt_tokens} tokens, {a.new_tokens} new tokens, median of {a.repeats}")
    with tempfile.TemporaryDirectory() as tmp:
        rnd = os.path.join(tmp, "random-llama-25m")
        random_llama(rnd)
        models = [("stories260k", os.path.join(ROOT, "datasets", "models", "stories260k")), ("random-llama-25m", rnd)]
        models = [m for m in models if m[0] in a.models.split(",")]
        print(f"{'model':<18} {'dtype':<6} {'phase':<8} {'tunebench tok/s':>16} {'transformers tok/s':>19} "
              f"{'ratio':>7} {'llama.cpp tok/s':>16} {'ratio':>7}")
        for name, path in models:
            for precision in a.precisions.split(","):
                o = ours(a.tunebench, path, a.prompt_tokens, a.new_tokens, a.repeats, precision)
                p = peer(path, a.prompt_tokens, a.new_tokens, a.repeats, precision)
                g = llama_cpp_peer(a.tunebench, path, tmp, a.prompt_tokens, a.new_tokens, a.repeats, precision)
                for k, phase in enumerate(("prefill", "decode")):
                    x, y, z = o[k], p[k], g[k]
                    print(f"{name:<18} {precision:<6} {phase:<8} {x:>16.0f} {y:>19.0f} {x / y:>7.2f} {z:>16.0f} "
                          f"{x / z:>7.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
