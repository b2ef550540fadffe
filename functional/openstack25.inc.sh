# shellcheck shell=bash
# Sourced by functional/openstack.sh when OPENSTACK_RELEASE=2025.1: what the 2025.1 stack needs
# beyond the Zed one. Debian 12 ships Zed; OpenStack 2025.1 ("Epoxy": Keystone 27, Neutron 26,
# Octavia 16, Barbican 20) comes from Debian 13 (trixie) packages, installed in a debootstrap
# chroot ($CHROOT, default /srv/trixie). Every daemon runs as
#   ip netns exec $NS chroot $CHROOT env -i ... CMD
# (`ip netns exec` and `chroot` both exec: the recorded pid is the daemon itself), in a network
# namespace of its own ($NS, default ostack25), on that namespace's 127.0.0.1. So it never meets a
# Zed stack on the host's loopback, and everything that talks to it runs in the namespace too:
# `functional/openstack.sh run CMD...` (host binaries and files, the stack's network).
# State: $ROOT (default /tmp/ostack25) is a host symlink to $CHROOT$ROOT, so every path written in
# a config file is the same seen from the host (tests, the data-plane renderer) and from the chroot.

CHROOT=${CHROOT:-/srv/trixie}
NS=${NS:-ostack25}
STATE=/run/kuryr-ostack25          # host-side bookkeeping (mounts, netns) that survives a wipe of $ROOT
PACKAGES25="rabbitmq-server mariadb-server mariadb-client python3-pymysql python3-gunicorn python3-kombu
  python3-keystone python3-neutron python3-octavia python3-barbican
  python3-openstackclient python3-octaviaclient python3-neutronclient python3-barbicanclient
  openssl curl ca-certificates procps"
# the chroot's environment: nothing of the caller's (a pyenv PATH, LANG) leaks into its python
CENV=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 LC_ALL=C.UTF-8)

# The host's own Debian mirror (first "debian" URI of its apt sources); MIRROR overrides it.
host_mirror() {
  { cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null || true; } |
    sed -n -e 's/^URIs: *//p' -e 's/^deb \(\[[^]]*\] \)\{0,1\}\([^ ]*\) .*/\2/p' |
    grep -v -- '-security' | grep '/debian/\?$' | head -1 | sed 's:/$::' || true
}

inchroot() { chroot "$CHROOT" "${CENV[@]}" "$@"; }

# ---------------------------------------------------------------- mounts + netns (recorded)
mount_one() { # TYPE SRC TARGET OPTS
  local tgt=$CHROOT$3
  mountpoint -q "$tgt" && return 0
  mkdir -p "$tgt"; mount -t "$1" -o "$4" "$2" "$tgt"; echo "$tgt" >> "$STATE/mounts"
}
mounts_up() {
  mkdir -p "$STATE"; touch "$STATE/mounts"
  mount_one proc proc /proc nosuid,nodev,noexec
  mount_one sysfs sysfs /sys ro,nosuid,nodev,noexec
  mount_one tmpfs shm /dev/shm nosuid,nodev,mode=1777,size=256m
  mount_one devpts devpts /dev/pts newinstance,ptmxmode=0666,mode=620
}
mounts_down() {
  [ -f "$STATE/mounts" ] || return 0
  local m; for m in $(tac "$STATE/mounts"); do
    if mountpoint -q "$m"; then umount "$m" || umount -l "$m"; fi
  done
  rm -f "$STATE/mounts"
}
netns_up() {
  mkdir -p "$STATE"
  if ! ip netns list | awk '{print $1}' | grep -qx "$NS"; then
    ip netns add "$NS"; echo "$NS" > "$STATE/netns"
  fi
  ip -n "$NS" link set lo up
}
netns_down() {
  [ -f "$STATE/netns" ] || return 0
  if [ -z "$(ip netns pids "$NS" 2>/dev/null)" ]; then
    ip netns delete "$NS"; rm -f "$STATE/netns"
  else
    echo "netns $NS still has processes ($(ip netns pids "$NS" | tr '\n' ' ')): not deleted" >&2
  fi
}

# ---------------------------------------------------------------- install (idempotent)
# Logs: $INSTALL_LOGS/<chroot path with - for />-{debootstrap,apt-update,apt-install}.log, e.g.
# /var/log/kuryr-openstack/srv-trixie-apt-install.log. One install of a chroot at a time (fd 8 holds
# a flock on $STATE/install-<same>.lock; a second waits, at most LOCK_WAIT s).
install25() {
  # the host's tools (under our host apt lock, waiting for apt's own locks)
  host_apt_install chroot-tools iproute2 debootstrap curl ca-certificates procps
  local mirror=${MIRROR:-$(host_mirror)}
  mirror=${mirror:-http://deb.debian.org/debian}
  local tag; tag=$(echo "${CHROOT#/}" | tr / -)
  local clog=$INSTALL_LOGS/$tag lock=$STATE/install-$tag.lock
  mkdir -p "$INSTALL_LOGS" "$STATE"
  take_lock 8 "$lock" "another install of $CHROOT"
  # a finished debootstrap leaves apt-get and no /debootstrap work dir
  if [ ! -f "$CHROOT/.ostack25-debootstrap-ok" ]; then
    if [ -x "$CHROOT/usr/bin/apt-get" ] && [ ! -d "$CHROOT/debootstrap" ]; then
      touch "$CHROOT/.ostack25-debootstrap-ok"
    else
      # (debootstrap's own log, $CHROOT/debootstrap/debootstrap.log, says more than its output)
      [ -d "$CHROOT/debootstrap" ] && FAIL_RC=1 fail_step "debootstrap: $CHROOT holds an unfinished debootstrap (a failed or interrupted one): remove $CHROOT and retry" \
        "$clog-debootstrap.log" "$CHROOT/debootstrap/debootstrap.log"
      ts "debootstrap --variant=minbase trixie $CHROOT $mirror (about 1 min)"
      timeout 1200 debootstrap --variant=minbase trixie "$CHROOT" "$mirror" > "$clog-debootstrap.log" 2>&1 8>&- 9>&- \
        || fail_step "debootstrap --variant=minbase trixie $CHROOT $mirror" "$clog-debootstrap.log" "$CHROOT/debootstrap/debootstrap.log"
      touch "$CHROOT/.ostack25-debootstrap-ok"
    fi
  fi
  # chroot basics: /etc/hosts for RabbitMQ's rabbit@localhost (debootstrap writes none), apt
  # sources, and policy-rc.d (exit 101) so that no postinst starts a service
  printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' > "$CHROOT/etc/hosts"
  cp /etc/resolv.conf "$CHROOT/etc/resolv.conf" 2>/dev/null || true
  printf 'deb %s trixie main\ndeb %s trixie-updates main\ndeb %s trixie-security main\n' \
    "$mirror" "$mirror" "${mirror%/debian}/debian-security" > "$CHROOT/etc/apt/sources.list"
  printf '#!/bin/sh\nexit 101\n' > "$CHROOT/usr/sbin/policy-rc.d"; chmod 755 "$CHROOT/usr/sbin/policy-rc.d"
  local missing="" p
  # shellcheck disable=SC2016  # dpkg-query's own ${Status} format
  for p in $PACKAGES25; do
    inchroot dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
  done
  if [ -n "$missing" ]; then
    mounts_up
    ts "apt-get install in the trixie chroot (about 4.5 min):$missing"
    # apt_step: waits for the chroot's apt and dpkg locks (another apt in that chroot), says so
    apt_step "apt-get update in $CHROOT" "$clog-apt-update.log" "$CHROOT" \
      timeout 300 chroot "$CHROOT" "${CENV[@]}" apt-get update -qq
    # own archive dir: an apt hook may delete /var/cache/apt/archives/*.deb between dpkg runs
    mkdir -p "$CHROOT/var/tmp/debcache/partial"
    # shellcheck disable=SC2086  # $missing: one word per package
    apt_step "apt-get install in $CHROOT:$missing" "$clog-apt-install.log" "$CHROOT" \
      timeout 1800 chroot "$CHROOT" "${CENV[@]}" DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        -o Dir::Cache::archives=/var/tmp/debcache/ $missing
    rm -rf "$CHROOT/var/tmp/debcache"
    # shellcheck disable=SC2016
    ts "packages installed: $(inchroot dpkg-query -W -f='${Package}=${Version} ' python3-keystone python3-neutron python3-octavia python3-barbican)"
  fi
  exec 8>&-
}

# $ROOT on the host -> $CHROOT$ROOT (one path, two views)
link_root25() {
  mkdir -p "$CHROOT$ROOT"
  if [ -L "$ROOT" ]; then
    [ "$(readlink "$ROOT")" = "$CHROOT$ROOT" ] || { echo "$ROOT links elsewhere than $CHROOT$ROOT" >&2; exit 1; }
  elif [ -e "$ROOT" ]; then
    echo "$ROOT exists and is not the link to $CHROOT$ROOT this script makes: remove it" >&2; exit 1
  else
    ln -s "$CHROOT$ROOT" "$ROOT"
  fi
  # Barbican 20 reads /etc/barbican/barbican.conf (and its paste ini next to it)
  rm -rf "$CHROOT/etc/barbican"; ln -s "$ROOT/etc/barbican" "$CHROOT/etc/barbican"
}
