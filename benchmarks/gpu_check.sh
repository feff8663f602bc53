#!/usr/bin/env bash
# On a machine with a CUDA GPU: run the vLLM engine's tests and measure offload (sleep), reload
# (wake_up) and weight sync (load_weights) of a small model, for the vLLM engine and the KV
# engine. Writes JSON lines to ${OUT:-runs}/gpu_check.jsonl and prints them.
#
#   bash benchmarks/gpu_check.sh                 # the bundled tiny model, saved to a temp dir
#   MODEL=/path/to/checkpoint bash benchmarks/gpu_check.sh   # a local transformers checkpoint
#
# Needs `pip install -e '.[vllm]'` (vLLM brings its own CUDA torch: use a separate venv, never
# this project's CPU venv). Exits 2 with one line when there is no GPU or no vLLM.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT_DIR="${OUT:-runs}"
mkdir -p "$OUT_DIR"
if ! python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    echo "gpu_check: no CUDA GPU visible to torch here; nothing measured" >&2
    exit 2
fi
if ! python -c "import vllm" 2>/dev/null; then
    echo "gpu_check: vLLM is not installed (pip install -e '.[vllm]' in a GPU venv)" >&2
    exit 2
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
python -m pytest -q tests/test_vllm_engine.py steps/rlsched_engines/test_step4.py \
    steps/rlsched_engines/test_step5.py steps/rlsched_engines/test_step8.py
python benchmarks/gpu_switch.py --repeats "${REPEATS:-5}" ${MODEL:+--model "$MODEL"} \
    | tee "$OUT_DIR/gpu_check.jsonl"
