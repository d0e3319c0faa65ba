"""Side-by-side packing benchmark: `tunebench train` in three batching modes (padded, data.group_by_length,
data.packing) against transformers' Trainer with DataCollatorForLanguageModeling (padding to the longest in
the batch) and TRL's SFTTrainer with packing=True (strategy bfd: whole examples, positions restarting per
example), on the same random Llama, the same token ids, batch size and number of optimizer steps, fp32.

usage: python bench/packing_peer.py [--tunebench build/bin/tunebench] [--examples 2000] [--batch 8]
                                    [--steps 9] [--max-length 1024] [--seed 1] [--json FILE] [--workdir DIR]
The data: instruction examples of generated words (each word one token of the stories260k tokenizer) whose
token lengths are lognormal (median 120, sigma 0.8), clipped to [24, max_length]. Both sides read the same
JSONL (format text: BOS + text + EOS, loss on every token); the peers get the ids that sentencepiece gives,
and the script checks that their total equals Tunebench's.

Per mode: real (non-pad) tokens per second of the optimizer steps (batch assembly, forward, backward, clipping,
AdamW; the first step is a warm-up and not counted, on both sides) and padding waste (pad slots / all slots of
the batches trained in the counted steps). Tunebench's seconds and tokens come from its metrics.jsonl step
lines (tokens_per_s counts real tokens: the sequences' lengths before padding); its batches (and so its pad
slots) are recomputed here by the same order and bins (core/train/batching.cpp), checked against the step
lines' tokens. The peers are timed from fetching the batch to the end of the optimizer step.
"""
import argparse
import bisect
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import sentencepiece
import torch
import transformers

from common import ROOT

STORIES = os.path.join(ROOT, "datasets", "models", "stories260k")
M64 = (1 << 64) - 1


def random_llama_512(path, max_length):
    """A random Llama of about 3.4M parameters on the stories260k tokenizer (vocabulary 512), long enough
    positions for max_length."""
    cfg = transformers.LlamaConfig(vocab_size=512, hidden_size=256, intermediate_size=688, num_hidden_layers=4,
                                   num_attention_heads=4, num_key_value_heads=4, head_dim=64,
                                   max_position_embeddings=max(2048, max_length), rms_norm_eps=1e-5,
                                   tie_word_embeddings=True, bos_token_id=1, eos_token_id=2, pad_token_id=None)
    cfg.dtype = torch.float32
    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(cfg).save_pretrained(path, safe_serialization=True)
    shutil.copy(os.path.join(STORIES, "tokenizer.model"), path)
    with open(os.path.join(STORIES, "tokenizer_config.json")) as f:
        tc = json.load(f)
    tc["model_max_length"] = max(2048, max_length)
    with open(os.path.join(path, "tokenizer_config.json"), "w") as f:
        json.dump(tc, f, indent=1)


def make_data(path, sp, n, max_length, seed):
    """n rows {"text": ...}; returns the token ids of each (BOS + text + EOS) as sentencepiece encodes them."""
    rng = random.Random(seed)
    words = [sp.id_to_piece(i)[1:] for i in range(sp.get_piece_size())
             if sp.id_to_piece(i).startswith("\u2581") and sp.id_to_piece(i)[1:].isalpha()
             and len(sp.id_to_piece(i)) >= 4]
    ids, rows = [], []
    for _ in range(n):
        total = min(max_length, max(24, round(rng.lognormvariate(math.log(120), 0.8))))
        body = total - 2 - 6  # BOS, EOS and the two headers' tokens, about
        k = max(3, round(body * rng.uniform(0.1, 0.4)))
        text = ("Instruction: " + " ".join(rng.choice(words) for _ in range(k)) + ".\nResponse: "
                + " ".join(rng.choice(words) for _ in range(max(3, body - k))) + ".")
        t = [sp.bos_id()] + sp.encode(text) + [sp.eos_id()]
        while len(t) > max_length:  # the headers' count was a guess: drop words until it fits
            text = text[:text.rindex(" ")] + "."
            t = [sp.bos_id()] + sp.encode(text) + [sp.eos_id()]
        rows.append({"text": text})
        ids.append(t)
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return ids


# --- Tunebench's order and bins (core/train/batching.cpp), to count the pad slots of its batches ---------

class SplitMix64:
    def __init__(self, seed):
        self.s = seed & M64

    def next(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & M64
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def below(self, bound):
        limit = M64 - M64 % bound
        r = self.next()
        while r >= limit:
            r = self.next()
        return r % bound


def epoch_order(count, seed, epoch):
    order = list(range(count))
    mixed = SplitMix64(seed).next() ^ SplitMix64(epoch + 0x5851F42D4C957F2D).next()
    rng = SplitMix64(mixed)
    for i in range(count, 1, -1):
        j = rng.below(i)
        order[i - 1], order[j] = order[j], order[i - 1]
    return order


def length_grouped_order(lengths, batch, seed, epoch):
    order = epoch_order(len(lengths), seed, epoch)
    mega = 50 * batch
    for b in range(0, len(order), mega):
        order[b:b + mega] = sorted(order[b:b + mega], key=lambda i: -lengths[i])  # stable
    full = len(order) // batch
    batches = epoch_order(full, seed ^ 0x6E0B1E5EED, epoch)
    if full > 1:
        longest = 0
        for b in range(full):
            if lengths[order[batches[b] * batch]] > lengths[order[batches[longest] * batch]]:
                longest = b
        batches[0], batches[longest] = batches[longest], batches[0]
    out = [i for b in batches for i in order[b * batch:(b + 1) * batch]]
    return out + order[full * batch:]


def pack_bins(lengths, capacity, seed):
    shuffled = epoch_order(len(lengths), seed ^ 0xB1A5ED0C0FFEE, 0)
    order = sorted([i for i in shuffled if lengths[i] > 0], key=lambda i: -lengths[i])
    bins, open_ = [], []  # open_: sorted (free tokens, bin)
    for item in order:
        n = lengths[item]
        k = bisect.bisect_left(open_, (n, 0))
        if k < len(open_):
            left, b = open_.pop(k)
        else:
            left, b = capacity, len(bins)
            bins.append([])
        bins[b].append(item)
        if left - n > 0:
            bisect.insort(open_, (left - n, b))
    return bins


def tunebench_batches(lengths, mode, batch, steps, max_length, seed):
    """(real tokens, slots) of each of the first `steps` batches that `tunebench train` reads (one epoch)."""
    if mode == "packed":
        lengths = [sum(lengths[e] for e in b) for b in pack_bins(lengths, max_length, seed)]
    order = (length_grouped_order(lengths, batch, seed, 0) if mode == "grouped"
             else epoch_order(len(lengths), seed, 0))
    out = []
    for s in range(steps):
        rows = [lengths[i] for i in order[s * batch:(s + 1) * batch]]
        out.append((sum(rows), len(rows) * max(rows)))
    return out


def ours(binary, model, data, mode, a, workdir):
    overrides = {"padded": [], "grouped": ["data.group_by_length=true"], "packed": ["data.packing=true"]}[mode]
    cfg = {"name": mode, "model": model, "output_dir": os.path.join(workdir, "runs"), "method": "full",
           "precision": "fp32", "device": "cpu", "batch_size": a.batch, "grad_accum": 1, "max_steps": a.steps,
           "seed": a.seed, "log_every": a.steps, "eval_every": 0, "save_every": 0,
           "data": {"train_file": data, "format": "text", "chat_template": "plain", "val_ratio": 0, "max_length": a.max_length},
           "optim": {"optimizer": "adamw", "lr": 1e-4, "weight_decay": 0.0, "schedule": "constant",
                     "clip_norm": 1.0}}
    path = os.path.join(workdir, f"{mode}.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    t0 = time.perf_counter()
    proc = subprocess.run([binary, "train", "--config", path, "--json", *overrides], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"tunebench train ({mode}) failed: {proc.stderr.strip()}")
    out = proc.stdout
    wall = time.perf_counter() - t0
    summary = json.loads(out.strip().splitlines()[-1])
    steps = [json.loads(l) for l in open(os.path.join(summary["run_dir"], "metrics.jsonl"))]
    steps = [s for s in steps if s.get("type") == "step"]
    seen = [0] + [s["tokens_seen"] for s in steps]
    tokens = [seen[i + 1] - seen[i] for i in range(len(steps))]
    seconds = [t / s["tokens_per_s"] for t, s in zip(tokens, steps)]
    return {"tokens": tokens, "seconds": seconds, "summary": summary, "process_wall_s": wall}


def peer(kind, model_dir, ids, a, workdir):
    import datasets
    tok = transformers.AutoTokenizer.from_pretrained(model_dir)
    tok.pad_token = tok.unk_token  # id 0: padding never hides a real EOS from the labels
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32,
                                                              attn_implementation="sdpa")
    ds = datasets.Dataset.from_dict({"input_ids": ids})
    common = dict(output_dir=os.path.join(workdir, kind), per_device_train_batch_size=a.batch,
                  gradient_accumulation_steps=1, max_steps=a.steps, learning_rate=1e-4, weight_decay=0.0,
                  lr_scheduler_type="constant", max_grad_norm=1.0, optim="adamw_torch", seed=a.seed,
                  use_cpu=True, dataloader_num_workers=0, save_strategy="no", eval_strategy="no",
                  logging_steps=a.steps, report_to=[], disable_tqdm=True, bf16=False, fp16=False)
    record = {"tokens": [], "slots": [], "seconds": []}

    class Timed:
        def get_batch_samples(self, *args, **kw):
            self._t0 = time.perf_counter()
            samples, n = super().get_batch_samples(*args, **kw)
            for b in samples:
                x = b["input_ids"]
                if "attention_mask" in b:
                    record["tokens"].append(int(b["attention_mask"].sum()))
                else:  # padding-free: one flat row; the collator pads only to a multiple, if set
                    assert self.data_collator.pad_to_multiple_of is None, self.data_collator.pad_to_multiple_of
                    record["tokens"].append(x.numel())
                record["slots"].append(x.numel())
            return samples, n

    class Clock(transformers.TrainerCallback):
        def __init__(self):
            self.trainer = None

        def on_step_end(self, args, state, control, **kw):
            record["seconds"].append(time.perf_counter() - self.trainer._t0)

    clock = Clock()
    if kind == "trainer":
        class T(Timed, transformers.Trainer):
            pass
        trainer = T(model=model, args=transformers.TrainingArguments(**common), train_dataset=ds,
                    data_collator=transformers.DataCollatorForLanguageModeling(tok, mlm=False),
                    callbacks=[clock])
    else:
        import trl

        class T(Timed, trl.SFTTrainer):
            pass
        trainer = T(model=model, args=trl.SFTConfig(**common, packing=True, packing_strategy="bfd",
                                                    max_length=a.max_length, dataset_num_proc=None),
                    train_dataset=ds, processing_class=tok, callbacks=[clock])
        record["packed_tokens"] = sum(sum(r) for r in trainer.train_dataset["seq_lengths"])
        record["bins"] = len(trainer.train_dataset)
    clock.trainer = trainer
    trainer.train()
    return record


def figures(tokens, slots, seconds):
    """Counted steps: all but the first."""
    t, s, sec = sum(tokens[1:]), sum(slots[1:]), sum(seconds[1:])
    return {"real_tokens_per_s": t / sec, "waste": 1 - t / s, "seconds": sec, "real_tokens": t, "slots": s}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tunebench", default=os.path.join(ROOT, "build", "bin", "tunebench"))
    ap.add_argument("--examples", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=9)
    ap.add_argument("--max-length", type=int, default=1024)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="also write the rows as JSON to this file")
    ap.add_argument("--workdir", help="keep the model, data and runs here")
    a = ap.parse_args()
    import trl
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, trl {trl.__version__}, "
          f"threads {torch.get_num_threads()}, batch {a.batch}, {a.steps} steps (first not counted), fp32, "
          f"max_length {a.max_length}, load {os.getloadavg()[0]:.2f}", flush=True)
    workdir = a.workdir or tempfile.mkdtemp(prefix="packing-bench-")
    os.makedirs(workdir, exist_ok=True)
    model = os.path.join(workdir, "random-llama-3m")
    random_llama_512(model, a.max_length)
    sp = sentencepiece.SentencePieceProcessor(model_file=os.path.join(model, "tokenizer.model"))
    data = os.path.join(workdir, "train.jsonl")
    ids = make_data(data, sp, a.examples, a.max_length, a.seed)
    lengths = sorted(len(t) for t in ids)
    q = lambda p: lengths[min(len(lengths) - 1, int(p * len(lengths)))]
    print(f"{a.examples} examples, {sum(lengths)} tokens: min {lengths[0]}, median {q(0.5)}, p90 {q(0.9)}, "
          f"p99 {q(0.99)}, max {lengths[-1]}, mean {sum(lengths) / len(lengths):.1f}", flush=True)
    file_lengths = [len(t) for t in ids]

    rows = {}
    for mode in ("padded", "grouped", "packed"):
        o = ours(a.tunebench, model, data, mode, a, workdir)
        plan = tunebench_batches(file_lengths, mode, a.batch, a.steps, a.max_length, a.seed)
        if [p[0] for p in plan] != o["tokens"]:
            sys.exit(f"{mode}: the recomputed batches {[p[0] for p in plan]} differ from tunebench's "
                     f"{o['tokens']}")
        if mode == "packed" and o["summary"]["packing"]["tokens"] != sum(file_lengths):
            sys.exit(f"tunebench packed {o['summary']['packing']['tokens']} tokens, sentencepiece gives "
                     f"{sum(file_lengths)}")
        rows[mode] = figures(o["tokens"], [p[1] for p in plan], o["seconds"])
        rows[mode]["summary_tokens_per_second"] = o["summary"]["tokens_per_second"]
        rows[mode]["packing"] = o["summary"]["packing"]
        rows[mode]["process_wall_s"] = o["process_wall_s"]
        print(f"tunebench {mode}: {rows[mode]['real_tokens_per_s']:.0f} real tok/s, waste "
              f"{100 * rows[mode]['waste']:.1f} %", flush=True)
    for kind in ("trainer", "sft_packing"):
        r = peer(kind, model, ids, a, workdir)
        if kind == "sft_packing" and r["packed_tokens"] != sum(file_lengths):
            sys.exit(f"trl packed {r['packed_tokens']} tokens, the data has {sum(file_lengths)}")
        rows[kind] = figures(r["tokens"], r["slots"], r["seconds"])
        if "bins" in r:
            rows[kind]["bins"] = r["bins"]
        print(f"{kind}: {rows[kind]['real_tokens_per_s']:.0f} real tok/s, waste "
              f"{100 * rows[kind]['waste']:.1f} %", flush=True)

    names = {"padded": "Tunebench padded", "grouped": "Tunebench group_by_length", "packed": "Tunebench packed",
             "trainer": "Trainer + DataCollatorForLanguageModeling", "sft_packing": "SFTTrainer packing (bfd)"}
    print(f"\n{'mode':<42} {'real tok/s':>10} {'pad waste':>9} {'real tokens':>11} {'seconds':>8}")
    for k, r in rows.items():
        print(f"{names[k]:<42} {r['real_tokens_per_s']:>10.0f} {100 * r['waste']:>8.1f}% {r['real_tokens']:>11} "
              f"{r['seconds']:>8.2f}")
    ratios = {"padded / Trainer": rows["padded"]["real_tokens_per_s"] / rows["trainer"]["real_tokens_per_s"],
              "grouped / Trainer": rows["grouped"]["real_tokens_per_s"] / rows["trainer"]["real_tokens_per_s"],
              "packed / SFTTrainer packing":
                  rows["packed"]["real_tokens_per_s"] / rows["sft_packing"]["real_tokens_per_s"],
              "packed / padded (Tunebench)": rows["packed"]["real_tokens_per_s"] / rows["padded"]["real_tokens_per_s"]}
    for k, v in ratios.items():
        print(f"ratio {k}: {v:.2f}")
    print(f"load after: {os.getloadavg()[0]:.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"batch": a.batch, "steps": a.steps, "max_length": a.max_length, "examples": a.examples,
                       "rows": rows, "ratios": ratios}, f, indent=1)
    if not a.workdir:
        shutil.rmtree(workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
