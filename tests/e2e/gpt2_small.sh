#!/bin/sh
# gpt2_small.sh BUILD [STEPS] -- GPT-2's driver (samples/train_gpt2.c and
# the BPE tokenizer samples/bpe.c) on the CPU, on a small configuration
# of samples/gen_gpt2.py's graph (the recipe of samples/gpt2.rlx: 2
# layers, 2 heads, width 64, context 32, batch 2, GPT-2's vocabulary of
# 50,257): STEPS (40) AdamW steps on the BPE-tokenized GPL-3 text must
# bring the loss from ln(50257) = 10.8 below 1.5x the unigram entropy of
# the tokens (5.76 nats; a step that does not learn stays near 10.8).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
d=$1/gpt2_small
mkdir -p "$d"
python3 "$root/samples/gen_gpt2.py" --layers 2 --heads 2 --width 64 \
  --ctx 32 --batch 2 > "$d/gpt2.rlx"
"$1/rlxc" "$d/gpt2.rlx" --train=adamw -o "$d/gpt2.o"
# shellcheck disable=SC2086
${CC:-cc} -std=c11 -O2 -I"$root" -I"$root/runtime" -I"$root/samples" -I"$d" \
  "$root/samples/train_gpt2.c" "$root/samples/bpe.c" "$d/gpt2.o" \
  "$1/runtime/librlxrt.a" -lm -lpthread -o "$d/train_gpt2"
gzip -dc "$root/samples/data/gpt2-vocab.bpe.gz" > "$d/vocab.bpe"
gzip -dc "$root/samples/data/gpl-3.txt.gz" > "$d/gpl-3.txt"
"$d/train_gpt2" "$d/vocab.bpe" "$d/gpl-3.txt" "${2:-40}" 1.5 3e-3
