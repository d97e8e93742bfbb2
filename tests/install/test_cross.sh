#!/bin/sh
# test_cross.sh SOURCE_DIR RLXC CROSS_CC -- cross-build for aarch64:
# the runtime alone (-DRLX_RUNTIME_ONLY=ON) with the cross compiler, one
# graph with rlxc --target=aarch64-linux-gnu, and a program linking
# both; `file` must call every result an ARM aarch64 ELF.
set -eu
src=$(cd "$1" && pwd)
rlxc=$2
cc=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake -S "$src" -B "$work/rt" -DRLX_RUNTIME_ONLY=ON -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64 >/dev/null
cmake --build "$work/rt" -j2 --target rlxrt rlxrt_shared >/dev/null
"$rlxc" "$src/tests/install/downstream/model.rlx" --grad --jvp --hvp \
  --target=aarch64-linux-gnu -o "$work/model.o"
"$cc" -std=c11 "$src/tests/install/downstream/main.c" "$work/model.o" \
  -I"$work" -I"$src/runtime" "$work/rt/runtime/librlxrt.a" -lm -lpthread \
  -o "$work/app"
for f in "$work/model.o" "$work/rt/runtime/librlxrt.so" "$work/app"; do
  file -L "$f" | tee /dev/stderr | grep -q "ARM aarch64" || {
    echo "not an aarch64 object: $f"; exit 1; }
done
