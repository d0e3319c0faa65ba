"""The Python peers of `tunebench data scan / split / snapshot` for bench/data_peer.py, and the PII the
generator plants for the scan to find. Each peer does the job's work on the peer's store (stdlib re, sqlite3,
hashlib) and writes it in one transaction, as the store does:
- scan: the leak/PII scan's patterns and checks (core/data/curate/scan.cpp, ported to Python's re on bytes),
  overlaps resolved by kind priority, masked previews, flags replaced;
- split: the seeded train/validation split of core/data/curate/split.cpp (SplitMix64, partial Fisher-Yates),
  with a history row per changed record;
- snapshot: the train split's live accepted or pending records frozen as JSONL lines with their SHA-256.
"""
import bisect
import hashlib
import json
import math
import re
import time

MASK64 = (1 << 64) - 1

# ---------------------------------------------------------------------------------------------------------
# Planted PII (a separate random stream, so the generated words and copies stay the same)


def luhn_complete(digits):
    """digits plus the check digit that makes the number Luhn-valid."""
    total = 0
    for k, d in enumerate(reversed(digits + "0")):
        d = int(d)
        if k % 2 == 1:
            d = d * 2 - 9 if d * 2 > 9 else d * 2
        total += d
    return digits + str((10 - total % 10) % 10)


def iban(rng):
    bban = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(4)) + \
        "".join(rng.choice("0123456789") for _ in range(14))
    numeric = "".join(str(int(c, 36)) for c in bban + "GB00")
    check = 98 - int(numeric) % 97
    return f"GB{check:02d}{bban}"


def pii_sentence(rng):
    """One sentence with a secret or personal datum the scan should find."""
    alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    kind = rng.randrange(7)
    if kind == 0:
        return f"Write to {rng.choice(('jane', 'li.wei', 'o.brien', 'sam_k'))}{rng.randrange(100)}@example.com today."
    if kind == 1:
        return f"Call +44 20 {rng.randrange(1000, 9999)} {rng.randrange(1000, 9999)} after six."
    if kind == 2:
        card = luhn_complete("4" + "".join(rng.choice("0123456789") for _ in range(14)))
        return f"The card was {' '.join(card[i:i + 4] for i in range(0, 16, 4))}."
    if kind == 3:
        return f"Pay into {iban(rng)} by Friday."
    if kind == 4:
        return "Use the key sk-" + "".join(rng.choice(alnum) for _ in range(32)) + " for the demo."
    if kind == 5:
        return "AWS id AKIA" + "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16)) + " leaked."
    return f"Connect to postgres://admin:{rng.choice(('hunter2', 's3cret', 'pa55word'))}@db.example.com now."


# ---------------------------------------------------------------------------------------------------------
# Scan

KINDS = ["private_key", "password_in_url", "api_key", "iban", "card_number", "email", "phone"]  # priority order
PATTERNS = [  # (kind, check, report group, check group, regex): scan.cpp's kPatterns, in its order
    (0, "key_end", 0, 0, rb"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
    (1, None, 0, 0, rb"""(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{1,19}://[^\s:/?#@"'<>]{1,128}:[^\s/?#@"'<>]{1,128}@[A-Za-z0-9\-_~\[\]]+(?:\.[A-Za-z0-9\-_~\[\]]+)*"""),
    (2, None, 0, 0, rb"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    (2, None, 0, 0, rb"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{36,251}(?![A-Za-z0-9_])"),
    (2, None, 0, 0, rb"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{22,250}(?![A-Za-z0-9_])"),
    (2, None, 0, 0, rb"(?<![A-Za-z0-9])(?:xox[baprs]|xapp)-[A-Za-z0-9\-]{10,250}(?![A-Za-z0-9\-])"),
    (2, "random", 0, 1, rb"(?<![A-Za-z0-9_\-])sk-(?:(?:proj|svcacct|admin|ant|live|test)-)?([A-Za-z0-9_\-]{20,250})(?![A-Za-z0-9_\-])"),
    (2, None, 0, 0, rb"(?<![A-Za-z0-9_\-])AIza[0-9A-Za-z_\-]{35}(?![A-Za-z0-9_\-])"),
    (2, None, 0, 0, rb"(?<![A-Za-z0-9_\-.])eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{16,}(?![A-Za-z0-9_\-])"),
    (2, "random", 1, 1, rb"""(?i)(?<![A-Za-z0-9])(?:api[_\-]?key|api[_\-]?secret|secret[_\-]?key|client[_\-]?secret|access[_\-]?key|access[_\-]?token|auth[_\-]?token|refresh[_\-]?token|token|secret)["']?[ \t]{0,3}[:=][ \t]{0,3}["']?([A-Za-z0-9_\-+/=.~]{16,512})"""),
    (2, "random", 1, 1, rb"(?i)(?<![A-Za-z0-9])bearer[ \t]+([A-Za-z0-9_\-+/=.~]{16,512})"),
    (3, "iban", 0, 0, rb"(?<![A-Za-z0-9])[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){11,30}(?![A-Za-z0-9])"),
    (4, "card", 0, 0, rb"(?<![\w\-.+])[2-6](?:[ \-]?[0-9]){12,18}(?![\w]|[\-.][0-9])"),
    (5, None, 0, 0, rb"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9][A-Za-z0-9._%+\-]{0,63}@[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?)*\.[A-Za-z]{2,24}(?![A-Za-z0-9\-]|\.[A-Za-z0-9])"),
    (6, "phone", 0, 0, rb"(?<![\w+.\-/#])(?:\+[1-9][0-9]{0,2}(?:[ .\-]?\([0-9]{1,4}\))?(?:[ .\-]?[0-9]{1,5}){2,6}|\([0-9]{3}\) ?[0-9]{3}[ .\-][0-9]{4}|[0-9]{3}(?P<sep>[ .\-])[0-9]{3}(?P=sep)[0-9]{4}|0[0-9]{1,4}(?:[ \-][0-9]{2,4}){1,4})(?![\w]|[.\-/][0-9])"),
]
COMPILED = [(k, c, rg, cg, re.compile(rx)) for k, c, rg, cg, rx in PATTERNS]
IBAN_LENGTHS = dict(x.split(":") for x in (
    "AD:24 AE:23 AL:28 AT:20 AZ:28 BA:20 BE:16 BG:22 BH:22 BR:29 CH:21 CR:22 CY:28 CZ:24 DE:22 DK:18 DO:28 EE:20 "
    "EG:29 ES:24 FI:18 FO:18 FR:27 GB:22 GE:22 GI:23 GL:18 GR:27 HR:21 HU:28 IE:22 IL:23 IS:26 IT:27 JO:30 KW:30 "
    "KZ:20 LB:28 LI:21 LT:20 LU:20 LV:21 MC:27 MD:24 ME:22 MK:19 MT:31 MU:30 NL:18 NO:15 PK:24 PL:28 PS:29 PT:25 "
    "QA:29 RO:24 RS:22 SA:24 SE:24 SI:19 SK:24 SM:27 TN:24 TR:26 UA:29 VG:24 XK:20").split())
KEY_BODY_LIMIT = 16384


def looks_random(v):
    if len(v) < 16 or not any(48 <= c <= 57 for c in v) or not any(65 <= c <= 90 or 97 <= c <= 122 for c in v):
        return False
    counts = {}
    for c in v:
        counts[c] = counts.get(c, 0) + 1
    entropy = -sum(n / len(v) * math.log2(n / len(v)) for n in counts.values())
    return len(counts) >= 8 and entropy >= 3.0


def iban_checksum_ok(compact):
    r = 0
    for k in range(len(compact)):
        c = compact[(k + 4) % len(compact)]
        r = (r * 10 + c - 48) % 97 if 48 <= c <= 57 else (r * 100 + c - 65 + 10) % 97
    return r == 1


def accept_iban(text, begin, end):
    chars = [(text[i], i + 1) for i in range(begin, end) if text[i] != 32]
    compact = bytes(c for c, _ in chars)
    registered = int(IBAN_LENGTHS.get(compact[:2].decode(), 0))
    for length in range(min(34, len(compact)), 14, -1):
        if registered and length != registered:
            continue
        boundary = length == len(compact) or text[chars[length - 1][1]] == 32
        if boundary and iban_checksum_ok(compact[:length]):
            return begin, chars[length - 1][1]
    return None


def luhn_valid(m):
    total = count = 0
    for c in reversed(m):
        if c in b" -":
            continue
        if not 48 <= c <= 57:
            return False
        d = c - 48
        if count % 2 == 1:
            d = d * 2 - 9 if d * 2 > 9 else d * 2
        total += d
        count += 1
    return count > 0 and total % 10 == 0


def plausible_card(m):
    lead = bytes(c for c in m if 48 <= c <= 57)[:4]
    if lead[:1] == b"2" and not b"2221" <= lead <= b"2720":
        return False
    digits = group = 0
    sep = None
    for c in m:
        if 48 <= c <= 57:
            digits += 1
            group += 1
            continue
        if (sep is not None and c != sep) or not 3 <= group <= 6:
            return False
        sep, group = c, 0
    if sep is not None and not 3 <= group <= 6:
        return False
    return 13 <= digits <= 19 and luhn_valid(m)


def run_pattern(kind, check, report_group, check_group, rx, text, found):
    at = 0
    end_searched = begin_searched = False
    end_at = begin_at = -1
    while at < len(text):
        m = rx.search(text, at)
        if not m:
            return
        def group(g):
            s = m.span(g) if g <= (rx.groups or 0) else (-1, -1)
            return (m.start(), m.start()) if s[0] < 0 else s
        begin, end = group(report_group)
        cb, ce = group(check_group)
        checked = text[cb:ce]
        ok = True
        if check == "key_end":
            if not end_searched or (end_at >= 0 and end_at < end):
                end_at, end_searched = text.find(b"-----END ", end), True
            if not begin_searched or (begin_at >= 0 and begin_at < end):
                begin_at, begin_searched = text.find(b"-----BEGIN ", end), True
            if end_at >= 0 and end_at - end <= KEY_BODY_LIMIT and (begin_at < 0 or end_at < begin_at):
                marker = b"-----END " + checked[11:]
                close = text[:min(len(text), end + KEY_BODY_LIMIT + len(marker))].find(marker, end_at)
                if close >= 0:
                    end = close + len(marker)
        elif check == "random":
            ok = looks_random(checked)
        elif check == "iban":
            span = accept_iban(text, begin, end)
            ok = span is not None
            if ok:
                begin, end = span
        elif check == "card":
            ok = plausible_card(checked)
        elif check == "phone":
            ok = 9 <= sum(48 <= c <= 57 for c in checked) <= 15
        if ok and end > begin:
            found.append((kind, begin, end))
            at = max(end, m.start() + 1)
        else:
            at = m.start() + 1


def code_points(s):
    out, i = [], 0
    while i < len(s):
        n = 1
        while i + n < len(s) and s[i + n] & 0xC0 == 0x80:
            n += 1
        out.append(s[i:i + n])
        i += n
    return out


def mask(match, kind):
    if kind == "email" and b"@" in match:
        at = match.rindex(b"@")
        local = code_points(match[:at])
        return b"".join(c if i == 0 and len(local) > 1 else b"*" for i, c in enumerate(local)) + match[at:]
    if kind == "card_number":
        digits = sum(48 <= c <= 57 for c in match)
        keep_from, out, index = digits - 4 if digits >= 8 else digits, bytearray(), 0
        for c in match:
            if 48 <= c <= 57:
                out.append(c if index >= keep_from else 42)
                index += 1
            else:
                out.append(c)
        return bytes(out)
    if kind == "private_key" and match[:11] == b"-----BEGIN " and match.find(b"-----", 5) >= 0:
        head = match.find(b"-----", 5) + 5
        foot = match.rfind(b"-----END ")
        return match[:head] + b"****" + (match[foot:] if foot >= head else b"")
    if kind == "password_in_url":
        scheme = match.find(b"://")
        at = match.find(b"@", scheme + 3 if scheme >= 0 else 0)
        colon = match.find(b":", scheme + 3) if scheme >= 0 else -1
        if scheme >= 0 and at >= 0 and 0 <= colon < at:
            return match[:colon + 1] + b"*" * (at - colon - 1) + match[at:]
    chars = code_points(match)
    content = sum(c not in (b" ", b"-") for c in chars)
    keep = 2 if content >= 10 else 1 if content >= 6 else 0
    out, index = [], 0
    for c in chars:
        if c in (b" ", b"-"):
            out.append(c)
            continue
        out.append(c if index < keep or index >= content - keep else b"*")
        index += 1
    return b"".join(out)


def scan_text(text):
    """[(kind name, offset, length, masked)] of one UTF-8 text, as scanText."""
    found = []
    for spec in COMPILED:
        run_pattern(*spec, text, found)
    found.sort(key=lambda f: (f[0], f[1]))
    begins, accepted = [], []
    for kind, b, e in found:
        k = bisect.bisect_left(begins, b)
        if k < len(begins) and accepted[k][1] < e:
            continue
        if k > 0 and accepted[k - 1][2] > b:
            continue
        begins.insert(k, b)
        accepted.insert(k, (kind, b, e))
    return [(KINDS[k], b, e - b, mask(text[b:e], KINDS[k]).decode("utf-8", "replace")) for k, b, e in accepted]


def peer_scan(db, live_records):
    flags, by_kind, flagged, records = [], {}, 0, 0
    for rid, f in live_records(db):
        records += 1
        hit = False
        for field in ("instruction", "input", "output"):
            if not f.get(field):
                continue
            for kind, offset, length, masked in scan_text(f[field].encode("utf-8")):
                flags.append((rid, kind, field, offset, length, masked))
                by_kind[kind] = by_kind.get(kind, 0) + 1
                hit = True
        flagged += hit
    db.execute("CREATE TABLE IF NOT EXISTS scan_flags (record_id INTEGER NOT NULL, kind TEXT NOT NULL, field TEXT "
               "NOT NULL, offset INTEGER NOT NULL, length INTEGER NOT NULL, masked TEXT NOT NULL)")
    db.execute("BEGIN IMMEDIATE")
    db.execute("DELETE FROM scan_flags")
    db.executemany("INSERT INTO scan_flags VALUES (?, ?, ?, ?, ?, ?)", flags)
    summary = {"records": records, "flagged": flagged, "by_kind": by_kind}
    db.execute("INSERT INTO operations (kind, who, at, summary) VALUES ('scan', 'bench', ?, ?)",
               (now(), json.dumps(summary)))
    db.execute("COMMIT")
    return {**summary, "match_count": len(flags)}


# ---------------------------------------------------------------------------------------------------------
# Split and snapshot


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def mix64(x):
    x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) & MASK64
    return x ^ (x >> 31)


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK64

    def next(self):
        self.state = (self.state + 0x9e3779b97f4a7c15) & MASK64
        return mix64(self.state)

    def below(self, bound):
        limit = ((1 << 64) - bound) % bound
        while True:
            x = self.next()
            if x >= limit:
                return x % bound


def peer_split(db, fraction, seed):
    """Unstratified splitAssign: round(n * fraction) validation records by a seeded partial Fisher-Yates."""
    rows = db.execute("SELECT id, split FROM records WHERE removed = 0 AND split != 'general' ORDER BY id").fetchall()
    n = len(rows)
    count = math.floor(n * fraction)
    if count < math.floor(n * fraction + 0.5) and n * fraction - count > 0:  # llround
        count += 1
    if n >= 2:
        count = min(max(count, 1), n - 1)
    members = list(range(n))
    rng = SplitMix64(mix64(seed) ^ mix64(0x5851f42d4c957f2d))  # hashBytes("", s) == mix64(s)
    validation = set()
    for i in range(count):
        j = i + rng.below(n - i)
        members[i], members[j] = members[j], members[i]
        validation.add(members[i])
    at = now()
    db.execute("CREATE TABLE IF NOT EXISTS history (id INTEGER PRIMARY KEY, operation_id INTEGER NOT NULL, "
               "record_id INTEGER NOT NULL, who TEXT NOT NULL, at TEXT NOT NULL, field TEXT NOT NULL, old_value TEXT, "
               "new_value TEXT)")
    db.execute("BEGIN IMMEDIATE")
    op = db.execute("INSERT INTO operations (kind, who, at) VALUES ('split', 'bench', ?)", (at,)).lastrowid
    changed = []
    for k, (rid, old) in enumerate(rows):
        new = "validation" if k in validation else "train"
        if new != old:
            changed.append((new, at, rid, op, rid, at, json.dumps(old), json.dumps(new)))
    db.executemany("UPDATE records SET split = ?, updated_at = ? WHERE id = ?", [c[:3] for c in changed])
    db.executemany("INSERT INTO history (operation_id, record_id, who, at, field, old_value, new_value) VALUES "
                   "(?, ?, 'bench', ?, 'split', ?, ?)", [c[3:] for c in changed])
    db.execute("COMMIT")
    ids = [rows[k][0] for k in sorted(validation)]
    return {"train": n - count, "validation": count,
            "validation_ids_sha256": hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()}


def peer_snapshot(db):
    """The train split's live accepted or pending records as JSONL lines (fields + record_id, sorted keys)."""
    db.execute("CREATE TABLE IF NOT EXISTS snapshots (id TEXT PRIMARY KEY, version INTEGER NOT NULL, split TEXT "
               "NOT NULL, sha256 TEXT NOT NULL, records INTEGER NOT NULL, manifest TEXT NOT NULL, created_at TEXT "
               "NOT NULL)")
    db.execute("CREATE TABLE IF NOT EXISTS snapshot_records (snapshot_id TEXT NOT NULL, position INTEGER NOT NULL, "
               "record_id INTEGER NOT NULL, kind TEXT NOT NULL, line TEXT NOT NULL, "
               "PRIMARY KEY (snapshot_id, position))")
    db.execute("BEGIN IMMEDIATE")
    version = db.execute("SELECT coalesce(max(version), 0) + 1 FROM snapshots WHERE split = 'train'").fetchone()[0]
    sid = f"train-v{version}"
    sha, rows = hashlib.sha256(), []
    for rid, kind, fields in db.execute("SELECT id, kind, fields FROM records WHERE removed = 0 AND split = 'train' "
                                        "AND status IN ('accepted', 'pending') ORDER BY id"):
        f = json.loads(fields)
        f["record_id"] = rid
        line = json.dumps(f, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        sha.update(line.encode("utf-8") + b"\n")
        rows.append((sid, len(rows), rid, kind, line))
    manifest = {"id": sid, "version": version, "split": "train", "sha256": sha.hexdigest(), "records": len(rows)}
    db.execute("INSERT INTO snapshots VALUES (?, ?, 'train', ?, ?, ?, ?)",
               (sid, version, sha.hexdigest(), len(rows), json.dumps(manifest), now()))
    db.executemany("INSERT INTO snapshot_records VALUES (?, ?, ?, ?, ?)", rows)
    db.execute("INSERT INTO operations (kind, who, at) VALUES ('snapshot', 'bench', ?)", (now(),))
    db.execute("COMMIT")
    return {"id": sid, "sha256": sha.hexdigest(), "records": len(rows)}
