#!/bin/bash
# One call on a lent TPU machine (device `run`), from a folder built by tools/tpu_carry.sh:
#
#   mkdir -p /tmp/w && tar -xzf DIR/tree.tar.gz -C /tmp/w && mkdir -p /tmp/w/tree/DIR && \
#     cp -r DIR/. /tmp/w/tree/DIR/ && cd /tmp/w/tree && \
#     OUT=$OUT bash DIR/device_call.sh TOTAL_S AFF_BUDGET WORKLOADS START HOST_BUDGET [RESUME]
#
# (run in the clean copy of HEAD, so uncommitted edits in the checkout stay out). In order, within
# TOTAL_S seconds: installs DIR/host/wheels under /tmp/site; the ids of DIR/aff.txt for AFF_BUDGET s
# (0: none); each of WORKLOADS (comma list, "-": none) with benchmarks/run.py --quick --platform tpu,
# one run.py per workload, skipped when under 90 s are left; EXTRA_CMD (environment) if set; then the
# suite from index START of DIR/${IDSFILE:-rest.txt} (tools/tpu_test_chunks.py ids) with what is left.
# HOST_BUDGET > 0 runs tools/run_host_suites.sh on the host's other cores (8 jobs) beside the chip
# work, from the start, or after the benchmarks with HOSTLATE=1 (so they time a quiet machine);
# RESUME: an earlier call's host-suites.tar.gz. On 8+ cores the chip work is pinned to cores 0-3
# and the host suites to the rest, unless NOPIN=1. Leaves at most 5 files in $OUT (the device's
# limit is 8): run.log, progress.txt, host-suites.tar.gz, host-suites-summary.md, all.tar.gz.
set -u
T0=$(date +%s)
TOTAL=$1; AFF=$2; WL=$3; START=$4; HOST=$5; RESUME=${6:-}
D=$(dirname "$0")
export PYTHONPATH=${PYTHONPATH:-}:$(ls -d $PWD/packages/*/src | paste -sd:)
export PYTHONUNBUFFERED=1
left() { echo $(( TOTAL - ($(date +%s) - T0) )); }
el() { echo $(( $(date +%s) - T0 )); }
echo "start $(date) tree $(cat $D/tree.rev 2>/dev/null) nproc $(nproc)" > $OUT/run.log
PIP_CONFIG_FILE=/dev/null python3 -m pip install --isolated -q --no-index --no-deps --no-compile --target /tmp/site $D/host/wheels/*.whl > $OUT/pip.log 2>&1
echo "wheels rc=$? at $(el) s" >> $OUT/run.log
export PYTHONPATH=$PYTHONPATH:/tmp/site
if [ $(nproc) -ge 8 ] && [ -z "${NOPIN:-}" ]; then CHIP="taskset -c 0-3"; HOSTSET="taskset -c 4-$(( $(nproc) - 1 ))"; else CHIP=""; HOSTSET=""; fi
starthost() {
  ( export CARRY=$PWD/$D/host OUT=$OUT/hs; mkdir -p $OUT/hs; $HOSTSET bash tools/run_host_suites.sh "$1" 8 $RESUME ) > $OUT/host.log 2>&1 &
  HPID=$!
}
[ "$HOST" != 0 ] && [ -z "${HOSTLATE:-}" ] && starthost "$HOST"
if [ "$AFF" != 0 ]; then
  $CHIP python3 tools/tpu_test_chunks.py --budget $AFF --ids $D/aff.txt --timeout 60 \
    --narrow 400 --log $OUT/progress-aff.txt --failures $OUT/failures-aff.txt -- \
    tests/fluxion tests/fluxion_md --platform tpu -p no:cacheprovider -q --continue-on-collection-errors > $OUT/chunks-aff.log 2>&1
  echo "aff done at $(el) s" >> $OUT/run.log
fi
mkdir -p $OUT/bench
if [ "$WL" != "-" ]; then
  for w in ${WL//,/ }; do
    L=$(left)
    if [ "$L" -lt 90 ]; then echo "skip $w (left $L)" >> $OUT/run.log; continue; fi
    T=$(( L - 40 )); [ $T -gt 200 ] && T=200
    { echo "=== $w"; timeout $T $CHIP python3 benchmarks/run.py --quick --platform tpu --timeout $(( T - 10 )) --no-plot \
        --workloads $w --backends fluxion,jax --out $OUT/bench/$w; echo "rc=$?"; } >> $OUT/bench.txt 2>&1
    echo "$w done at $(el) s" >> $OUT/run.log
  done
fi
[ -n "${EXTRA_CMD:-}" ] && { echo "=== extra"; timeout $(( $(left) - 60 )) $CHIP bash -c "$EXTRA_CMD"; echo "rc=$?"; } >> $OUT/bench.txt 2>&1 && echo "extra done at $(el) s" >> $OUT/run.log
[ "$HOST" != 0 ] && [ -n "${HOSTLATE:-}" ] && starthost $(( $(left) - 45 ))
B=$(( $(left) - 30 ))
if [ "$B" -gt 60 ]; then
  $CHIP python3 tools/tpu_test_chunks.py --budget $B --start $START --ids $D/${IDSFILE:-rest.txt} --timeout 60 \
    --narrow 300 --log $OUT/progress.txt --failures $OUT/failures.txt -- \
    tests/fluxion tests/fluxion_nn tests/fluxion_md tests/fluxion_optim tests/fluxion_rl tests/fluxion_scipy \
    --platform tpu -p no:cacheprovider -q --continue-on-collection-errors > $OUT/chunks.log 2>&1
  echo "suite done at $(el) s" >> $OUT/run.log
fi
if [ -n "${HPID:-}" ]; then wait $HPID; echo "host done at $(el) s" >> $OUT/run.log; fi
SUMMARY=$( (grep -E "^(===|rc=)" $OUT/bench.txt; tail -3 $OUT/chunks-aff.log $OUT/chunks.log; tail -4 $OUT/host.log) 2>/dev/null)
[ -f $OUT/hs/host-suites.tar.gz ] && mv $OUT/hs/host-suites.tar.gz $OUT/
[ -f $OUT/hs/host-suites-summary.md ] && mv $OUT/hs/host-suites-summary.md $OUT/
(cd $OUT && tar -czf all.tar.gz --exclude=all.tar.gz --exclude=host-suites.tar.gz --exclude=run.log --exclude=progress.txt * && \
  rm -rf bench hs pip.log host.log chunks-aff.log chunks.log bench.txt progress-aff.txt failures-aff.txt failures.txt)
ls $OUT >> $OUT/run.log
echo "$SUMMARY"
cat $OUT/run.log
