// A stand-in for `tunebench train --nproc N --config FILE` (a POSIX shell script) for the Train
// page's tests of a launched run: it writes what the real launcher's ranks write (run.json, rank
// 0's metrics.jsonl, ranks/rank-R.jsonl) and prints what the launcher prints, in a few seconds,
// with known values; it records its arguments and OMP_NUM_THREADS; SIGINT stops it after the
// current step (exit 0), as the launcher stops its ranks; FAKE_FAIL=1 fails at step 2 as a lost
// rank does.
#pragma once

#include <QFile>
#include <QString>

namespace tbtest {

// Rank 0's losses of steps 1..6 and each rank's tensor memory after step s: (10 + s + rank) MiB.
inline const double kStandInLosses[] = {2.5, 2.25, 2.0, 1.75, 1.5, 1.25};

inline const char* kStandInScript = R"sh(#!/bin/sh
run=$(dirname "$5")
nproc=$3
mkdir -p "$run/ranks"
printf '%s\n' "$*" > "$run/argv.txt"
printf '%s\n' "$OMP_NUM_THREADS" > "$run/omp.txt"
stop=0
trap 'stop=$((stop + 1)); echo "[launch] Ctrl-C: every rank stops after its current step (again: SIGTERM)" >&2' INT
printf '{"planned_steps": 6, "dist": {"world_size": %s, "backend": "gloo", "zero": 1}}\n' "$nproc" > "$run/run.json"
s=0
for loss in 2.5 2.25 2.0 1.75 1.5 1.25; do
  s=$((s + 1))
  mem=$(( (10 + s) * 1048576 ))
  # rank 0's record in two writes: the reader keeps the first part until the line is complete
  printf '{"type":"step","step":%d,"loss":%s,' $s $loss >> "$run/metrics.jsonl"
  sleep 0.3
  printf '"lr":0.001,"grad_norm":1,"tokens_per_s":100,"memory_bytes":%d,"memory_peak_bytes":%d}\n' $mem $mem >> "$run/metrics.jsonl"
  r=1
  while [ $r -lt $nproc ]; do
    printf '{"type":"step","step":%d,"loss":%s,"lr":0.001,"tokens_per_s":90,"memory_bytes":%d}\n' $s $loss $((mem + r * 1048576)) >> "$run/ranks/rank-$r.jsonl"
    r=$((r + 1))
  done
  echo "step $s/6  loss $loss"
  echo "[rank 1] tunebench: warning: rank 1 note $s" >&2
  if [ -n "$FAKE_FAIL" ] && [ $s -eq 2 ]; then
    echo "[rank 1] tunebench: dist: rank 0 did not answer within 60 s" >&2
    echo "[launch] rank 1 exited with status 1" >&2
    exit 1
  fi
  if [ $stop -gt 0 ]; then exit 0; fi
  sleep 0.2
done
echo "run $run: 6 steps"
)sh";

// Writes the script into `dir` (executable) and returns its path.
inline QString writeStandInLauncher(const QString& dir)
{
    const QString path = dir + QStringLiteral("/tunebench-stand-in");
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly))
        return {};
    f.write(kStandInScript);
    f.close();
    f.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    return path;
}

}  // namespace tbtest
