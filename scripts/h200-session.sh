#!/usr/bin/env bash
# The exact calls behind the committed H200 results. Runs ON an offline H200 host, from the project
# root, after ../shared/gpu-host's staged install (vLLM 0.24.0 on the host's torch 2.11 / CUDA 13).
#   scripts/h200-session.sh check|h200|scout|validate OUTDIR
# Each step executes notebooks/run_scenario.ipynb with papermill, as a user on a GPU instance would,
# Runs side by side on the two GPUs keep separate vLLM compile caches (VLLM_CACHE_ROOT). Each step
# then packs outputs/results and outputs/notebooks into OUTDIR/<step>.tgz.
set -uo pipefail
step=$1
out=$2
source "$HOME/stage/env.sh"
export PYTHONPATH="$PWD/src:$PYTHONPATH"
mkdir -p outputs/notebooks "$out"
# an engine left by a call that was cut off keeps its GPU memory: free the GPUs before measuring
nvidia-smi --query-compute-apps=pid --format=csv,noheader | xargs -r kill -9

notebook() {  # name scenario [papermill args...]
  local name=$1 scenario=$2
  shift 2
  # --log-output: the notebook's [accelbench] progress lines reach the log, so a run cut off by the
  # call's time limit still shows how far it got
  papermill --log-output notebooks/run_scenario.ipynb "outputs/notebooks/$name.ipynb" -p scenario "$scenario" "$@" \
    > "$out/$name.log" 2>&1
  echo "$name: papermill exit $?"
}

case $step in
  check)
    nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv
    python3 -c "import vllm, torch, papermill, duckdb, pydantic, pynvml, accelbench; \
print('vllm', vllm.__version__, 'torch', torch.__version__, 'gpus', torch.cuda.device_count())"
    ;;
  h200)  # the two seed workloads at once, one per GPU of the 2-GPU host; each run's manifest says so
    note="ran at the same time as another single-GPU run on the host's other H200"
    CUDA_VISIBLE_DEVICES=0 VLLM_CACHE_ROOT=$HOME/.cache/vllm-gpu0 ACCELBENCH_RUN_NOTE="$note" notebook h200 h200 &
    CUDA_VISIBLE_DEVICES=1 VLLM_CACHE_ROOT=$HOME/.cache/vllm-gpu1 ACCELBENCH_RUN_NOTE="$note" notebook h200-512-256 h200 -p workload seed-512-256 &
    wait
    ;;
  scout)  # closed loop only: the whole scout-512-128 sweep did not fit one 10-minute call
    notebook h200x2-scout h200x2-scout -p workload scout-512-128-closed
    ;;
  validate)  # harness-overhead benchmark on GPU 0, harness vs vllm bench serve on GPU 1
    note="ran at the same time as benchmarks/harness_overhead.py on the host's other H200"
    CUDA_VISIBLE_DEVICES=0 VLLM_CACHE_ROOT=$HOME/.cache/vllm-gpu0 python3 benchmarks/harness_overhead.py --scenario h200 --concurrency 128 \
      --out "$out/harness_overhead.json" > "$out/harness_overhead.log" 2>&1 &
    CUDA_VISIBLE_DEVICES=1 VLLM_CACHE_ROOT=$HOME/.cache/vllm-gpu1 ACCELBENCH_RUN_NOTE="$note" notebook h200-validate h200 -p workload validate-512-128 &
    wait
    tail -6 "$out/harness_overhead.log"
    ;;
  *) echo "unknown step '$step': valid steps are check, h200, scout, validate" >&2; exit 2 ;;
esac
tar czf "$out/$step.tgz" outputs/results outputs/notebooks 2>/dev/null
ls -la "$out"
