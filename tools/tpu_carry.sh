#!/usr/bin/env bash
# Build the folder a lent TPU machine's calls carry (device `run`'s `carry`): wheels of what the
# machine lacks, the ecosystem suites' test trees, and a clean copy of HEAD.
#
#   bash tools/tpu_carry.sh DIR        (DIR must be git-ignored, e.g. .tpu-run/sNN)
#
# DIR/host/wheels/   the wheels of tools/tpu_carry_wheels.txt (pip download, manylinux x86_64, cp311)
# DIR/host/suites.tar.xz  FLUXION_COMPAT_CACHE's suites/ (run tests/compat/host_suites.py here once
#                    to fill it), for tools/run_host_suites.sh (CARRY=DIR/host)
# DIR/tree.tar.gz, DIR/tree.rev   `git archive HEAD`: helpers' uncommitted edits stay out of the chip run
# DIR/device_call.sh a copy of tools/tpu_device_call.sh
# The working tree plus DIR must stay under 64 MiB: leave host/suites.tar.xz out (move it aside)
# for calls that run no host suites.
set -eu
DIR=${1:?usage: tools/tpu_carry.sh DIR}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
git check-ignore -q "$DIR" || { echo "tpu_carry: $DIR is not git-ignored" >&2; exit 2; }
PY=${PYTHON:-$ROOT/.venv/bin/python}
mkdir -p "$DIR/host/wheels"
grep -v '^#' tools/tpu_carry_wheels.txt | xargs "$PY" -m pip download -q --no-deps --only-binary=:all: \
    --python-version 3.11 --implementation cp --platform manylinux2014_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_28_x86_64 \
    -d "$DIR/host/wheels"
CACHE=${FLUXION_COMPAT_CACHE:-$HOME/.cache/fluxion-compat}
if [ -d "$CACHE/suites" ]; then
    tar -cJf "$DIR/host/suites.tar.xz" -C "$CACHE" suites
else
    echo "tpu_carry: no $CACHE/suites (run tests/compat/host_suites.py once): no suites.tar.xz" >&2
fi
cp tools/tpu_device_call.sh "$DIR/device_call.sh"
git archive HEAD --prefix=tree/ | gzip -6 > "$DIR/tree.tar.gz"
git rev-parse --short HEAD > "$DIR/tree.rev"
du -sb "$DIR"
echo "tracked files: $(git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1) bytes (the two together must stay under 67108864)"
