#!/usr/bin/env bash
# The GPU path on one CUDA device, as one script (docs/calibration.md, "GPU path"):
#   1. scalesim calibrate on the GPU (CUDA events, bf16 autocast, the built-in GPT, the
#      transformer block at tp 1,2,4,8 shapes, 65,536 tokens by default) -> $OUT/gpu-profile.json and its log;
#   2. real one-device training steps of four GPT shapes (benchmarks/gpu_step.py) -> $OUT/steps.json;
#   3. nvidia-smi's view of the device before and after, and the versions -> $OUT/device.txt.
# Compare here, without a GPU: python benchmarks/gpu_compare.py $OUT/gpu-profile.json $OUT/steps.json
# Usage: OUT=dir bash benchmarks/gpu_check.sh        (SCALESIM="python -m ..." to override)
set -u
case "${1:-}" in
    -h|--help) sed -n 's/^# \{0,1\}//; 2,8p' "$0"; exit 0 ;;
    "") ;;
    *) echo "gpu_check.sh: error: it takes no arguments, got '$1'; set OUT to a folder (see --help)" >&2
       exit 2 ;;
esac
OUT=${OUT:?set OUT to a folder for the results}
mkdir -p "$OUT"
SCALESIM=${SCALESIM:-scalesim}
export PYTHONUNBUFFERED=1
(nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit,clocks.max.sm,clocks.max.mem \
    --format=csv; nvidia-smi topo -m; python3 -c "import torch; print('torch', torch.__version__, \
    'cuda', torch.version.cuda, torch.cuda.get_device_name(0))") > "$OUT/device.txt" 2>&1
timeout 240 $SCALESIM calibrate --no-progress --precision bf16 --model gpt --width 1024 \
    --depth 8 --seq-len 1024 --vocab 50304 --batches 4,8,16,32 --block-hidden 4096 \
    --block-seq 2048 --block-tp 1,2,4,8 --jitter-steps 30 --noise-steps 4 \
    --state-dir "${TMPDIR:-/tmp}/scalesim-gpu-state" --out "$OUT/gpu-profile.json" > "$OUT/calibrate.log" 2>&1
echo "calibrate exit $?" >> "$OUT/calibrate.log"
timeout 150 python3 benchmarks/gpu_step.py --out "$OUT/steps.json" > "$OUT/steps.log" 2>&1
echo "gpu_step exit $?" >> "$OUT/steps.log"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw \
    --format=csv >> "$OUT/device.txt" 2>&1
tail -n 40 "$OUT/calibrate.log" "$OUT/steps.log"
