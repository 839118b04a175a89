#!/bin/sh
# Install wshardd as a systemd service: binaries, units, sysusers/tmpfiles entries and the
# default config. Run from anywhere inside the source tree:
#
#   sudo systemd/install.sh --enable          # build, install, create user and dirs, start
#   systemd/install.sh --no-build             # install the binaries already in target/release
#   DESTDIR=/tmp/stage systemd/install.sh --bin-dir target/debug   # into a staging root
#
# Where files go (DESTDIR, default empty, is prepended to every path):
#   $PREFIX/bin/wshardd, $PREFIX/bin/wshard            PREFIX default /usr/local
#   /etc/wshardd/wshardd.toml                          never overwritten: a changed existing
#                                                      config stays, the new one is written
#                                                      next to it as wshardd.toml.new
#   /etc/systemd/system/wshardd.service, wshardd.socket, wshardd-control.socket
#   /etc/sysusers.d/wshardd.conf, /etc/tmpfiles.d/wshardd.conf
#
# With an empty DESTDIR it then creates the wshardd user and the directories
# (systemd-sysusers, systemd-tmpfiles) and, when systemd is PID 1, reloads systemd and
# with --enable enables and starts the sockets and the service.
set -eu

usage() {
    cat <<'EOF'
usage: install.sh [--no-build] [--bin-dir DIR] [--prefix DIR] [--destdir DIR] [--enable]

  --no-build      do not run cargo; install from target/release (or --bin-dir)
  --bin-dir DIR   install wshardd and wshard from DIR (implies --no-build)
  --prefix DIR    binaries go to DIR/bin (default /usr/local); the unit's ExecStart follows
  --destdir DIR   staging root prepended to every path (default: $DESTDIR, else none)
  --enable        (systemd as PID 1, no DESTDIR) systemctl enable --now the sockets and
                  the service
EOF
}

die() {
    echo "install.sh: $*" >&2
    exit 1
}

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
build=yes
bin_dir=""
prefix=/usr/local
destdir=${DESTDIR:-}
enable=no

while [ $# -gt 0 ]; do
    case "$1" in
        --no-build) build=no ;;
        --bin-dir)
            [ $# -ge 2 ] || die "--bin-dir needs a directory"
            bin_dir=$2
            build=no
            shift
            ;;
        --prefix)
            [ $# -ge 2 ] || die "--prefix needs a directory"
            prefix=$2
            shift
            ;;
        --destdir)
            [ $# -ge 2 ] || die "--destdir needs a directory"
            destdir=$2
            shift
            ;;
        --enable) enable=yes ;;
        -h | --help)
            usage
            exit 0
            ;;
        *)
            usage >&2
            die "unknown argument: $1"
            ;;
    esac
    shift
done

case "$prefix" in
    /*) ;;
    *) die "--prefix must be an absolute path, not $prefix" ;;
esac
if [ -n "$destdir" ]; then
    case "$destdir" in
        /*) ;;
        *) destdir="$PWD/$destdir" ;;
    esac
fi

# 1. The binaries.
if [ "$build" = yes ]; then
    echo "== building release binaries (cargo build --release --locked -p wshard-recorder -p wshard-cli)"
    if [ "$(id -u)" = 0 ] && [ -n "${SUDO_USER:-}" ] && [ "$SUDO_USER" != root ]; then
        # Under sudo: build as the invoking user, so target/ stays theirs.
        sudo -u "$SUDO_USER" -H -- sh -c \
            'PATH="$HOME/.cargo/bin:$PATH"; cd "$1" && cargo build --release --locked -p wshard-recorder -p wshard-cli' \
            sh "$repo" ||
            die "the build failed; build as your user with 'cargo build --release --locked -p wshard-recorder -p wshard-cli', then run 'sudo systemd/install.sh --no-build'"
    else
        command -v cargo >/dev/null 2>&1 ||
            die "cargo not found: build first with 'cargo build --release --locked -p wshard-recorder -p wshard-cli' and run 'systemd/install.sh --no-build'"
        (cd "$repo" && cargo build --release --locked -p wshard-recorder -p wshard-cli)
    fi
fi
[ -n "$bin_dir" ] || bin_dir="$repo/target/release"
for b in wshardd wshard; do
    [ -x "$bin_dir/$b" ] || die "$bin_dir/$b not found or not executable (build it, or pass --bin-dir)"
done

# 2. Files.
echo "== installing into ${destdir:-/} (prefix $prefix)"
install -d -m 0755 "$destdir$prefix/bin" "$destdir/etc/wshardd" "$destdir/etc/systemd/system" \
    "$destdir/etc/sysusers.d" "$destdir/etc/tmpfiles.d"
install -m 0755 "$bin_dir/wshardd" "$destdir$prefix/bin/wshardd"
install -m 0755 "$bin_dir/wshard" "$destdir$prefix/bin/wshard"

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
sed "s#^ExecStart=/usr/local/bin/wshardd #ExecStart=$prefix/bin/wshardd #" \
    "$here/wshardd.service" >"$tmp"
install -m 0644 "$tmp" "$destdir/etc/systemd/system/wshardd.service"
install -m 0644 "$here/wshardd.socket" "$destdir/etc/systemd/system/wshardd.socket"
install -m 0644 "$here/wshardd-control.socket" "$destdir/etc/systemd/system/wshardd-control.socket"
install -m 0644 "$here/sysusers.d/wshardd.conf" "$destdir/etc/sysusers.d/wshardd.conf"
install -m 0644 "$here/tmpfiles.d/wshardd.conf" "$destdir/etc/tmpfiles.d/wshardd.conf"

config="$destdir/etc/wshardd/wshardd.toml"
if [ ! -e "$config" ]; then
    install -m 0644 "$here/wshardd.toml" "$config"
    echo "installed $config"
elif cmp -s "$here/wshardd.toml" "$config"; then
    echo "kept $config (unchanged)"
else
    install -m 0644 "$here/wshardd.toml" "$config.new"
    echo "kept your $config; the shipped default is in $config.new"
fi
"$destdir$prefix/bin/wshardd" --check-config --config "$config" >/dev/null ||
    die "$config does not pass 'wshardd --check-config'"

# 3. User, directories, systemd.
if [ -n "$destdir" ]; then
    echo "== staged into $destdir (no users, directories or systemd changes made)"
    exit 0
fi
if command -v systemd-sysusers >/dev/null 2>&1; then
    systemd-sysusers /etc/sysusers.d/wshardd.conf
else
    echo "warning: systemd-sysusers not found; create the system user and group wshardd yourself" >&2
fi
if command -v systemd-tmpfiles >/dev/null 2>&1; then
    systemd-tmpfiles --create /etc/tmpfiles.d/wshardd.conf
else
    echo "warning: systemd-tmpfiles not found; create /run/wshardd and /var/lib/wshardd (owner wshardd)" >&2
fi
if [ ! -d /run/systemd/system ]; then
    echo "systemd is not running as PID 1 here: installed, but nothing enabled or started."
    exit 0
fi
systemctl daemon-reload
if [ "$enable" = yes ]; then
    systemctl enable --now wshardd.socket wshardd-control.socket wshardd.service
    systemctl --no-pager status wshardd.service || true
else
    echo "next: systemctl enable --now wshardd.socket wshardd-control.socket wshardd.service"
fi
echo "recording clients must be in group wshardd: usermod -aG wshardd USER"
