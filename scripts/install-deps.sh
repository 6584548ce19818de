#!/usr/bin/env bash
# Installs the Debian packages plb needs, idempotently: only what is missing,
# with one `apt-get update` first when something is. `make` runs this when a
# header or tool it needs is not found. Set PLB_NO_INSTALL=1 to only report;
# MPI=0 (make MPI=0) leaves Open MPI out.
set -euo pipefail

# package          what for
pkgs=(
  build-essential  # gcc, make
  pkg-config
  libopenblas-dev  # BLAS for CPU kernels
  liblapacke-dev   # least-squares fits in the balancer
  libnlopt-dev     # SLSQP equal-time solve
  libinih-dev      # config / scenario files
  libcjson-dev     # --json output
  libcmocka-dev    # unit tests
  libhwloc-dev     # topology (runtime)
)
if [ "${MPI:-1}" != 0 ]; then
  pkgs+=(libopenmpi-dev openmpi-bin)   # MPI transport (runtime)
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: missing Debian packages: ${missing[*]}"
if [ "${PLB_NO_INSTALL:-0}" = 1 ]; then
  echo "install-deps: PLB_NO_INSTALL=1, not installing; run: apt-get install ${missing[*]}" >&2
  exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: need root to install; run as root: apt-get install ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: installed ${missing[*]}"
