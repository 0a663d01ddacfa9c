#!/usr/bin/env bash
# Builds the libFuzzer targets of Fuzz/ with AddressSanitizer and coverage, then runs each for
# the given number of seconds (default 60) on its committed seed corpus. Crashes are written to
# Fuzz/findings/<target>/ and make the script exit non-zero.
#
#   Fuzz/run.sh            # every target, 60 s each
#   Fuzz/run.sh 600        # every target, 10 minutes each
#   Fuzz/run.sh 20 har     # one target
#   FUZZ_JOBS=2 Fuzz/run.sh 600   # two targets at a time (one per core)
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-60}"
shift || true
root="$(cd .. && pwd)"
scratch="$root/.build-fuzz"

# The build plan of a path dependency is not refreshed when Callsign gains a file: drop it.
rm -f "$scratch/debug.yaml"
swift build --package-path . --scratch-path "$scratch" -Xswiftc -sanitize=fuzzer,address >&2
binary="$scratch/debug/CallsignFuzz"

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then targets=(http-fields definitions path-template envelope content-decoding har json-text proxy-settings tls-text cookies openapi postgres-url stored-fields json-value cli-items queue-rows event-stream link-header content-disposition cli-session cli-config cli-write-out); fi

# Swift's backtracer would hold every crash for 30 s; libFuzzer reports crashes itself.
export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}"
jobs="${FUZZ_JOBS:-1}"

# Runs one target; its summary goes to stderr, a crash makes it return non-zero.
run_target() {
    local target="$1" work="$scratch/corpus/$1" findings="findings/$1"
    mkdir -p "$work" "$findings"
    echo "== $target: ${seconds}s" >&2
    local status=0
    CALLSIGN_FUZZ_TARGET="$target" "$binary" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$findings/" "$work" "corpus/$target" 2>"$scratch/$target.log" || status=1
    if [ $status -ne 0 ]; then echo "!! $target found a crash; see $findings/ and $scratch/$target.log" >&2; fi
    { echo "-- $target"; grep -E "^stat::(number_of_executed_units|peak_rss_mb)|^Done [0-9]+ runs" "$scratch/$target.log" || true; } >&2
    return $status
}

failed=0
running=0
for target in "${targets[@]}"; do
    run_target "$target" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait -n || failed=1
        running=$((running - 1))
    fi
done
while [ "$running" -gt 0 ]; do
    wait -n || failed=1
    running=$((running - 1))
done
exit $failed
