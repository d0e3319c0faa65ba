"""Side-by-side dataset-store benchmark: `tunebench data import / dedup / stats / scan / split / snapshot` against
the same jobs done in Python (stdlib sqlite3, re, numpy, sentencepiece), on one generated alpaca JSONL, in the same
run.

usage: python bench/data_peer.py [--records 100000] [--tunebench build/bin/tunebench] [--workdir DIR]
                                 [--near 0.8] [--max-length 256] [--seed 1] [--jobs dedup,stats,...]
                                 [--peer-only] [--json]
Generates (seeded) N alpaca rows of random words, ~500 bytes each, with ~2 % exact copies (some with case,
whitespace or Unicode-form changes), ~3 % near copies (1-5 % of the words replaced) and ~1 % of the originals
carrying a planted email, phone, card, IBAN, API key or password URL for the scan. Each job on each side is
a child process, timed by wall clock, with its peak resident memory (MiB) from wait4. Prints seconds, the ratio
(peer / Tunebench; above 1 means Tunebench is faster), peak RSS and the counts both sides found.
The peer sides run as `data_peer.py --peer-job JOB --store DB [FILE]` (scan, split and snapshot peers in
bench/data_peer_curate.py). bench/data_sizes.py runs this at several sizes and tabulates seconds and peak RSS.
(bench/common.py is not imported: it loads torch and transformers, which would inflate the peer's memory.)
"""
import argparse
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

import numpy as np

from data_gen import generate, normalise
from data_peer_curate import peer_scan, peer_snapshot, peer_split

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "datasets", "models", "stories260k")
U64 = np.uint64
MASK64 = (1 << 64) - 1

# ---------------------------------------------------------------------------------------------------------
# Peer jobs (each runs in its own process: `--peer-job NAME`)

SCHEMA = """
CREATE TABLE IF NOT EXISTS sources (id INTEGER PRIMARY KEY, path TEXT NOT NULL, format TEXT NOT NULL,
  sha256 TEXT NOT NULL, records INTEGER NOT NULL DEFAULT 0, rejected INTEGER NOT NULL DEFAULT 0,
  imported_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (id INTEGER PRIMARY KEY, kind TEXT NOT NULL,
  fields TEXT NOT NULL CHECK (json_valid(fields)), source_id INTEGER REFERENCES sources(id),
  source_line INTEGER NOT NULL, source_offset INTEGER NOT NULL, split TEXT NOT NULL DEFAULT 'train',
  status TEXT NOT NULL DEFAULT 'pending', token_count INTEGER NOT NULL DEFAULT -1, field_tokens TEXT,
  removed INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS records_status ON records(status, removed);
CREATE INDEX IF NOT EXISTS records_split ON records(split, removed);
CREATE TABLE IF NOT EXISTS operations (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, who TEXT NOT NULL,
  at TEXT NOT NULL, summary TEXT NOT NULL DEFAULT '{}');
"""


def connect(store):
    db = sqlite3.connect(store, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = FULL")
    return db


def alpaca_problem(row):
    if not isinstance(row, dict):
        return f"expected a JSON object, got {type(row).__name__}"
    for key in ("instruction", "output"):
        if key not in row:
            return f'missing field "{key}"'
        if not isinstance(row[key], str):
            return f'field "{key}" is not a string'
        if not row[key]:
            return f'field "{key}" is empty'
    if row.get("input") is not None and not isinstance(row["input"], str):
        return 'field "input" is not a string'
    return None


def peer_import(store, path):
    """Parse, validate and insert every row in one transaction (WAL, synchronous FULL), like the store."""
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            sha.update(block)
    db = connect(store)
    db.executescript(SCHEMA)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    rejected = []

    def rows(source_id):
        offset = 0
        with open(path, "rb") as f:
            for line_no, raw in enumerate(f, 1):
                start, offset = offset, offset + len(raw)
                if not raw.strip():
                    continue
                try:
                    row = json.loads(raw.decode("utf-8"))
                except (UnicodeDecodeError, ValueError) as e:
                    rejected.append({"line": line_no, "reason": f"not valid JSON or UTF-8: {e}"})
                    continue
                problem = alpaca_problem(row)
                if problem:
                    rejected.append({"line": line_no, "reason": problem})
                    continue
                yield ("alpaca", json.dumps(row, ensure_ascii=False, separators=(",", ":")), source_id, line_no,
                       start, now, now)

    db.execute("BEGIN")
    source_id = db.execute("INSERT INTO sources (path, format, sha256, imported_at) VALUES (?, 'alpaca', ?, ?)",
                           (path, sha.hexdigest(), now)).lastrowid
    cur = db.executemany("INSERT INTO records (kind, fields, source_id, source_line, source_offset, created_at, "
                         "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)", rows(source_id))
    imported = cur.rowcount
    db.execute("UPDATE sources SET records = ?, rejected = ? WHERE id = ?", (imported, len(rejected), source_id))
    db.execute("INSERT INTO operations (kind, who, at) VALUES ('import', 'bench', ?)", (now,))
    db.execute("COMMIT")
    db.close()
    return {"format": "alpaca", "imported": imported, "rejected": rejected[:100]}


def live_records(db):
    for rid, fields in db.execute("SELECT id, fields FROM records WHERE removed = 0 ORDER BY id"):
        yield rid, json.loads(fields)


C1, C2 = U64(0xbf58476d1ce4e5b9), U64(0x94d049bb133111eb)


def mix64(z):
    """SplitMix64's finaliser over a uint64 array (wrapping arithmetic)."""
    z = (z ^ (z >> U64(30))) * C1
    z = (z ^ (z >> U64(27))) * C2
    return z ^ (z >> U64(31))


def splitmix64(seed):
    while True:
        seed = (seed + 0x9e3779b97f4a7c15) & MASK64
        z = seed
        z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & MASK64
        yield z ^ (z >> 31)


def shingles_and_signatures(norms, k, mul, add):
    """Sorted unique 32-bit shingle hashes per text (flat, with counts) and MinHash signatures [n, perms]."""
    words, lens = [], []
    for t in norms:
        ws = t.split(" ")
        words.extend(ws)
        lens.append(len(ws))
    lens = np.asarray(lens, np.int64)
    w = np.fromiter(map(hash, words), np.int64, len(words)).view(U64)  # PYTHONHASHSEED fixed by the parent
    starts = np.concatenate(([0], np.cumsum(lens)[:-1]))
    rec = np.repeat(np.arange(len(norms)), lens)
    recs, xs = [], []
    if len(w) >= k:
        h = np.full(len(w) - k + 1, U64(0x3c6ef372fe94f82b ^ k))
        for j in range(k):
            h = mix64(h + w[j:len(w) - k + 1 + j])
        first = rec[:len(h)]
        valid = np.arange(len(h)) - starts[first] <= lens[first] - k
        recs.append(first[valid])
        xs.append((h[valid] >> U64(32)).astype(np.uint32))
    for r in np.flatnonzero(lens < k):  # short texts: one shingle of all their words
        h = U64(0x3c6ef372fe94f82b ^ int(lens[r]))
        for x in w[starts[r]:starts[r] + lens[r]]:
            h = mix64(np.array([h + x]))[0]
        recs.append(np.array([r]))
        xs.append(np.array([h >> U64(32)], np.uint32))
    key = np.unique((np.concatenate(recs).astype(U64) << U64(32)) | np.concatenate(xs).astype(U64))
    shingles = (key & U64(0xffffffff)).astype(np.uint32)
    counts = np.bincount((key >> U64(32)).astype(np.int64), minlength=len(norms))
    seg = np.concatenate(([0], np.cumsum(counts)[:-1]))
    x64 = shingles.astype(U64)
    sig = np.empty((len(norms), len(mul)), np.uint32)
    for p in range(len(mul)):
        sig[:, p] = np.minimum.reduceat((x64 * mul[p] + add[p]) >> U64(32), seg)
    return shingles, counts, sig


def peer_dedup(store, threshold, bands=19, rows=6, perms=128, k=3, seed=1, chunk=2048):
    """Exact (normalised hash) then MinHash LSH near dedup with Jaccard verification, keep-first."""
    db = connect(store)
    ids, texts = [], []
    for rid, f in live_records(db):
        ids.append(rid)
        texts.append("\n".join(f[key] for key in ("instruction", "input", "output") if f.get(key)))
    db.close()
    n = len(texts)
    gen = splitmix64(seed)
    mul, add = np.empty(perms, U64), np.empty(perms, U64)
    for p in range(perms):
        mul[p], add[p] = next(gen) | 1, next(gen)

    # Exact: blake2b-64 of the normalised text -> first record; near work only for the others.
    first_by_hash, copy_of = {}, {}
    near_index, shingle_parts, count_parts = [], [], []
    sig = np.empty((n, perms), np.uint32)  # rows: near_index order (filled up to m)
    for lo in range(0, n, chunk):
        norms = []
        for i in range(lo, min(n, lo + chunk)):
            t = normalise(texts[i])
            hk = hashlib.blake2b(t.encode(), digest_size=8).digest()
            j = first_by_hash.setdefault(hk, i)
            if j != i and (texts[j] == texts[i] or normalise(texts[j]) == t):
                copy_of[i] = j
                continue
            # (a 64-bit collision between different texts would be kept as a distinct record: not seen)
            near_index.append(i)
            norms.append(t)
        s, c, sig[len(near_index) - len(norms):len(near_index)] = shingles_and_signatures(norms, k, mul, add)
        shingle_parts.append(s)
        count_parts.append(c)
    shingles = np.concatenate(shingle_parts)
    counts = np.concatenate(count_parts)
    seg = np.concatenate(([0], np.cumsum(counts)))
    m = len(near_index)
    sig = sig[:m]

    # LSH: records whose band keys agree in at least one band are candidates (each with earlier ones).
    candidates = {}
    for b in range(bands):
        h = np.full(m, U64(0xa54ff53a5f1d36f1 + b))
        for r in range(rows):
            h = mix64(h + sig[:, b * rows + r].astype(U64))
        order = np.argsort(h, kind="stable")
        same = np.flatnonzero(h[order][1:] == h[order][:-1])
        run = []
        for pos in same.tolist() + [None]:
            if run and (pos is None or pos != run[-1]):  # a run of equal keys ended at run[-1] + 1
                members = order[run[0]:run[-1] + 2].tolist()
                for t in range(1, len(members)):
                    candidates.setdefault(members[t], set()).update(members[:t])
                run = []
            if pos is not None:
                run.append(pos)
    prefilter = threshold - max(0.05, 4.5 * ((max(threshold * (1 - threshold), 0.01) / perms) ** 0.5))
    kept = np.ones(m, bool)
    near_of = {}  # local index -> (kept local index, similarity)
    for i in sorted(candidates):
        best, best_s = -1, -1.0
        a = shingles[seg[i]:seg[i + 1]]
        for j in sorted(candidates[i]):
            if not kept[j] or np.count_nonzero(sig[i] == sig[j]) < prefilter * perms:
                continue
            bj = shingles[seg[j]:seg[j + 1]]
            common = np.intersect1d(a, bj, assume_unique=True).size
            s = common / (a.size + bj.size - common)
            if s >= threshold and s > best_s:
                best, best_s = j, s
        if best >= 0:
            kept[i] = False
            near_of[i] = best

    kept_of = {}
    for local, j in near_of.items():
        kept_of[near_index[local]] = near_index[j]
    for i, j in copy_of.items():
        kept_of[i] = kept_of.get(j, j)
    return {"records": n, "exact_duplicates": len(copy_of), "near_duplicates": len(near_of),
            "clusters": len(set(kept_of.values())), "removed": 0}


def nearest_rank(sorted_values, p):
    return sorted_values[max(0, -(-p * len(sorted_values) // 100) - 1)]


def peer_stats(store, model, max_length, threads, batch=8192):
    """Token counts of the plain-template rendering (BOS + user + "\\n", output + EOS) and of each field with
    sentencepiece's batch encoder; counts written back in one transaction; nearest-rank percentiles."""
    import sentencepiece

    sp = sentencepiece.SentencePieceProcessor(model_file=os.path.join(model, "tokenizer.model"))
    db = connect(store)
    records = list(live_records(db))
    totals, updates = [], []
    for lo in range(0, len(records), batch):
        part = records[lo:lo + batch]
        prompt = [f["instruction"] + ("\n\n" + f["input"] if f.get("input") else "") + "\n" for _, f in part]
        lengths = {}
        for name, texts in (("prompt", prompt), ("response", [f["output"] for _, f in part]),
                            ("instruction", [f["instruction"] for _, f in part]),
                            ("input", [f.get("input") or "" for _, f in part]),
                            ("output", [f["output"] for _, f in part])):
            lengths[name] = [len(ids) for ids in sp.encode(texts, num_threads=threads)]
        for k, (rid, f) in enumerate(part):
            total = 1 + lengths["prompt"][k] + lengths["response"][k] + 1  # BOS, EOS
            per_field = {key: lengths[key][k] for key in ("instruction", "input", "output")
                         if key != "input" or f.get("input")}
            totals.append(total)
            updates.append((total, json.dumps(per_field), rid))
    db.execute("BEGIN")
    db.executemany("UPDATE records SET token_count = ?, field_tokens = ? WHERE id = ?", updates)
    db.execute("COMMIT")
    db.close()
    s = sorted(totals)
    return {"records": len(s), "tokens": {"min": s[0], "median": nearest_rank(s, 50), "p95": nearest_rank(s, 95),
                                          "max": s[-1], "mean": sum(s) / len(s)},
            "truncated": sum(t > max_length for t in s), "chat_template": "plain"}


def peer_main(a):
    if a.peer_job == "startup":  # interpreter and numpy import: what every peer job pays before working
        out = {}
    elif a.peer_job == "import":
        out = peer_import(a.store, a.file)
    elif a.peer_job == "dedup":
        out = peer_dedup(a.store, a.near)
    elif a.peer_job == "stats":
        out = peer_stats(a.store, a.model, a.max_length, a.threads)
    else:
        db = connect(a.store)
        out = {"scan": lambda: peer_scan(db, live_records), "split": lambda: peer_split(db, 0.1, 0),
               "snapshot": lambda: peer_snapshot(db)}[a.peer_job]()
        db.close()
    print(json.dumps(out))
    return 0


# ---------------------------------------------------------------------------------------------------------
# Driver


# A child's ru_maxrss starts at its parent's resident size at fork time (Linux keeps the larger of the
# pre-exec and post-exec high-water marks), so this driver, which holds the generated rows, must not fork the
# measured jobs itself: a bare `python -S` (~6 MiB) forks, execs and waits for each one and reports wait4's
# figures. The reported peak is then max(~6 MiB, the job's own peak).
LAUNCHER = """
import json, os, sys, time
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, ru = os.wait4(pid, 0)
wall = time.perf_counter() - t0
with open(sys.argv[1], "w") as f:
    json.dump({"rc": os.waitstatus_to_exitcode(status), "s": wall, "rss_mib": ru.ru_maxrss / 1024,
               "cpu_s": ru.ru_utime + ru.ru_stime}, f)
"""


def run_child(cmd, env=None):
    """Runs cmd to completion through LAUNCHER: (wall s, peak RSS MiB, user + system CPU s, its JSON stdout)."""
    with tempfile.TemporaryDirectory() as tmp:
        report, out_path, err_path = (os.path.join(tmp, n) for n in ("report.json", "stdout", "stderr"))
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            subprocess.run([sys.executable, "-S", "-c", LAUNCHER, report] + cmd, stdout=out, stderr=err, env=env,
                           check=False)
        with open(out_path) as f:
            stdout = f.read()
        with open(err_path) as f:
            stderr = f.read()
        r = {"rc": -1}
        if os.path.exists(report):
            with open(report) as f:
                r = json.load(f)
    if r["rc"] != 0:
        sys.exit(f"failed ({r['rc']}): {' '.join(cmd)}\n{stderr}")
    last = stdout.strip().splitlines()[-1] if stdout.strip() else ""
    return r["s"], r["rss_mib"], r["cpu_s"], json.loads(last) if last.startswith("{") else None


def has_data_cli(binary):
    try:
        return subprocess.run([binary, "data", "help"], capture_output=True, timeout=60).returncode == 0
    except OSError:
        return False


# What each side of these jobs reports that must be equal.
CURATE_KEYS = {"scan": ("records", "flagged", "match_count", "by_kind"),
               "split": ("train", "validation", "validation_ids_sha256"), "snapshot": ("records", "sha256")}
JOBS = ("startup", "import", "dedup", "stats", "scan", "split", "snapshot")


def validation_ids_sha256(store):
    """The Tunebench store's validation ids after `data split`, hashed as peer_split reports them."""
    db = sqlite3.connect(store)
    # Schema 4 keeps the split in record_state; older stores (a --baseline build) in records.
    table = "record_state" if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'record_state'").fetchone() \
        else "records"
    ids = [r[0] for r in db.execute(f"SELECT id FROM {table} WHERE removed = 0 AND split = 'validation' ORDER BY id")]
    db.close()
    return hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tunebench", default=os.path.join(ROOT, "build", "bin", "tunebench"))
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--workdir", help="where the JSONL and both stores go (default: a temporary folder)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--near", type=float, default=0.8)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--model", default=MODEL)
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="peer tokenizer threads")
    ap.add_argument("--peer-only", action="store_true", help="skip Tunebench (before `tunebench data` exists)")
    ap.add_argument("--jobs", default=",".join(JOBS), help="comma-separated subset of " + ",".join(JOBS) +
                    " (import always runs when any later job does)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--peer-job", choices=JOBS, help=argparse.SUPPRESS)
    ap.add_argument("--store", help=argparse.SUPPRESS)
    ap.add_argument("file", nargs="?", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.peer_job:
        return peer_main(a)
    if not a.peer_only and not has_data_cli(a.tunebench):
        sys.exit(f"{a.tunebench} has no `data` command yet (`data help` failed); use --peer-only")

    with tempfile.TemporaryDirectory() as tmp:
        work = a.workdir or tmp
        os.makedirs(work, exist_ok=True)
        data = os.path.join(work, f"alpaca-{a.records}.jsonl")
        t0 = time.perf_counter()
        planted = generate(data, a.records, a.seed, a.near)
        gen_s = time.perf_counter() - t0
        size_mb = os.path.getsize(data) / 1e6
        stores = {"tunebench": os.path.join(work, "tunebench.db"), "peer": os.path.join(work, "peer.db")}
        for s in stores.values():
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(s + suffix):
                    os.remove(s + suffix)
        env = dict(os.environ, PYTHONHASHSEED="0", OMP_NUM_THREADS="1")
        me = [sys.executable, os.path.abspath(__file__)]
        jobs = [
            ("startup", [a.tunebench, "data", "help"], me + ["--peer-job", "startup"]),
            ("import", [a.tunebench, "data", "import", "--store", stores["tunebench"], data, "--json"],
             me + ["--peer-job", "import", "--store", stores["peer"], data]),
            ("dedup", [a.tunebench, "data", "dedup", "--store", stores["tunebench"], "--near", str(a.near), "--json"],
             me + ["--peer-job", "dedup", "--store", stores["peer"], "--near", str(a.near)]),
            ("stats", [a.tunebench, "data", "stats", "--store", stores["tunebench"], "--model", a.model,
                       "--max-length", str(a.max_length), "--json"],
             me + ["--peer-job", "stats", "--store", stores["peer"], "--model", a.model, "--max-length",
                   str(a.max_length), "--threads", str(a.threads)]),
            ("scan", [a.tunebench, "data", "scan", "--store", stores["tunebench"], "--json"],
             me + ["--peer-job", "scan", "--store", stores["peer"]]),
            ("split", [a.tunebench, "data", "split", "--store", stores["tunebench"], "--validation", "0.1", "--seed",
                       "0", "--json"], me + ["--peer-job", "split", "--store", stores["peer"]]),
            ("snapshot", [a.tunebench, "data", "snapshot", "--store", stores["tunebench"], "--include-pending",
                          "--json"], me + ["--peer-job", "snapshot", "--store", stores["peer"]]),
        ]
        wanted = set(a.jobs.split(","))
        if wanted - set(JOBS):
            sys.exit(f"--jobs: unknown {sorted(wanted - set(JOBS))} (known: {', '.join(JOBS)})")
        if wanted - {"startup"}:
            wanted.add("import")
        load_before = os.getloadavg()
        results = []
        for name, ours_cmd, peer_cmd in jobs:
            if name not in wanted:
                continue
            r = {"job": name}
            if not a.peer_only:
                r["tunebench"] = dict(zip(("s", "rss_mib", "cpu_s", "out"), run_child(ours_cmd)))
                if name == "split":
                    r["tunebench"]["out"]["validation_ids_sha256"] = validation_ids_sha256(stores["tunebench"])
            r["peer"] = dict(zip(("s", "rss_mib", "cpu_s", "out"), run_child(peer_cmd, env)))
            results.append(r)
        load_after = os.getloadavg()
        store_mb = {k: os.path.getsize(v) / 1e6 for k, v in stores.items() if os.path.exists(v)}

    def sanity(r):
        if r["job"] == "startup":
            return "`tunebench data help` / python + numpy import"
        o = {side: r[side]["out"] for side in ("tunebench", "peer") if side in r}
        if r["job"] == "import":
            return "imported " + " / ".join(f"{v['imported']:,} ({len(v['rejected'])} rejected)" for v in o.values())
        if r["job"] == "dedup":
            return "exact/near/clusters " + " / ".join(
                f"{v['exact_duplicates']:,}/{v['near_duplicates']:,}/{v['clusters']:,}" for v in o.values())
        if r["job"] in CURATE_KEYS:
            return r["job"] + " " + "/".join(CURATE_KEYS[r["job"]]) + " " + " / ".join(
                "/".join(str(v.get(k))[:12] for k in CURATE_KEYS[r["job"]]) for v in o.values())
        return "tokens median/p95/max, over " + " / ".join(
            f"{v['tokens']['median']}/{v['tokens']['p95']}/{v['tokens']['max']}, {v['truncated']:,}"
            for v in o.values())

    warnings = []
    out = {r["job"]: (r["tunebench"]["out"], r["peer"]["out"]) for r in results if "tunebench" in r}
    if "import" in out and out["import"][0]["imported"] != out["import"][1]["imported"]:
        warnings.append(f"import counts differ: {out['import'][0]['imported']} vs {out['import'][1]['imported']}")
    if "dedup" in out:
        t, p = out["dedup"]
        for key in ("exact_duplicates", "near_duplicates"):
            if abs(t[key] - p[key]) > max(2, 0.02 * max(t[key], p[key])):
                warnings.append(f"dedup {key} differ by more than 2 %: {t[key]} vs {p[key]}")
    if "stats" in out:
        t, p = out["stats"]
        if any(t["tokens"][k] != p["tokens"][k] for k in ("min", "median", "p95", "max")):
            warnings.append(f"token statistics differ: {t['tokens']} vs {p['tokens']}")
    for job, keys in CURATE_KEYS.items():  # these must agree exactly
        if job in out and any(out[job][0].get(k) != out[job][1].get(k) for k in keys):
            warnings.append(f"{job} results differ: " + ", ".join(
                f"{k} {out[job][0].get(k)} vs {out[job][1].get(k)}" for k in keys))
    summary = {"records": a.records, "jsonl_mb": size_mb, "generate_s": gen_s, "planted": planted,
               "load_before": load_before, "load_after": load_after, "store_mb": store_mb, "results": results,
               "warnings": warnings}
    if a.json:
        print(json.dumps(summary, indent=1))
        return 0
    print(f"{a.records:,} alpaca rows, {size_mb:.1f} MB JSONL, generated in {gen_s:.1f} s; planted "
          f"{planted['exact']:,} exact copies {planted['exact_by_change']}, {planted['near']:,} near copies "
          f"({planted['near_within_threshold']:,} at Jaccard >= {a.near} to their original)")
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}; peer tokenizer threads "
          f"{a.threads}; stores: " + ", ".join(f"{k} {v:.1f} MB" for k, v in store_mb.items()))
    print(f"{'job':<7} {'tunebench s':>11} {'peer s':>8} {'ratio':>6} {'tb RSS MiB':>10} {'peer RSS MiB':>12} "
          f"{'tb CPU s':>8} {'peer CPU s':>10}  sanity (tunebench / peer)")
    for r in results:
        t, p = r.get("tunebench"), r["peer"]
        ts = f"{t['s']:>11.2f}" if t else f"{'-':>11}"
        ratio = f"{p['s'] / t['s']:>6.2f}" if t else f"{'-':>6}"
        tr = f"{t['rss_mib']:>10.0f}" if t else f"{'-':>10}"
        tc = f"{t['cpu_s']:>8.2f}" if t else f"{'-':>8}"
        print(f"{r['job']:<7} {ts} {p['s']:>8.2f} {ratio} {tr} {p['rss_mib']:>12.0f} {tc} {p['cpu_s']:>10.2f}  "
              f"{sanity(r)}")
    for w in warnings:
        print("warning:", w)
    return 0


if __name__ == "__main__":
    sys.exit(main())
