#!/usr/bin/env bash
# ab.sh compares two provider binaries on the same held no-op preview stacks: the benchmark
# creates each preview stack once (-hold, hold.go), then the two binaries preview it in turn,
# interleaved round by round, so that the machine's load hits both alike. It prints each
# preview's provider CPU (the bench wrapper's rusage, wrap.go) and wall time, then medians.
#
#   flock /work/e2e.lock nice -n 5 tests/bench/ab.sh OLD_BINARY NEW_BINARY [ROUNDS] [SIZES]
#
# SIZES is the bench's -previews list ("6,60"). AB_MORE="BIN_C BIN_D ..." adds binaries (sides
# c, d, ...) to each round, so that several changes are compared on one held stack. With
# AB_PROFILE=<dir> every provider process writes a CPU profile to <dir>/<size>-<side>-<round>/
# (PROXMOXTALOS_CPU_PROFILE).
# Run from the repository root, after `make tools provider`.
set -euo pipefail

old=$(realpath "$1")
new=$(realpath "$2")
rounds=${3:-5}
sizes=${4:-6,60}
read -r -a extra <<<"${AB_MORE:-}"
bins=("$old" "$new")
for x in "${extra[@]}"; do bins+=("$(realpath "$x")"); done
names=(a b c d e f g)
work=.cache/ab
root=$(pwd)

rm -rf "$work"
mkdir -p "$work" .cache/bench
go build -o .cache/bench/bench ./tests/bench
PROXMOXTALOS_PROVIDER_BIN=$old .cache/bench/bench -hold -runs 1 -clusters "" -previews "$sizes" \
	-large "" -time-scale 0 -out "" -work "$work" >"$work/bench.out" 2>"$work/bench.log" &
bench=$!
trap 'kill -INT $bench 2>/dev/null || true' EXIT

# cpu_of sums the provider processes' CPU seconds of one command from the wrapper's lines.
cpu_of() { sed -n 's/.*"cpu":\([0-9]*\).*/\1/p' "$1" | awk '{s += $1} END {printf "%.3f", s / 1e9}'; }

median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

for n in ${sizes//,/ }; do
	env="$work/preview-$n/env.sh"
	for _ in $(seq 1 1200); do # bounded: 20 minutes for the stack's create
		[ -f "$env" ] && break
		kill -0 $bench 2>/dev/null || { cat "$work/bench.log" >&2; exit 1; }
		sleep 1
	done
	[ -f "$env" ] || { echo "no held stack of $n nodes" >&2; exit 1; }
	: >"$work/$n.tsv"
	for r in $(seq 1 "$rounds"); do
		for i in "${!bins[@]}"; do
			side=${names[$i]}
			bin=${bins[$i]}
			(
				# shellcheck disable=SC1090
				. "$env"
				export PROXMOXTALOS_BENCH_PROVIDER=$bin
				if [ -n "${AB_PROFILE:-}" ]; then
					export PROXMOXTALOS_CPU_PROFILE="$root/$AB_PROFILE/$n-$side-$r"
					mkdir -p "$PROXMOXTALOS_CPU_PROFILE"
				fi
				rm -f "$PROXMOXTALOS_BENCH_RUSAGE"
				start=$(date +%s.%N)
				"$root/.tools/bin/pulumi" --non-interactive preview --expect-no-changes --stack bench >"$root/$work/$n-$side-$r.log" 2>&1 ||
					{ echo "preview failed: $work/$n-$side-$r.log" >&2; exit 1; }
				end=$(date +%s.%N)
				printf '%s\t%s\t%s\t%.2f\n' "$side" "$r" "$(cpu_of "$PROXMOXTALOS_BENCH_RUSAGE")" "$(echo "$end - $start" | bc)"
			) | tee -a "$work/$n.tsv"
		done
	done
	for i in "${!bins[@]}"; do
		side=${names[$i]}
		printf '%s nodes, %s: provider CPU median %s s, wall median %s s\n' "$n" "$side" \
			"$(awk -v s=$side '$1 == s {print $3}' "$work/$n.tsv" | median)" \
			"$(awk -v s=$side '$1 == s {print $4}' "$work/$n.tsv" | median)"
	done
	kill -INT $bench
done
trap - EXIT
wait $bench
