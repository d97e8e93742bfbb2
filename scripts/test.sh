#!/usr/bin/env bash
# test.sh: build rlxc and run every test tier (README "Testing").
#   1. Release-like build (RelWithDebInfo) in build-test/: ctest runs the
#      unit, golden, error-corpus, CLI, e2e and gradcheck tests.
#   2. AddressSanitizer + UBSan build in build-asan/ (-DRLX_SANITIZE=ON):
#      every tier again: unit tests, corpora through an instrumented
#      rlxc, and e2e/gradcheck drivers linked with the sanitized runtime.
#   3. libFuzzer build with clang in build-fuzz/ (-DRLX_FUZZ=ON): the
#      front-end and pass fuzzer (fuzz_frontend), then the code
#      generation fuzzer (fuzz_codegen: pipeline, LLVM IR, verifier;
#      plain, with --grad and with --jvp --hvp), FUZZ_SECONDS (default
#      60) in all, FUZZ_CODEGEN_SECONDS (default half) of it for fuzz_codegen;
#      then the checkpoint readers (fuzz_params: safetensors and .npy)
#      for FUZZ_PARAMS_SECONDS (default 10) more;
#      seeded with the fuzz corpus, every .rlx of the golden, error,
#      gradcheck, hvp and e2e corpora and (fuzz_codegen) graphs from
#      tests/tools/gen_graphs.py; any crash, leak or timeout fails.
# Every test has a time limit (TEST_TIMEOUT seconds, default 600), so a
# hang fails its test instead of stalling CI.
# Environment: JOBS (default 2), FUZZ_SECONDS, FUZZ_CODEGEN_SECONDS,
# FUZZ_PARAMS_SECONDS,
# SKIP_MAIN=1, SKIP_ASAN=1, SKIP_FUZZ=1, TEST_TIMEOUT,
# BUILD_PREFIX (default ROOT/build-: the trees are PREFIXtest, PREFIXasan
# and PREFIXfuzz).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
JOBS=${JOBS:-2}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
FUZZ_CODEGEN_SECONDS=${FUZZ_CODEGEN_SECONDS:-$((FUZZ_SECONDS / 2))}
FUZZ_PARAMS_SECONDS=${FUZZ_PARAMS_SECONDS:-10}
CLANG=${CLANG:-$(command -v clang-19 || command -v clang || true)}
P=${BUILD_PREFIX:-$ROOT/build-}
TEST_TIMEOUT=${TEST_TIMEOUT:-600}

step() { printf '\n==== %s ====\n' "$*"; }

if [ "${SKIP_MAIN:-0}" != 1 ]; then
  step "build (RelWithDebInfo) in ${P}test"
  cmake -S "$ROOT" -B "${P}test" -DCMAKE_BUILD_TYPE=RelWithDebInfo
  cmake --build "${P}test" -j"$JOBS"
  step "ctest: all tiers"
  (cd "${P}test" &&
   ctest --output-on-failure -j"$JOBS" --timeout "$TEST_TIMEOUT")
fi

if [ "${SKIP_ASAN:-0}" != 1 ]; then
  step "build with AddressSanitizer + UBSan in ${P}asan"
  cmake -S "$ROOT" -B "${P}asan" -DCMAKE_BUILD_TYPE=Debug \
        -DRLX_SANITIZE=ON
  cmake --build "${P}asan" -j"$JOBS"
  step "ctest under ASan: every tier"
  (cd "${P}asan" &&
   ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
   UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
   ctest --output-on-failure -j"$JOBS" --timeout "$TEST_TIMEOUT")
fi

if [ "${SKIP_FUZZ:-0}" != 1 ]; then
  [ -n "$CLANG" ] || { echo "test.sh: clang is needed for the fuzzer"; exit 1; }
  step "build the fuzzers with $CLANG in ${P}fuzz"
  cmake -S "$ROOT" -B "${P}fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_C_COMPILER="$CLANG" -DRLX_FUZZ=ON
  cmake --build "${P}fuzz" -j"$JOBS" --target fuzz_frontend fuzz_codegen \
        fuzz_params
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
  SEEDS=()
  for d in "$ROOT/tests/fuzz/corpus" "$ROOT/tests/golden" "$ROOT/tests/errors" \
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
    step "fuzz $name for ${secs}s"
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
step "all tests passed"
