"""Side-by-side training benchmark: `tunebench bench train` against llm.c's CPU trainer (`train_gpt2.c`), full
fine-tuning of GPT-2 124M in the same run on the same machine.

usage: python bench/llmc_peer.py --llmc DIR [--tunebench build/bin/tunebench] [--batch 4] [--seq 64]
                                 [--steps 10] [--warmup 2] [--threads N] [--json FILE]

DIR is an llm.c checkout (https://github.com/karpathy/llm.c; not part of this project). Both sides train the
same random GPT-2 124M (transformers' GPT2LMHeadModel(GPT2Config()) from seed 0: saved as safetensors for
Tunebench, written in llm.c's checkpoint format for llm.c) on the same tokens (the batch `bench train` draws:
torch.manual_seed(0), randint(3, 50257, (batch, seq)), every step), fp32, AdamW lr 1e-4, betas 0.9 / 0.999,
eps 1e-8, no weight decay, no gradient clipping (llm.c's CPU trainer does not clip; `bench train --clip 0`),
OMP_NUM_THREADS = --threads on both sides (default: the cores this process may use). llm.c's targets are the
next token of its token stream, Tunebench's the row rolled by one: the last target of each row differs.

llm.c's main() hard-codes batch 4, sequence 64, 41 steps and sampling text at step 20. The script builds a
copy of train_gpt2.c in a temporary folder with those constants replaced (batch, sequence, warm-up + timed
steps; sampling off) and llm.c's own Makefile (`make train_gpt2`: -Ofast -march=native, OpenMP where the
compiler has it); the model code llm.c times (forward, backward, AdamW update) is unchanged. llm.c times
each step itself ("step N: train loss X (took Y ms)"); its periodic validation loss runs outside that clock.
Its first --warmup steps are left out, as Tunebench's warm-up steps are.

Prints each side's seconds per step over the timed steps (min and median where the side reports each step,
and the mean), the ratio llm.c / Tunebench (above 1: Tunebench faster), both sides' first-step loss (about
ln(50257) = 10.8 for random weights) and the peak resident memory of each process tree.
"""
import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import transformers

from common import ROOT, random_gpt2

# llm.c's main(): the constants replaced, each expected exactly once.
LLMC_MAIN_PATCHES = [
    (r"int B = 4;", "int B = {batch};"),
    (r"int T = 64;", "int T = {seq};"),
    (r"for \(int step = 0; step <= 40; step\+\+\)", "for (int step = 0; step < {total}; step++)"),
    (r"if \(step > 0 && step % 20 == 0\)", "if (0)"),  # sampling text: not a training step
]
LLMC_STEP = re.compile(r"^step (\d+): train loss (\S+) \(took (\S+) ms\)", re.M)


def write_llmc_checkpoint(model, path):
    """The model in llm.c's checkpoint format (gpt2_build_from_checkpoint): a 256-int32 header (magic 20240326,
    version 3, maxT, V, L, NH, C, padded V), then fp32 tensors in fill_in_parameter_sizes order, the token
    table padded with zero rows to a multiple of 128 and transformers' Conv1D weights ([in, out]) transposed
    to llm.c's [out, in]."""
    cfg = model.config
    L, C, V = cfg.n_layer, cfg.n_embd, cfg.vocab_size
    Vp = (V + 127) // 128 * 128
    sd = {k: v.detach().float() for k, v in model.transformer.state_dict().items()}

    def layers(name, transpose=False):
        return torch.stack([sd[f"h.{i}.{name}"].t() if transpose else sd[f"h.{i}.{name}"] for i in range(L)])

    wte = torch.zeros(Vp, C)
    wte[:V] = sd["wte.weight"]
    tensors = [wte, sd["wpe.weight"], layers("ln_1.weight"), layers("ln_1.bias"),
               layers("attn.c_attn.weight", True), layers("attn.c_attn.bias"),
               layers("attn.c_proj.weight", True), layers("attn.c_proj.bias"),
               layers("ln_2.weight"), layers("ln_2.bias"),
               layers("mlp.c_fc.weight", True), layers("mlp.c_fc.bias"),
               layers("mlp.c_proj.weight", True), layers("mlp.c_proj.bias"),
               sd["ln_f.weight"], sd["ln_f.bias"]]
    header = np.zeros(256, dtype="<i4")
    header[:8] = [20240326, 3, cfg.n_positions, V, L, cfg.n_head, C, Vp]
    with open(path, "wb") as f:
        f.write(header.tobytes())
        for t in tensors:
            f.write(t.contiguous().numpy().astype("<f4").tobytes())


def write_llmc_tokens(path, ids, batches):
    """`batches` copies of the batch `ids` (then its first token, the last target) in llm.c's token file
    format (llmc/dataloader.h: a 256-int32 header, magic 20240520, version 1, token count; uint16 tokens), so
    every batch llm.c's shuffling loader reads is `ids`."""
    tokens = np.concatenate([np.tile(ids.flatten().numpy(), batches), ids.flatten()[:1].numpy()]).astype("<u2")
    header = np.zeros(256, dtype="<i4")
    header[:3] = [20240520, 1, tokens.size]
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(tokens.tobytes())


def run_measured(cmd, cwd=None, env=None):
    """Runs cmd to its end; returns its exit status, stdout, stderr and the peak resident bytes of its
    process tree (the child's and its waited-for descendants', from wait4)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        return p.returncode, out.read(), err.read(), usage.ru_maxrss * 1024, wall


def build_llmc(llmc, folder, batch, seq, total_steps):
    """Builds llm.c's train_gpt2 from DIR's sources, main()'s constants replaced, in folder; returns the
    compiler command make ran."""
    missing = [p for p in ("train_gpt2.c", "Makefile", os.path.join("llmc", "dataloader.h"))
               if not os.path.exists(os.path.join(llmc, p))]
    if missing:
        sys.exit(f"llmc_peer: --llmc {llmc} is not an llm.c checkout (missing {', '.join(missing)}); "
                 "clone https://github.com/karpathy/llm.c and pass its folder")
    with open(os.path.join(llmc, "train_gpt2.c")) as f:
        source = f.read()
    for pattern, replacement in LLMC_MAIN_PATCHES:
        source, n = re.subn(pattern, replacement.format(batch=batch, seq=seq, total=total_steps), source)
        if n != 1:
            sys.exit(f"llmc_peer: {llmc}/train_gpt2.c's main() does not have the expected '{pattern}' (found {n} "
                     "times); this script knows llm.c's main() as of 2024-2025")
    shutil.copy(os.path.join(llmc, "Makefile"), folder)
    shutil.copytree(os.path.join(llmc, "llmc"), os.path.join(folder, "llmc"))
    with open(os.path.join(folder, "train_gpt2.c"), "w") as f:
        f.write(source)
    make = subprocess.run(["make", "train_gpt2"], cwd=folder, capture_output=True, text=True)
    if make.returncode != 0 or not os.path.exists(os.path.join(folder, "train_gpt2")):
        sys.exit(f"llmc_peer: building llm.c's train_gpt2 from {llmc} failed (make train_gpt2, exit "
                 f"{make.returncode}):\n{make.stdout}{make.stderr}")
    if "OpenMP found" not in make.stdout:
        print("warning: llm.c's Makefile found no OpenMP: its train_gpt2 runs on one thread", file=sys.stderr)
    compile_lines = [line for line in make.stdout.splitlines() if "train_gpt2.c" in line and " -o " in line]
    return compile_lines[-1].strip() if compile_lines else "make train_gpt2"


def summary(step_seconds, mean):
    return {"min": min(step_seconds) if step_seconds else None,
            "median": statistics.median(step_seconds) if step_seconds else None,
            "mean": mean if mean is not None else statistics.fmean(step_seconds)}


def run_llmc(folder, threads, warmup, steps):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    rc, out, err, peak, wall = run_measured(["./train_gpt2"], cwd=folder, env=env)
    if rc != 0:
        sys.exit(f"llmc_peer: llm.c's train_gpt2 failed (exit {rc}):\n{out[-4000:]}{err[-4000:]}")
    rows = [(int(s), float(loss), float(ms) / 1e3) for s, loss, ms in LLMC_STEP.findall(out)]
    if len(rows) != warmup + steps:
        sys.exit(f"llmc_peer: expected {warmup + steps} step lines from llm.c, read {len(rows)}:\n{out[-4000:]}")
    timed = [s for _, _, s in rows[warmup:]]
    return {"step_seconds": timed, **summary(timed, None), "losses": [loss for _, loss, _ in rows],
            "peak_resident_bytes": peak, "process_seconds": wall}


def run_ours(binary, model, threads, batch, seq, warmup, steps):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    cmd = [binary, "bench", "train", "--model", model, "--method", "full", "--batch", str(batch), "--seq",
           str(seq), "--steps", str(steps), "--warmup", str(warmup), "--device", "cpu", "--precision", "fp32",
           "--clip", "0", "--json"]
    rc, out, err, peak, wall = run_measured(cmd, env=env)
    if rc != 0:
        sys.exit(f"llmc_peer: {' '.join(cmd)} failed (exit {rc}):\n{out[-4000:]}{err[-4000:]}")
    r = json.loads(out.strip().splitlines()[-1])
    timed = r.get("step_seconds", [])[-steps:]  # each step's seconds, where bench train reports them
    return {"step_seconds": timed, **summary(timed, r["seconds_per_step"]), "losses": r["losses"],
            "threads": r.get("threads"), "phase_seconds": r.get("phase_seconds"),
            "peak_resident_bytes": peak, "process_seconds": wall}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llmc", required=True, help="an llm.c checkout (the folder holding train_gpt2.c)")
    ap.add_argument("--tunebench", default=os.path.join(ROOT, "build", "bin", "tunebench"))
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64, help="64 as llm.c's main(), or e.g. 128 (at most 1024)")
    ap.add_argument("--steps", type=int, default=10, help="timed steps")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps first, on both sides")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--json", help="also write the results as JSON to this file")
    a = ap.parse_args()
    if a.batch < 1 or a.seq < 2 or a.seq > 1024 or a.steps < 1 or a.warmup < 0 or a.threads < 1:
        ap.error("--batch, --steps and --threads must be positive, --warmup at least 0, --seq from 2 to 1024")
    llmc = os.path.abspath(a.llmc)
    if not os.access(a.tunebench, os.X_OK):
        sys.exit(f"llmc_peer: no tunebench at {a.tunebench} (build it, or pass --tunebench)")

    with tempfile.TemporaryDirectory(prefix="llmc-peer-") as tmp:
        folder = os.path.join(tmp, "llmc")
        os.makedirs(folder)
        compiler = build_llmc(llmc, folder, a.batch, a.seq, a.warmup + a.steps)
        model_dir = os.path.join(tmp, "gpt2-124m-random")
        random_gpt2(model_dir)
        transformers.utils.logging.disable_progress_bar()
        model = transformers.GPT2LMHeadModel.from_pretrained(model_dir, dtype=torch.float32).eval()
        write_llmc_checkpoint(model, os.path.join(folder, "gpt2_124M.bin"))
        vocab = model.config.vocab_size
        del model
        torch.manual_seed(0)  # the batch bench train draws
        ids = torch.randint(3, vocab, (a.batch, a.seq))
        data = os.path.join(folder, "dev", "data", "tinyshakespeare")
        os.makedirs(data)
        for split in ("train", "val"):
            write_llmc_tokens(os.path.join(data, f"tiny_shakespeare_{split}.bin"), ids,
                              max(a.warmup + a.steps, 5))

        print(f"GPT-2 124M (random, seed 0), full fine-tuning, fp32, batch {a.batch} x seq {a.seq}, AdamW lr 1e-4 "
              f"(0.9, 0.999, 1e-8), no weight decay, no clipping, {a.threads} threads, {a.steps} timed steps "
              f"after {a.warmup} warm-up\nllm.c: {llmc} built as: {compiler}\ntunebench: {a.tunebench}",
              flush=True)
        peer = run_llmc(folder, a.threads, a.warmup, a.steps)
        ours = run_ours(a.tunebench, model_dir, a.threads, a.batch, a.seq, a.warmup, a.steps)

    key = "median" if ours["median"] is not None else "mean"
    ratio = peer[key] / ours[key]

    def cell(v, fmt):
        return "-" if v is None else format(v, fmt)

    print(f"{'side':<10} {'s/step min':>10} {'median':>8} {'mean':>8} {'first loss':>10} {'peak RSS GiB':>12} "
          f"{'process s':>9}")
    for name, r in (("llm.c", peer), ("tunebench", ours)):
        print(f"{name:<10} {cell(r['min'], '.3f'):>10} {cell(r['median'], '.3f'):>8} {r['mean']:>8.3f} "
              f"{r['losses'][0]:>10.4f} {r['peak_resident_bytes'] / 2**30:>12.2f} {r['process_seconds']:>9.1f}")
    print(f"ratio llm.c / tunebench ({key} s/step): {ratio:.2f} (above 1: Tunebench faster); first-step loss "
          f"expected about ln({vocab}) = {math.log(vocab):.4f}")
    print("losses, step by step:\n  llm.c     " + " ".join(f"{x:.4f}" for x in peer["losses"]) +
          "\n  tunebench " + " ".join(f"{x:.4f}" for x in ours["losses"]))
    if ours.get("threads") not in (None, a.threads):
        print(f"warning: tunebench ran {ours['threads']} threads, not {a.threads}", file=sys.stderr)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model": "gpt2-124m-random", "batch": a.batch, "seq": a.seq, "steps": a.steps,
                       "warmup": a.warmup, "threads": a.threads, "llmc_build": compiler, "ratio": ratio,
                       "ratio_of": key, "llmc": peer, "tunebench": ours}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
