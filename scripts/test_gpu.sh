#!/usr/bin/env bash
# test_gpu.sh -- the e2e cases compiled with --target=cuda, run on a GPU
# against the CPU path's goldens (docs/gpu.md).
#
#   scripts/test_gpu.sh [BUILD] [OUT]   on a machine with rlxc and a GPU
#   scripts/test_gpu.sh pack [BUILD] OUT   here: compile and pack only
#   scripts/test_gpu.sh run OUT            on a GPU host without LLVM
#   scripts/test_gpu.sh dynamic-pack [BUILD] OUT, dynamic-run OUT: the
#     same for the dynamic-size cases (tests/dynamic, one object run at
#     every size of its data file against NumPy goldens)
# BUILD (default build) holds rlxc and tests/rlx_run_gpu; OUT (default
# BUILD/gpu_pack) gets the cases' shared objects, their goldens, the
# driver and a manifest (tests/tools/gpu_e2e.py pack), so that it can be
# carried to a GPU host and run there with `run`. Prints the pass counts;
# exit 0 when every packed run passed.
set -euo pipefail
cd "$(dirname "$0")/.."
e2e=tests/tools/gpu_e2e.py
dyn=tests/dynamic/run_dynamic.py
case "${1:-}" in
  pack) python3 $e2e pack --build "${2:-build}" "${3:?OUT}" ;;
  run) python3 "${2:?OUT}/gpu_e2e.py" run "$2" ;;
  dynamic-pack) # the dynamic-size cases GPU_CASES of run_dynamic.py
    python3 $dyn --rlxc "${2:-build}/rlxc" --build "${2:-build}" \
      --work "${3:?OUT}" --gpu-pack ;;
  dynamic-run) # each case at every size of its data file
    fails=0
    for d in "${2:?OUT}"/*/; do
      echo "== $(basename "$d")"
      (cd "$d" && ./dyn_run data.bin) || fails=$((fails + 1))
    done
    echo "dynamic: $fails failed"
    [ $fails = 0 ] ;;
  *)
    build=${1:-build}
    out=${2:-$build/gpu_pack}
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader ||
      echo "test_gpu.sh: nvidia-smi failed (no GPU?)"
    python3 $e2e pack --build "$build" "$out"
    python3 "$out/gpu_e2e.py" run "$out"
    ;;
esac
