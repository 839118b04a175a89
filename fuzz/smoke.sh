#!/usr/bin/env bash
# CI smoke run of the fuzz targets: install cargo-fuzz if missing, build every target, run
# each for a few seconds from the committed seeds, print one summary line per target, and
# exit non-zero if any target crashed (panic, failed invariant, out-of-memory, timeout).
#
# Usage: fuzz/smoke.sh [SECONDS_PER_TARGET]        (default 15, or $FUZZ_SMOKE_SECONDS)
#
# Only a stable toolchain is needed: RUSTC_BOOTSTRAP=1 lets it accept cargo-fuzz's
# nightly-only flags. A crashing input is kept in fuzz/artifacts/<target>/ and the last
# lines of its log are printed; reproduce it with
#   cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run <target> artifacts/<target>/<file>
set -euo pipefail

secs="${1:-${FUZZ_SMOKE_SECONDS:-15}}"
case "$secs" in
'' | *[!0-9]*)
    echo "usage: $0 [SECONDS_PER_TARGET]" >&2
    exit 2
    ;;
esac
cd "$(dirname "$0")"
export RUSTC_BOOTSTRAP=1
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz smoke: installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi
# libfuzzer-sys compiles libFuzzer (C++) with the `cc` crate: $CXX, else c++.
cxx="${CXX:-c++}"
if ! command -v "$cxx" >/dev/null 2>&1; then
    echo "fuzz smoke: no C++ compiler ($cxx) to build libFuzzer; install g++ (apt-get install g++)" >&2
    exit 1
fi
echo "fuzz smoke: $(cargo fuzz --version), $(rustc --version), $("$cxx" --version | head -n 1)"

mapfile -t targets < <(cargo fuzz list)
if [ "${#targets[@]}" -eq 0 ]; then
    echo "fuzz smoke: no fuzz targets found" >&2
    exit 1
fi

start=$(date +%s)
cargo fuzz build
built=$(date +%s)

work="$(mktemp -d "${TMPDIR:-/tmp}/wshard-fuzz-smoke.XXXXXX")"
keep_work=0
trap '[ "$keep_work" -eq 1 ] || rm -rf "$work"' EXIT

failed=0
summary=()
for t in "${targets[@]}"; do
    mkdir -p "$work/corpus/$t"
    seeds=()
    [ -d "seeds/$t" ] && seeds=("seeds/$t")
    log="$work/$t.log"
    rc=0
    # The first corpus dir (a fresh temporary one) receives new inputs; the committed
    # seeds are only read.
    cargo fuzz run "$t" "$work/corpus/$t" "${seeds[@]}" -- \
        -max_total_time="$secs" -malloc_limit_mb=256 -timeout=30 -print_final_stats=1 \
        >"$log" 2>&1 || rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)
    cov=$(sed -n 's/^#[0-9]*[[:space:]]*DONE[[:space:]]*cov: \([0-9]*\).*/\1/p' "$log" | tail -n 1)
    if [ "$rc" -eq 0 ]; then
        line="fuzz smoke: $t: ${execs:-?} executions in ${secs} s, coverage ${cov:-?}, ok"
    else
        failed=1
        artifact=$(sed -n "s/.*Test unit written to \(.*\)$/\1/p" "$log" | tail -n 1)
        line="fuzz smoke: $t: CRASH after ${execs:-?} executions (exit $rc${artifact:+, input $artifact})"
        echo "---- fuzz smoke: $t failed:"
        # The panic message (before the backtrace), libFuzzer's verdict and the input.
        grep -m 1 -A 4 "panicked at" "$log" || true
        grep -E "ERROR: libFuzzer|^SUMMARY|Test unit written|^Base64|^error" "$log" || tail -n 40 "$log"
        echo "---- (full log: $log, kept)"
        keep_work=1
    fi
    echo "$line"
    summary+=("$line")
done

end=$(date +%s)
echo "==== fuzz smoke summary (build $((built - start)) s, runs $((end - built)) s)"
printf '%s\n' "${summary[@]}"
if [ "$failed" -ne 0 ]; then
    echo "fuzz smoke: FAILED" >&2
    exit 1
fi
echo "fuzz smoke: all ${#targets[@]} targets ok"
