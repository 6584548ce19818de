# scripts/cuda-probe.sh, which decides whether the build has CUDA: an nvcc
# whose toolkit lacks headers or libraries is refused with the reason, and
# the next candidate is tried; a real toolkit, when this machine has one,
# is found whole.
. test/cli/lib.bash
P=scripts/cuda-probe.sh
found=$(sh $P cc)        # what the build uses here

mkdir -p "$TMP/nohdr/bin" "$TMP/nohdr/lib" "$TMP/nolib/bin" "$TMP/nolib/include"
printf '#!/bin/sh\nexit 0\n' > "$TMP/nohdr/bin/nvcc"
chmod +x "$TMP/nohdr/bin/nvcc"
cp "$TMP/nohdr/bin/nvcc" "$TMP/nolib/bin/nvcc"
: > "$TMP/nohdr/lib/libcublas.so"
: > "$TMP/nolib/include/cublas_v2.h"
: > "$TMP/nolib/include/cuda_runtime.h"

out=$(PLB_CUDA_HOMES= sh $P cc)
check "no candidate: none (got $out)" grep -q '^none: nvcc not found' <<<"$out"
out=$(PLB_CUDA_HOMES="$TMP/nohdr" sh $P cc)
check "no headers: named (got $out)" grep -q "^none: $TMP/nohdr/bin/nvcc found but not the headers" <<<"$out"
out=$(PLB_CUDA_HOMES="$TMP/nolib" sh $P cc)
check "no cuBLAS: named (got $out)" grep -q "^none: $TMP/nolib/bin/nvcc found but not libcublas.so" <<<"$out"
# Empty headers and no real library: the trial build fails and says so.
mkdir "$TMP/nolib/lib" && : > "$TMP/nolib/lib/libcublas.so"
out=$(PLB_CUDA_HOMES="$TMP/nolib" sh $P cc)
check "toolkit that does not build: named (got $out)" grep -q "^none: a program using $TMP/nolib/include .* does not build with cc" <<<"$out"

if [ "${found%%:*}" != none ]; then
	home=$(cd "$(dirname "${found%% *}")/.." && pwd)
	out=$(PLB_CUDA_HOMES="$TMP/nohdr $home" sh $P cc)
	set -- $out
	check "broken toolkit skipped, real one found (got $out)" [ "$#" -eq 3 ]
	check "nvcc is the real one (got ${1:-})" [ -x "${1:-/nonexistent}" -a "${1:-}" != "$TMP/nohdr/bin/nvcc" ]
	check "headers are there (got ${2:-})" [ -f "${2:-}/cuda_runtime.h" -a -f "${2:-}/cublas_v2.h" ]
	check "cuBLAS is there (got ${3:-})" [ -e "${3:-}/libcublas.so" ]
else
	echo "no whole CUDA toolkit here ($found): the real-toolkit case is not checked"
fi
finish
