#!/bin/bash
# shellcheck disable=SC2034  # loop counters of wait loops are intentionally unused
# Local OpenStack for kuryr-l7-router's demo and functional tests, either release:
#   OPENSTACK_RELEASE=2025.1 (default): Debian 13's packages (Keystone 27, Neutron 26, Octavia 16,
#     Barbican 20) in a debootstrap chroot (/srv/trixie) and a network namespace of its own
#     (ostack25), state in ROOT=/tmp/ostack25; see functional/openstack25.inc.sh. Reach it with
#     `functional/openstack.sh run CMD...` (CMD runs in the stack's namespace, with KURYR_CONFIG_FILE,
#     ROOT, KURYR_MYSQL_SOCKET, OS_CLIENT_CONFIG_FILE set for it).
#   OPENSTACK_RELEASE=zed: Debian 12's own packages (Octavia 11.0.0) on the host's 127.0.0.1,
#     state in ROOT=/tmp/ostack.
# The verbs other than start take the release (and ROOT) of the stack KURYR_CONFIG_FILE (or ROOT)
# belongs to when OPENSTACK_RELEASE is not set: a fault test acts on the stack it tests.
# Both stacks:
#   MariaDB + RabbitMQ + Keystone + Neutron (ML2, L3 router, no agents)
#   + Barbican API (simple_crypto, random KEK per start) on :9311, Keystone service `key-manager`
#   + Octavia API/worker (amphora provider, noop amphora/compute drivers, barbican_cert_manager:
#     TERMINATED_HTTPS listeners take Barbican PKCS#12 secrets, see docs/tls-barbican-notes.md)
# Everything lives under $ROOT and listens on 127.0.0.1 only.
# Users (password = name): admin (admin/admin: the controller's user in kuryr.conf), demo (project
# demo: member, load-balancer_member, creator), demo2 (demo: member, load-balancer_member, NO
# creator: cannot create Barbican secrets), service users octavia, neutron, barbican.
#
# usage: openstack.sh [start|stop|status|install|run ...]
#   start  (default) stop anything this recipe started, wipe $ROOT/{etc,data,log,run},
#          install missing apt packages, init DBs, start all daemons, wait for readiness.
#   install  install what `start` would install and start nothing (no $ROOT, no namespace):
#          2025.1: the host's debootstrap/curl/iproute2, the trixie chroot ($CHROOT) and its
#          packages, then the host packages below; zed: the host packages ($PACKAGES: Zed's stack
#          and the host-side data-plane tools, used by the tests on either stack). Idempotent;
#          the two releases' installs may run at the same time (the host's apt is serialised).
#   stop   stop exactly the pids recorded in $ROOT/run/*.pid (and their descendants).
#   status one line per recorded daemon: running or DEAD.
#   Fault injection on a running stack (functional/faults.rs), NAME one of keystone,
#   neutron-server, octavia-api, octavia-worker, barbican-api:
#   stop-service NAME / start-service NAME   stop it (connections refused) / start it and wait
#                                            until it answers (the worker: until it consumes)
#   pause-service NAME / resume-service NAME SIGSTOP / SIGCONT it and its children (it keeps its
#                                            sockets and its in-flight work: a hung service)
#   token-expiration SECONDS                 set Keystone's [token] expiration, restart Keystone
#   octavia-fixes on|off                     restart the worker with / without the three fixes of
#                                            Octavia 11.0.1 that make a fully-populated create work
#                                            (Debian ships 11.0.0; functional/octavia/worker_zed_11_0_1.py).
#                                            Default: off (Debian's worker as packaged).
#   (start also writes $ROOT/etc/kuryr/kuryr.conf, $ROOT/etc/topology.json and
#    $ROOT/etc/octavia_user_id (the Octavia service user's id: the user Octavia puts in a
#    secret's Barbican read ACL) for this stack)
#
# Failures: a step that fails (host apt, debootstrap, apt in the chroot, MariaDB's init, a schema
# migration, a daemon that does not become ready, ...) prints on stderr `FAILED: <step>`, the last
# lines of its log(s) and their paths, and the script exits non-zero. Install logs are kept in
# /var/log/kuryr-openstack/ (they outlive $ROOT), the stack's in $ROOT/log.
# apt and dpkg: every apt-get (host and chroot) first waits, saying so and naming the holder, while
# another process holds the dpkg or apt lists lock (at most APT_LOCK_WAIT=600 s; apt-get itself
# waits for the dpkg lock with DPkg::Lock::Timeout, but apt 2.6's `apt-get update` fails at once on
# a held lists lock), and host apt runs of two openstack.sh at once take turns
# (flock on /run/kuryr-openstack-apt.lock).
#
# env knobs:
#   APT_LOCK_WAIT=600 seconds to wait for a lock held by another apt/dpkg (or openstack.sh's install)
#   OCTAVIA_API_NETWORK_DRIVER=allowed_address_pairs_driver (default) -> the Octavia API allocates
#       real neutron VIP ports (so a floating IP can be put on vip_port_id); the worker always uses
#       network_noop_driver (allowed_address_pairs in the worker breaks with compute_noop_driver).
#   OCTAVIA_FIXES=1 -> start the worker with those fixes (as `octavia-fixes on`).
#   OCTAVIA_API_NETWORK_DRIVER=network_noop_driver -> pure noop; VIPs are fake (198.51.100.1)
#       unless the client passes vip_port_id + vip_subnet_id + vip_address of a real port.
set -euo pipefail

# ---------------------------------------------------------------- which stack
# $ROOT/etc/openstack-release names a stack's release (a Zed stack started before it existed has none)
release_of() { if [ -f "$1/etc/openstack-release" ]; then cat "$1/etc/openstack-release"; else echo zed; fi; }
if [ -z "${OPENSTACK_RELEASE:-}" ] && [ "${1:-start}" != start ] && [ "${1:-}" != install ]; then
  case "${KURYR_CONFIG_FILE:-}" in
    */etc/kuryr/kuryr.conf) ROOT=${KURYR_CONFIG_FILE%/etc/kuryr/kuryr.conf} ;;
  esac
  [ -n "${ROOT:-}" ] && OPENSTACK_RELEASE=$(release_of "$ROOT")
fi
OPENSTACK_RELEASE=${OPENSTACK_RELEASE:-2025.1}
IN=()                              # prefix of every command run in the stack's world
SYSROOT=""                         # where the stack's packages are, seen from the host
case "$OPENSTACK_RELEASE" in
  zed) ROOT=${ROOT:-/tmp/ostack} ;;
  2025.1)
    ROOT=${ROOT:-/tmp/ostack25}
    # shellcheck source=functional/openstack25.inc.sh disable=SC1091
    . "$(dirname "$(readlink -f "$0")")/openstack25.inc.sh"
    IN=(ip netns exec "$NS" chroot "$CHROOT" "${CENV[@]}"); SYSROOT=$CHROOT ;;
  *) echo "OPENSTACK_RELEASE must be 2025.1 or zed, not $OPENSTACK_RELEASE" >&2; exit 2 ;;
esac
ETC=$ROOT/etc; DATA=$ROOT/data; LOG=$ROOT/log; RUN=$ROOT/run; BIN=$ROOT/bin
HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
PY=/usr/bin/python3                # Debian's python (the OpenStack libs live there), not pyenv's
OCTAVIA_API_NETWORK_DRIVER=${OCTAVIA_API_NETWORK_DRIVER:-allowed_address_pairs_driver}
# python3-barbican only: barbican-common/barbican-api would configure a database through
# dbconfig-common and start a system service
PACKAGES="rabbitmq-server mariadb-server python3-pymysql python3-octavia python3-keystone python3-neutron python3-barbican python3-openstackclient python3-octaviaclient python3-neutronclient python3-barbicanclient haproxy openssl"

T0=$(date +%s.%N)
LAST_TS=""
ts() { LAST_TS=$*; awk -v a="$T0" -v b="$(date +%s.%N)" -v m="$*" 'BEGIN { printf "[%6.1fs] %s\n", b - a, m }'; }

# ---------------------------------------------------------------- failed steps
INSTALL_LOGS=/var/log/kuryr-openstack   # install logs (host apt, debootstrap, chroot apt)
# fail_step STEP LOG...: on stderr, the step that failed, the last lines of each of its logs and
# their paths; exit with the status of the command that failed ($? when called, FAIL_RC=N to give
# it; 1 if that is 0). Called as `cmd > log 2>&1 || fail_step "what cmd does" log`.
fail_step() {
  local rc=$? step=$1 log; shift
  rc=${FAIL_RC:-$rc}; [ "$rc" != 0 ] || rc=1
  {
    echo
    echo "FAILED: $step (exit $rc$([ "$rc" = 124 ] && echo ": timed out"))"
    for log in "$@"; do
      if [ -s "$log" ]; then echo "--- last lines of $log:"; tail -n "${FAIL_TAIL:-20}" "$log" | sed 's/^/  | /'
      else echo "--- $log: empty or missing"; fi
    done
    local have=(); for log in "$@"; do [ -s "$log" ] && have+=("$log"); done
    [ ${#have[@]} = 0 ] || echo "--- the whole log$([ ${#have[@]} -gt 1 ] && echo s): ${have[*]}"
  } >&2
  exit "$rc"
}
# run_step STEP LOG CMD...: CMD with its output in LOG; fail_step if it fails. CMD does not
# inherit our lock descriptors (8, 9): a daemon a package starts must not hold them.
run_step() { local step=$1 log=$2; shift 2; "$@" > "$log" 2>&1 8>&- 9>&- || fail_step "$step" "$log"; }
# anything else that fails (set -e): say where, and what was being done (ERR_HINT: where the logs are)
ERR_HINT=""
on_err() {
  [ "$BASHPID" = "$$" ] || return 0   # once, in the script itself (not in each subshell)
  echo "FAILED: $(basename "$4") line $2: \`$3\` (exit $1)${LAST_TS:+; the last step begun: $LAST_TS}$ERR_HINT" >&2
}
set -E; trap 'on_err $? $LINENO "$BASH_COMMAND" "${BASH_SOURCE[0]}"' ERR

# ---------------------------------------------------------------- apt and dpkg locks
LOCK_WAIT=${APT_LOCK_WAIT:-600}
# lock_holder FILE: "PID (COMMAND)" of the process holding a lock on FILE (fcntl, as apt and dpkg
# take them), from /proc/locks (device and inode); nothing if FILE is not locked
lock_holder() {
  local id pid
  id=$(stat -L -c '%d %i' "$1" 2>/dev/null) || return 0
  pid=$(awk -v id="$id" 'BEGIN { split(id, a, " "); d = a[1]; q = int(d / 4096)
                                  key = sprintf("%02x:%02x:%s", int(d / 256) % 4096, d % 256 + q - q % 256, a[2]) }
                         $2 != "->" && $6 == key { print $5; exit }' /proc/locks)
  [ -n "$pid" ] || return 0
  echo "$pid ($(tr '\0' ' ' 2>/dev/null < "/proc/$pid/cmdline" | cut -c1-160))"
}
# wait_apt_locks SYSROOT: until no process holds SYSROOT's dpkg or apt lists lock, at most
# LOCK_WAIT s, saying who holds it; returns 1 if it is still held then
wait_apt_locks() {
  local deadline=$(( $(date +%s) + LOCK_WAIT )) f h said=""
  while :; do
    h=""
    for f in "$1/var/lib/dpkg/lock-frontend" "$1/var/lib/dpkg/lock" "$1/var/lib/apt/lists/lock"; do
      h=$(lock_holder "$f"); [ -z "$h" ] || break
    done
    [ -n "$h" ] || return 0
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "$f is still held after ${LOCK_WAIT}s (APT_LOCK_WAIT) by pid $h" >&2; return 1
    fi
    if [ "$said" != "$f $h" ]; then
      ts "waiting for $f (another apt/dpkg run; at most ${LOCK_WAIT}s): held by pid $h"; said="$f $h"
    fi
    sleep 2
  done
}
# apt_step STEP LOG SYSROOT APT-GET-CMD...: an apt-get command of the host (SYSROOT empty) or of
# the chroot SYSROOT that waits for the locks (above, and DPkg::Lock::Timeout), is run again if it
# lost a race for one (`apt-get update` does not wait for its lock), and fails with fail_step
apt_step() {
  local step=$1 log=$2 root=$3 deadline rc; shift 3
  deadline=$(( $(date +%s) + LOCK_WAIT ))
  : > "$log"
  while :; do
    wait_apt_locks "$root" 2>> "$log" || fail_step "$step: waiting for the apt/dpkg lock" "$log"
    rc=0; "$@" -o DPkg::Lock::Timeout="$LOCK_WAIT" >> "$log" 2>&1 8>&- 9>&- || rc=$?
    if [ "$rc" = 0 ]; then
      # `apt-get update` exits 0 when a source cannot be fetched (only warns): say so now, the
      # install it was for may fail on it ("Unable to locate package")
      if grep -q '^[WE]: ' "$log"; then
        { echo "$step: apt warned (whole log: $log):"; grep '^[WE]: ' "$log" | tail -n 10 | sed 's/^/  | /'; } >&2
      fi
      return 0
    fi
    if tail -n 3 "$log" | grep -q "Could not get lock" && [ "$(date +%s)" -lt "$deadline" ]; then
      ts "$step: lost a race for an apt lock, again"; sleep 2; continue
    fi
    FAIL_RC=$rc fail_step "$step" "$log"
  done
}
# take_lock FD FILE WHAT: a flock of ours on FILE, held by descriptor FD (8 or 9, opened here) until
# it is closed (`exec FD>&-`) or the script exits; waits at most LOCK_WAIT s, naming the holder (who
# writes itself into FILE: flock(1)'s pid in /proc/locks is gone by then)
take_lock() {
  local fd=$1 file=$2 what=$3
  eval "exec $fd>> \"\$file\""
  if ! flock -n "$fd"; then
    ts "waiting for $what (lock $file held by $(cat "$file" 2>/dev/null); at most ${LOCK_WAIT}s)"
    flock -w "$LOCK_WAIT" "$fd" || FAIL_RC=1 fail_step "$what: lock $file still held after ${LOCK_WAIT}s (APT_LOCK_WAIT) by $(cat "$file" 2>/dev/null)"
    ts "lock $file taken"
  fi
  echo "pid $$ ($(basename "$0") ${VERB:-}, OPENSTACK_RELEASE=$OPENSTACK_RELEASE${CHROOT:+, CHROOT=$CHROOT})" > "$file"
}
# The host's apt, one openstack.sh at a time (the two releases' installs may run together): fd 9
# holds our flock while a host apt step runs; apt and dpkg do not inherit it
HOST_APT_LOCK=/run/kuryr-openstack-apt.lock
# missing_host_packages PKG...: those of PKG the host has not installed
missing_host_packages() {
  local p missing=""
  # shellcheck disable=SC2016  # dpkg-query's own ${Status} format
  for p in "$@"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"; done
  echo "${missing# }"
}
# host_apt_install WHAT PKG...: install the host packages among PKG that are missing (apt-get update
# first), under our host apt lock; logs in $INSTALL_LOGS/host-apt-WHAT-{update,install}.log
host_apt_install() {
  local what=$1 missing; shift
  [ -n "$(missing_host_packages "$@")" ] || return 0
  mkdir -p "$INSTALL_LOGS"
  take_lock 9 "$HOST_APT_LOCK" "another openstack.sh's host apt"
  missing=$(missing_host_packages "$@")   # again: the install we waited for may have installed them
  if [ -n "$missing" ]; then
    ts "installing on the host ($what): $missing"
    apt_step "host apt-get update (for $what)" "$INSTALL_LOGS/host-apt-$what-update.log" "" apt-get update -qq
    # the image's docker-clean apt hook deletes /var/cache/apt/archives/*.deb between dpkg runs,
    # which breaks multi-stage installs (perl upgrade); download into our own cache dir instead
    local cache=/var/tmp/kuryr-openstack-debcache
    mkdir -p "$cache/partial"
    # policy-rc.d (exit 101) keeps the packages' init scripts from starting services
    # shellcheck disable=SC2086  # $missing: one word per package
    apt_step "host apt-get install ($what): $missing" "$INSTALL_LOGS/host-apt-$what-install.log" "" \
      env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends -o Dir::Cache::archives="$cache/" $missing
    rm -rf "$cache"
    ts "host packages installed ($what)"
  fi
  exec 9>&-
}
# the host's own packages, for both releases: Zed's stack, and the host-side tools the tests use on
# either stack (the data-plane tests render haproxy with python3-octavia's templater and run
# haproxy; the mariadb client; openssl)
install_host_packages() {
  # shellcheck disable=SC2086  # $PACKAGES: one word per package
  host_apt_install packages $PACKAGES
}

# ---------------------------------------------------------------- process handling
# field 22 of /proc/PID/stat; parse after the last ')' because comm may contain spaces
# (gunicorn/cotyledon rename their processes, e.g. "gunicorn: master")
starttime() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $20}' || true; }
descendants() { local c; for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do echo "$c"; descendants "$c"; done; }

# daemon NAME CMD...: start CMD in its own session, record "pid starttime" in $RUN/NAME.pid
daemon() {
  local name=$1; shift
  # shellcheck disable=SC2016  # $$ and $@ belong to the inner bash
  setsid bash -c 'echo $$ > "$0"; exec "$@"' "$RUN/$name.pid.tmp" "${IN[@]}" "$@" > "$LOG/$name.out" 2>&1 < /dev/null &
  local i; for i in $(seq 1 50); do [ -s "$RUN/$name.pid.tmp" ] && break; sleep 0.1; done
  local pid; pid=$(cat "$RUN/$name.pid.tmp"); rm -f "$RUN/$name.pid.tmp"
  echo "$pid $(starttime "$pid")" > "$RUN/$name.pid"
}

alive() { [ -n "$1" ] && [ -d "/proc/$1" ] && [ "$(starttime "$1")" = "$2" ]; }

# stop a group of daemons (by name) together: TERM the recorded pids, wait, then TERM/KILL leftovers
stop_group() {
  local n pid st pids="" all="" k i
  for n in "$@"; do
    [ -f "$RUN/$n.pid" ] || continue
    read -r pid st < "$RUN/$n.pid" || true
    if alive "$pid" "$st"; then
      all="$all $pid $(descendants "$pid" | tr '\n' ' ')"; pids="$pids $pid"
      kill "$pid" 2>/dev/null || true; echo "stopping $n (pid $pid)"
    fi
    rm -f "$RUN/$n.pid"
  done
  [ -n "$pids" ] || return 0
  for i in $(seq 1 100); do
    local left=""; for k in $pids; do [ -d "/proc/$k" ] && left="$left $k"; done
    [ -z "$left" ] && break; sleep 0.2
  done
  for k in $all; do if [ -d "/proc/$k" ]; then kill "$k" 2>/dev/null || true; fi; done
  sleep 0.3
  for k in $all; do if [ -d "/proc/$k" ]; then kill -9 "$k" 2>/dev/null || true; fi; done
  return 0
}

stop_all() {
  [ -d "$RUN" ] || return 0
  stop_group octavia-api octavia-worker neutron-server barbican-api keystone
  stop_group rabbitmq epmd mariadb
  local f; for f in "$RUN"/*.pid; do [ -f "$f" ] && stop_group "$(basename "$f" .pid)"; done
  return 0
}

# svc_logs NAME: a daemon's logs (its stdout/stderr, then the log files it writes)
svc_logs() {
  echo "$LOG/$1.out"
  case "$1" in
    keystone) echo "$LOG/keystone.log $LOG/keystone-gunicorn.log" ;;
    neutron-server|octavia-worker) echo "$LOG/$1.log" ;;
    octavia-api) echo "$LOG/octavia-api.log $LOG/octavia-gunicorn.log" ;;
    barbican-api) echo "$LOG/barbican-api.log $LOG/barbican-gunicorn.log" ;;
    mariadb) echo "$LOG/mysqld.log" ;;
  esac
}
wait_http() { # URL DAEMON TIMEOUT_S
  local i pid st
  for i in $(seq 1 $(($3 * 4))); do
    "${IN[@]}" curl -m 3 -sf -o /dev/null "$1" && { ts "$2 ready ($1)"; return 0; }
    # a daemon that exited will not answer: say so now
    if [ -f "$RUN/$2.pid" ] && read -r pid st < "$RUN/$2.pid" && ! alive "$pid" "$st"; then
      # shellcheck disable=SC2046  # svc_logs: one word per log
      FAIL_RC=1 fail_step "$2 ready: it exited (pid $pid) before answering at $1" $(svc_logs "$2")
    fi
    sleep 0.25
  done
  # shellcheck disable=SC2046  # svc_logs: one word per log
  fail_step "$2 ready: no answer at $1 within $3 s" $(svc_logs "$2")
}

NCONF=(--config-file "$ETC/neutron/neutron.conf" --config-file "$ETC/neutron/plugins/ml2/ml2_conf.ini")

start_keystone() {
  daemon keystone env OS_KEYSTONE_CONFIG_FILES="$ETC/keystone/keystone.conf" $PY -m gunicorn \
      --chdir "$ETC/wsgi" --bind 127.0.0.1:5000 --workers 1 --threads 8 --worker-class gthread --timeout 120 \
      --access-logfile "$LOG/keystone-access.log" --error-logfile "$LOG/keystone-gunicorn.log" \
      --name keystone keystone_wsgi:application
}
start_neutron_server() {
  daemon neutron-server $PY -c 'import sys; from neutron.cmd.eventlet.server import main; sys.argv[0]="neutron-server"; sys.exit(main())' \
      "${NCONF[@]}" --log-file "$LOG/neutron-server.log"
}
start_octavia_worker() {
  local cmd=(octavia-worker)
  # opt-in: Debian's worker plus Octavia 11.0.1's fully-populated-create fixes (see that file)
  # (2025.1: Octavia 16 has them; its run dir always holds the marker, the worker stays as shipped)
  [ "$OPENSTACK_RELEASE" = zed ] && [ -f "$RUN/octavia-fixes" ] && cmd=("$PY" "$HERE/octavia/worker_zed_11_0_1.py")
  daemon octavia-worker "${cmd[@]}" --config-file "$ETC/octavia/octavia.conf" --log-file "$LOG/octavia-worker.log"
}
start_octavia_api() {
  daemon octavia-api $PY -m gunicorn --chdir "$ETC/wsgi" --bind 127.0.0.1:9876 --workers 1 --threads 8 \
      --worker-class gthread --timeout 120 --access-logfile "$LOG/octavia-access.log" \
      --error-logfile "$LOG/octavia-gunicorn.log" --name octavia-api octavia_wsgi:application
}

# Barbican reads its config only from oslo.config's default locations (every plugin module parses
# them again at import), the first being ~/.barbican/ and ~/: HOME points it at $ETC/barbican
start_barbican() {
  daemon barbican-api env HOME="$ETC/barbican" $PY -m gunicorn --chdir "$ETC/wsgi" --bind 127.0.0.1:9311 \
      --workers 1 --threads 4 --worker-class gthread --timeout 120 --access-logfile "$LOG/barbican-access.log" \
      --error-logfile "$LOG/barbican-gunicorn.log" --name barbican-api barbican_wsgi:application
}

# the API casts to the worker's topic ('octavia_prov' as configured on Zed; Octavia 16 hard-codes
# 'octavia_provisioning_v2' and ignores [oslo_messaging] topic); a cast sent before the worker's
# queue exists is silently dropped (LB stuck in PENDING_CREATE), so wait until it has a consumer
WORKER_TOPIC=octavia_prov
[ "$OPENSTACK_RELEASE" = zed ] || WORKER_TOPIC=octavia_provisioning_v2
wait_worker() {
  # shellcheck disable=SC2046  # svc_logs: one word per log
  "${IN[@]}" env TOPIC="$WORKER_TOPIC" $PY - <<'PYEOF' 2> "$LOG/wait-worker.log" || fail_step "octavia-worker ready: consuming from $WORKER_TOPIC within 120 s" "$LOG/wait-worker.log" $(svc_logs octavia-worker) "$LOG/rabbitmq.out"
import os, time, kombu
topic = os.environ["TOPIC"]
deadline = time.time() + 120
while True:
    try:
        with kombu.Connection("amqp://guest:guest@127.0.0.1:5672//", connect_timeout=2) as c:
            _, _, consumers = c.default_channel.queue_declare(queue=topic, passive=True)
            if consumers > 0:
                break
    except Exception:
        pass
    if time.time() > deadline:
        raise SystemExit("octavia-worker never consumed from " + topic)
    time.sleep(0.25)
PYEOF
  ts "octavia-worker consuming from $WORKER_TOPIC"
}

start_service() {
  case "$1" in
    keystone) start_keystone; wait_http http://127.0.0.1:5000/v3 keystone 60 ;;
    neutron-server) start_neutron_server; wait_http http://127.0.0.1:9696/ neutron-server 120 ;;
    octavia-api) start_octavia_api; wait_http http://127.0.0.1:9876/ octavia-api 120 ;;
    octavia-worker) start_octavia_worker; wait_worker ;;
    barbican-api) start_barbican; wait_http http://127.0.0.1:9311/ barbican-api 120 ;;
    *) echo "unknown service $1 (keystone, neutron-server, octavia-api, octavia-worker, barbican-api)" >&2; exit 2 ;;
  esac
}

# signal_service NAME SIG: the recorded pid and its descendants
signal_service() {
  local pid st k
  [ -f "$RUN/$1.pid" ] || { echo "$1 is not running (no $RUN/$1.pid)" >&2; exit 1; }
  read -r pid st < "$RUN/$1.pid"
  alive "$pid" "$st" || { echo "$1 is not running (pid $pid gone)" >&2; exit 1; }
  for k in $pid $(descendants "$pid"); do kill -s "$2" "$k" 2>/dev/null || true; done
  ts "$1: SIG$2 sent to pid $pid and its children"
}

VERB=${1:-start}
case "$VERB" in
  stop) stop_all; if [ "$OPENSTACK_RELEASE" != zed ]; then mounts_down; netns_down; fi; exit 0 ;;
  install) # what start installs, nothing started (2025.1: the chroot first, then the host's packages)
    ERR_HINT="; install logs in $INSTALL_LOGS"
    [ "$OPENSTACK_RELEASE" = zed ] || install25
    install_host_packages
    ts "INSTALLED ($OPENSTACK_RELEASE): nothing left to install for \`OPENSTACK_RELEASE=$OPENSTACK_RELEASE $0 start\`"; exit 0 ;;
  run) # run CMD with this stack's settings, in its network namespace (2025.1)
    shift; [ $# -gt 0 ] || { echo "usage: $0 run CMD..." >&2; exit 2; }
    export OPENSTACK_RELEASE ROOT KURYR_CONFIG_FILE="$ETC/kuryr/kuryr.conf" KURYR_MYSQL_SOCKET="$RUN/mysql.sock" \
           OS_CLIENT_CONFIG_FILE="$ETC/clouds.yaml"
    if [ "$OPENSTACK_RELEASE" = zed ]; then exec "$@"; fi
    # already inside it (a test calling back): the same namespace
    if [ "$(ip netns identify $$ 2>/dev/null)" = "$NS" ]; then exec "$@"; fi
    exec ip netns exec "$NS" "$@" ;;
  stop-service) [ -n "${2:-}" ] || { echo "usage: $0 stop-service NAME" >&2; exit 2; }
                stop_group "$2"; exit 0 ;;
  start-service) [ -n "${2:-}" ] || { echo "usage: $0 start-service NAME" >&2; exit 2; }
                 start_service "$2"; exit 0 ;;
  pause-service) signal_service "${2:?usage: $0 pause-service NAME}" STOP; exit 0 ;;
  resume-service) signal_service "${2:?usage: $0 resume-service NAME}" CONT; exit 0 ;;
  token-expiration)
    secs=${2:?usage: $0 token-expiration SECONDS}
    sed -i "s/^expiration = .*/expiration = $secs/" "$ETC/keystone/keystone.conf"
    stop_group keystone; start_service keystone; ts "keystone: [token] expiration = $secs"; exit 0 ;;
  octavia-fixes)
    if [ "$OPENSTACK_RELEASE" != zed ]; then
      # Octavia 16's worker has 11.0.1's fixes; Debian 11.0.0's behaviour exists only on Zed
      case "${2:-}" in on|off) ts "octavia-fixes $2: nothing to do on $OPENSTACK_RELEASE (its worker has the fixes)"; exit 0 ;;
        *) echo "usage: $0 octavia-fixes on|off" >&2; exit 2 ;; esac
    fi
    case "${2:-}" in
      on) touch "$RUN/octavia-fixes" ;;
      off) rm -f "$RUN/octavia-fixes" ;;
      *) echo "usage: $0 octavia-fixes on|off" >&2; exit 2 ;;
    esac
    stop_group octavia-worker; start_service octavia-worker; ts "octavia-worker: fully-populated-create fixes of 11.0.1 $2"; exit 0 ;;
  status) for f in "$RUN"/*.pid; do [ -f "$f" ] || continue; read -r p s < "$f"
            if alive "$p" "$s"; then echo "$(basename "$f" .pid) running pid $p"; else echo "$(basename "$f" .pid) DEAD"; fi; done; exit 0 ;;
  start) ;;
  *) echo "usage: $0 [start|stop|status|install|run|stop-service|start-service|pause-service|resume-service|token-expiration|octavia-fixes]" >&2; exit 2 ;;
esac

# ---------------------------------------------------------------- 0. clean + packages
stop_all
if [ "$OPENSTACK_RELEASE" != zed ]; then
  install25; mounts_up; netns_up; link_root25
  echo "$OPENSTACK_RELEASE" > "$STATE/release"
fi
PORTS="3306 4369 5000 5672 9311 9696 9876 25672"
# (2025.1: its own namespace's ports)
busy=$("${IN[@]:0:4}" ss -Hltn 2>/dev/null | awk '{print $4}' | grep -E "^(127\.0\.0\.1|0\.0\.0\.0|\*|\[::1?\]):(${PORTS// /|}))$" || true)
if [ -n "$busy" ]; then
  echo "ports already in use by processes this recipe did not record: $busy" >&2
  echo "(not killing unknown processes; stop them yourself)" >&2; exit 1
fi
rm -rf "$ETC" "$DATA" "$LOG" "$RUN"
ERR_HINT="; the stack's logs in $LOG, install logs in $INSTALL_LOGS"
mkdir -p "$ETC"/{keystone,octavia,neutron/plugins/ml2,rabbitmq,barbican,wsgi} "$DATA"/{keystone/fernet-keys,keystone/credential-keys,octavia/certs,octavia/lock,neutron/lock,rabbitmq} "$LOG" "$RUN" "$BIN"
[ "${OCTAVIA_FIXES:-0}" = 1 ] && touch "$RUN/octavia-fixes"
# Octavia 16's worker has 11.0.1's fully-populated-create fixes (functional/common reads the marker)
[ "$OPENSTACK_RELEASE" = zed ] || touch "$RUN/octavia-fixes"
echo "$OPENSTACK_RELEASE" > "$ETC/openstack-release"

# the host's own packages (install_host_packages), for both releases
install_host_packages

# ---------------------------------------------------------------- 1. RabbitMQ (slowest to boot; start first)
cat > "$ETC/rabbitmq/rabbitmq.conf" <<'EOF'
listeners.tcp.1 = 127.0.0.1:5672
loopback_users.guest = true
log.file.level = warning
vm_memory_high_watermark.relative = 0.2
disk_free_limit.absolute = 50MB
EOF
echo '[].' > "$ETC/rabbitmq/enabled_plugins"
echo 'ostack-test-cookie' > "$DATA/rabbitmq/.erlang.cookie"; chmod 400 "$DATA/rabbitmq/.erlang.cookie"
RABBIT_ENV=(env -i PATH=/usr/sbin:/usr/bin:/bin HOME="$DATA/rabbitmq" LANG=C.UTF-8
  ERL_EPMD_ADDRESS=127.0.0.1 ERL_EPMD_PORT=4369
  RABBITMQ_NODENAME=rabbit@localhost RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT=5672
  RABBITMQ_DIST_PORT=25672 RABBITMQ_CONFIG_FILE="$ETC/rabbitmq/rabbitmq"
  RABBITMQ_ENABLED_PLUGINS_FILE="$ETC/rabbitmq/enabled_plugins"
  RABBITMQ_MNESIA_BASE="$DATA/rabbitmq/mnesia" RABBITMQ_LOG_BASE="$LOG/rabbitmq"
  RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS='-kernel inet_dist_use_interface {127,0,0,1}')
daemon epmd epmd -address 127.0.0.1 -port 4369
sleep 0.3
daemon rabbitmq "${RABBIT_ENV[@]}" /usr/lib/rabbitmq/bin/rabbitmq-server
ts "rabbitmq starting"

# ---------------------------------------------------------------- 2. MariaDB
# MariaDB 11.8 (2025.1's chroot) turns innodb_snapshot_isolation on by default: Octavia's
# SELECT ... FOR UPDATE of a load balancer another transaction just changed then fails with
# "1020 Record has changed since last read" (an API 500 on a pool create) instead of waiting as
# with Zed's MariaDB 10.11, which has no such option
MARIADB_EXTRA=()
[ "$OPENSTACK_RELEASE" = zed ] || MARIADB_EXTRA=(--innodb-snapshot-isolation=OFF)
run_step "mariadb-install-db (MariaDB's data directory)" "$LOG/mysql-install.log" \
  "${IN[@]}" mariadb-install-db --no-defaults --datadir="$DATA/mysql" --user=root \
    --auth-root-authentication-method=normal --skip-test-db
daemon mariadb /usr/sbin/mariadbd --no-defaults --datadir="$DATA/mysql" --socket="$RUN/mysql.sock" \
    --bind-address=127.0.0.1 --port=3306 --user=root --pid-file="$RUN/mariadbd.pid-own" \
    --log-error="$LOG/mysqld.log" --innodb-buffer-pool-size=128M --innodb-flush-log-at-trx-commit=2 \
    --skip-name-resolve --max-connections=500 --character-set-server=utf8mb4 "${MARIADB_EXTRA[@]}"
ready=0
for i in $(seq 1 120); do "${IN[@]}" mariadb-admin --socket="$RUN/mysql.sock" -uroot ping >/dev/null 2>&1 && { ready=1; break; }; sleep 0.25; done
# shellcheck disable=SC2046  # svc_logs: one word per log
[ "$ready" = 1 ] || fail_step "mariadb ready: no answer on $RUN/mysql.sock within 30 s" $(svc_logs mariadb)
"${IN[@]}" mariadb --socket="$RUN/mysql.sock" -uroot > "$LOG/mysql-init.log" 2>&1 <<'EOF' || fail_step "mariadb: create the databases and user" "$LOG/mysql-init.log"
CREATE DATABASE keystone; CREATE DATABASE octavia; CREATE DATABASE neutron; CREATE DATABASE barbican;
CREATE USER 'ostack'@'127.0.0.1' IDENTIFIED BY 'ostack';
GRANT ALL PRIVILEGES ON keystone.* TO 'ostack'@'127.0.0.1';
GRANT ALL PRIVILEGES ON octavia.* TO 'ostack'@'127.0.0.1';
GRANT ALL PRIVILEGES ON neutron.* TO 'ostack'@'127.0.0.1';
GRANT ALL PRIVILEGES ON barbican.* TO 'ostack'@'127.0.0.1';
EOF
ts "mariadb ready, databases created"

# ---------------------------------------------------------------- 3. config files
cat > "$ETC/keystone/keystone.conf" <<EOF
[DEFAULT]
log_file = $LOG/keystone.log
[database]
connection = mysql+pymysql://ostack:ostack@127.0.0.1/keystone
[token]
provider = fernet
expiration = 86400
[fernet_tokens]
key_repository = $DATA/keystone/fernet-keys
[fernet_receipts]
key_repository = $DATA/keystone/fernet-keys
[credential]
key_repository = $DATA/keystone/credential-keys
[identity]
# cheap bcrypt: test passwords only
password_hash_rounds = 4
[cache]
# in-process cache; fine with a single gunicorn worker. Cuts GET latency ~150ms -> ~6ms
enabled = true
backend = dogpile.cache.memory
EOF
# Keystone 27 adds `links` to the role dicts it gets from its cache, and the in-process memory
# backend hands out the cached objects themselves: the next application credential created
# without explicit roles then fails its own schema check (400 "'links' was unexpected"). A
# pickling backend hands out copies, as memcached would.
[ "$OPENSTACK_RELEASE" = zed ] || sed -i 's/^backend = dogpile.cache.memory$/backend = dogpile.cache.memory_pickle/' "$ETC/keystone/keystone.conf"

cat > "$ETC/neutron/neutron.conf" <<EOF
[DEFAULT]
core_plugin = ml2
service_plugins = router
auth_strategy = keystone
bind_host = 127.0.0.1
bind_port = 9696
api_workers = 1
rpc_workers = 1
rpc_state_report_workers = 0
transport_url = rabbit://guest:guest@127.0.0.1:5672/
notify_nova_on_port_status_changes = false
notify_nova_on_port_data_changes = false
dhcp_agent_notification = false
allow_overlapping_ips = true
api_paste_config = $ETC/neutron/api-paste.ini
state_path = $DATA/neutron
# default 60s; makes SIGTERM shutdown of the eventlet API worker quicker
graceful_shutdown_timeout = 3
[database]
connection = mysql+pymysql://ostack:ostack@127.0.0.1/neutron
max_retries = -1
[keystone_authtoken]
www_authenticate_uri = http://127.0.0.1:5000
auth_url = http://127.0.0.1:5000
auth_type = password
project_domain_name = Default
user_domain_name = Default
project_name = service
username = neutron
password = neutron
[oslo_concurrency]
lock_path = $DATA/neutron/lock
EOF
cat > "$ETC/neutron/plugins/ml2/ml2_conf.ini" <<'EOF'
[ml2]
type_drivers = flat,vxlan
tenant_network_types = vxlan
# no mechanism drivers / no agents: ports stay unbound (binding:vif_type=unbound, status DOWN)
mechanism_drivers =
extension_drivers = port_security
[ml2_type_flat]
flat_networks = public
[ml2_type_vxlan]
vni_ranges = 1:1000
EOF
# python3-neutron does not ship /etc/neutron/api-paste.ini (neutron-common does); use the copy under its tests/etc
# (standard urlmap + noauth/keystone pipelines)
cp "$SYSROOT"/usr/lib/python3/dist-packages/neutron/tests/etc/api-paste.ini "$ETC/neutron/api-paste.ini"

# Barbican: store_crypto + simple_crypto; the KEK is a throw-away key made at every start (secrets
# do not survive a restart anyway: start wipes the database). Legacy policy defaults (Zed):
# creating secrets needs the 'admin' or 'creator' role.
( umask 077; cat > "$ETC/barbican/barbican.conf" <<EOF
[DEFAULT]
host_href = http://127.0.0.1:9311
log_file = $LOG/barbican-api.log
db_auto_create = false
# Barbican 15 (Zed) reads [DEFAULT] sql_connection (later releases: [database] connection); without
# it it silently uses sqlite:///barbican.sqlite in its working directory
sql_connection = mysql+pymysql://ostack:ostack@127.0.0.1/barbican
[keystone_authtoken]
www_authenticate_uri = http://127.0.0.1:5000
auth_url = http://127.0.0.1:5000
auth_type = password
project_domain_name = Default
user_domain_name = Default
project_name = service
username = barbican
password = barbican
[secretstore]
namespace = barbican.secretstore.plugin
enabled_secretstore_plugins = store_crypto
[crypto]
namespace = barbican.crypto.plugin
enabled_crypto_plugins = simple_crypto
[simple_crypto_plugin]
kek = $(head -c 32 /dev/urandom | base64)
[oslo_messaging_notifications]
driver = noop
EOF
)
# Barbican 20 (2025.1) reads [database] connection only
if [ "$OPENSTACK_RELEASE" != zed ]; then
  printf '[database]\nconnection = mysql+pymysql://ostack:ostack@127.0.0.1/barbican\nmax_retries = -1\n' >> "$ETC/barbican/barbican.conf"
fi
# python3-barbican ships no paste ini (barbican-api does): the upstream keystone pipeline
cat > "$ETC/barbican/barbican-api-paste.ini" <<'EOF'
[composite:main]
use = egg:Paste#urlmap
/: barbican_version
/v1: barbican-api-keystone
[pipeline:barbican_version]
pipeline = cors http_proxy_to_wsgi versionapp
[pipeline:barbican-api-keystone]
pipeline = cors http_proxy_to_wsgi authtoken context apiapp
[app:apiapp]
paste.app_factory = barbican.api.app:create_main_app
[app:versionapp]
paste.app_factory = barbican.api.app:create_version_app
[filter:context]
paste.filter_factory = barbican.api.middleware.context:ContextMiddleware.factory
[filter:authtoken]
paste.filter_factory = keystonemiddleware.auth_token:filter_factory
[filter:cors]
paste.filter_factory = oslo_middleware.cors:filter_factory
oslo_config_project = barbican
[filter:http_proxy_to_wsgi]
paste.filter_factory = oslo_middleware:HTTPProxyToWSGI.factory
EOF

run_step "openssl: Octavia's test CA" "$LOG/octavia-ca.log" "${IN[@]}" openssl req -x509 -newkey rsa:2048 -nodes \
    -days 3650 -subj '/CN=octavia-test-ca' -keyout "$DATA/octavia/certs/ca.key" -out "$DATA/octavia/certs/ca.pem"
cat > "$ETC/octavia/octavia.conf" <<EOF
[DEFAULT]
transport_url = rabbit://guest:guest@127.0.0.1:5672/
[api_settings]
bind_host = 127.0.0.1
bind_port = 9876
auth_strategy = keystone
api_base_uri = http://127.0.0.1:9876
enabled_provider_drivers = amphora:Amphora provider (noop amphora/compute drivers),noop_driver:Noop provider driver (objects stay PENDING_*)
default_provider_driver = amphora
[database]
connection = mysql+pymysql://ostack:ostack@127.0.0.1/octavia
max_retries = -1
[oslo_messaging]
topic = octavia_prov
[controller_worker]
amphora_driver = amphora_noop_driver
compute_driver = compute_noop_driver
network_driver = network_noop_driver
image_driver = image_noop_driver
volume_driver = volume_noop_driver
loadbalancer_topology = SINGLE
client_ca = $DATA/octavia/certs/ca.pem
amp_image_tag = amphora
amp_flavor_id = 1
amp_boot_network_list = 00000000-0000-0000-0000-000000000001
workers = 1
[certificates]
cert_generator = local_cert_generator
ca_certificate = $DATA/octavia/certs/ca.pem
ca_private_key = $DATA/octavia/certs/ca.key
server_certs_key_passphrase = insecure-key-do-not-use-this-key
# TLS listeners: PKCS#12 secrets (or legacy containers) in Barbican, found in the catalog. The API
# puts the [service_auth] user in the secret's read ACL with the caller's token, then reads the
# secret with its own ([service_auth]) token.
cert_manager = barbican_cert_manager
barbican_auth = barbican_acl_auth
region_name = RegionOne
endpoint_type = public
[health_manager]
heartbeat_key = insecure
controller_ip_port_list = 127.0.0.1:5555
bind_ip = 127.0.0.1
[oslo_concurrency]
lock_path = $DATA/octavia/lock
[keystone_authtoken]
www_authenticate_uri = http://127.0.0.1:5000
auth_url = http://127.0.0.1:5000
auth_type = password
project_domain_name = Default
user_domain_name = Default
project_name = service
username = octavia
password = octavia
service_token_roles_required = true
[service_auth]
auth_url = http://127.0.0.1:5000
auth_type = password
project_domain_name = Default
user_domain_name = Default
project_name = service
username = octavia
password = octavia
[neutron]
region_name = RegionOne
endpoint_type = public
EOF
# overlay read only by the API process
cat > "$ETC/octavia/octavia-api.conf" <<EOF
[controller_worker]
network_driver = $OCTAVIA_API_NETWORK_DRIVER
EOF
# OCTAVIA_MAX_REQUEST_BODY_SIZE (bytes; unset: oslo.middleware's default, 114,688): the scale-out
# bench raises it to create its ONE router of 400 policies in one write (a 268 KB body), which the
# default refuses with a 413 (docs/benchmarks.md, "Scale-out")
if [ -n "${OCTAVIA_MAX_REQUEST_BODY_SIZE:-}" ]; then
  printf '[oslo_middleware]\nmax_request_body_size = %s\n' "$OCTAVIA_MAX_REQUEST_BODY_SIZE" >> "$ETC/octavia/octavia-api.conf"
fi

# WSGI shims: keystone/octavia/barbican parse sys.argv with oslo.config, so hide gunicorn's argv
cat > "$ETC/wsgi/keystone_wsgi.py" <<'EOF'
import sys
sys.argv = sys.argv[:1]
from keystone.server.wsgi import initialize_public_application
application = initialize_public_application()
EOF
cat > "$ETC/wsgi/octavia_wsgi.py" <<EOF
import sys
sys.argv = sys.argv[:1]
from octavia.api import app
application = app.setup_app(argv=['octavia-api', '--config-file', '$ETC/octavia/octavia.conf',
                                  '--config-file', '$ETC/octavia/octavia-api.conf',
                                  '--log-file', '$LOG/octavia-api.log'])
EOF
# barbican.api.app.get_api_wsgi_script() hard-codes /etc/barbican/barbican-api-paste.ini
cat > "$ETC/wsgi/barbican_wsgi.py" <<EOF
import sys
sys.argv = sys.argv[:1]
from paste import deploy
application = deploy.loadapp('config:$ETC/barbican/barbican-api-paste.ini')
EOF
cat > "$ETC/clouds.yaml" <<'EOF'
clouds:
  admin: &admin
    auth: {auth_url: "http://127.0.0.1:5000/v3", username: admin, password: admin, project_name: admin,
           user_domain_name: Default, project_domain_name: Default}
    region_name: RegionOne
    identity_api_version: 3
    interface: public
  demo:
    auth: {auth_url: "http://127.0.0.1:5000/v3", username: demo, password: demo, project_name: demo,
           user_domain_name: Default, project_domain_name: Default}
    region_name: RegionOne
    identity_api_version: 3
    interface: public
  demo2:
    auth: {auth_url: "http://127.0.0.1:5000/v3", username: demo2, password: demo2, project_name: demo,
           user_domain_name: Default, project_domain_name: Default}
    region_name: RegionOne
    identity_api_version: 3
    interface: public
EOF

# ---------------------------------------------------------------- 4. schemas (in parallel)
KM=("${IN[@]}" keystone-manage --config-file "$ETC/keystone/keystone.conf")
( "${KM[@]}" db_sync && "${KM[@]}" fernet_setup --keystone-user root --keystone-group root \
  && "${KM[@]}" credential_setup --keystone-user root --keystone-group root \
  && "${KM[@]}" bootstrap --bootstrap-password admin --bootstrap-username admin \
       --bootstrap-project-name admin --bootstrap-role-name admin --bootstrap-service-name keystone \
       --bootstrap-region-id RegionOne --bootstrap-admin-url http://127.0.0.1:5000/v3 \
       --bootstrap-public-url http://127.0.0.1:5000/v3 --bootstrap-internal-url http://127.0.0.1:5000/v3
) > "$LOG/keystone-manage.log" 2>&1 & KPID=$!
"${IN[@]}" octavia-db-manage --config-file "$ETC/octavia/octavia.conf" upgrade head > "$LOG/octavia-db-manage.log" 2>&1 & OPID=$!
"${IN[@]}" $PY -c 'import sys; from neutron.db.migration.cli import main; sys.argv[0]="neutron-db-manage"; sys.exit(main())' \
    "${NCONF[@]}" upgrade heads > "$LOG/neutron-db-manage.log" 2>&1 & NPID=$!
# python3-barbican ships no barbican-manage script (barbican-common does): call its main()
"${IN[@]}" env HOME="$ETC/barbican" $PY -c 'import sys; from barbican.cmd.barbican_manage import main; sys.argv[0]="barbican-manage"; sys.exit(main())' \
    db upgrade > "$LOG/barbican-db-manage.log" 2>&1 & BPID=$!
wait $KPID || fail_step "keystone-manage db_sync, fernet_setup, credential_setup, bootstrap" "$LOG/keystone-manage.log"
ts "keystone db_sync + fernet + bootstrap done"
start_keystone
wait $OPID || fail_step "octavia-db-manage upgrade head" "$LOG/octavia-db-manage.log"
wait $NPID || fail_step "neutron-db-manage upgrade heads" "$LOG/neutron-db-manage.log"
wait $BPID || fail_step "barbican-manage db upgrade" "$LOG/barbican-db-manage.log"
ts "octavia + neutron + barbican schemas migrated"

# ---------------------------------------------------------------- 5. daemons
start_neutron_server
start_octavia_worker
start_octavia_api
start_barbican

wait_http http://127.0.0.1:5000/v3 keystone 60

# users/roles/services/endpoints (stdlib only; idempotent)
cat > "$BIN/ks_bootstrap.py" <<'EOF'
import json, sys, urllib.request, urllib.error
KS = "http://127.0.0.1:5000/v3"
def req(method, path, body=None, token=None):
    r = urllib.request.Request(KS + path, data=json.dumps(body).encode() if body is not None else None, method=method)
    r.add_header("Content-Type", "application/json")
    if token: r.add_header("X-Auth-Token", token)
    try:
        with urllib.request.urlopen(r, timeout=30) as resp:
            txt = resp.read(); return (json.loads(txt) if txt else None), resp.headers
    except urllib.error.HTTPError as e:
        raise SystemExit("%s %s -> %s %s" % (method, path, e.code, e.read()[:500]))
_, h = req("POST", "/auth/tokens", {"auth": {"identity": {"methods": ["password"], "password": {"user": {
    "name": "admin", "domain": {"id": "default"}, "password": "admin"}}},
    "scope": {"project": {"name": "admin", "domain": {"id": "default"}}}}})
T = h["X-Subject-Token"]
def ensure(coll, single, name, attrs):
    b, _ = req("GET", "/%s?name=%s" % (coll, name), token=T)
    if b[coll]: return b[coll][0]["id"]
    b, _ = req("POST", "/" + coll, {single: dict(name=name, **attrs)}, token=T); return b[single]["id"]
projects = {p: ensure("projects", "project", p, {"domain_id": "default"}) for p in ("service", "demo")}
roles = {r: ensure("roles", "role", r, {}) for r in ("admin", "member", "reader", "creator", "load-balancer_member",
         "load-balancer_observer", "load-balancer_global_observer", "load-balancer_quota_admin", "load-balancer_admin")}
users = {u: ensure("users", "user", u, {"domain_id": "default", "password": u, "enabled": True})
         for u in ("octavia", "neutron", "barbican", "demo", "demo2")}
for p, u, r in (("service", "octavia", "admin"), ("service", "neutron", "admin"), ("service", "barbican", "admin"),
                ("demo", "demo", "member"), ("demo", "demo", "load-balancer_member"),
                # Barbican (Zed) keeps its legacy policy defaults: creating secrets, reading their
                # ACLs (Octavia does that with the caller's token) needs 'creator' or 'admin'
                ("demo", "demo", "creator"),
                # demo2: like demo without 'creator' (the negative case of the TLS tests)
                ("demo", "demo2", "member"), ("demo", "demo2", "load-balancer_member")):
    req("PUT", "/projects/%s/users/%s/roles/%s" % (projects[p], users[u], roles[r]), token=T)
for name, stype, url in (("octavia", "load-balancer", "http://127.0.0.1:9876"),
                         ("neutron", "network", "http://127.0.0.1:9696"),
                         ("barbican", "key-manager", "http://127.0.0.1:9311")):
    b, _ = req("GET", "/services?type=%s" % stype, token=T)
    sid = b["services"][0]["id"] if b["services"] else \
        req("POST", "/services", {"service": {"name": name, "type": stype, "enabled": True}}, token=T)[0]["service"]["id"]
    b, _ = req("GET", "/endpoints?service_id=%s" % sid, token=T)
    have = {e["interface"] for e in b["endpoints"]}
    for iface in ("public", "internal", "admin"):
        if iface not in have:
            req("POST", "/endpoints", {"endpoint": {"service_id": sid, "interface": iface, "url": url,
                                                    "region_id": "RegionOne", "enabled": True}}, token=T)
with open(sys.argv[1], "w") as f:
    f.write(users["octavia"] + "\n")
print("keystone catalog/users ok")
EOF
run_step "keystone: users, roles, services, endpoints" "$LOG/ks_bootstrap.log" "${IN[@]}" $PY "$BIN/ks_bootstrap.py" "$ETC/octavia_user_id"
ts "keystone users/roles/services/endpoints created"

wait_http http://127.0.0.1:9696/ neutron-server 120
wait_http http://127.0.0.1:9876/ octavia-api 120
wait_http http://127.0.0.1:9311/ barbican-api 120

wait_worker

# baseline neutron topology: external 'public' (flat, 172.24.4.0/24), 'private' (vxlan, 10.0.0.0/24), router1
"${IN[@]}" env TOPOLOGY_FILE="$ETC/topology.json" $PY - <<'EOF' > "$LOG/neutron-bootstrap.log" 2>&1 || fail_step "neutron topology and Octavia availability zone" "$LOG/neutron-bootstrap.log"
import json, urllib.request
def call(method, url, body=None, tok=None):
    r = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else None, method=method)
    r.add_header("Content-Type", "application/json")
    if tok: r.add_header("X-Auth-Token", tok)
    with urllib.request.urlopen(r, timeout=60) as resp:
        txt = resp.read(); return (json.loads(txt) if txt else None), resp.headers
_, h = call("POST", "http://127.0.0.1:5000/v3/auth/tokens", {"auth": {"identity": {"methods": ["password"],
    "password": {"user": {"name": "admin", "domain": {"id": "default"}, "password": "admin"}}},
    "scope": {"project": {"name": "admin", "domain": {"id": "default"}}}}})
T = h["X-Subject-Token"]; N = "http://127.0.0.1:9696/v2.0"
pub = call("POST", N + "/networks", {"network": {"name": "public", "router:external": True, "shared": False,
      "provider:network_type": "flat", "provider:physical_network": "public"}}, T)[0]["network"]
pubsub = call("POST", N + "/subnets", {"subnet": {"name": "public-subnet", "network_id": pub["id"], "ip_version": 4,
     "cidr": "172.24.4.0/24", "gateway_ip": "172.24.4.1", "enable_dhcp": False,
     "allocation_pools": [{"start": "172.24.4.10", "end": "172.24.4.250"}]}}, T)[0]["subnet"]
priv = call("POST", N + "/networks", {"network": {"name": "private"}}, T)[0]["network"]
sub = call("POST", N + "/subnets", {"subnet": {"name": "private-subnet", "network_id": priv["id"], "ip_version": 4,
      "cidr": "10.0.0.0/24"}}, T)[0]["subnet"]
rtr = call("POST", N + "/routers", {"router": {"name": "router1",
      "external_gateway_info": {"network_id": pub["id"]}}}, T)[0]["router"]
call("PUT", N + "/routers/%s/add_router_interface" % rtr["id"], {"subnet_id": sub["id"]}, T)
# an Octavia availability zone for the L7 router (zone-aware member weights are relative to it)
O = "http://127.0.0.1:9876/v2/lbaas"
azp = call("POST", O + "/availabilityzoneprofiles", {"availability_zone_profile": {"name": "azp-1",
      "provider_name": "amphora", "availability_zone_data": json.dumps({"compute_zone": "az-1"})}}, T)[0]
call("POST", O + "/availabilityzones", {"availability_zone": {"name": "az-1",
     "availability_zone_profile_id": azp["availability_zone_profile"]["id"]}}, T)
import os
with open(os.environ["TOPOLOGY_FILE"], "w") as f:
    json.dump({"public_network": pub["id"], "public_subnet": pubsub["id"], "private_network": priv["id"],
               "private_subnet": sub["id"], "router": rtr["id"]}, f)
print("neutron topology ok", pub["id"], priv["id"], rtr["id"])
EOF
ts "neutron topology (public, private, router1) and Octavia availability zone az-1 created"

# kuryr.conf for this stack: what the demo and the functional tests run with
mkdir -p "$ETC/kuryr"
$PY - "$ETC/topology.json" "$ETC/octavia_user_id" "$OPENSTACK_RELEASE" > "$ETC/kuryr/kuryr.conf" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))
zed = sys.argv[3] == "zed"
fp = ("# Debian's Zed (Octavia 11.0.0) leaves the children of a fully-populated create PENDING_CREATE\n"
      "fully_populated_create = False") if zed else \
     ("# Octavia 16 leaves them ACTIVE (the driver checks it on the first create anyway)\n"
      "fully_populated_create = True")
print(f"""# Generated by functional/openstack.sh for the local OpenStack {sys.argv[3]}.
# TLS: Barbican is the catalog's key-manager (http://127.0.0.1:9311); the user below may store
# secrets (admin; a non-admin user needs the 'creator' role). Octavia adds its own service user
# (id in {sys.argv[2]}) to a secret's read ACL itself when a listener references the secret.
[kubernetes]
enable_ingress = True
ingress_class = kuryr-l7-router
cluster_name = local

[neutron_defaults]
lb_subnet = {t["private_subnet"]}
pod_subnet = {t["private_subnet"]}
external_svc_subnet = {t["public_subnet"]}

[octavia_defaults]
l7_router_name = kuryr-l7-router
lb_algorithm = ROUND_ROBIN
provider = amphora
{fp}
availability_zone = az-1

[neutron]
auth_url = http://127.0.0.1:5000/v3
auth_type = password
username = admin
password = admin
project_name = admin
user_domain_name = Default
project_domain_name = Default
region_name = RegionOne
interface = public
""")
EOF
ts "kuryr.conf written to $ETC/kuryr/kuryr.conf"
for n in mariadb epmd rabbitmq keystone neutron-server octavia-worker octavia-api barbican-api; do
  read -r pid st < "$RUN/$n.pid"
  # shellcheck disable=SC2046  # svc_logs: one word per log
  alive "$pid" "$st" || fail_step "$n (pid $pid) died while the stack started" $(svc_logs "$n")
done
ts "STACK READY ($OPENSTACK_RELEASE${NS:+, network namespace $NS}): keystone :5000, neutron :9696, octavia :9876, barbican :9311 (API network driver: $OCTAVIA_API_NETWORK_DRIVER)"
if [ "$OPENSTACK_RELEASE" = zed ]; then
  echo "export OS_CLIENT_CONFIG_FILE=$ETC/clouds.yaml OS_CLOUD=admin   # for the openstack CLI"
else
  echo "CLI: OPENSTACK_RELEASE=$OPENSTACK_RELEASE $0 run env OS_CLOUD=admin openstack loadbalancer list"
  echo "tests: OPENSTACK_RELEASE=$OPENSTACK_RELEASE $0 run env KURYR_FUNCTIONAL=1 cargo test --test functional_driver"
fi
