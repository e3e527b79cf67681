#!/usr/bin/env bash
# The first call on a lent GPU machine (device `run`), before any longer run there: what the
# image holds, whether Fluxion opens the GPU on the image's own jaxlib and CUDA plugin, and the
# programs of tools/gpu_programs.py (each against NumPy, jax not imported), then the platform
# tests. Logs go to $OUT. See tools/tpu_progress/README.md, "GPU machines".
#
#   OUT=$OUT bash tools/gpu_first_call.sh [SECONDS_FOR_TESTS]
set -u
OUT=${OUT:-/tmp/gpu-first-call}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
PYTHONPATH=$(ls -d packages/*/src | paste -sd:)
export PYTHONPATH
{
    date
    nvidia-smi -L
    "$PY" -c 'import sys; print("python", sys.version.split()[0])'
    "$PY" -m pip list 2>/dev/null | grep -i -E '^(jax|jaxlib|jax-cuda|numpy|ml.dtypes|opt.einsum|scipy|pytest) '
} > "$OUT/env.txt" 2>&1
FLUXION_PLATFORMS=cuda timeout 300 "$PY" -m fluxion.info > "$OUT/info.txt" 2>&1
echo "info rc=$?" >> "$OUT/env.txt"
FLUXION_PLATFORMS=cuda timeout 600 "$PY" tools/gpu_programs.py > "$OUT/programs.txt" 2>&1
echo "programs rc=$? (the number of failures)" >> "$OUT/env.txt"
FLUXION_PLATFORMS=cuda JAX_PLATFORMS=cpu timeout "${1:-240}" "$PY" -m pytest -q -x \
    -p no:cacheprovider tests/fluxion/platforms > "$OUT/platform_tests.txt" 2>&1
echo "platform tests rc=$?" >> "$OUT/env.txt"
cat "$OUT/env.txt" "$OUT/programs.txt"
tail -5 "$OUT/platform_tests.txt"
