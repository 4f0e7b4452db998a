#!/usr/bin/env bash
# Everything in this repository that needs a CUDA GPU, in one command, within 8 minutes. Run it on
# any machine with a GPU at hand (the tests run none of it on CUDA), and after changing the timing
# test, the probe's "time" op, kit/bandwidth.py, the sandbox's or the box's CUDA paths, or the
# fused-add-norm kernel and its public tests.
#
#     benchmarks/gpu_check.sh [OUT]     # OUT (or $OUT; default gpu-check/): logs and figures
#
# Steps, each logged to OUT/STEP.log, its exit status and seconds added to OUT/summary.txt:
#   timing  benchmarks/timing_check.py: the hidden suite graded on CUDA (sandbox children on the
#           GPU, in their box) for full-marks, one-program-for-all-rows and cached-outputs; each
#           must lose exactly what it is declared to; the timing reports (OUT/timing.jsonl)
#   public  fused-add-norm's public tests on the reference, Part 2's timing (do_bench) included
#   bench   benchmarks/fused_add_norm.py: eager, torch.compile and the reference kernel
#           (OUT/fused_add_norm.csv and .png)
# Without CUDA it says so and exits 0: there the tests run the timing test on the CPU's clock
# (tests/test_fused_timing.py runs timing_check.py --cpu). Exit 1 if a step failed.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-${OUT:-gpu-check}}
PYTHON=${PYTHON:-.venv/bin/python}
export PYTHONPATH="$PWD:$PWD/assignments${PYTHONPATH:+:$PYTHONPATH}"

if ! "$PYTHON" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    echo "benchmarks/gpu_check.sh needs a CUDA GPU and this machine has none: nothing was run. (make test" \
         "runs the timing test on the CPU's clock; run this where a GPU is lent.)"
    exit 0
fi
mkdir -p "$OUT"
: > "$OUT/summary.txt"
failed=0

step() {   # NAME LIMIT_S COMMAND...: run it within LIMIT_S seconds, shown and logged to OUT/NAME.log
    local name=$1 limit=$2 start=$SECONDS
    shift 2
    echo "== $name: $*"
    timeout "$limit" "$@" 2>&1 | tee "$OUT/$name.log"
    local rc=${PIPESTATUS[0]}
    echo "$name: exit $rc after $((SECONDS - start)) s" | tee -a "$OUT/summary.txt"
    [ "$rc" -eq 0 ] || failed=1
}

step timing 210 "$PYTHON" benchmarks/timing_check.py --out "$OUT"
step public 90 "$PYTHON" -m pytest -q -s -p no:cacheprovider solutions/fused-add-norm/test_public.py
step bench 170 "$PYTHON" benchmarks/fused_add_norm.py --out "$OUT"
echo "logs and figures in $OUT/"
exit $failed
