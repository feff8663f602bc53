#!/usr/bin/env bash
# On a machine with a CUDA GPU: run the engines' step checks there (the KV engine against the
# recompute engine, greedy outputs identical; the vLLM engine's tests when vLLM is installed),
# measure offload, reload and weight sync of a small model (benchmarks/gpu_switch.py), and the
# KV engine against the recompute engine on the bundled model and on a larger one of the same
# shape (benchmarks/kv_bench.py). Writes ${OUT:-runs}/gpu_check.log
# (everything) and gpu_check.jsonl (gpu_switch's lines).
#
#   bash benchmarks/gpu_check.sh                 # the bundled tiny model, saved to a temp dir
#   MODEL=/path/to/checkpoint bash benchmarks/gpu_check.sh   # a local transformers checkpoint
#
# vLLM (`pip install -e '.[vllm]'`) brings its own CUDA torch: use a separate venv, never this
# project's CPU venv. Without vLLM the KV engine is still checked and measured, and the vLLM
# tests say they were skipped. Exits 2 with one line when torch sees no GPU.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR="${OUT:-runs}"
mkdir -p "$OUT_DIR"
if ! python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    echo "gpu_check: no CUDA GPU visible to torch here; nothing measured" >&2
    exit 2
fi
exec > >(tee "$OUT_DIR/gpu_check.log") 2>&1
python -c "import vllm" 2>/dev/null || echo "gpu_check: vLLM is not installed: its tests skip"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
python -c "import torch, transformers; print('torch', torch.__version__, transformers.__version__)"
# Every stage runs even if one before it failed; the script exits with the first failure.
status=0
stage() { "$@" || { rc=$?; echo "gpu_check: failed ($rc): $*"; [ $status -ne 0 ] || status=$rc; }; }
stage python -m pytest -q -p no:cacheprovider -rs steps/rlsched_engines tests/test_vllm_engine.py
stage python benchmarks/gpu_switch.py --repeats "${REPEATS:-5}" ${MODEL:+--model "$MODEL"} \
    --json "$OUT_DIR/gpu_check.jsonl"
stage python benchmarks/kv_bench.py --repeats 3
stage python benchmarks/kv_bench.py --repeats 3 --hidden 1024 --layers 12
exit $status
