#!/usr/bin/env bash
# Check the systemd units as installed: stage an install into a temporary root with
# install.sh (binaries from BIN_DIR), then `systemd-analyze verify` the staged units; any
# warning that names wshardd fails the check.
#
# Usage: systemd/check.sh [BIN_DIR]        (default target/debug; the binaries must exist)
set -euo pipefail
cd "$(dirname "$0")/.."
bin_dir="${1:-target/debug}"
if ! command -v systemd-analyze >/dev/null 2>&1; then
    echo "systemd check: systemd-analyze not found (Debian: apt-get install systemd)" >&2
    exit 2
fi
for b in wshardd wshard; do
    if [ ! -x "$bin_dir/$b" ]; then
        echo "systemd check: $bin_dir/$b not found (cargo build -p wshard-recorder -p wshard-cli --bins)" >&2
        exit 2
    fi
done
stage=$(mktemp -d)
units=$(mktemp -d)
verify_log=$(mktemp)
trap 'rm -rf "$stage" "$units" "$verify_log"' EXIT
systemd/install.sh --bin-dir "$bin_dir" --destdir "$stage"
for u in wshardd.service wshardd.socket wshardd-control.socket; do
    # verify needs ExecStart to exist: the staged binary.
    sed "s#^ExecStart=/usr/local/bin/wshardd #ExecStart=$stage/usr/local/bin/wshardd #" \
        "$stage/etc/systemd/system/$u" >"$units/$u"
done
# The ROS 1 bridge's unit is not installed by install.sh (ingest-adapters/ros/README.md):
# verified as shipped, beside the daemon's units it names.
cp systemd/wshard-ros-bridge.service "$units/"
systemd-analyze verify --man=no "$units/wshardd.service" "$units/wshardd.socket" \
    "$units/wshardd-control.socket" "$units/wshard-ros-bridge.service" 2>&1 | tee "$verify_log"
if grep -q -e wshardd -e wshard-ros-bridge "$verify_log"; then
    echo "systemd check: systemd-analyze verify warned about the units" >&2
    exit 1
fi
echo "systemd check: units verify, install.sh stages them"
