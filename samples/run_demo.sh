#!/bin/sh
# run_demo.sh -- build rlxc and the runtime, compile a sample graph, link
# it with its C driver and run it.
#
#   sh samples/run_demo.sh [train|cnn|gpt|forward] [driver arguments...]
#     train    (default) rlxc --grad samples/mlp.rlx, then train the MLP
#              on the 8x8 digits by SGD (samples/train_digits.c); fails
#              when the test accuracy is below 95%
#     cnn      the same with the convnet samples/cnn.rlx (conv2d,
#              max_pool2d, group_norm); fails below 97%
#     gpt      rlxc --grad samples/gpt.rlx (a character-level GPT), then
#              train it with AdamW on the GPL-3 text (samples/train_gpt.c,
#              arguments [steps] [threads] [max_ratio]) and print a
#              sample; fails when the validation loss is not below 0.75x
#              the unigram entropy
#     forward  rlxc samples/forward.rlx, run samples/forward_demo.c
#
# Environment: RLX_BUILD (build directory, default ./build),
# RLX_NO_BUILD=1 (use an existing build), CMAKE_ARGS (extra configure
# arguments), CC (C compiler, default cc).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${RLX_BUILD:-$root/build}
cc=${CC:-cc}
what=${1:-train}
[ $# -gt 0 ] && shift

if [ "${RLX_NO_BUILD:-0}" != 1 ]; then
  # shellcheck disable=SC2086
  echo "run_demo.sh: building rlxc and the runtime in $build"
  cmake -S "$root" -B "$build" ${CMAKE_ARGS:-} >/dev/null
  cmake --build "$build" -j2 --target rlxc rlxrt
fi
rlxc=$build/rlxc
lib=$build/runtime/librlxrt.a
out=$build/samples
mkdir -p "$out"
cflags="-std=c11 -O2 -I$root -I$root/runtime -I$out"

case $what in
train)
  "$rlxc" "$root/samples/mlp.rlx" --grad -o "$out/mlp.o"
  $cc $cflags "$root/samples/train_digits.c" "$out/mlp.o" "$lib" \
    -lm -lpthread -o "$out/train_digits"
  gzip -dc "$root/samples/data/digits.csv.gz" > "$out/digits.csv"
  "$out/train_digits" "$out/digits.csv" "$@"
  ;;
cnn)
  "$rlxc" "$root/samples/cnn.rlx" --grad -o "$out/cnn.o"
  $cc $cflags -DMODEL=cnn -DMODEL_H='"cnn.h"' \
    "$root/samples/train_digits.c" "$out/cnn.o" "$lib" \
    -lm -lpthread -o "$out/train_digits_cnn"
  gzip -dc "$root/samples/data/digits.csv.gz" > "$out/digits.csv"
  [ $# -gt 0 ] || set -- 30 0.97 0.1
  "$out/train_digits_cnn" "$out/digits.csv" "$@"
  ;;
gpt)
  "$rlxc" "$root/samples/gpt.rlx" --grad -o "$out/gpt.o"
  # -O3 -fno-math-errno: lets the compiler vectorize the AdamW loop
  $cc $cflags -O3 -fno-math-errno "$root/samples/train_gpt.c" \
    "$out/gpt.o" "$lib" -lm -lpthread -o "$out/train_gpt"
  gzip -dc "$root/samples/data/gpl-3.txt.gz" > "$out/gpl-3.txt"
  "$out/train_gpt" "$out/gpl-3.txt" "$@"
  ;;
forward)
  "$rlxc" "$root/samples/forward.rlx" -o "$out/forward.o"
  $cc $cflags "$root/samples/forward_demo.c" "$out/forward.o" "$lib" \
    -lm -lpthread -o "$out/forward_demo"
  "$out/forward_demo" "$@"
  ;;
*)
  echo "usage: $0 [train|cnn|gpt|forward] [args...]" >&2
  exit 2
  ;;
esac
