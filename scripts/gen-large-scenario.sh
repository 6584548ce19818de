#!/usr/bin/env bash
# Write a 1024-PU plbsim scenario to stdout: 128 nodes (n000 .. n127) of 8 PUs
# each, built from the matrix-multiply (MM) device models of config/sim/mm-*.ini
# (the five machine types A-E of the PLB-HAC paper, Table 1), W = 10^7 columns.
#
#   scripts/gen-large-scenario.sh > config/sim/large-1024.ini
#   scripts/gen-large-scenario.sh 100000000 > /tmp/large-1e8.ini   # other W
#   scripts/gen-large-scenario.sh 400000000 512 > /tmp/large-4096.ini  # 4096 PUs
#
# The optional arguments are W (default 10^7, the committed file; with the
# MM curves that run is short, ~4 s, so pass a larger W for a longer one)
# and the number of nodes (default 128; 8 PUs each).
#
# Deterministic: no $RANDOM, no clock; the same output on every machine.
# Node i has machine type "ABCDE"[i % 5]: its CPU PU(s) (1 for the i7 hosts, 2
# for the dual-socket Xeon E5-2620 hosts), its own Table 1 GPU, and the
# remaining slots drawn from that type's accelerator pool by a fixed LCG.
#
# Curves: the formula and parameters of config/sim/mm-*.ini (see README.md),
#   compute(x) = t0 + (x + a xs (1 - exp(-x/xs)) + c (x - xc (1 - exp(-x/xc)))) / R
#   transfer(x) = lat + x * 131072 / bw
# tabulated at the same points as mm-*.ini, extended to 10^7 units.
# Every line stays under 200 characters (libinih's default INI_MAX_LINE).
set -euo pipefail
export LC_ALL=C

PUS_PER_NODE=8
UNITS=${1:-10000000}
NNODES=${2:-128}
if [[ $# -gt 2 || ! "$UNITS" =~ ^[0-9]+$ || ! "$NNODES" =~ ^[0-9]+$ ]] ||
	((UNITS < 8192 || NNODES < 1 || NNODES > 1000)); then
	echo "usage: $0 [UNITS [NODES]]   (W, an integer >= 8192, default 10000000;" \
		"nodes of 8 PUs, 1-1000, default 128)" >&2
	exit 2
fi

# name class TFLOP/s(large block) t0 a xs c xc noise lat bw  -- as in mm-*.ini
MODELS="
i7-5930k cpu 0.40 2e-4   0.3 32   0.08 256 0.04  3e-5 10e9
i7-4930k cpu 0.25 2e-4   0.3 32   0.08 192 0.045 3e-5 8e9
e5-2620  cpu 0.15 3e-4   0.3 32   0.08 256 0.05  3e-5 6e9
k5200    gpu 2.2  1.5e-4 1.0 128  0    0   0.02  5e-5 11e9
gtx970   gpu 2.8  1.5e-4 1.0 128  0    0   0.03  5e-5 11e9
titan    gpu 3.5  1.5e-4 1.0 160  0    0   0.025 5e-5 10e9
k620     gpu 0.6  1.5e-4 0.6 48   0    0   0.025 5e-5 5.5e9
phi3120  mic 0.8  0.03   1.0 256  0    0   0.04  1e-4 6e9
"

declare -A DESC=(
	[i7-5930k]="Intel i7-5930K: OpenBLAS SGEMM 0.40 TFLOP/s (large blocks), 8% faster in L3"
	[i7-4930k]="Intel i7-4930K: OpenBLAS SGEMM 0.25 TFLOP/s (large blocks), 8% faster in L3"
	[e5-2620]="Intel Xeon E5-2620 v2 (one socket): OpenBLAS SGEMM 0.15 TFLOP/s, 8% faster in L3"
	[k5200]="NVIDIA Quadro K5200: cuBLAS SGEMM 2.2 TFLOP/s, PCIe 3 x16 at 11 GB/s"
	[gtx970]="NVIDIA GTX 970: cuBLAS SGEMM 2.8 TFLOP/s, PCIe 3 x16 at 11 GB/s"
	[titan]="NVIDIA GTX Titan: cuBLAS SGEMM 3.5 TFLOP/s, PCIe 3 x16 at 10 GB/s"
	[k620]="NVIDIA Quadro K620: cuBLAS SGEMM 0.6 TFLOP/s, PCIe 2 x16 at 5.5 GB/s"
	[phi3120]="Intel Xeon Phi 3120 (offload): MKL SGEMM 0.8 TFLOP/s, 30 ms per offload, PCIe 2"
)

# Machine types: CPU PUs, the machine's own GPU, the pool for the other slots.
TYPES=(A B C D E)
declare -A CPUS=([A]="i7-5930k" [B]="i7-5930k" [C]="e5-2620 e5-2620"
	[D]="i7-4930k" [E]="e5-2620 e5-2620")
declare -A OWN=([A]="k5200" [B]="gtx970" [C]="k620" [D]="titan" [E]="k620")
declare -A POOL=([A]="k5200 gtx970 phi3120 k5200" [B]="gtx970 phi3120 k5200 gtx970"
	[C]="k620 phi3120 gtx970 k620" [D]="titan k5200 k620 titan"
	[E]="k620 phi3120 titan k620")

lcg=20190826                      # fixed seed
next_rand() {                     # sets R_OUT to a value in [0, 2^15)
	lcg=$(((lcg * 1103515245 + 12345) & 0x7fffffff))
	R_OUT=$(((lcg >> 16) & 0x7fff))
}

declare -A COUNT=()
NODE_LINES=()
for ((i = 0; i < NNODES; i++)); do
	t=${TYPES[i % 5]}
	read -r -a cpus <<<"${CPUS[$t]}"
	read -r -a pool <<<"${POOL[$t]}"
	pus=("${cpus[@]}" "${OWN[$t]}")
	while ((${#pus[@]} < PUS_PER_NODE)); do
		next_rand
		pus+=("${pool[R_OUT % ${#pool[@]}]}")
	done
	for p in "${pus[@]}"; do
		COUNT[$p]=$((${COUNT[$p]:-0} + 1))
	done
	NODE_LINES+=("$(printf '[node n%03d]          ; machine type %s' "$i" "$t")")
	NODE_LINES+=("emu = ${pus[*]}")
	NODE_LINES+=("")
done

# Model sections (only the models some node uses) and the run-time estimate.
COUNTS=""
for m in "${!COUNT[@]}"; do
	COUNTS+="$m=${COUNT[$m]} "
done

MODEL_TEXT=$(printf '%s\n' "$MODELS" | awk -v units="$UNITS" -v counts="$COUNTS" '
function fmt(v) { return v >= 1000 ? sprintf("%.0f", v) : sprintf("%.4g", v) }
function comp(x) {
	t = x + a * xs * (1 - exp(-x / xs))
	if (c > 0) t += c * (x - xc * (1 - exp(-x / xc)))
	return t0 + t / R
}
BEGIN {
	flop = 2 * 16384 * 16384; bpu = 2 * 16384 * 4
	n = split(counts, kv, " ")
	for (i = 1; i <= n; i++) { split(kv[i], p, "="); cnt[p[1]] = p[2] }
	np = split("64 128 256 512 1024 2048 4096", pts, " ")
	for (x = 16384; x < units; x *= 4) pts[++np] = x
	pts[++np] = units
	sum = 0
}
NF == 11 {
	name = $1; cls = $2; tf = $3; t0 = $4; a = $5; xs = $6; c = $7; xc = $8
	noise = $9; lat = $10; bw = $11
	if (!(name in cnt)) next
	R = tf * 1e12 / flop * (1 + c)
	line = "compute = table"
	for (i = 1; i <= np; i++) line = line sprintf(" %d:%s", pts[i], fmt(comp(pts[i])))
	xfer = sprintf("transfer = poly %.4g %.4g", lat, bpu / bw)
	x = units / 20
	sum += cnt[name] * x / (comp(x) + lat + x * bpu / bw)
	printf("; %s\n", name)
	cache = c > 0 ? sprintf(", c = %g, xc = %g", c, xc) : ""
	printf("; R = %.0f col/s, t0 = %g s, a = %g, xs = %g%s; %d PUs.\n",
	       R, t0, a, xs, cache, cnt[name])
	printf("[model %s]\nclass = %s\n%s\n%s\nnoise = %g\n\n", name, cls, line, xfer, noise)
}
END { printf("EST %.1f\n", units / sum) }')

EST=$(printf '%s\n' "$MODEL_TEXT" | sed -n 's/^EST //p')
NPU=$((NNODES * PUS_PER_NODE))
MIX=""
for m in i7-5930k i7-4930k e5-2620 k5200 gtx970 titan k620 phi3120; do
	[[ -n "${COUNT[$m]:-}" ]] && MIX+=" $m ${COUNT[$m]},"
done

cat <<EOF
; GENERATED by scripts/gen-large-scenario.sh: do not edit by hand; regenerate with
;   scripts/gen-large-scenario.sh > config/sim/large-1024.ini
; plb simulation scenario: $NPU PUs on $NNODES nodes (n000 .. n$(printf '%03d' $((NNODES - 1)))), $PUS_PER_NODE PUs each, for the
; balancer's scaling (solver time per solve, training with many PUs, T_lb at scale).
; Application: matrix multiply as in config/sim/mm-*.ini (N = 16384; a unit is a
; column of B: 0.537 GFLOP, 128 KiB moved), W = $UNITS columns (pass another W
; as the script's argument for a longer run).
; Nodes cycle through the machine types A-E of the PLB-HAC paper (Table 1): the
; CPU PU(s) of the type (1 i7, or 2 Xeon E5-2620 sockets), its own GPU, and the
; other slots drawn from the type's accelerator pool by a fixed LCG.
; PU mix:${MIX%,}.
; Curves: same formula and parameters as mm-*.ini (see README.md), tables
; extended to W.
; Estimated run time: $EST s (W / sum of the PUs' rates at blocks of W/20).

[run]
units = $UNITS
policy = plb-hac
seed = 1

[network]
latency_us = 50
fail_detect_ms = 1000

EOF
printf '%s\n' "${NODE_LINES[@]}"
# Model sections, each preceded by its one-line description.
printf '%s\n' "$MODEL_TEXT" | sed '/^EST /d' | while IFS= read -r line; do
	if [[ "$line" =~ ^\;\ ([a-z0-9-]+)$ ]]; then
		printf '; %s.\n' "${DESC[${BASH_REMATCH[1]}]}"
	else
		printf '%s\n' "$line"
	fi
done | sed '$ { /^$/d }'
