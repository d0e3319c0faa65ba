"""Side-by-side data-parallel benchmark: `tunebench train --nproc N` against PyTorch's own
DistributedDataParallel started by torchrun, on the same model, sequences, batches and optimizer, for N = 1 and 2
processes (Gloo on the CPU; `--device cuda` measures NCCL, one GPU per process).

usage: python bench/ddp_peer.py [--tunebench build/bin/tunebench] [--config datasets/examples/full-tiny.json]
                                [--nprocs 1,2] [--steps 120] [--skip 10] [--repeats 3] [--threads 1]
                                [--device cpu|cuda] [--wait-quiet 120] [--max-others 0.25] [--retries 2]
                                [--tunebench-launcher nproc|torchrun] [--threads-reference] [--json FILE]
                                [--workdir DIR]
Both sides do full fine-tuning of the config's model (the bundled stories260k) on its train_file, rendered with
its chat template (alpaca) and tokenized as Tunebench does (core/data/example.cpp: BOS, the prompt segment and
the answer segment encoded on their own, EOS, loss on the answer, cut at max_length); the peer takes every
step's global batch of N x batch_size sequences in Tunebench's epoch order (core/train/batching.cpp) and each rank
its contiguous share (core/dist/sampler.cpp), pads with EOS to the longest of its share, normalises the summed
loss over the global step's loss tokens (an all-reduce of the counts, as Tunebench does) and steps AdamW with the
config's learning rate, warm-up, cosine decay and clipping. The script checks that every step reads the same
number of tokens on both sides and prints how far the two sides' losses drift apart.

Figures: steady-state tokens/s of rank 0's step clock (batch assembly, forward, backward with the gradient
all-reduce, clipping, AdamW), the first --skip steps left out: a run's figure is the median of its steps' own
tokens/s (the mean, all their tokens over all their seconds, is printed too). Every run is a process tree of its
own, the sides and world sizes alternate, and each figure is the median (min-max) of --repeats runs. Before each
run the script waits (up to --wait-quiet s) for the machine to go quiet, measures how many cores other processes
took during the run (/proc/stat's busy time less our own processes' CPU time) and runs it again (up to --retries
times) when that was more than --max-others; "others" in the table is the most of the runs kept. Under load the
launchers differ: torchrun starts every worker in a session of its own, and Linux's autogroup scheduler shares the
CPU between sessions, so its workers get more of a busy machine than `--nproc`'s ranks, which share the launcher's
session; --tunebench-launcher torchrun puts Tunebench's ranks on the same footing. Scaling efficiency at N:
tokens/s at N / (N x tokens/s at 1). Under torchrun this file is also the peer's worker (--worker).
"""
import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from common import ROOT

DEFAULT_CONFIG = os.path.join(ROOT, "datasets", "examples", "full-tiny.json")
IGNORE = -100


# --- the run both sides train --------------------------------------------------------------------------------

def bench_config(a, name, workdir):
    """The example config with absolute paths, no validation or evaluation, the divergence guard off (a spike on
    a near-zero loss after many epochs of the tiny set would pause the run) and the benchmark's step count."""
    with open(a.config) as f:
        cfg = json.load(f)
    base = os.path.dirname(os.path.abspath(a.config))
    if cfg.get("method", "lora") != "full":
        sys.exit(f"{a.config}: the peer does full fine-tuning only (method: full)")
    data = cfg["data"]
    out = {"name": name, "model": os.path.normpath(os.path.join(base, cfg["model"])),
           "output_dir": os.path.join(workdir, "runs"), "method": "full", "device": a.device, "precision": "fp32",
           "batch_size": cfg.get("batch_size", 8), "grad_accum": 1, "max_steps": a.steps, "seed": cfg.get("seed", 0),
           "eval_every": 0, "log_every": a.steps, "save_every": 0, "spike_factor": 0,
           "data": {"train_file": os.path.normpath(os.path.join(base, data["train_file"])),
                    "chat_template": data.get("chat_template", "alpaca"),
                    "loss_on_responses_only": data.get("loss_on_responses_only", True),
                    "max_length": data.get("max_length", 256), "val_ratio": 0},
           "optim": dict(cfg.get("optim", {}))}
    if out["data"]["chat_template"] != "alpaca" or not out["data"]["loss_on_responses_only"]:
        sys.exit(f"{a.config}: the peer renders chat_template alpaca with loss on the responses only")
    o = out["optim"]
    if o.get("optimizer", "adamw") != "adamw" or o.get("weight_decay", 0.0) != 0.0:
        sys.exit(f"{a.config}: the peer runs AdamW without weight decay")
    return out


def learning_rate(optim, step, total):
    """core/train/schedule.cpp, learningRateAt (0-based step)."""
    lr, warmup = optim.get("lr", 1e-3), optim.get("warmup_steps", 0)
    if warmup <= 0:
        warmup = round(optim.get("warmup_ratio", 0.0) * total)
    if step < warmup:
        return lr * (step + 1) / warmup
    kind, low = optim.get("schedule", "cosine"), optim.get("min_lr", 0.0)
    if kind == "constant":
        return lr
    p = min(max((step - warmup) / max(1, total - warmup), 0.0), 1.0)
    if kind == "linear":
        return low + (lr - low) * (1.0 - p)
    return low + (lr - low) * 0.5 * (1.0 + math.cos(math.pi * p))


def tokenize(path, sp, max_length):
    """(ids, labels) of every alpaca row as Tunebench's family path renders and tokenizes it
    (core/data/record.cpp, core/tokenizer/chat_template.cpp renderAlpaca, core/data/example.cpp
    tokenizeExample, core/train/batching.cpp shiftedLabels)."""
    out = []
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            r = json.loads(line)
            user = r["instruction"] + ("\n\n" + r["input"] if r.get("input") else "")
            prompt = [sp.bos_id()] + sp.encode("### Instruction:\n" + user + "\n\n### Response:\n")
            answer = sp.encode(r["output"]) + [sp.eos_id()]
            ids = (prompt + answer)[:max_length]
            mask = ([0] * len(prompt) + [1] * len(answer))[:max_length]
            labels = [ids[i + 1] if mask[i + 1] else IGNORE for i in range(len(ids) - 1)] + [IGNORE]
            out.append((ids, labels))
    return out


def global_batches(count, batch, seed, steps):
    """The indices of each step's global micro-batch (core/train/recipe_parts.cpp nextMicroBatch over
    epochOrder): consecutive slices of the epoch's order, the last one of an epoch shorter."""
    from packing_peer import epoch_order  # Tunebench's shuffle (SplitMix64 Fisher-Yates)
    epoch, cursor, order = 0, 0, epoch_order(count, seed, 0)
    for _ in range(steps):
        if cursor >= len(order):
            epoch, cursor = epoch + 1, 0
            order = epoch_order(count, seed, epoch)
        yield order[cursor:cursor + batch]
        cursor = min(len(order), cursor + batch)


# --- the peer: one rank under torchrun ------------------------------------------------------------------------

def worker(a):
    import sentencepiece
    import torch
    import torch.distributed as dist
    import transformers
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(a.threads)
    cuda = a.device == "cuda"
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", rank))
    device = torch.device("cuda", local) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    with open(a.worker) as f:
        cfg = json.load(f)
    sp = sentencepiece.SentencePieceProcessor(model_file=os.path.join(cfg["model"], "tokenizer.model"))
    seqs = tokenize(cfg["data"]["train_file"], sp, cfg["data"]["max_length"])
    model = transformers.AutoModelForCausalLM.from_pretrained(cfg["model"], dtype=torch.float32,
                                                              attn_implementation="sdpa").to(device)
    model.train()
    ddp = DDP(model, device_ids=[local] if cuda else None)
    params = [p for p in model.parameters() if p.requires_grad]
    o = cfg["optim"]
    opt = torch.optim.AdamW(params, lr=o.get("lr", 1e-3), betas=(o.get("beta1", 0.9), o.get("beta2", 0.999)),
                            eps=o.get("eps", 1e-8), weight_decay=0.0)
    pad, steps, batch = sp.eos_id(), cfg["max_steps"], cfg["batch_size"]

    def sync():
        if cuda:
            torch.cuda.synchronize()

    rows = []
    for step, indices in enumerate(global_batches(len(seqs), batch * world, cfg["seed"], steps)):
        sync()
        t0 = time.perf_counter()
        share = indices[len(indices) * rank // world:len(indices) * (rank + 1) // world]
        empty = not share  # an empty share of an epoch's tail: one masked token, zero gradients
        mine = [seqs[i] for i in share] or [([pad], [IGNORE])]
        width = max(len(ids) for ids, _ in mine)
        ids = torch.tensor([s + [pad] * (width - len(s)) for s, _ in mine], device=device)
        labels = torch.tensor([l + [IGNORE] * (width - len(l)) for _, l in mine], device=device)
        counts = torch.tensor([int((labels != IGNORE).sum()), 0 if empty else sum(len(s) for s, _ in mine)],
                              dtype=torch.int64, device=device)
        dist.all_reduce(counts)  # the global step's loss tokens and tokens
        logits = ddp(input_ids=ids).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1),
                                                 ignore_index=IGNORE, reduction="sum") / max(int(counts[0]), 1)
        (loss * world).backward()  # DDP averages over the ranks: the sum over the global batch remains
        torch.nn.utils.clip_grad_norm_(params, o.get("clip_norm", 1.0))
        for g in opt.param_groups:
            g["lr"] = learning_rate(o, step, steps)
        opt.step()
        opt.zero_grad(set_to_none=True)
        total = loss.detach().to(torch.float64)
        dist.all_reduce(total)  # the step's loss, as Tunebench reports it
        value = total.item()
        sync()
        rows.append({"step": step + 1, "tokens": int(counts[1]), "seconds": time.perf_counter() - t0, "loss": value})
    if rank == 0:
        with open(a.out, "w") as f:
            json.dump({"rows": rows, "threads": torch.get_num_threads()}, f)
    dist.destroy_process_group()


# --- the driver -----------------------------------------------------------------------------------------------

def child_env(threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads), PYTHONUNBUFFERED="1")
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    return env


def busy_seconds():
    """CPU seconds the whole machine has been busy (all cores, /proc/stat), and those of our waited-for
    descendants: their difference over a run is what other processes took."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK"), r.ru_utime + r.ru_stime


def wait_quiet(limit_s):
    """Waits (up to limit_s) until other processes take under a fifth of a core over 3 s; returns the wait."""
    t0 = time.perf_counter()
    while True:
        b0 = busy_seconds()[0]
        time.sleep(3)
        if (busy_seconds()[0] - b0) / 3 < 0.2 or time.perf_counter() - t0 > limit_s:
            return time.perf_counter() - t0


def timed(cmd, threads):
    """Runs cmd; returns the process, its wall seconds and the cores other processes used meanwhile."""
    (b0, c0), t0 = busy_seconds(), time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=child_env(threads))
    wall = time.perf_counter() - t0
    b1, c1 = busy_seconds()
    return proc, wall, max(0.0, (b1 - b0) - (c1 - c0)) / wall


def ours(a, n, name, workdir, one_process=False):
    """`tunebench train --nproc n`; one_process: instead one plain process with n x batch_size sequences a step
    and n x --threads intra-op threads (the same global batches, the machine's cores as threads)."""
    cfg = bench_config(a, name, workdir)
    if one_process:
        cfg["batch_size"] *= n
    path = os.path.join(workdir, name + ".json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    cmd = [a.tunebench, "train", "--config", path, "--json"]
    if one_process:
        pass
    elif a.tunebench_launcher == "torchrun":  # the peer's launcher: each rank a session of its own
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(n), "--standalone",
               "--no-python"] + cmd
    else:
        cmd = cmd[:2] + ["--nproc", str(n)] + cmd[2:]
    proc, wall, others = timed(cmd, a.threads * (n if one_process else 1))
    if proc.returncode != 0:
        sys.exit(f"tunebench train ({name}) failed:\n{proc.stderr.strip()[-2000:]}")
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    with open(os.path.join(summary["run_dir"], "metrics.jsonl")) as f:
        steps = [s for s in map(json.loads, f) if s.get("type") == "step"]
    with open(os.path.join(summary["run_dir"], "run.json")) as f:
        backend = json.load(f).get("dist", {}).get("backend")
    seen = [0] + [s["tokens_seen"] for s in steps]
    rows = [{"step": s["step"], "tokens": seen[i + 1] - seen[i], "loss": s["loss"],
             "seconds": (seen[i + 1] - seen[i]) / s["tokens_per_s"]} for i, s in enumerate(steps)]
    return {"rows": rows, "wall_s": wall, "others_cores": others, "backend": backend}


def peer(a, n, name, workdir):
    path = os.path.join(workdir, name + ".json")
    with open(path, "w") as f:
        json.dump(bench_config(a, name, workdir), f)
    out = os.path.join(workdir, name + ".out.json")
    proc, wall, others = timed([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(n),
                                "--standalone", os.path.abspath(__file__), "--worker", path, "--out", out,
                                "--device", a.device, "--threads", str(a.threads)], a.threads)
    if proc.returncode != 0:
        sys.exit(f"torchrun --nproc-per-node {n} failed:\n{proc.stderr.strip()[-2000:]}")
    with open(out) as f:
        result = json.load(f)
    result.update(wall_s=wall, others_cores=others, backend="nccl" if a.device == "cuda" else "gloo")
    return result


def steady(run, skip):
    """Steady-state tokens/s of a run after its first `skip` steps: the median of the steps' own tokens/s (a step
    that another process interrupted moves it little), and all their tokens over all their seconds (the mean)."""
    rows = run["rows"][skip:]
    return (statistics.median(r["tokens"] / r["seconds"] for r in rows),
            sum(r["tokens"] for r in rows) / sum(r["seconds"] for r in rows))


def spread(values):
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}-{max(values):,.0f})"


def report(res, nprocs, skip):
    """Per side and N: tokens/s (median step, and mean), the scaling efficiency against the first N (of the
    medians, and the range over the repeats, each run against the same repeat's baseline), and our ratio."""
    print(f"\nsteady-state tokens/s of rank 0's steps {skip + 1}-: median (min-max) over the runs of each run's "
          f"median step; efficiency = tokens/s at N / (N x at {nprocs[0]}), of the medians (range over the repeats)")
    print(f"{'side':<12} {'N':>2} {'tok/s, median step':>24} {'tok/s, mean':>24} {'efficiency':>18} "
          f"{'wall s':>7} {'others':>7}")
    summary, base = {}, nprocs[0]
    for side in ("tunebench", "pytorch_ddp"):
        for n in nprocs:
            runs = res[side][n]
            med, mean = zip(*(steady(r, skip) for r in runs))
            summary[(side, n)] = {"tokens_per_s": list(med), "tokens_per_s_mean": list(mean)}
            eff = ""
            if n != base:
                pairs = [m * base / (n * steady(one, skip)[0]) for m, one in zip(med, res[side][base])]
                b = summary[(side, base)]["tokens_per_s"]
                e = statistics.median(med) * base / (n * statistics.median(b))
                summary[(side, n)].update(efficiency=e, efficiency_runs=pairs)
                eff = f"{e:.2f} ({min(pairs):.2f}-{max(pairs):.2f})"
            print(f"{side:<12} {n:>2} {spread(med):>24} {spread(mean):>24} {eff or '-':>18} "
                  f"{statistics.median(r['wall_s'] for r in runs):>7.1f} {max(r['others_cores'] for r in runs):>7.2f}")
    if res["threads"]:
        n, runs = nprocs[-1], res["threads"]
        med, mean = zip(*(steady(r, skip) for r in runs))
        summary[("one_process", n)] = {"tokens_per_s": list(med), "tokens_per_s_mean": list(mean)}
        print(f"{'1 process':<12} {n:>2} {spread(med):>24} {spread(mean):>24} {'-':>18} "
              f"{statistics.median(r['wall_s'] for r in runs):>7.1f} {max(r['others_cores'] for r in runs):>7.2f}")
        print(f"(1 process: Tunebench without --nproc, batch {n} x batch_size and {n} x --threads intra-op threads: "
              f"the same global batches on the same cores)")
    print("(wall s: the median run's process wall time, start-up included; others: the most cores other processes "
          "took during one of the runs)")
    print("\nTunebench / PyTorch DDP, tokens/s: of the medians (range over the repeats' pairs of runs)")
    for n in nprocs:
        o, p = summary[("tunebench", n)]["tokens_per_s"], summary[("pytorch_ddp", n)]["tokens_per_s"]
        pairs = [x / y for x, y in zip(o, p)]
        summary[("ratio", n)] = {"ratio": statistics.median(o) / statistics.median(p), "runs": pairs}
        print(f"  N={n}: {statistics.median(o) / statistics.median(p):.2f} ({min(pairs):.2f}-{max(pairs):.2f})")
    return summary


def check_same_work(res, nprocs):
    """Every run of a world size reads the same tokens in every step, on both sides (and the one-process
    reference); returns per N the largest relative loss gap of the first pair of runs over the first 10 steps and
    its largest absolute gap over all (relative gaps mean little once the loss nears 0)."""
    gaps = {}
    for n in nprocs:
        runs = res["tunebench"][n] + res["pytorch_ddp"][n] + (res["threads"] if n == nprocs[-1] else [])
        o, p = res["tunebench"][n][0]["rows"], res["pytorch_ddp"][n][0]["rows"]
        tokens = [x["tokens"] for x in o]
        for k, run in enumerate(runs):
            if [x["tokens"] for x in run["rows"]] != tokens:
                sys.exit(f"N={n}: run {k + 1} of {len(runs)} read other tokens than Tunebench's first run")
        rel = max(abs(x["loss"] - y["loss"]) / abs(y["loss"]) for x, y in zip(o[:10], p[:10]))
        gaps[n] = (rel, max(abs(x["loss"] - y["loss"]) for x, y in zip(o, p)))
        print(f"N={n}: the same tokens in all {len(o)} steps of all {len(runs)} runs ({sum(tokens):,}); loss step 1 "
              f"{o[0]['loss']:.6f} / {p[0]['loss']:.6f}, largest gap {gaps[n][0]:.1e} relative in steps 1-10, "
              f"{gaps[n][1]:.1e} absolute in all; last loss {o[-1]['loss']:.4f} / {p[-1]['loss']:.4f}")
    return gaps


def measured(a, rep, side, n, start, stamp):
    """One run after waiting for quiet, run again (up to --retries times) while other processes took more than
    --max-others cores during it."""
    for attempt in range(a.retries + 1):
        waited = wait_quiet(a.wait_quiet)
        run = start(f"{side.replace(' ', '')}-n{n}-r{rep}-{attempt}-{stamp}")
        run["attempts"] = attempt + 1
        print(f"  run {rep + 1}: {side:<12} N={n}: {steady(run, a.skip)[0]:>8,.0f} tok/s, {run['wall_s']:.1f} s "
              f"({run['backend'] or 'no group'}); other processes used {run['others_cores']:.2f} cores meanwhile "
              f"(waited {waited:.0f} s before)", flush=True)
        if run["others_cores"] <= a.max_others:
            break
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tunebench", default=os.path.join(ROOT, "build", "bin", "tunebench"))
    ap.add_argument("--config", default=DEFAULT_CONFIG)
    ap.add_argument("--nprocs", default="1,2", help="comma-separated world sizes; the first is the baseline")
    ap.add_argument("--steps", type=int, default=120)
    ap.add_argument("--skip", type=int, default=10, help="first steps left out of the steady-state figure")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="intra-op threads per process")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="cuda: NCCL, one GPU per process")
    ap.add_argument("--wait-quiet", type=float, default=120,
                    help="before each run, wait up to this many seconds for other processes to go quiet")
    ap.add_argument("--max-others", type=float, default=0.25,
                    help="run again when other processes took more cores than this during a run")
    ap.add_argument("--retries", type=int, default=2, help="at most this many runs again per figure")
    ap.add_argument("--tunebench-launcher", default="nproc", choices=["nproc", "torchrun"],
                    help="start Tunebench's ranks with its own --nproc or with torchrun --no-python")
    ap.add_argument("--threads-reference", action="store_true",
                    help="also run one Tunebench process with the largest N's global batch and N x --threads "
                         "threads (the same cores as threads instead of processes)")
    ap.add_argument("--json", help="also write the figures as JSON to this file")
    ap.add_argument("--workdir", help="keep the configs and runs here")
    ap.add_argument("--worker", help=argparse.SUPPRESS)  # a peer rank under torchrun: its config
    ap.add_argument("--out", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        return worker(a)
    import torch
    nprocs = [int(x) for x in a.nprocs.split(",")]
    if a.skip >= a.steps:
        sys.exit("--skip must be below --steps")
    if a.device == "cuda" and max(nprocs) > torch.cuda.device_count():
        sys.exit(f"--nprocs {a.nprocs} needs {max(nprocs)} GPUs, this machine has {torch.cuda.device_count()}")
    cfg = bench_config(a, "x", "/")
    print(f"torch {torch.__version__}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {a.device} "
          f"({'NCCL' if a.device == 'cuda' else 'Gloo'}), {a.threads} intra-op thread(s) per process; "
          f"{os.path.relpath(cfg['model'], ROOT)} full fine-tuning, batch {cfg['batch_size']} per rank, "
          f"max_length {cfg['data']['max_length']}, AdamW lr {cfg['optim'].get('lr')}, {a.steps} steps, "
          f"{a.repeats} repeats; Tunebench's ranks started by "
          f"{'--nproc' if a.tunebench_launcher == 'nproc' else 'torchrun'}", flush=True)
    res = {"tunebench": {n: [] for n in nprocs}, "pytorch_ddp": {n: [] for n in nprocs}, "threads": []}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = a.workdir or tmp
        os.makedirs(workdir, exist_ok=True)
        stamp = time.strftime("%H%M%S")
        for rep in range(a.repeats):
            for n in nprocs:
                for side, fn in (("tunebench", ours), ("pytorch_ddp", peer)):
                    res[side][n].append(measured(a, rep, side, n, lambda name: fn(a, n, name, workdir), stamp))
            if a.threads_reference:
                n = nprocs[-1]
                res["threads"].append(measured(a, rep, "1 process", n, lambda name: ours(
                    a, n, name, workdir, one_process=True), stamp))
    print(f"load after: {os.getloadavg()[0]:.2f}")
    gaps = check_same_work(res, nprocs)
    summary = report(res, nprocs, a.skip)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": a.device, "threads": a.threads, "steps": a.steps, "skip": a.skip,
                       "launcher": a.tunebench_launcher, "nprocs": nprocs,
                       "loss_gap": {str(n): g for n, g in gaps.items()},
                       "summary": {f"{k[0]}-{k[1]}": v for k, v in summary.items()},
                       "runs": {side: per if isinstance(per, list) else {str(n): runs for n, runs in per.items()}
                                for side, per in res.items()}},
                      f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
