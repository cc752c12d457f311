#!/usr/bin/env bash
# The exact calls behind the committed H200 results. Runs ON an offline H200 host, from the project
# root, after ../shared/gpu-host's staged install (vLLM 0.24.0 on the host's torch 2.11 / CUDA 13).
#   scripts/h200-session.sh check|h200|validate|idle|serving-path|scout|scout-c64|scout-rates|cv|cv-long|scout-cv OUTDIR
# STOP_AFTER_S (default 420) bounds the sweeps that could outrun one 10-minute call: no level starts
# after it (seconds from the run's start, engine start included), and such a run is saved marked partial.
# Each step executes notebooks/run_scenario.ipynb with papermill, as a user on a GPU instance would,
# Runs side by side on the two GPUs keep separate vLLM compile caches (VLLM_CACHE_ROOT). Each step
# then packs the run folders and executed notebooks it wrote into OUTDIR/<step>.tgz.part* (join with cat).
# Back here, in the project root: cat <step>.tgz.part* | tar xzf -
set -uo pipefail
step=$1
out=$2
STOP_AFTER_S=${STOP_AFTER_S:-420}
source "$HOME/stage/env.sh"
export PYTHONPATH="$PWD/src:$PYTHONPATH"
mkdir -p outputs/notebooks "$out"
started=$(mktemp)  # run folders and notebooks newer than this are what the call brings back
# an engine left by a call that was cut off keeps its GPU memory: free the GPUs before measuring
nvidia-smi --query-compute-apps=pid --format=csv,noheader | xargs -r kill -9

notebook() {  # name scenario [papermill args...]
  local name=$1 scenario=$2
  shift 2
  # --log-output: the notebook's [accelbench] progress lines reach the log, so a run cut off by the
  # call's time limit still shows how far it got
  papermill --log-output notebooks/run_scenario.ipynb "outputs/notebooks/$name-$(date -u +%Y%m%dT%H%M).ipynb" \
    -p scenario "$scenario" "$@" \
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
    CUDA_VISIBLE_DEVICES=0 VLLM_CACHE_ROOT=$HOME/.cache/vllm-gpu0 ACCELBENCH_RUN_NOTE="$note" \
      notebook h200 h200 -p stop_after_s $STOP_AFTER_S &
    CUDA_VISIBLE_DEVICES=1 VLLM_CACHE_ROOT=$HOME/.cache/vllm-gpu1 ACCELBENCH_RUN_NOTE="$note" \
      notebook h200-512-256 h200 -p workload seed-512-256 -p stop_after_s $STOP_AFTER_S &
    wait
    ;;
  validate)  # harness vs vllm bench serve, alone on the host (about 250 s)
    CUDA_VISIBLE_DEVICES=1 VLLM_CACHE_ROOT=$HOME/.cache/vllm-gpu1 notebook h200-validate h200 -p workload validate-512-128
    ;;
  idle)  # prefill time with and without idle engine time before each request (about 150 s)
    notebook h200-idle h200 -p workload idle-512-128
    ;;
  serving-path)  # where bench serve's concurrency-1 TTFT goes: benchmarks/serving_path.py (about 5 min);
    # SERVING_PATH_OUT names the folder (one per host and GPU), CUDA_VISIBLE_DEVICES picks the GPU
    dir=${SERVING_PATH_OUT:-outputs/benchmarks/serving_path-h200}
    mkdir -p "$dir"
    python3 benchmarks/serving_path.py --scenario h200 --workload validate-512-128 --out "$dir" \
      > "$out/serving-path.log" 2>&1
    echo "serving-path: exit $?"
    grep -v -e '^(' -e '^INFO' -e '^WARNING' -e '^\[W' "$out/serving-path.log" > "$dir/output.txt"
    ;;
  scout)  # the closed-loop half; at STOP_AFTER_S=420 it reached concurrency 32 (Scout's engine starts in ~155 s)
    notebook h200x2-scout h200x2-scout -p workload scout-512-128-closed -p stop_after_s $STOP_AFTER_S
    ;;
  scout-c64)  # the concurrency-64 level the scout step left out
    notebook h200x2-scout-c64 h200x2-scout -p workload scout-512-128-c64 -p stop_after_s $STOP_AFTER_S
    ;;
  cv)  # the spread between engine starts (estimators issue): REPLICATES (default 3) engine starts per policy,
    # staggered client starts on GPU 0 and simultaneous on GPU 1, at the same time (about 7 min)
    note="ran at the same time as the other client start policy's run on the host's other H200"
    CUDA_VISIBLE_DEVICES=0 VLLM_CACHE_ROOT=$HOME/.cache/vllm-gpu0 ACCELBENCH_RUN_NOTE="$note" \
      notebook h200-cv h200 -p workload cv-512-128 -p replicates ${REPLICATES:-3} -p stop_after_s $STOP_AFTER_S &
    CUDA_VISIBLE_DEVICES=1 VLLM_CACHE_ROOT=$HOME/.cache/vllm-gpu1 ACCELBENCH_RUN_NOTE="$note" \
      notebook h200-cv-simultaneous h200 -p workload cv-512-128-simultaneous -p replicates ${REPLICATES:-3} \
      -p stop_after_s $STOP_AFTER_S &
    wait
    ;;
  cv-long)  # cv-512-128-long, default (staggered) client starts, alone on GPU 0: REPLICATES (default 3) engine starts
    CUDA_VISIBLE_DEVICES=0 VLLM_CACHE_ROOT=$HOME/.cache/vllm-gpu0 \
      notebook h200-cv-long h200 -p workload cv-512-128-long -p replicates ${REPLICATES:-3} -p stop_after_s $STOP_AFTER_S
    ;;
  scout-cv)  # Llama 4 Scout on both GPUs, REPLICATES (default 2) engine starts at concurrency 32 (about 8 min)
    notebook h200x2-scout-cv h200x2-scout -p workload scout-cv-512-128 -p replicates ${REPLICATES:-2} \
      -p stop_after_s $STOP_AFTER_S
    ;;
  scout-rates)  # the open-loop half (not yet run)
    notebook h200x2-scout-rates h200x2-scout -p workload scout-512-128-rates -p stop_after_s $STOP_AFTER_S
    ;;
  *) echo "unknown step '$step': valid steps are check, h200, validate, idle, serving-path, scout, scout-c64, scout-rates, cv, cv-long, scout-cv" >&2; exit 2 ;;
esac
# only what this call wrote, in parts under the 16 MB a returned file may have
new=$(find outputs/results -mindepth 2 -maxdepth 2 -type d -newer "$started"; find outputs/notebooks -newer "$started" -type f
     find outputs/benchmarks -mindepth 1 -maxdepth 1 -newer "$started")
[ -n "$new" ] && tar czf - $new | split -b 15m - "$out/$step.tgz.part"
ls -la "$out"
