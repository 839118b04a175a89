#!/usr/bin/env bash
# Every test suite of the project, exactly as CI runs them (.ci/run calls this after its
# installs and lints):
#   1. build the binaries the suites start (wshardd, wshard)
#   2. the systemd units: staged install + systemd-analyze verify (systemd/check.sh)
#   3. every Rust test of the workspace (unit, golden, crash, fault, end-to-end; the
#      multirate_three_producers_* tests run two Python client processes with python3)
#   4. the Python client's tests against the real wshardd (they fail, never skip, without it)
#      and the ROS bridge's: ingest-adapters/ros/tests (converter and recording cores, ROS 2
#      over DDS with publisher processes, bag import; the real wshardd) and
#      ingest-adapters/ros/tests_ros1 (the live ROS 1 bridge: a real rosmaster, rospy
#      publishers, Debian's /usr/bin/python3)
#   5. the Python reader (wshard/python): its wheel built with maturin (release), installed
#      with pip into the running python3, and its tests
#   6. the exports and imports (tests/interop): episodes recorded by the real wshardd,
#      exported and read back by the third-party readers, files made by numpy and h5py
#      imported and read back through the Python reader
#   7. the fuzz smoke run: every fuzz target for FUZZ_SMOKE_SECONDS (default 15) each;
#      FUZZ_SMOKE_SECONDS=0 leaves it out
#
# Prerequisites it checks first (and says how to install): systemd-analyze and
# systemd-socket-activate, python3 with pytest, numpy, zstandard, prometheus_client, rosbags,
# pillow, cyclonedds, duckdb and duckdb-extension-httpfs, boto3, mcap, Debian's ROS 1 packages for /usr/bin/python3, maturin, a C++
# compiler for libFuzzer, s3s-fs 0.14.1 ($WSHARD_S3S_FS or PATH), node and Azurite 3.35.0
# ($WSHARD_AZURITE or azurite-blob on PATH). The upstream golden files are
# read from ../shared/golden-upstream or $WSHARD_UPSTREAM_GOLDEN.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzz_secs="${FUZZ_SMOKE_SECONDS:-15}"
missing=()
for t in systemd-analyze systemd-socket-activate; do
    command -v "$t" >/dev/null 2>&1 || missing+=("$t (apt-get install systemd)")
done
# pillow: the ROS bridge's compressed = "decode"; cyclonedds (its PyPI wheel bundles the C
# library): the ROS 2 front end over DDS (ingest-adapters/ros/tests/test_ros_dds_*).
if ! python3 -c 'import pytest, numpy, zstandard, prometheus_client, rosbags, PIL, cyclonedds' >/dev/null 2>&1; then
    missing+=("python3 modules pytest, numpy, zstandard, prometheus_client, rosbags, PIL, cyclonedds (python3 -m pip install pytest numpy zstandard prometheus-client rosbags pillow cyclonedds==11.0.1)")
fi
# Debian's ROS 1 for /usr/bin/python3: the live ROS 1 bridge's tests (a real rosmaster and
# rospy) and the bag import's tests of bags written by Debian's rosbag library.
if ! /usr/bin/python3 -c 'import rospy, rosmaster, rosbag, genpy, sensor_msgs.msg, geometry_msgs.msg, netifaces, numpy, pytest, zstandard' >/dev/null 2>&1 \
    || ! command -v rosmaster >/dev/null 2>&1; then
    missing+=("Debian's ROS 1 packages for /usr/bin/python3 (apt-get install python3-rosmaster python3-rospy python3-rosservice python3-rosbag python3-sensor-msgs python3-geometry-msgs python3-std-msgs python3-genpy python3-netifaces python3-numpy python3-pytest python3-zstandard)")
fi
# DuckDB with its httpfs extension for `wshard query` (publish_catalog_query_cli_*).
if ! python3 -c 'import duckdb, duckdb_extension_httpfs; assert duckdb.__version__ == "1.5.5"' >/dev/null 2>&1; then
    missing+=("python3 modules duckdb 1.5.5 and duckdb-extension-httpfs 1.5.5 for wshard query (python3 -m pip install duckdb==1.5.5 duckdb-extension-httpfs==1.5.5)")
fi
# boto3: the Python reader's s3:// reads (wshard/python/tests/test_publish_remote_*).
if ! python3 -c 'import boto3' >/dev/null 2>&1; then
    missing+=("python3 module boto3 for the Python reader's s3:// reads (python3 -m pip install boto3)")
fi
# mcap 1.2.2, the official MCAP Python reader: the MCAP export's tests (tests/interop/test_export_mcap_*).
if ! python3 -c 'import mcap.reader, importlib.metadata as m; assert m.version("mcap") == "1.2.2"' >/dev/null 2>&1; then
    missing+=("python3 module mcap 1.2.2 for the MCAP export's tests (python3 -m pip install mcap==1.2.2)")
fi
# webdataset 1.0.2: the WebDataset export's shards read back by the real reader
# (tests/interop/test_export_webdataset_*); libturbojpeg (pkg-config): the export's JPEG encoder.
if ! python3 -c 'import webdataset' >/dev/null 2>&1; then
    missing+=("python3 module webdataset for the WebDataset export tests (python3 -m pip install webdataset==1.0.2)")
fi
if ! pkg-config --exists libturbojpeg 2>/dev/null; then
    missing+=("libturbojpeg and pkg-config for the WebDataset export's JPEG encoder (apt-get install libturbojpeg0-dev pkg-config)")
fi
# The imports (tests/interop/test_import_*): h5py for D4RL-layout files, the real minari
# package (with jax for its DataCollector) for Minari datasets; libhdf5 (Debian's
# libhdf5-dev, found with pkg-config) for the wshard-import crate's build.
if ! python3 -c 'import h5py, minari, jax; assert minari.__version__ == "0.5.4"' >/dev/null 2>&1; then
    missing+=("python3 modules h5py and minari 0.5.4 with jax for the import tests (python3 -m pip install h5py==3.16.0 \"minari[create,hdf5]==0.5.4\")")
fi
if ! pkg-config --exists hdf5 2>/dev/null; then
    missing+=("libhdf5 and pkg-config for the wshard-import crate (apt-get install libhdf5-dev pkg-config)")
fi
if ! python3 -m maturin --version >/dev/null 2>&1; then
    missing+=("maturin, to build the Python reader (python3 -m pip install maturin)")
fi
if [ "$fuzz_secs" != 0 ] && ! command -v "${CXX:-c++}" >/dev/null 2>&1; then
    missing+=("a C++ compiler for the fuzz smoke run (apt-get install g++), or FUZZ_SMOKE_SECONDS=0")
fi
# s3s-fs 0.14.1, the real S3-compatible server the publish_* tests start on loopback:
# $WSHARD_S3S_FS, else on PATH; its path is passed to the tests in $WSHARD_S3S_FS.
if [ -z "${WSHARD_S3S_FS:-}" ]; then
    WSHARD_S3S_FS="$(command -v s3s-fs || true)"
fi
if [ -z "$WSHARD_S3S_FS" ] || [ ! -x "$WSHARD_S3S_FS" ]; then
    missing+=("s3s-fs 0.14.1 for the publish_* tests (cargo install s3s-fs@0.14.1 --features binary --locked --root ../tools, then WSHARD_S3S_FS=../tools/bin/s3s-fs)")
else
    export WSHARD_S3S_FS
fi
# Azurite 3.35.0 (the Azure Blob Storage emulator; the last line for node 20), the real server
# of the publish_azure_* tests: $WSHARD_AZURITE (its azurite-blob script), else on PATH.
if [ -z "${WSHARD_AZURITE:-}" ]; then
    WSHARD_AZURITE="$(command -v azurite-blob || true)"
fi
if [ -z "$WSHARD_AZURITE" ] || [ ! -x "$WSHARD_AZURITE" ] || ! command -v node >/dev/null 2>&1; then
    missing+=("node and Azurite 3.35.0 for the publish_azure_* tests (npm install --prefix ../tools/azurite azurite@3.35.0, then WSHARD_AZURITE=../tools/azurite/node_modules/.bin/azurite-blob)")
else
    export WSHARD_AZURITE
fi
# The LeRobot export: ffmpeg encodes its videos; pyarrow, pandas and PyAV read the dataset
# back; the real lerobot package (its own virtual environment, made by
# tests/interop/install-lerobot.sh: $WSHARD_LEROBOT_PYTHON, else ../tools/lerobot-venv) loads
# it. WSHARD_LEROBOT_SKIP=REASON skips that one test, saying why (.ci/run sets it when the
# machine's disk can't hold the environment).
command -v ffmpeg >/dev/null 2>&1 || missing+=("ffmpeg for the LeRobot export's videos (apt-get install ffmpeg)")
if ! python3 -c 'import pyarrow, pandas, av' >/dev/null 2>&1; then
    missing+=("python3 modules pyarrow, pandas, av for the LeRobot export's tests (python3 -m pip install pyarrow==26.0.1 pandas==3.1.1 av==18.1.0)")
fi
if [ -n "${WSHARD_LEROBOT_SKIP:-}" ]; then
    echo "tests/all.sh: test_export_lerobot_loader.py will be skipped: $WSHARD_LEROBOT_SKIP" >&2
    export WSHARD_LEROBOT_SKIP
else
    if [ -z "${WSHARD_LEROBOT_PYTHON:-}" ]; then
        WSHARD_LEROBOT_PYTHON="${WSHARD_TOOLS:-$PWD/../tools}/lerobot-venv/bin/python"
    fi
    if ! "$WSHARD_LEROBOT_PYTHON" -c 'import lerobot.datasets.lerobot_dataset' >/dev/null 2>&1; then
        missing+=("the lerobot package for test_export_lerobot_loader.py (tests/interop/install-lerobot.sh, about 7 GB; or WSHARD_LEROBOT_PYTHON=a python that imports it; or WSHARD_LEROBOT_SKIP=reason)")
    else
        export WSHARD_LEROBOT_PYTHON
    fi
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

echo "== ROS bridge: converter and recording cores, ROS 2 over DDS, bag import (the real wshardd)"
python3 -m pytest ingest-adapters/ros/tests -q

echo "== ROS 1 live bridge (rosmaster, rospy publishers, the real wshardd; Debian's /usr/bin/python3)"
PYTHONPATH=ingest-adapters/python/src:ingest-adapters/ros/src /usr/bin/python3 -m pytest ingest-adapters/ros/tests_ros1 -q

echo "== Python reader: build the wheel, install it, test it"
wheel_dir="$(mktemp -d)"
python3 -m maturin build --release --locked -m wshard/python/Cargo.toml -o "$wheel_dir"
python3 -m pip install --quiet --force-reinstall --no-deps "$wheel_dir"/wshard_reader-*.whl
rm -rf "$wheel_dir"
python3 -m pytest wshard/python/tests -q

echo "== Exports and imports read by the real third-party readers (tests/interop; the reader above)"
python3 -m pytest tests/interop -q -rs

if [ "$fuzz_secs" != 0 ]; then
    echo "== fuzz smoke run ($fuzz_secs s per target)"
    bash fuzz/smoke.sh "$fuzz_secs"
fi
echo "tests/all.sh: every suite passed"
