#!/bin/sh
# record.sh NAME: build NAME's program (bench/fresh14/workloads.txt) and trace it on 4 ranks under
# Recorder 2.5.0 into out/fresh14/NAME/trace (its data files in /tmp/f14run, deleted after).
set -e
name=$1; here=$(cd "$(dirname "$0")" && pwd); repo=$(cd "$here/../.." && pwd)
line=$(grep "^$name " "$here/workloads.txt"); set -- $line; prog=$3; shift 3
out=$repo/out/fresh14/$name; run=/tmp/f14run/$name
rm -rf "$out" "$run"; mkdir -p "$out/raw" "$run" "$repo/out/fresh14/bin"
mpicc -O2 -o "$repo/out/fresh14/bin/$prog" "$here/$prog.c"
start=$(date +%s.%N)
mpiexec -n 4 -genv LD_PRELOAD /tmp/recorder-install/lib/librecorder.so -genv RECORDER_TRACES_DIR "$out/raw" \
    "$repo/out/fresh14/bin/$prog" "$run/data" "$@" > "$out/stdout.txt" 2>&1
echo "exit=$? wall=$(echo "$(date +%s.%N) - $start" | bc)" >> "$out/stdout.txt"
d=$(find "$out/raw" -name recorder.mt -printf '%h\n'); mv "$d" "$out/trace"; rm -rf "$out/raw" "$run"
echo "$name: $(tail -1 "$out/stdout.txt")"
