# shellcheck shell=bash
# Sourced by .ci/run and functional/test.sh after functional/phases.sh: the stacks' installs
# (debootstrap, apt: they wait for the network and dpkg, not for the CPU) run in the background
# while the crate compiles.
#   installs_start RELEASE...  start `OPENSTACK_RELEASE=R functional/openstack.sh install` for each
#                              release not started yet in this run (the two may run together:
#                              openstack.sh serialises the host's apt and waits for its lock)
#   installs_wait RELEASE      wait for that install; on failure print its log's last lines and
#                              path and return 1. Records the install as a phase of the run.
INSTALLS_DIR=$KURYR_PHASES.installs

installs_start() {
  mkdir -p "$INSTALLS_DIR"
  local r
  for r in "$@"; do
    [ -e "$INSTALLS_DIR/$r.start" ] && continue
    date +%s > "$INSTALLS_DIR/$r.start"
    echo "installing OpenStack $r in the background (log: $INSTALLS_DIR/$r.log)"
    ( rc=0; OPENSTACK_RELEASE=$r functional/openstack.sh install > "$INSTALLS_DIR/$r.log" 2>&1 || rc=$?
      date +%s > "$INSTALLS_DIR/$r.end"; echo "$rc" > "$INSTALLS_DIR/$r.rc" ) < /dev/null &
  done
}

installs_wait() { # RELEASE
  local r=$1 rc waited
  [ -e "$INSTALLS_DIR/$r.start" ] || installs_start "$r"
  waited=$(date +%s)
  until [ -e "$INSTALLS_DIR/$r.rc" ]; do sleep 1; done
  rc=$(cat "$INSTALLS_DIR/$r.rc")
  if [ ! -e "$INSTALLS_DIR/$r.recorded" ]; then
    printf '%s\t%s\t%s\t%s\n' "install OpenStack $r (background)" "$(cat "$INSTALLS_DIR/$r.start")" \
      "$(cat "$INSTALLS_DIR/$r.end")" "waited $(($(date +%s) - waited))s for it$([ "$rc" = 0 ] || echo "; FAILED (exit $rc)")" >> "$KURYR_PHASES"
    touch "$INSTALLS_DIR/$r.recorded"
  fi
  if [ "$rc" != 0 ]; then
    echo "FAILED: installing OpenStack $r (OPENSTACK_RELEASE=$r functional/openstack.sh install), exit $rc; its last lines:" >&2
    tail -n 25 "$INSTALLS_DIR/$r.log" | sed 's/^/  | /' >&2
    echo "the whole log: $INSTALLS_DIR/$r.log" >&2
    return 1
  fi
}
