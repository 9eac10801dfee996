#!/usr/bin/env bash
# File: tests/e2e/consumer.sh
# The find_package test: install the built kcv into a fresh prefix, configure and build the
# separate project tests/consumer against that prefix only, and run the program it links.
#   consumer.sh BUILD_DIR SOURCE_DIR WORKDIR GENERATOR CXX_COMPILER [CXX_FLAGS]
# CXX_FLAGS (e.g. the sanitizer flags kcv was built with) go to the consumer's compile and link.
set -eu
build=$1 src=$2 work=$3 generator=$4 cxx=$5 flags=${6:-}
rm -rf "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src/tests/consumer" -B "$work/build" -G "$generator" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags"
cmake --build "$work/build"
"$work/build/kcv_consumer"
test -x "$work/prefix/bin/kcv"
"$work/prefix/bin/kcv" gates >/dev/null
