#!/bin/sh
# Finds a CUDA toolkit that plb can build with, for the Makefile.
#
#   scripts/cuda-probe.sh CC
#
# Prints one line: "NVCC INCDIR LIBDIR" when nvcc, the headers of the CUDA
# runtime and cuBLAS, and their libraries are all there and a C program
# that uses them compiles and links with CC; otherwise "none: REASON".
# Candidates, in order: the toolkit of the nvcc on PATH, /usr/local/cuda,
# then nvcc with the system's include and library directories (Debian's
# nvidia-cuda-toolkit). The first complete one wins. PLB_CUDA_HOMES, when
# set, replaces that list (the tests use it).
cc=${1:-cc}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

cat > "$tmp/probe.c" <<'EOF'
#include <cuda_runtime.h>
#include <cublas_v2.h>
int main(void)
{
	int n = 0;
	cublasHandle_t h;
	if (cudaGetDeviceCount(&n) != cudaSuccess)
		return 1;
	return cublasCreate(&h) != CUBLAS_STATUS_SUCCESS;
}
EOF

first() { for f in "$@"; do [ -e "$f" ] && { echo "$f"; return; }; done; }

reason="nvcc not found (PATH, /usr/local/cuda/bin, /usr/bin)"
path_nvcc=$(command -v nvcc 2>/dev/null)
homes=${PLB_CUDA_HOMES-${path_nvcc:+$(dirname "$path_nvcc")/..} /usr/local/cuda /usr}
for home in $homes; do
	nvcc=$(first "$home/bin/nvcc")
	[ -n "$nvcc" ] || continue
	h=$(first "$home"/include/cublas_v2.h "$home"/targets/*/include/cublas_v2.h)
	l=$(first "$home"/lib64/libcublas.so "$home"/lib/libcublas.so \
		"$home"/targets/*/lib/libcublas.so "$home"/lib/*-linux-gnu/libcublas.so)
	if [ -z "$h" ] || [ ! -e "$(dirname "$h")/cuda_runtime.h" ]; then
		reason="$nvcc found but not the headers cuda_runtime.h and cublas_v2.h"
		continue
	fi
	if [ -z "$l" ]; then
		reason="$nvcc found but not libcublas.so"
		continue
	fi
	inc=$(cd "$(dirname "$h")" && pwd)
	lib=$(cd "$(dirname "$l")" && pwd)
	if ! $cc -I"$inc" "$tmp/probe.c" -o "$tmp/probe" -L"$lib" \
	    -lcublas -lcudart 2>"$tmp/err"; then
		err=$(head -n 1 "$tmp/err")
		reason="a program using $inc and $lib does not build with $cc${err:+: $err}"
		continue
	fi
	echo "$(cd "$(dirname "$nvcc")" && pwd)/nvcc $inc $lib"
	exit 0
done
echo "none: $reason"
