#!/usr/bin/env bash
# File: tests/e2e/consumer.sh
# The find_package test: install the built kcv into a fresh prefix, configure and build the
# separate project tests/consumer against that prefix only, and run the program it links.
#   consumer.sh BUILD_DIR SOURCE_DIR WORKDIR GENERATOR CXX_COMPILER
set -eu
build=$1 src=$2 work=$3 generator=$4 cxx=$5
rm -rf "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src/tests/consumer" -B "$work/build" -G "$generator" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
cmake --build "$work/build"
"$work/build/kcv_consumer"
test -x "$work/prefix/bin/kcv"
"$work/prefix/bin/kcv" gates >/dev/null
