"""Side-by-side DPO benchmark: `tunebench train` with objective dpo against TRL's DPOTrainer, on the same
random Llama folder, the same preference pairs in the same order, batch size, max_length, number of optimizer
steps and optimizer (AdamW, constant lr, clipping at 1.0, fp32), for LoRA (rank 16 on every linear layer of
the blocks; the reference is the policy with its adapters switched off on both sides) and full fine-tuning
(the reference is a frozen copy of the model on both sides).

usage: python bench/dpo_peer.py [--tunebench build/bin/tunebench] [--batch 8] [--steps 6] [--max-length 256]
                                [--repeats 3] [--modes lora,full] [--seed 1] [--json FILE] [--workdir DIR]
The data: batch x steps conversational pairs in TRL's standard layout ({"prompt": [user], "chosen":
[assistant], "rejected": [assistant]}), generated words that are one token each of the stories260k tokenizer,
so one epoch is exactly the run. Both sides render them with the chat template of the model folder
(tokenizer_config.json; Tunebench's chat_template "model"). TRL reads the pairs in the order Tunebench's epoch
shuffle gives (train_sampling_strategy "sequential" over the reordered rows), so every step sees the same
pairs on both sides; the script checks that each step's real tokens (prompt + answer of the chosen and the
rejected row of every pair: Tunebench's `tokens_seen` increments, TRL's attention_mask sums) are equal.

Per step: real tokens over the seconds of the optimizer step. Tunebench's come from its metrics.jsonl step lines
(the step's own clock in core/train/preference.cpp: batch assembly, the policy's forward, the reference's
no-grad forward, the loss, backward, clipping, AdamW, zeroing; the memory snapshots it takes are inside).
TRL's are timed from fetching and collating the batch (get_batch_samples) to on_step_end (forward of policy
and reference, loss, backward, clipping, AdamW, scheduler, zero_grad); the on_step_begin clock, without the
collation, is kept too. The first step of each run is a warm-up and not counted, on both sides. Each side runs
`--repeats` times, alternating, one after the other; the table shows the median tokens/s.
"""
import argparse
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import sentencepiece
import torch
import transformers

from common import ROOT
from packing_peer import epoch_order, random_llama_512

CHAT_TEMPLATE = ("{% for m in messages %}{% if m['role'] == 'user' %}Q: {{ m['content'] }}\n"
                 "{% else %}A: {{ m['content'] }}\n{% endif %}{% endfor %}"
                 "{% if add_generation_prompt %}A:{% endif %}")
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
RANK, ALPHA, LR, BETA = 16, 32, 1e-4, 0.1


def make_model(path, max_length):
    random_llama_512(path, max_length)
    cfg_path = os.path.join(path, "tokenizer_config.json")
    with open(cfg_path) as f:
        tc = json.load(f)
    tc["chat_template"] = CHAT_TEMPLATE
    with open(cfg_path, "w") as f:
        json.dump(tc, f, indent=1)


def make_pairs(path, sp, n, max_length, seed):
    """n conversational pairs: prompts of lognormal length (median 32 words), answers (median 64 words) that
    share a start and differ in their ends; prompt + longer answer stays within max_length - 16 words."""
    rng = random.Random(seed)
    words = [sp.id_to_piece(i)[1:] for i in range(sp.get_piece_size())
             if sp.id_to_piece(i).startswith("\u2581") and sp.id_to_piece(i)[1:].isalpha()
             and len(sp.id_to_piece(i)) >= 4]
    say = lambda k: " ".join(rng.choice(words) for _ in range(k))
    clip = lambda x, lo, hi: min(hi, max(lo, round(x)))
    rows = []
    for _ in range(n):
        p = clip(rng.lognormvariate(math.log(32), 0.5), 8, max_length // 3)
        room = max_length - 16 - p
        shared = clip(rng.lognormvariate(math.log(40), 0.6), 4, room // 2)
        c = clip(rng.lognormvariate(math.log(24), 0.6), 3, room - shared)
        r = clip(rng.lognormvariate(math.log(24), 0.6), 3, room - shared)
        start = say(shared)
        rows.append({"prompt": [{"role": "user", "content": "Tell a story about " + say(p) + "."}],
                     "chosen": [{"role": "assistant", "content": start + " " + say(c) + ". The end."}],
                     "rejected": [{"role": "assistant", "content": start + " " + say(r) + "."}]})
    with open(path, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    return rows


def ours(binary, model, data, mode, a, workdir, rep):
    cfg = {"name": f"{mode}-{rep}", "model": model, "output_dir": os.path.join(workdir, "runs"),
           "objective": "dpo", "preference": {"beta": BETA, "reference": "auto"}, "method": mode,
           "precision": "fp32", "device": "cpu", "batch_size": a.batch, "grad_accum": 1, "max_steps": a.steps,
           "seed": a.seed, "log_every": 1, "eval_every": 0, "save_every": 0,
           "data": {"train_file": data, "chat_template": "model", "val_ratio": 0, "max_length": a.max_length},
           "optim": {"optimizer": "adamw", "lr": LR, "weight_decay": 0.0, "schedule": "constant",
                     "warmup_steps": 0, "clip_norm": 1.0}}
    if mode == "lora":
        cfg["lora"] = {"rank": RANK, "alpha": ALPHA, "dropout": 0.0, "targets": TARGETS}
        cfg["trainable_tokens"] = []  # no EOS embedding row beside the adapters: PEFT's LoraConfig has none
    path = os.path.join(workdir, f"{mode}-{rep}.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    t0 = time.perf_counter()
    proc = subprocess.run([binary, "train", "--config", path, "--json"], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"tunebench train ({mode}) failed: {proc.stderr.strip()}")
    wall = time.perf_counter() - t0
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    with open(os.path.join(summary["run_dir"], "run.json")) as f:
        info = json.load(f)
    lines = [json.loads(l) for l in open(os.path.join(summary["run_dir"], "metrics.jsonl"))]
    steps = [s for s in lines if s.get("type") == "step"]
    seen = [0] + [s["tokens_seen"] for s in steps]
    tokens = [seen[i + 1] - seen[i] for i in range(len(steps))]
    seconds = [t / s["tokens_per_s"] for t, s in zip(tokens, steps)]
    return {"tokens": tokens, "seconds": seconds, "loss": [s["loss"] for s in steps],
            "accuracies": [s.get("rewards/accuracies") for s in steps], "data": info.get("data"),
            "trainable": summary.get("trainable_parameters"), "process_wall_s": wall}


def peer(mode, model_dir, rows, order, a, workdir):
    import datasets
    import trl
    from peft import LoraConfig

    tok = transformers.AutoTokenizer.from_pretrained(model_dir)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token  # Tunebench pads with EOS too; the attention mask hides it
    load = lambda: transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32,
                                                                     attn_implementation="sdpa")
    model = load()
    ds = datasets.Dataset.from_list([rows[i] for i in order])
    args = trl.DPOConfig(output_dir=os.path.join(workdir, f"trl-{mode}"), per_device_train_batch_size=a.batch,
                         gradient_accumulation_steps=1, max_steps=a.steps, learning_rate=LR, weight_decay=0.0,
                         lr_scheduler_type="constant", warmup_steps=0, max_grad_norm=1.0, optim="adamw_torch",
                         seed=a.seed, use_cpu=True, dataloader_num_workers=0, save_strategy="no",
                         eval_strategy="no", logging_steps=1, report_to=[], disable_tqdm=True, bf16=False,
                         fp16=False, gradient_checkpointing=False, beta=BETA, loss_type=["sigmoid"],
                         max_length=a.max_length, train_sampling_strategy="sequential")
    record = {"tokens": [], "seconds": [], "seconds_from_step_begin": []}

    class Timed:
        def get_batch_samples(self, *args, **kw):
            self._t0 = time.perf_counter()
            samples, n = super().get_batch_samples(*args, **kw)
            record["tokens"].append(sum(int(b["attention_mask"].sum()) for b in samples))
            return samples, n

    class Clock(transformers.TrainerCallback):
        def __init__(self):
            self.trainer, self.begin = None, None

        def on_step_begin(self, args, state, control, **kw):
            self.begin = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            now = time.perf_counter()
            record["seconds"].append(now - self.trainer._t0)
            record["seconds_from_step_begin"].append(now - self.begin)

    class T(Timed, trl.DPOTrainer):
        pass

    extra = ({"peft_config": LoraConfig(r=RANK, lora_alpha=ALPHA, lora_dropout=0.0, target_modules=TARGETS,
                                        task_type="CAUSAL_LM")}
             if mode == "lora" else {"ref_model": load()})
    clock = Clock()
    trainer = T(model=model, args=args, train_dataset=ds, processing_class=tok, callbacks=[clock], **extra)
    clock.trainer = trainer
    trainer.remove_callback(transformers.trainer_callback.PrinterCallback)
    record["dataset_tokens"] = sum(2 * len(r["prompt_ids"]) + len(r["chosen_ids"]) + len(r["rejected_ids"])
                                   for r in trainer.train_dataset)
    record["pairs"] = len(trainer.train_dataset)
    record["trainable"] = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
    trainer.train()
    logs = [e for e in trainer.state.log_history if "loss" in e]
    record["loss"] = [e["loss"] for e in logs]
    record["accuracies"] = [e.get("rewards/accuracies") for e in logs]
    return record


def counted(run):
    """tokens/s over all steps but the first."""
    return sum(run["tokens"][1:]) / sum(run["seconds"][1:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tunebench", default=os.path.join(ROOT, "build", "bin", "tunebench"))
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--modes", default="lora,full")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="also write the rows as JSON to this file")
    ap.add_argument("--workdir", help="keep the model, data and runs here")
    a = ap.parse_args()
    import datasets
    import peft
    import trl
    import logging
    import warnings
    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    datasets.disable_progress_bars()
    logging.getLogger("trl").setLevel(logging.ERROR)
    versions = {"torch": torch.__version__, "transformers": transformers.__version__, "trl": trl.__version__,
                "peft": peft.__version__}
    print(", ".join(f"{k} {v}" for k, v in versions.items()) + f", threads {torch.get_num_threads()}, "
          f"batch {a.batch} pairs, {a.steps} steps (first not counted), max_length {a.max_length}, fp32, AdamW "
          f"lr {LR} constant, clip 1.0, beta {BETA}, {a.repeats} repeats, load {os.getloadavg()[0]:.2f}",
          flush=True)
    workdir = a.workdir or tempfile.mkdtemp(prefix="dpo-bench-")
    os.makedirs(workdir, exist_ok=True)
    model = os.path.join(workdir, "random-llama-3m")
    make_model(model, a.max_length)
    sp = sentencepiece.SentencePieceProcessor(model_file=os.path.join(model, "tokenizer.model"))
    data = os.path.join(workdir, "pairs.jsonl")
    n = a.batch * a.steps
    rows = make_pairs(data, sp, n, a.max_length, a.seed)
    order = epoch_order(n, a.seed, 0)

    modes = a.modes.split(",")
    runs = {m: {"tunebench": [], "trl": []} for m in modes}
    for rep in range(a.repeats):
        for mode in modes:
            o = ours(a.tunebench, model, data, mode, a, workdir, rep)
            p = peer(mode, model, rows, order, a, workdir)
            if o["data"]["train_pairs"] != n or p["pairs"] != n or o["data"]["truncated"]:
                sys.exit(f"pairs: tunebench {o['data']}, trl {p['pairs']}, generated {n}")
            if o["tokens"] != p["tokens"]:
                sys.exit(f"{mode}: per-step tokens differ: tunebench {o['tokens']}, trl {p['tokens']}")
            if sum(o["tokens"]) != p["dataset_tokens"]:
                sys.exit(f"{mode}: tunebench trained {sum(o['tokens'])} tokens, trl's dataset has "
                         f"{p['dataset_tokens']}")
            if o["trainable"] != p["trainable"]:
                sys.exit(f"{mode}: trainable parameters: tunebench {o['trainable']}, trl {p['trainable']}")
            runs[mode]["tunebench"].append(o)
            runs[mode]["trl"].append(p)
            print(f"repeat {rep + 1} {mode}: tokens {sum(o['tokens'])} on both sides (trl's tokenized pairs: "
                  f"{p['dataset_tokens']}), trainable {o['trainable']:,}; tunebench {counted(o):.0f} tok/s, "
                  f"trl {counted(p):.0f} tok/s ({sum(p['tokens'][1:]) / sum(p['seconds_from_step_begin'][1:]):.0f} "
                  f"from on_step_begin); losses differ by at most "
                  f"{max(abs(x - y) for x, y in zip(o['loss'], p['loss'])):.1e}; "
                  f"load {os.getloadavg()[0]:.2f}", flush=True)

    table = []
    print(f"\n{'mode':<6} {'tunebench tok/s':>16} {'TRL tok/s':>10} {'ratio':>6}   (median of {a.repeats}; "
          f"each run: min-max)")
    for mode in modes:
        ours_r = [counted(o) for o in runs[mode]["tunebench"]]
        trl_r = [counted(p) for p in runs[mode]["trl"]]
        o, p = statistics.median(ours_r), statistics.median(trl_r)
        print(f"{mode:<6} {o:>16.0f} {p:>10.0f} {o / p:>6.2f}   ({min(ours_r):.0f}-{max(ours_r):.0f} / "
              f"{min(trl_r):.0f}-{max(trl_r):.0f})")
        table.append({"mode": mode, "tunebench_tokens_per_s": o, "trl_tokens_per_s": p, "ratio": o / p,
                      "tunebench_runs": ours_r, "trl_runs": trl_r,
                      "tokens_per_step": runs[mode]["tunebench"][0]["tokens"],
                      "trainable_parameters": runs[mode]["tunebench"][0]["trainable"],
                      "trl_runs_from_step_begin": [sum(r["tokens"][1:]) / sum(r["seconds_from_step_begin"][1:])
                                                   for r in runs[mode]["trl"]],
                      "tunebench_step_seconds": [r["seconds"] for r in runs[mode]["tunebench"]],
                      "trl_step_seconds": [r["seconds"] for r in runs[mode]["trl"]],
                      "tunebench_loss": runs[mode]["tunebench"][0]["loss"],
                      "trl_loss": runs[mode]["trl"][0]["loss"]})
    print(f"load after: {os.getloadavg()[0]:.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"versions": versions, "threads": torch.get_num_threads(), "batch": a.batch,
                       "steps": a.steps, "max_length": a.max_length, "pairs": n, "repeats": a.repeats,
                       "rows": table}, f, indent=1)
    if not a.workdir:
        shutil.rmtree(workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
