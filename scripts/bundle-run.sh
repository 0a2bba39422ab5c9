#!/usr/bin/env bash
# run.sh [OUTDIR [gpu-check options]] of a popper bundle (scripts/bundle.sh), on a machine with an
# NVIDIA GPU, its driver and CUDA: gpu-check.sh over the bundle's binaries and
# data; every result under OUTDIR (default ./popper-gpu-results). Exit 0 only
# when every device test passed and no mutant survived.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=/dev/null
. "$here/env.sh"
exec "$here/gpu-check.sh" --bin "$here/bin" --data "$POPPER_DATA_DIR" --out "${1:-$PWD/popper-gpu-results}" "${@:2}"
