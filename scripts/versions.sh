#!/usr/bin/env bash
# Installs other MariaDB versions than the host's, side by side, for the
# tests and benchmarks that run a version by name:
#
#   scripts/versions.sh install [VERSION...]   install each (default: all below) if missing
#   scripts/versions.sh basedir VERSION        print its basedir (installing nothing)
#   scripts/versions.sh list                   the versions this script knows
#
# Each version is Debian's MariaDB of one Debian release (10.5: bullseye,
# 11.8: trixie), installed with debootstrap into a root of its own, since
# its binaries need that release's C library. They run on this host
# through that root's own loader, so paths stay host paths: a sandbox
# server's datadir, its socket and the mariabackup that copies it agree
# with the host's. What a test uses is the version's basedir:
#
#   <dir>/<version>/basedir/sbin/mariadbd        the server   } small scripts that run the root's
#   <dir>/<version>/basedir/bin/mariabackup, ... the tools    } binary with the root's loader
#   <dir>/<version>/basedir/bin/mariadb-install-db           the root's own script, finding the above
#   <dir>/<version>/basedir/share, lib                       the root's (SQL scripts, messages, plugins)
#
# A server started from it needs --basedir=<basedir> (sandbox.Options.Version
# does that), or it reads the host's plugins and error messages.
#
# <dir> is $BACKSTREAM_VERSIONS_DIR, by default the user's cache directory
# (~/.cache/backstream-versions), kept between runs: only a fresh machine
# pays the install (about a minute a version). The packages come from the
# Debian mirror this host's apt sources name.
set -euo pipefail

say() { echo "versions.sh: $*" >&2; }
die() { say "$*"; exit 1; }

# The versions, each with the Debian release that ships it.
declare -A release=([10.5]=bullseye [11.8]=trixie)
all=(10.5 11.8)

dir=${BACKSTREAM_VERSIONS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/backstream-versions}

# The tools a version's basedir runs; mariadbd goes to sbin.
tools=(mariadb mariadb-admin mariadb-binlog mariadb-dump mariadb-import mariadb-upgrade
  mariabackup mbstream my_print_defaults resolveip)

# mirror prints the Debian mirror of this host's apt sources.
mirror() {
  local uri
  uri=$(grep -hs -m1 -E '^URIs:.*/debian/?$' /etc/apt/sources.list.d/*.sources | awk '{print $2}' || true)
  [ -n "$uri" ] || uri=$(grep -hs -m1 -E '^deb [^ ]+/debian/? ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '{print $2}' || true)
  [ -n "$uri" ] || die "no Debian mirror in this host's apt sources (/etc/apt/sources.list.d/*.sources, /etc/apt/sources.list)"
  echo "$uri"
}

# wrapper DEST BINARY ROOT writes a script that runs BINARY with ROOT's
# loader and libraries, with every argument as given. The loader is named
# in usr/lib: /lib64's link is absolute in older releases, and would lead
# to the host's.
wrapper() {
  cat >"$1" <<EOF
#!/bin/sh
# Written by backstream's scripts/versions.sh: runs $2 with the loader
# and libraries of the Debian root it belongs to.
exec "$3/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" --library-path "$3/usr/lib/x86_64-linux-gnu:$3/lib/x86_64-linux-gnu" "$2" "\$@"
EOF
  chmod 0755 "$1"
}

# layout is the version of the basedir this script makes: a basedir of
# another layout is made anew from its root.
layout=2

install_version() {
  local v=$1 suite=${release[$1]:-}
  [ -n "$suite" ] || die "unknown version $v (known: ${all[*]})"
  local top=$dir/$v root=$dir/$v/root base=$dir/$v/basedir
  if [ "$(head -n1 "$base/.ready" 2>/dev/null)" = "layout $layout" ]; then
    say "MariaDB $v is installed: $base ($(tail -n1 "$base/.ready"))"
    return 0
  fi
  local start=$SECONDS
  if [ ! -e "$root/.installed" ]; then
    install_root "$v" "$suite" "$top" "$root"
  fi
  make_basedir "$v" "$root" "$base"
  say "installed MariaDB $v in $((SECONDS - start))s: $(tail -n1 "$base/.ready")"
}

# install_root VERSION SUITE TOP ROOT installs Debian SUITE with its MariaDB
# into ROOT.
install_root() {
  local v=$1 suite=$2 top=$3 root=$4
  rm -rf "$top"
  mkdir -p "$top"
  say "installing MariaDB $v: Debian $suite into $root (about a minute)"
  debootstrap --variant=minbase "$suite" "$root" "$(mirror)" >"$top/debootstrap.log" 2>&1 ||
    die "debootstrap $suite failed; see $top/debootstrap.log"
  # mariadb-install-db looks the host's name up; the packages must not
  # start a server inside the root.
  cp /etc/hosts "$root/etc/hosts"
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod 0755 "$root/usr/sbin/policy-rc.d"
  chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    mariadb-server mariadb-client mariadb-backup >"$top/install.log" 2>&1 ||
    die "installing MariaDB in the $suite root failed; see $top/install.log"
  # The packages' caches are not needed to run anything.
  rm -rf "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"*
  touch "$root/.installed"
}

# make_basedir VERSION ROOT BASE lays out BASE, the basedir that runs
# ROOT's MariaDB on this host.
make_basedir() {
  local v=$1 root=$2 base=$3
  rm -rf "$base"
  mkdir -p "$base/bin" "$base/sbin"
  ln -s "$root/usr/share" "$base/share"
  ln -s "$root/usr/lib" "$base/lib"
  wrapper "$base/sbin/mariadbd" "$root/usr/sbin/mariadbd" "$root"
  # 10.5's mariadb-install-db looks for the server by its old name.
  ln -s mariadbd "$base/sbin/mysqld"
  local t
  for t in "${tools[@]}"; do
    [ -e "$root/usr/bin/$t" ] || die "MariaDB $v has no $t in $root/usr/bin"
    wrapper "$base/bin/$t" "$root/usr/bin/$t" "$root"
  done
  # The script itself runs with the host's shell; beside the scripts above
  # it finds the server and my_print_defaults (--basedir is its directory's
  # parent when it is not the system's).
  cp "$root/usr/bin/mariadb-install-db" "$base/bin/mariadb-install-db"
  local version
  version=$("$base/sbin/mariadbd" --version) || die "MariaDB $v's mariadbd does not run: $version"
  case "$version" in
    *" Ver $v."*) ;;
    *) die "MariaDB $v's root holds another version: $version" ;;
  esac
  printf 'layout %s\n%s\n' "$layout" "$version" >"$base/.ready"
}

case "${1:-}" in
  install)
    shift
    [ $# -gt 0 ] || set -- "${all[@]}"
    [ "$(id -u)" -eq 0 ] || die "installing needs root (debootstrap, chroot)"
    mkdir -p "$dir"
    # One installer at a time: two test runs may start together.
    exec 9>"$dir/.lock"
    flock 9
    # debootstrap first, once, and only when a root is missing: two
    # package installs at once would fight over the host's package manager.
    for v in "$@"; do
      if [ ! -e "$dir/$v/root/.installed" ]; then
        command -v debootstrap >/dev/null 2>&1 || ./scripts/deps.sh debootstrap >&2
        break
      fi
    done
    # Then the versions side by side: each goes into a root of its own,
    # with its own package manager, and mostly waits on the mirror (on a
    # fresh machine 277 s and 221 s one after the other).
    pids=()
    for v in "$@"; do
      install_version "$v" &
      pids+=("$!")
    done
    failed=0
    for p in "${pids[@]}"; do wait "$p" || failed=1; done
    [ "$failed" -eq 0 ] || die "installing failed; see the messages above"
    ;;
  basedir)
    [ $# -eq 2 ] || die "usage: $0 basedir VERSION"
    [ -n "${release[$2]:-}" ] || die "unknown version $2 (known: ${all[*]})"
    [ -e "$dir/$2/basedir/.ready" ] || die "MariaDB $2 is not installed: run $0 install $2"
    echo "$dir/$2/basedir"
    ;;
  list)
    printf '%s\n' "${all[@]}"
    ;;
  *)
    die "usage: $0 install [VERSION...] | basedir VERSION | list"
    ;;
esac
