#!/usr/bin/env bash
# Every test suite of the project, exactly as CI runs them (.ci/run calls this after its
# installs and lints):
#   1. build the binaries the suites start (wshardd, wshard)
#   2. the systemd units: staged install + systemd-analyze verify (systemd/check.sh)
#   3. every Rust test of the workspace (unit, golden, crash, fault, end-to-end; the
#      multirate_three_producers_* tests run two Python client processes with python3)
#   4. the Python client's tests against the real wshardd (they fail, never skip, without it)
#      and the ROS converter core's tests (ingest-adapters/ros, messages built with rosbags)
#   5. the Python reader (wshard/python): its wheel built with maturin (release), installed
#      with pip into the running python3, and its tests
#   6. the fuzz smoke run: every fuzz target for FUZZ_SMOKE_SECONDS (default 15) each;
#      FUZZ_SMOKE_SECONDS=0 leaves it out
#
# Prerequisites it checks first (and says how to install): systemd-analyze and
# systemd-socket-activate, python3 with
# pytest, numpy, zstandard, prometheus_client and rosbags, maturin, a C++ compiler for libFuzzer. The upstream golden files are
# read from ../shared/golden-upstream or $WSHARD_UPSTREAM_GOLDEN.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzz_secs="${FUZZ_SMOKE_SECONDS:-15}"
missing=()
for t in systemd-analyze systemd-socket-activate; do
    command -v "$t" >/dev/null 2>&1 || missing+=("$t (apt-get install systemd)")
done
if ! python3 -c 'import pytest, numpy, zstandard, prometheus_client, rosbags' >/dev/null 2>&1; then
    missing+=("python3 modules pytest, numpy, zstandard, prometheus_client, rosbags (python3 -m pip install pytest numpy zstandard prometheus-client rosbags)")
fi
if ! python3 -c 'import PIL' >/dev/null 2>&1; then
    missing+=("python3 module PIL, for the ROS bridge's compressed = \"decode\" tests (python3 -m pip install pillow)")
fi
if ! /usr/bin/python3 -c 'import rosbag, sensor_msgs.msg' >/dev/null 2>&1; then
    missing+=("Debian's ROS 1 rosbag for /usr/bin/python3, for the bag import's real-rosbag tests (apt-get install python3-rosbag python3-sensor-msgs)")
fi
if ! python3 -m maturin --version >/dev/null 2>&1; then
    missing+=("maturin, to build the Python reader (python3 -m pip install maturin)")
fi
if [ "$fuzz_secs" != 0 ] && ! command -v "${CXX:-c++}" >/dev/null 2>&1; then
    missing+=("a C++ compiler for the fuzz smoke run (apt-get install g++), or FUZZ_SMOKE_SECONDS=0")
fi
if [ "${#missing[@]}" -gt 0 ]; then
    echo "tests/all.sh: missing prerequisites:" >&2
    printf '  - %s\n' "${missing[@]}" >&2
    exit 2
fi

echo "== build the binaries"
cargo build --workspace --locked --bins

echo "== systemd units"
systemd/check.sh target/debug

echo "== Rust tests"
cargo test --workspace --locked

echo "== Python client against the real wshardd"
python3 -m pytest ingest-adapters/python/tests -q

echo "== ROS converter core"
python3 -m pytest ingest-adapters/ros/tests -q

echo "== Python reader: build the wheel, install it, test it"
wheel_dir="$(mktemp -d)"
python3 -m maturin build --release --locked -m wshard/python/Cargo.toml -o "$wheel_dir"
python3 -m pip install --quiet --force-reinstall --no-deps "$wheel_dir"/wshard_reader-*.whl
rm -rf "$wheel_dir"
python3 -m pytest wshard/python/tests -q

if [ "$fuzz_secs" != 0 ]; then
    echo "== fuzz smoke run ($fuzz_secs s per target)"
    bash fuzz/smoke.sh "$fuzz_secs"
fi
echo "tests/all.sh: every suite passed"
