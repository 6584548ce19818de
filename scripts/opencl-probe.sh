#!/bin/sh
# Finds what plb's OpenCL code builds with, for the Makefile.
#
#   scripts/opencl-probe.sh CC
#
# Prints "ok" when the OpenCL headers (CL/cl.h), the ICD loader's library
# (libOpenCL) and CLBlast (clblast_c.h, libclblast) are all there and a C
# program that uses them compiles and links with CC (CPATH and
# LIBRARY_PATH count, as an environment module sets them); otherwise
# "none: REASON". No OpenCL platform (a driver) is needed to build: the
# runtime finds the devices when a config asks for one.
cc=${1:-cc}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

hdr() { printf '#include <%s>\n' "$1" | $cc -E -x c - >/dev/null 2>&1; }
if ! hdr CL/cl.h; then
	echo "none: no OpenCL headers (CL/cl.h; Debian: opencl-headers)"
	exit 0
fi
if ! hdr clblast_c.h; then
	echo "none: OpenCL headers found but not CLBlast's (clblast_c.h; Debian: libclblast-dev)"
	exit 0
fi
cat > "$tmp/probe.c" <<'C'
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <clblast_c.h>
int main(void)
{
	cl_uint n = 0;
	clGetPlatformIDs(0, NULL, &n);
	return CLBlastClearCache() != CLBlastSuccess;
}
C
if ! $cc "$tmp/probe.c" -o "$tmp/probe" -lclblast -lOpenCL 2>"$tmp/err"; then
	echo "none: a program using OpenCL and CLBlast does not link with $cc (libOpenCL: ocl-icd-opencl-dev; libclblast: libclblast-dev): $(head -n 1 "$tmp/err")"
	exit 0
fi
echo ok
