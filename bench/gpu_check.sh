#!/usr/bin/env bash
# Issue 40: everything a lent GPU machine runs, in one call (its 15 minutes are for one try and a rerun).
#
#   bench/gpu_check.sh OUT                 # on the GPU machine: wheels from .whl/, then tests, then the bench
#   bench/gpu_check.sh --dry-run OUT       # here, on the CPU: the same steps on tiny models (MLMPROB_TEST_DEVICE=cpu)
#
# Steps: (1) the machine (nvidia-smi, torch, transformers); (2) `pytest -m cuda tests/gpu` (every algorithm
# family on the device against the CPU, batch independence, shards, --devices/--workers, resume; at most
# $TEST_LIMIT s); (3) bench/bench_gpu.py (peaks, PLL throughput and MFU, the naive loop, SDPA backends,
# torch.compile; no section starts after $BENCH_DEADLINE s). Logs and reports land in OUT (flat: the device
# tool returns files at most two folders down).
set -u
DRY=0
if [ "${1:-}" = "--dry-run" ]; then DRY=1; shift; fi
OUT_DIR=${1:?usage: bench/gpu_check.sh [--dry-run] OUT}
mkdir -p "$OUT_DIR"
TEST_LIMIT=${TEST_LIMIT:-150}
BENCH_DEADLINE=${BENCH_DEADLINE:-260}
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false

if [ "$DRY" = 1 ]; then
  export MLMPROB_TEST_DEVICE=cpu
  BENCH_ARGS=(--dry-run)
else
  if ls .whl/*.whl >/dev/null 2>&1; then  # packages the image lacks (sapiens, anarcism), carried as wheels
    SITE=$(mktemp -d)
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl \
      || { echo "wheel install failed"; exit 3; }
    export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
  fi
  BENCH_ARGS=()
fi
export PYTHONPATH=$PWD/src:$PWD${PYTHONPATH:+:$PYTHONPATH}

{
  date -u
  nvidia-smi 2>&1 || echo "no nvidia-smi"
  "$PY" -c "import sys, torch, transformers; print(sys.version); print('torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available()); print('transformers', transformers.__version__)"
  nproc; free -g | head -2
} >"$OUT_DIR/machine.txt" 2>&1
cat "$OUT_DIR/machine.txt"

t0=$(date +%s)
timeout -k 10 "$TEST_LIMIT" "$PY" -m pytest -m cuda tests/gpu -q -p no:cacheprovider -rs --durations=15 \
  --junitxml="$OUT_DIR/junit.xml" >"$OUT_DIR/pytest.log" 2>&1
echo "pytest rc $? in $(( $(date +%s) - t0 )) s" | tee -a "$OUT_DIR/pytest.log"
tail -n 40 "$OUT_DIR/pytest.log"

t0=$(date +%s)
timeout -k 10 $(( BENCH_DEADLINE + 140 )) "$PY" bench/bench_gpu.py "${BENCH_ARGS[@]}" --out "$OUT_DIR" \
  --deadline "$BENCH_DEADLINE" >"$OUT_DIR/bench.log" 2>&1
echo "bench rc $? in $(( $(date +%s) - t0 )) s" | tee -a "$OUT_DIR/bench.log"
grep -v "^  " "$OUT_DIR/bench.log" | tail -n 5
cat "$OUT_DIR/report.md" 2>/dev/null
