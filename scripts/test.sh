#!/usr/bin/env bash
# test.sh: build rlxc and run every test tier (README "Testing",
# docs/testing.md "Test tiers and CI time").
#   scripts/test.sh          what CI runs (bash .ci/run), about 28 min on
#                            2 cores:
#   1. Release-like build (RelWithDebInfo) in build-test/: ctest runs the
#      unit, golden, error-corpus, CLI, e2e and gradcheck tests, and the
#      runtime's kernels again under RLX_ISA=avx2 and =scalar (isa.*).
#   2. aarch64 under qemu in build-a64/ (docs/testing.md), when
#      aarch64-linux-gnu-gcc and qemu-aarch64 are installed (else skipped,
#      saying so): the runtime and its unit suites cross-built
#      (-DRLX_RUNTIME_ONLY=ON, cmake/aarch64-linux-gnu.cmake) and run
#      under qemu-aarch64 at the default ISA (NEON) and RLX_ISA=scalar,
#      and the e2e kernel cases compiled by build-test's rlxc with
#      --target=aarch64-linux-gnu, at both ISAs.
#   3. AddressSanitizer + UBSan build in build-asan/ (-DRLX_SANITIZE=ON):
#      unit tests, corpora, CLI, oom and generated graphs through an
#      instrumented rlxc, every gradient check's compilation, and a
#      fixed sample of the e2e and native gradcheck cases linked with
#      the sanitized runtime (docs/testing.md says which).
#   4. libFuzzer build with clang in build-fuzz/ (-DRLX_FUZZ=ON): the
#      front-end and pass fuzzer (fuzz_frontend), then the code
#      generation fuzzer (fuzz_codegen: pipeline, LLVM IR, verifier;
#      plain, with --grad and with --jvp --hvp), FUZZ_SECONDS (default
#      60) in all, FUZZ_CODEGEN_SECONDS (default half) of it for fuzz_codegen;
#      then the checkpoint readers (fuzz_params: safetensors and .npy)
#      for FUZZ_PARAMS_SECONDS (default 10) more;
#      seeded with the fuzz corpus, every .rlx of the golden, error,
#      gradcheck, hvp and e2e corpora and (fuzz_codegen) graphs from
#      tests/tools/gen_graphs.py; any crash, leak or timeout fails.
#   scripts/test.sh --full   the same with every e2e and gradcheck case
#                            in the sanitizer tree too (-DRLX_TEST_FULL=ON):
#                            run it before resolving an issue that changes
#                            code generation or the runtime.
# At the end (pass or fail) a table gives each step's wall time.
# Every test has a time limit (TEST_TIMEOUT seconds, default 600), so a
# hang fails its test instead of stalling CI.
# Environment: JOBS (default 2), FUZZ_SECONDS, FUZZ_CODEGEN_SECONDS,
# FUZZ_PARAMS_SECONDS,
# SKIP_MAIN=1, SKIP_AARCH64=1, SKIP_ASAN=1, SKIP_FUZZ=1, TEST_TIMEOUT,
# BUILD_PREFIX (default ROOT/build-: the trees are PREFIXtest, PREFIXa64,
# PREFIXasan and PREFIXfuzz).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
JOBS=${JOBS:-2}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
FUZZ_CODEGEN_SECONDS=${FUZZ_CODEGEN_SECONDS:-$((FUZZ_SECONDS / 2))}
FUZZ_PARAMS_SECONDS=${FUZZ_PARAMS_SECONDS:-10}
CLANG=${CLANG:-$(command -v clang-19 || command -v clang || true)}
CLANGXX=${CLANGXX:-$(command -v clang++-19 || command -v clang++ || true)}
P=${BUILD_PREFIX:-$ROOT/build-}
TEST_TIMEOUT=${TEST_TIMEOUT:-600}
FULL=OFF
for a in "$@"; do
  case $a in
    --full) FULL=ON ;;
    *) echo "usage: scripts/test.sh [--full]" >&2; exit 2 ;;
  esac
done

# step LABEL TEXT: start timing a step (ends the previous one) and print
# TEXT; the table of step times (by LABEL) is printed when the script
# exits, passing or not. .ci/run passes its package install time in
# CI_SETUP_SECONDS.
STEPS=() STEP_T0=$(date +%s) STEP_NAME= T_START=$(date +%s)
if [ -n "${CI_SETUP_SECONDS:-}" ]; then
  STEPS+=("$(printf '%-24s %6ds' "packages (.ci/run)" "$CI_SETUP_SECONDS")")
  T_START=$((T_START - CI_SETUP_SECONDS))
fi
end_step() {
  [ -n "$STEP_NAME" ] &&
    STEPS+=("$(printf '%-24s %6ds' "$STEP_NAME" $(($(date +%s) - STEP_T0)))")
  STEP_NAME=
}
step() {
  end_step
  STEP_NAME=$1
  STEP_T0=$(date +%s)
  printf '\n==== %s ====\n' "$2"
}
print_times() {
  local rc=${1:-$?}
  end_step
  printf '\n==== wall time per step (%s) ====\n' \
    "$([ $rc = 0 ] && echo passed || echo "FAILED, exit $rc")"
  printf '%s\n' "${STEPS[@]}"
  printf '%-24s %6ds\n' total $(($(date +%s) - T_START))
}
trap print_times EXIT

if [ "${SKIP_MAIN:-0}" != 1 ]; then
  step "main: build" "build (RelWithDebInfo) in ${P}test"
  cmake -S "$ROOT" -B "${P}test" -DCMAKE_BUILD_TYPE=RelWithDebInfo
  cmake --build "${P}test" -j"$JOBS"
  step "main: ctest" "ctest: all tiers"
  (cd "${P}test" &&
   ctest --output-on-failure -j"$JOBS" --timeout "$TEST_TIMEOUT")
fi

A64_TOOLS="aarch64-linux-gnu-gcc and qemu-aarch64 (apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)"
if [ "${SKIP_AARCH64:-0}" != 1 ]; then
  if ! command -v aarch64-linux-gnu-gcc >/dev/null ||
     ! command -v qemu-aarch64 >/dev/null; then
    printf '\ntest.sh: SKIPPING the aarch64 tier: it needs %s\n' "$A64_TOOLS"
  else
    HOST_RLXC=
    if [ -x "${P}test/rlxc" ]; then
      HOST_RLXC=${P}test/rlxc
    else
      printf '\ntest.sh: no %s: the aarch64 tier runs the unit suites only\n' \
        "${P}test/rlxc"
    fi
    step "aarch64: build" "cross build for aarch64 (runtime, tests) in ${P}a64"
    cmake -S "$ROOT" -B "${P}a64" -DRLX_RUNTIME_ONLY=ON \
          -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/aarch64-linux-gnu.cmake" \
          -DRLX_HOST_RLXC="$HOST_RLXC"
    cmake --build "${P}a64" -j"$JOBS"
    step "aarch64: ctest" "ctest under qemu-aarch64"
    (cd "${P}a64" &&
     ctest --output-on-failure -j"$JOBS" --timeout "$TEST_TIMEOUT")
  fi
fi

if [ "${SKIP_ASAN:-0}" != 1 ]; then
  step "asan: build" "build with AddressSanitizer + UBSan in ${P}asan"
  cmake -S "$ROOT" -B "${P}asan" -DCMAKE_BUILD_TYPE=Debug \
        -DRLX_SANITIZE=ON -DRLX_TEST_FULL=$FULL
  cmake --build "${P}asan" -j"$JOBS"
  step "asan: ctest" "ctest under ASan (RLX_TEST_FULL=$FULL)"
  (cd "${P}asan" &&
   ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
   UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
   ctest --output-on-failure -j"$JOBS" --timeout "$TEST_TIMEOUT")
fi

if [ "${SKIP_FUZZ:-0}" != 1 ]; then
  [ -n "$CLANG" ] || { echo "test.sh: clang is needed for the fuzzer"; exit 1; }
  step "fuzz: build" "build the fuzzers with $CLANG in ${P}fuzz"
  cmake -S "$ROOT" -B "${P}fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_C_COMPILER="$CLANG" -DCMAKE_CXX_COMPILER="$CLANGXX" \
        -DRLX_FUZZ=ON
  cmake --build "${P}fuzz" -j"$JOBS" --target fuzz_frontend fuzz_codegen \
        fuzz_params
  WORK=$(mktemp -d)
  trap 'rc=$?; rm -rf "$WORK"; print_times $rc' EXIT
  SEEDS=()
  for d in "$ROOT/tests/fuzz/corpus" "$ROOT/tests/golden" "$ROOT/tests/errors" \
           "$ROOT/tests/dynamic" \
           "$ROOT/tests/gradcheck/cases" "$ROOT/tests/hvp/cases" \
           "$ROOT/tests/e2e/cases"; do
    [ -d "$d" ] && SEEDS+=("$d")
  done
  DICT=()
  [ -f "$ROOT/tests/fuzz/rlx.dict" ] && DICT=(-dict="$ROOT/tests/fuzz/rlx.dict")
  # run_fuzzer NAME SECONDS EXTRA_SEED_DIR...: new units go to WORK/NAME,
  # a failing input to ${P}fuzz/artifacts/NAME-crash-... (kept)
  mkdir -p "${P}fuzz/artifacts"
  run_fuzzer() {
    local name=$1 secs=$2 fuzzer
    shift 2
    [ "$secs" -gt 0 ] || return 0
    fuzzer=$(find "${P}fuzz" -name "$name" -type f -perm -u+x | head -1)
    [ -n "$fuzzer" ] || { echo "test.sh: no $name"; exit 1; }
    mkdir -p "$WORK/$name"
    step "fuzz: $name" "fuzz $name for ${secs}s"
    "$fuzzer" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
              -max_len=65536 -artifact_prefix="${P}fuzz/artifacts/$name-" \
              "${DICT[@]}" "$WORK/$name" "${SEEDS[@]}" "$@"
  }
  run_fuzzer fuzz_frontend $((FUZZ_SECONDS - FUZZ_CODEGEN_SECONDS))
  # valid graphs with sharing, broadcasts and control flow as extra seeds
  python3 "$ROOT/tests/tools/gen_graphs.py" corpus --out-dir "$WORK/gen" \
          --count 40 --nodes 40
  run_fuzzer fuzz_codegen "$FUZZ_CODEGEN_SECONDS" "$WORK/gen"
  # the checkpoint readers, seeded with NumPy / safetensors files
  SEEDS=("$ROOT/tests/unit/data/params") DICT=()
  run_fuzzer fuzz_params "$FUZZ_PARAMS_SECONDS"
fi
end_step
echo "all tests passed"
