#!/bin/sh
# test_install.sh BUILD_DIR -- install a built tree into a fresh prefix
# and use it as a downstream user would:
#   1. the installed files are all there (rlxc, librlxrt.a/.so, rlxrt.h,
#      rlxrt.pc, the CMake package, the man page);
#   2. a CMake project (downstream/) with find_package(rlxc) and
#      rlxc_add_model builds and runs;
#   3. the same program built by hand with pkg-config, against the
#      static and the shared runtime, and as C++;
#   4. a shared object made from the generated object and the static
#      runtime, called from Python through ctypes.
set -eu
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
p=$work/prefix
cmake --install "$build" --prefix "$p" >/dev/null
for f in bin/rlxc lib/librlxrt.a lib/librlxrt.so include/rlxrt.h \
         lib/pkgconfig/rlxrt.pc lib/cmake/rlxc/rlxcConfig.cmake \
         share/man/man1/rlxc.1; do
  [ -e "$p/$f" ] || { echo "missing $f"; exit 1; }
done
echo "== CMake package"
cmake -S "$here/downstream" -B "$work/ds" -DCMAKE_PREFIX_PATH="$p" \
  >/dev/null
cmake --build "$work/ds" >/dev/null
"$work/ds/app"
echo "== pkg-config"
export PKG_CONFIG_PATH="$p/lib/pkgconfig"
"$p/bin/rlxc" "$here/downstream/model.rlx" --grad --jvp --hvp \
  -o "$work/model.o"
cc -std=c11 "$here/downstream/main.c" "$work/model.o" -I"$work" \
  $(pkg-config --cflags rlxrt) "$p/lib/librlxrt.a" \
  $(pkg-config --libs-only-l --static rlxrt | sed 's/-lrlxrt//') \
  -o "$work/app_static"
"$work/app_static"
cc -std=c11 "$here/downstream/main.c" "$work/model.o" -I"$work" \
  $(pkg-config --cflags --libs rlxrt) -lm -Wl,-rpath,"$p/lib" \
  -o "$work/app_shared"
"$work/app_shared"
echo "== C++"
c++ -x c++ "$here/downstream/main.c" -x none "$work/model.o" -I"$work" \
  $(pkg-config --cflags --libs --static rlxrt) -Wl,-rpath,"$p/lib" \
  -o "$work/app_cxx"
"$work/app_cxx"
echo "== Python ctypes"
cc -shared -o "$work/libmodel.so" "$work/model.o" "$p/lib/librlxrt.a" \
  -lm -lpthread
python3 "$here/downstream/call.py" "$work/libmodel.so"
