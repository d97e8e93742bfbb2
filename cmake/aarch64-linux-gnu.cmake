# Cross toolchain for aarch64 Linux with Debian's gcc-aarch64-linux-gnu
# and libc6-dev-arm64-cross; ctest runs the test programs under
# qemu-user's qemu-aarch64 with the cross libc as its library prefix.
# For the runtime-only tree (docs/testing.md, "aarch64 under qemu"):
#   cmake -S . -B build-a64 -DRLX_RUNTIME_ONLY=ON \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
