#!/usr/bin/env bash
# Makes the virtual environment with the real lerobot package that
# tests/interop/test_export_lerobot_loader.py loads the exported datasets with:
#
#   tests/interop/install-lerobot.sh [VENV_DIR]     (default: ../tools/lerobot-venv)
#
# It installs lerobot-requirements.txt (beside this script) one pinned package at a time with
# --no-deps and no pip cache, so the disk never holds more than the environment (about 6.8 GB,
# torch's CUDA libraries most of it) and one downloaded wheel. pip unpacks beside the
# environment, not in /tmp, which may be a small tmpfs. It does nothing when VENV_DIR was
# already made from the same requirements.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
requirements="$here/lerobot-requirements.txt"
venv="${1:-${WSHARD_TOOLS:-$here/../../../tools}/lerobot-venv}"
stamp="$venv/wshard-lerobot-requirements.txt"

if cmp -s "$requirements" "$stamp"; then
    exit 0
fi
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
python3 -m venv "$venv"
unpack="$(mktemp -d "$(dirname "$venv")/lerobot-pip.XXXXXX")"
trap 'rm -rf "$unpack"' EXIT
grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$requirements" | while read -r requirement; do
    TMPDIR="$unpack" PIP_NO_CACHE_DIR=1 "$venv/bin/python" -m pip install \
        --quiet --no-deps --disable-pip-version-check "$requirement"
done
"$venv/bin/python" -c 'import lerobot.datasets.lerobot_dataset'
cp "$requirements" "$stamp"
echo "made $venv ($(du -sh "$venv" | cut -f1)) from $requirements"
