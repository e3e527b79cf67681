#!/usr/bin/env bash
# The ecosystem suites (optax, flax, haiku, rlax, jax_md) on Fluxion, modes alias and mirror, on a
# lent TPU machine's host CPU cores (never the chip), within a wall-clock budget.
#
#   bash run_host_suites.sh BUDGET_S JOBS [RESUME_TARBALL]
#
# Reads from its carry folder (CARRY, default: this script's folder when it holds wheels/, else
# .tpu-run/s11/host under the repository root): wheels/*.whl (what the machine lacks, installed
# with --no-deps under $WORK/site), suites.tar.xz (FLUXION_COMPAT_CACHE's suites/ folder).
# scikit-learn and tensorstore come from the machine's own index (/opt/pypi/simple) when it has one.
# Runs tests/compat/host_suites.py (chunks of baseline-passing ids, cheap ones first, JOBS pytest
# processes at once, each JAX_PLATFORMS=cpu FLUXION_PLATFORMS=cpu), and leaves in $OUT (default
# ./build/host-suites-out): host-suites.tar.gz (the results folder: events, summary.json/.md;
# rewritten every SNAPSHOT_S seconds, so a kill leaves the last one), host-suites-summary.md.
# RESUME_TARBALL: an earlier run's host-suites.tar.gz; only the ids it lacks run.
# Environment: WORK (default /tmp/host-suites), NICE (default 10), TEST_TIMEOUT_S (90),
# CHUNK_S (120), SNAPSHOT_S (60), LIBS, MODES (alias,mirror), FILES and MAX_PER_FILE (a check).
set -u
T0=$(date +%s)
if [ $# -lt 2 ]; then
    echo "usage: $0 BUDGET_S JOBS [RESUME_TARBALL]" >&2
    exit 2
fi
BUDGET=$1
JOBS=$2
RESUME=${3:-}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$HERE
while [ "$ROOT" != / ] && [ ! -d "$ROOT/packages/fluxion/src" ]; do ROOT=$(dirname "$ROOT"); done
if [ ! -d "$ROOT/packages/fluxion/src" ]; then
    echo "run_host_suites: no repository (packages/fluxion/src) above $HERE" >&2
    exit 2
fi
if [ -z "${CARRY:-}" ]; then
    if [ -d "$HERE/wheels" ]; then CARRY=$HERE; else CARRY=$ROOT/.tpu-run/s11/host; fi
fi
WORK=${WORK:-/tmp/host-suites}
OUTDIR=${OUT:-$ROOT/build/host-suites-out}
PY=${PYTHON:-python3}
mkdir -p "$WORK" "$OUTDIR"
RESULTS=$WORK/host-suites
say() { echo "[run_host_suites $(( $(date +%s) - T0 ))s] $*"; }

# Every child stays off the chip: one process may hold it, and it is not one of these.
export JAX_PLATFORMS=cpu FLUXION_PLATFORMS=cpu
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1

say "installing $(ls "$CARRY"/wheels/*.whl | wc -l) wheels from $CARRY/wheels"
rm -rf "$WORK/site" "$WORK/site-index"
PIP_CONFIG_FILE=/dev/null "$PY" -m pip install --isolated -q --no-index --no-deps --no-compile \
    --no-cache-dir --upgrade --target "$WORK/site" "$CARRY"/wheels/*.whl || { say "wheel install failed"; exit 3; }
if [ -d /opt/pypi/simple ]; then
    # the index's exact pin of scikit-learn (optax's alias_test); tensorstore's pin (0.1.86) is not
    # there and is 21 MB to carry: its 0.1.85 (orbax-checkpoint needs >= 0.1.84, flax's nnx
    # integration_test reaches it)
    PIP_CONFIG_FILE=/dev/null "$PY" -m pip install --isolated -q --no-deps --no-compile --no-cache-dir \
        --only-binary=:all: --index-url file:///opt/pypi/simple --target "$WORK/site-index" \
        scikit-learn==1.9.1 tensorstore==0.1.85 || say "index install failed (scikit-learn, tensorstore): going on"
fi
SRC=""
for p in "$ROOT"/packages/*/src; do SRC=$SRC:$p; done
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$WORK/site:$WORK/site-index${SRC}

say "unpacking the suites"
mkdir -p "$WORK/cache"
tar -xJf "$CARRY/suites.tar.xz" -C "$WORK/cache" || { say "suites unpack failed"; exit 3; }
export FLUXION_COMPAT_CACHE=$WORK/cache

if [ -n "$RESUME" ]; then
    say "resuming from $RESUME"
    rm -rf "$RESULTS"
    tar -xzf "$RESUME" -C "$WORK" || say "resume tarball unreadable: starting afresh"
fi
mkdir -p "$RESULTS"

LEFT=$(( BUDGET - ($(date +%s) - T0) ))
say "budget left for the suites: ${LEFT}s, $JOBS jobs"
EXTRA=()
[ -n "${LIBS:-}" ] && EXTRA+=(--libs "$LIBS")
[ -n "${FILES:-}" ] && EXTRA+=(--files "$FILES")
[ -n "${MAX_PER_FILE:-}" ] && EXTRA+=(--max-per-file "$MAX_PER_FILE")
nice -n "${NICE:-10}" "$PY" "$ROOT/tests/compat/host_suites.py" --results "$RESULTS" --budget-s "$LEFT" \
    --jobs "$JOBS" --modes "${MODES:-alias,mirror}" --timeout "${TEST_TIMEOUT_S:-90}" \
    --chunk-s "${CHUNK_S:-120}" --snapshot-s "${SNAPSHOT_S:-60}" \
    --tarball "$OUTDIR/host-suites.tar.gz" "${EXTRA[@]}"
RC=$?
[ -f "$RESULTS/summary.md" ] && cp "$RESULTS/summary.md" "$OUTDIR/host-suites-summary.md"
if [ ! -f "$OUTDIR/host-suites.tar.gz" ]; then
    tar -czf "$OUTDIR/host-suites.tar.gz" -C "$WORK" host-suites
fi
say "done (rc $RC); $OUTDIR/host-suites.tar.gz"
exit $RC
