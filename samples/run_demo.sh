#!/bin/sh
# run_demo.sh -- build rlxc and the runtime, compile a sample graph, link
# it with its C driver and run it.
#
#   sh samples/run_demo.sh [train|train_step|gpu|cnn|gpt|gpt-gpu|gpt2|forward|newton|qat|mpi] [driver arguments...]
#     train    (default) rlxc --grad samples/mlp.rlx, then train the MLP
#              on the 8x8 digits by SGD (samples/train_digits.c); fails
#              when the test accuracy is below 95%
#     train_step  the same training, each step one call of mlp_train
#              (rlxc --train=sgd: forward, loss, backward and the update
#              of every parameter in place); fails below 95% too
#     gpu      train_step on an NVIDIA GPU: rlxc --train=sgd --target=cuda,
#              the params in GPU memory, every step on the GPU (arguments
#              as train); without a usable GPU and driver it says so and
#              exits 0
#     cnn      the same with the convnet samples/cnn.rlx (conv2d,
#              max_pool2d, group_norm); fails below 97%
#     gpt      rlxc --grad samples/gpt.rlx (a character-level GPT), then
#              train it with AdamW on the GPL-3 text (samples/train_gpt.c,
#              arguments [steps] [threads] [max_ratio]) and print a
#              sample (each byte's logits from gpt_gen.rlx, the forward
#              over exactly the context's length, a dynamic dimension)
#              drawn by the compiled sample op (gpt_sample.rlx:
#              temperature 0.8, top-p 0.95); fails when the validation loss is not below 0.75x
#              the unigram entropy
#     gpt-gpu  the same GPT on an NVIDIA GPU: rlxc --train=adamw
#              --target=cuda --cuda-graph, params, optimizer state and
#              every step, validation pass and sampled byte on the GPU
#              (arguments [steps] [unused] [max_ratio]); without a usable
#              GPU and driver it says so and exits 0
#     gpt2     GPT-2 small (samples/gpt2.rlx: 124M params, bf16 compute,
#              f32 params) trained with AdamW on an NVIDIA GPU on the
#              GPL-3 text, BPE-tokenized (samples/train_gpt2.c, arguments
#              [steps] [max_ratio] [peak_lr]); prints the loss and
#              tokens/s; without a usable GPU it says so and exits 0
#              gpt and gpt-gpu compile $GPT_RLX when set, e.g.
#              GPT_RLX=samples/gpt_bf16.rlx: the same model in mixed
#              precision (docs/mixed-precision.md)
#     forward  rlxc samples/forward.rlx, run samples/forward_demo.c
#     newton   rlxc --grad --hvp samples/newton.rlx (softmax regression
#              on the digits), then minimize it by Newton-CG on
#              Hessian-vector products and, for comparison, by SGD
#              (samples/newton.c, arguments [newton_iters] [sgd_epochs]
#              [sgd_lr] [grad_tol]); fails unless Newton-CG reaches
#              |grad| <= grad_tol (1e-5) within newton_iters (15)
#              iterations and ends below SGD
#     qat      quantization-aware training: rlxc --grad samples/mlp.rlx
#              and samples/qat.rlx (fake_quantize), rlxc
#              samples/qat_int8.rlx (quantize + q_matmul); samples/qat.c
#              trains the float MLP, fine-tunes it with fake quantization,
#              converts it to int8 and prints the three test accuracies
#              and the model sizes (arguments [float_epochs] [qat_epochs]
#              [lr] [max_drop]); fails when the int8 accuracy is more
#              than max_drop (0.01) below the float one
#     mpi      data-parallel SGD with Open MPI (samples/train_mpi.c, built
#              with mpicc), arguments [mlp|cnn] [epochs] [min_accuracy]
#              [learning_rate] [shards] (defaults: mlp 30 0.95 0.3 4,
#              cnn 30 0.97 0.2 4): trains on global batches of shards x 32
#              with `mpirun -np RLX_MPI_NP` (default 2), then again with
#              -np 1 on the same global batches, and compares the two
#              safetensors checkpoints (samples/compare_params.py:
#              |a - b| <= 1e-5 |b| + 1e-6); fails below min_accuracy or
#              when they differ; exit status 77 without mpicc or mpirun
#
# Environment: RLX_BUILD (build directory, default ./build),
# RLX_NO_BUILD=1 (use an existing build), CMAKE_ARGS (extra configure
# arguments), CC (C compiler, default cc), MPICC (MPI compiler wrapper
# and flags, default mpicc), MPIRUN_ARGS (extra mpirun arguments),
# PYTHON (default python3), GPT_RLX (the graph of gpt and gpt-gpu).
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
gpt_rlx=${GPT_RLX:-$root/samples/gpt.rlx}
lib=$build/runtime/librlxrt.a
out=$build/samples
mkdir -p "$out"
cflags="-std=c11 -O2 -I$root -I$root/runtime -I$out"

# unpack NAME.gz DEST: decompress to a temporary and rename it, so that
# runs sharing $out (ctest runs the sample tests two at a time) never
# read a file another run is rewriting
unpack() {
  gzip -dc "$1" > "$2.$$"
  mv -f "$2.$$" "$2"
}

case $what in
train)
  "$rlxc" "$root/samples/mlp.rlx" --grad -o "$out/mlp.o"
  $cc $cflags "$root/samples/train_digits.c" "$out/mlp.o" "$lib" \
    -lm -lpthread -o "$out/train_digits"
  unpack "$root/samples/data/digits.csv.gz" "$out/digits.csv"
  "$out/train_digits" "$out/digits.csv" "$@"
  ;;
train_step)
  "$rlxc" "$root/samples/mlp.rlx" --grad --train=sgd -o "$out/mlp_step.o"
  $cc $cflags -DTRAIN_STEP -DMODEL=mlp -DMODEL_H='"mlp_step.h"' \
    "$root/samples/train_digits.c" "$out/mlp_step.o" \
    "$lib" -lm -lpthread -o "$out/train_digits_step"
  unpack "$root/samples/data/digits.csv.gz" "$out/digits.csv"
  "$out/train_digits_step" "$out/digits.csv" "$@"
  ;;
gpu)
  "$rlxc" "$root/samples/mlp.rlx" --grad --train=sgd --target=cuda \
    --name=mlp -o "$out/mlp_gpu.o"
  $cc $cflags -DGPU -DTRAIN_STEP -DMODEL=mlp -DMODEL_H='"mlp_gpu.h"' \
    "$root/samples/train_digits.c" "$out/mlp_gpu.o" \
    "$lib" -lm -lpthread -ldl -o "$out/train_digits_gpu"
  unpack "$root/samples/data/digits.csv.gz" "$out/digits.csv"
  if ! "$out/train_digits_gpu" --probe 2>"$out/gpu_probe.txt"; then
    echo "run_demo.sh gpu: no usable NVIDIA GPU here ($(cat "$out/gpu_probe.txt")); nothing to run"
    exit 0
  fi
  "$out/train_digits_gpu" "$out/digits.csv" "$@"
  ;;
cnn)
  "$rlxc" "$root/samples/cnn.rlx" --grad -o "$out/cnn.o"
  $cc $cflags -DMODEL=cnn -DMODEL_H='"cnn.h"' \
    "$root/samples/train_digits.c" "$out/cnn.o" "$lib" \
    -lm -lpthread -o "$out/train_digits_cnn"
  unpack "$root/samples/data/digits.csv.gz" "$out/digits.csv"
  [ $# -gt 0 ] || set -- 30 0.97 0.1
  "$out/train_digits_cnn" "$out/digits.csv" "$@"
  ;;
gpt)
  "$rlxc" "$gpt_rlx" --grad -o "$out/gpt.o"
  "$rlxc" "$root/samples/gpt_sample.rlx" -o "$out/gpt_sample.o"
  "$rlxc" "$root/samples/gpt_gen.rlx" -o "$out/gpt_gen.o"
  # -O3 -fno-math-errno: lets the compiler vectorize the AdamW loop
  $cc $cflags -O3 -fno-math-errno "$root/samples/train_gpt.c" \
    "$out/gpt.o" "$out/gpt_sample.o" "$out/gpt_gen.o" "$lib" -lm -lpthread \
    -o "$out/train_gpt"
  unpack "$root/samples/data/gpl-3.txt.gz" "$out/gpl-3.txt"
  "$out/train_gpt" "$out/gpl-3.txt" "$@"
  ;;
gpt-gpu)
  # the GPT's training step (--train=adamw), validation and sampling on
  # an NVIDIA GPU, each entry replayed as a CUDA graph
  mkdir -p "$out/gpu"
  "$rlxc" "$gpt_rlx" --train=adamw --target=cuda --cuda-graph \
    -o "$out/gpu/gpt.o"
  "$rlxc" "$root/samples/gpt_sample.rlx" --target=cuda -o "$out/gpu/gpt_sample.o"
  $cc -I"$out/gpu" $cflags -DGPU -DTRAIN_STEP "$root/samples/train_gpt.c" \
    "$out/gpu/gpt.o" "$out/gpu/gpt_sample.o" "$lib" -lm -lpthread -ldl \
    -o "$out/train_gpt_gpu"
  unpack "$root/samples/data/gpl-3.txt.gz" "$out/gpl-3.txt"
  if ! "$out/train_gpt_gpu" --probe 2>"$out/gpu_probe.txt"; then
    echo "run_demo.sh gpt-gpu: no usable NVIDIA GPU here ($(cat "$out/gpu_probe.txt")); nothing to run"
    exit 0
  fi
  "$out/train_gpt_gpu" "$out/gpl-3.txt" "$@"
  ;;
gpt2)
  # GPT-2 small's training step (--train=adamw) on an NVIDIA GPU, replayed
  # as a CUDA graph (compiling the 124M graph takes about a minute)
  mkdir -p "$out/gpu"
  "$rlxc" "$root/samples/gpt2.rlx" --train=adamw --target=cuda --cuda-graph \
    -o "$out/gpu/gpt2.o"
  $cc -I"$out/gpu" $cflags -I"$root/samples" -DGPU "$root/samples/train_gpt2.c" \
    "$root/samples/bpe.c" "$out/gpu/gpt2.o" "$lib" -lm -lpthread -ldl \
    -o "$out/train_gpt2_gpu"
  unpack "$root/samples/data/gpl-3.txt.gz" "$out/gpl-3.txt"
  unpack "$root/samples/data/gpt2-vocab.bpe.gz" "$out/gpt2-vocab.bpe"
  if ! "$out/train_gpt2_gpu" --probe 2>"$out/gpu_probe.txt"; then
    echo "run_demo.sh gpt2: no usable NVIDIA GPU here ($(cat "$out/gpu_probe.txt")); nothing to run"
    exit 0
  fi
  "$out/train_gpt2_gpu" "$out/gpt2-vocab.bpe" "$out/gpl-3.txt" "$@"
  ;;
forward)
  "$rlxc" "$root/samples/forward.rlx" -o "$out/forward.o"
  $cc $cflags "$root/samples/forward_demo.c" "$out/forward.o" "$lib" \
    -lm -lpthread -o "$out/forward_demo"
  "$out/forward_demo" "$@"
  ;;
newton)
  "$rlxc" "$root/samples/newton.rlx" --grad --hvp -o "$out/softreg.o"
  "$rlxc" "$root/samples/newton.rlx" --entry=softreg_batch --grad \
    -o "$out/softreg_batch.o"
  $cc $cflags "$root/samples/newton.c" "$out/softreg.o" \
    "$out/softreg_batch.o" "$lib" -lm -lpthread -o "$out/newton"
  unpack "$root/samples/data/digits.csv.gz" "$out/digits_newton.csv"
  "$out/newton" "$out/digits_newton.csv" "$@"
  ;;
qat)
  "$rlxc" "$root/samples/mlp.rlx" --grad -o "$out/mlp.o"
  "$rlxc" "$root/samples/qat.rlx" --grad -o "$out/qat.o"
  "$rlxc" "$root/samples/qat_int8.rlx" -o "$out/qat_int8.o"
  $cc $cflags "$root/samples/qat.c" "$out/mlp.o" "$out/qat.o" \
    "$out/qat_int8.o" "$lib" -lm -lpthread -o "$out/qat"
  unpack "$root/samples/data/digits.csv.gz" "$out/digits_qat.csv"
  "$out/qat" "$out/digits_qat.csv" "$@"
  ;;
mpi)
  mpicc=${MPICC:-mpicc}
  if ! command -v "${mpicc%% *}" >/dev/null || ! command -v mpirun >/dev/null
  then
    echo "run_demo.sh: mpicc or mpirun not found (Debian: apt-get install" \
         "openmpi-bin libopenmpi-dev); skipped" >&2
    exit 77
  fi
  model=${1:-mlp}
  [ $# -gt 0 ] && shift
  case $model in
  mlp) set -- "${1:-30}" "${2:-0.95}" "${3:-0.3}" "${4:-4}" ;;
  cnn) set -- "${1:-30}" "${2:-0.97}" "${3:-0.2}" "${4:-4}" ;;
  *) echo "run_demo.sh: mpi: model mlp or cnn, not $model" >&2; exit 2 ;;
  esac
  epochs=$1 min_acc=$2 lr=$3 shards=$4
  np=${RLX_MPI_NP:-2}
  out=$out/mpi # its own files: the other cases may run at the same time
  mkdir -p "$out"
  "$rlxc" "$root/samples/$model.rlx" --grad -o "$out/$model.o"
  # shellcheck disable=SC2086
  $mpicc -I"$out" $cflags -DMODEL="$model" -DMODEL_H="\"$model.h\"" \
    "$root/samples/train_mpi.c" "$out/$model.o" "$lib" \
    -lm -lpthread -o "$out/train_mpi_$model"
  unpack "$root/samples/data/digits.csv.gz" "$out/digits.csv"
  # One host: shared memory between the ranks (btl self,vader, without
  # the single-copy mechanism, which containers often forbid), more
  # ranks than cores allowed; mpirun refuses root without these two.
  if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi
  mpirun="mpirun --oversubscribe --mca btl self,vader"
  mpirun="$mpirun --mca btl_vader_single_copy_mechanism none"
  mpirun="$mpirun ${MPIRUN_ARGS:-}"
  ckpt=$out/${model}_mpi
  echo "run_demo.sh: mpirun -np $np, $shards shards of 32 per step"
  $mpirun -np "$np" "$out/train_mpi_$model" "$out/digits.csv" \
    "$epochs" "$min_acc" "$lr" "$ckpt.np$np.safetensors" "$shards"
  echo "run_demo.sh: again with mpirun -np 1 on the same global batches"
  $mpirun -np 1 "$out/train_mpi_$model" "$out/digits.csv" \
    "$epochs" 0 "$lr" "$ckpt.np1.safetensors" "$shards" >"$ckpt.np1.log" ||
    { cat "$ckpt.np1.log"; exit 1; }
  tail -n 2 "$ckpt.np1.log"
  "${PYTHON:-python3}" "$root/samples/compare_params.py" \
    "$ckpt.np$np.safetensors" "$ckpt.np1.safetensors"
  ;;
*)
  echo "usage: $0 [train|train_step|gpu|cnn|gpt|gpt-gpu|gpt2|forward|newton|qat|mpi] [args...]" >&2
  exit 2
  ;;
esac
