#!/usr/bin/env bash
# Installs the Debian packages plb needs, idempotently: only what is missing,
# with one `apt-get update` first when something is. `make` runs this when a
# header or tool it needs is not found. Set PLB_NO_INSTALL=1 to only report;
# MPI=0 (make MPI=0) leaves Open MPI out, OPENCL=0 the OpenCL packages, OPENCV=0 OpenCV; COVERAGE=1 (make coverage) adds
# gcovr.
#
# A package counts as there when dpkg lists it, or when what plb uses from
# it is found without it: its header (or library) by the C compiler (with CPATH, as an
# environment module or a library unpacked by hand sets it), its command on
# PATH. So a machine whose libraries came from elsewhere installs nothing.
set -euo pipefail

# package          what plb uses of it         what for
pkgs=(
  "build-essential cmd:cc cmd:make"             # compiler, make
  "libopenblas-dev hdr:cblas.h"                 # BLAS for CPU kernels
  "liblapacke-dev  hdr:lapacke.h"               # least-squares fits in the balancer
  "libnlopt-dev    hdr:nlopt.h"                 # SLSQP equal-time solve
  "libinih-dev     hdr:ini.h"                   # config / scenario files
  "libcjson-dev    hdr:cjson/cJSON.h"           # --json output
  "libcmocka-dev   hdr:cmocka.h"                # unit tests
  "libhwloc-dev    hdr:hwloc.h"                 # topology (runtime)
  "pkgconf         cmd:pkg-config"              # building apps against an installed plb
  "cmake           cmd:cmake"                   # the same with CMake (find_package(plb))
  "python3-matplotlib py:matplotlib"            # plb-plot: traces to PNG
  "clang           cmd:clang"                   # libFuzzer for make fuzz (and a short run in make test)
  "procps          cmd:pgrep"                   # the fault tests find each rank's process
  "iproute2        cmd:ip"                      # emulated hosts (network namespaces) for the multi-host test
)
if [ "${MPI:-1}" != 0 ]; then
  pkgs+=("libopenmpi-dev cmd:mpicc" "openmpi-bin cmd:mpirun")   # MPI transport (runtime)
fi

if [ "${OPENCL:-1}" != 0 ]; then
  pkgs+=(
  "opencl-c-headers   hdr:CL/cl.h"                # the opencl device class and kernels
  "ocl-icd-opencl-dev lib:OpenCL"                 # the ICD loader, which finds every OpenCL driver
  "libclblast-dev     hdr:clblast_c.h lib:clblast" # plb-mm's (and k-means') OpenCL BLAS
  "pocl-opencl-icd    icd:"                       # an OpenCL device on the CPU: the tests run the class for real
  )
fi

if [ "${OPENCV:-1}" != 0 ]; then
  pkgs+=("libopencv-imgproc-dev lib:opencv_imgproc")  # plb-nuclei's CPU image operations (OpenCV)
fi

if [ "${COVERAGE:-0}" = 1 ]; then
  pkgs+=("gcovr cmd:gcovr")                     # line and branch coverage
fi

cc=${CC:-cc}
found() {   # found hdr:H | cmd:C | py:MODULE | lib:L | icd: (any OpenCL driver)
  case $1 in
  lib:*) printf 'int main(void){return 0;}\n' | "$cc" -x c - -l"${1#lib:}" -o /dev/null >/dev/null 2>&1 ;;
  icd:) ls /etc/OpenCL/vendors/*.icd ${OCL_ICD_VENDORS:+"$OCL_ICD_VENDORS"} >/dev/null 2>&1 ;;
  cmd:*) command -v "${1#cmd:}" >/dev/null 2>&1 ;;
  py:*) /usr/bin/python3 -c "import ${1#py:}" >/dev/null 2>&1 ;;   # Debian's python (plb-plot's)
  hdr:cmocka.h)   # cmocka.h needs these before it
    printf '#include <stdarg.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <setjmp.h>\n#include <cmocka.h>\n' |
      "$cc" -E -x c - >/dev/null 2>&1 ;;
  hdr:*) printf '#include <%s>\n' "${1#hdr:}" | "$cc" -E -x c - >/dev/null 2>&1 ;;
  esac
}

missing=()
for entry in "${pkgs[@]}"; do
  read -r p probes <<<"$entry"
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" && continue
  ok=1
  for probe in $probes; do
    found "$probe" || { ok=0; break; }
  done
  [ $ok = 1 ] || missing+=("$p")
done

# The BLAS the apps load must be an optimised one: liblapacke-dev brings in
# Netlib's reference BLAS, which also provides cblas.h, and the CPU kernels
# then run 10-30x slower (plb-mm --n 2048 --prec single, `cpu = 1`, on the
# 2-core dev VM: 2.88-2.94 s with it, 0.23-0.28 s with OpenBLAS). Where the
# libblas.so.3 that the loader finds is neither OpenBLAS, BLIS, MKL nor
# ATLAS (by their own exported symbols), libopenblas-dev is wanted:
# installed where we can, else a warning (the build still works).
slow_blas=0
# (no early exit in these pipes: under pipefail a writer cut short by
# SIGPIPE would fail the script)
blas=$({ command -v ldconfig >/dev/null && ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null |
  awk '$1 == "libblas.so.3" && /x86-64|aarch64|ppc64/ && f == "" { f = $NF } END { print f }') || blas=
if [ -n "$blas" ] && command -v nm >/dev/null 2>&1; then
  have=$(dpkg-query -W -f='${Status}' libopenblas-dev 2>/dev/null) || have=
  syms=$(nm -D --defined-only "$(readlink -f "$blas")" 2>/dev/null) || syms=
  if [[ $have != *"install ok installed"* ]] && ! grep -qE ' (openblas_|bli_|mkl_|MKL_|ATL_)' <<<"$syms"; then
    slow_blas=1
  fi
fi
if [ $slow_blas = 1 ] && { [ "${PLB_NO_INSTALL:-0}" = 1 ] || [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; }; then
  echo "install-deps: warning: $blas is a reference BLAS: the CPU kernels will be 10-30x slower; install libopenblas-dev (or point libblas.so.3 at an optimised BLAS)" >&2
elif [ $slow_blas = 1 ]; then
  missing+=(libopenblas-dev)
fi

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: missing Debian packages: ${missing[*]}"
if [ "${PLB_NO_INSTALL:-0}" = 1 ]; then
  echo "install-deps: PLB_NO_INSTALL=1, not installing; run: apt-get install ${missing[*]}" >&2
  exit 1
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: cannot install here (needs root and apt-get); install ${missing[*]}, or put their headers on CPATH and libraries on LIBRARY_PATH" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: installed ${missing[*]}"
