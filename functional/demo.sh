#!/bin/bash
# The kuryr-l7-router demo, end to end on one machine (run as root):
#
#   1. a real local OpenStack (Keystone, Neutron, Octavia, Barbican): functional/openstack.sh start,
#      2025.1 by default (OPENSTACK_RELEASE=zed for Zed); the demo then runs in that stack's
#      network namespace (functional/openstack.sh run)
#   2. cargo build, check-config
#   3. plan    examples/ -> the L7 policies, pools and zone-weighted members the shop's Ingresses need
#   4. apply   examples/ -> the router is created on Octavia and every write is printed
#   5. apply   again     -> 0 writes (the router already is what the Ingresses say)
#   6. show              -> the router read back from Octavia
#   7. the DATA PLANE: Octavia's own haproxy templater renders the router, haproxy runs it on
#      loopback with one echo server per member, and real HTTP requests show which Service
#      answers each Host/path, next to what Kubernetes Ingress semantics say it must be.
#   8. cleanup: the demo router (cascade), its VIP port and floating IP; the stack is stopped.
#
# usage: functional/demo.sh [--node-port]
#   --node-port           NodePort mode ([octavia_defaults] member_mode = NodePort, for pod
#                         networks the amphorae cannot reach): the same shop with its Services and
#                         the status responder's Service type NodePort, its four Nodes Ready with
#                         InternalIPs 127.77.0.11-14; the members are the nodes on each Service's
#                         node port, and in step 7 an echo server per node and node port stands
#                         in for kube-proxy (DEMO_NODE_PORT=1 is the same)
#   KEEP=1                keep the demo router (inspect it with `kuryr-l7-router show`)
#   KEEP_STACK=1          leave the OpenStack services running
#   USE_RUNNING_STACK=1   do not start (nor stop) the stack: use the one already running
#   OPENSTACK_RELEASE=zed the Zed stack instead of 2025.1
#   KURYR_CONF=PATH       kuryr.conf to use (default: $ROOT/etc/kuryr/kuryr.conf from openstack.sh)
#   DEMO_ROUTER_NAME=...  the router's name (default kuryr-l7-router-demo)
# Exit status: 0 all good; non-zero if any step fails or a request reaches the wrong Service.
# A failed step says so: `DEMO FAILED in step "...": \`command\` exited N`, with the last lines of
# the command's log and its path when it has one (functional/openstack.sh prints its own failed
# step, e.g. an apt run, with its log's last lines and path, just above).
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
REPO=$PWD
# ROOT: set by `functional/openstack.sh run` for the stack of OPENSTACK_RELEASE
T0=$(date +%s)
STEP="(setup)"; STEP_LOG=""; RUN_CMD=""
step() { STEP=$*; STEP_LOG=""; echo; echo "=============================================================================="; \
         echo "=== [$(( $(date +%s) - T0 ))s] $*"; \
         echo "=============================================================================="; }
# run CMD...: print CMD and run it; with STEP_LOG set, its stderr goes there (shown if it fails)
run() {
  echo "\$ $*"; RUN_CMD=$*
  if [ -n "$STEP_LOG" ]; then "$@" 2> "$STEP_LOG"; else "$@"; fi
}
# any command that fails (set -e): which step, which command, and its log (STEP_LOG) if it has one.
# Said once: by the shell where it failed (a pipeline's or $(...)'s subshell: the first to know),
# which writes it to FAILED_FILE, not again by the script when the pipeline fails in turn.
FAILED_FILE=$(mktemp /tmp/kuryr-demo-failed.XXXXXX)
trap 'rm -f "$FAILED_FILE"' EXIT
on_err() {
  [ ! -s "$FAILED_FILE" ] || return 0
  local cmd=$2
  case $cmd in '"$@"'*) cmd=$RUN_CMD ;; esac   # run's command
  echo "step \"$STEP\": \`$cmd\` exited $1" > "$FAILED_FILE"
  {
    echo; echo "DEMO FAILED in $(cat "$FAILED_FILE")"
    if [ -n "$STEP_LOG" ] && [ -s "$STEP_LOG" ]; then
      echo "--- last lines of $STEP_LOG:"; tail -n 20 "$STEP_LOG" | sed 's/^/  | /'; echo "--- the whole log: $STEP_LOG"
    fi
  } >&2
}
set -E; trap 'on_err $? "$BASH_COMMAND"' ERR

NODE_PORT=${DEMO_NODE_PORT:-0}
for arg in "$@"; do
  case $arg in
    --node-port) NODE_PORT=1 ;;
    *) echo "usage: functional/demo.sh [--node-port]" >&2; exit 2 ;;
  esac
done
export DEMO_NODE_PORT=$NODE_PORT
[ "$(id -u)" = 0 ] || [ "${USE_RUNNING_STACK:-0}" = 1 ] || { echo "run as root (apt, daemons)" >&2; exit 2; }
export OPENSTACK_RELEASE=${OPENSTACK_RELEASE:-2025.1}

# The outer run: start the stack, build, run the demo itself in the stack's world (2025.1: its
# network namespace, where cargo could not reach a registry), stop the stack.
if [ -z "${DEMO_IN_STACK:-}" ]; then
  started=0
  if [ "${USE_RUNNING_STACK:-0}" != 1 ]; then
    step "1. local OpenStack $OPENSTACK_RELEASE: functional/openstack.sh start (first time: install, ~3-6 min)"
    functional/openstack.sh start
    started=1
  fi
  step "build: cargo build --bin kuryr-l7-router (here: in the stack's network namespace no registry is reachable)"
  cargo build --quiet --bin kuryr-l7-router
  rc=0
  functional/openstack.sh run env DEMO_IN_STACK=$started USE_RUNNING_STACK=1 functional/demo.sh "$@" || rc=$?
  if [ "$started" = 1 ] && [ "${KEEP_STACK:-0}" != 1 ]; then
    step "stopping the local OpenStack $OPENSTACK_RELEASE (KEEP_STACK=1 keeps it)"
    functional/openstack.sh stop || true
  fi
  exit "$rc"
fi

# ---------------------------------------------------------------------------------- 1. stack
STARTED_STACK=0
if [ "${DEMO_IN_STACK:-}" = 1 ]; then
  step "1. local OpenStack $OPENSTACK_RELEASE: started above (ROOT=$ROOT)"
elif [ "${USE_RUNNING_STACK:-0}" = 1 ]; then
  step "1. local OpenStack $OPENSTACK_RELEASE: using the one already running (USE_RUNNING_STACK=1, ROOT=$ROOT)"
else
  step "1. local OpenStack: functional/openstack.sh start (apt install the first time, ~3 min)"
  functional/openstack.sh start
  STARTED_STACK=1
fi
CONF=${KURYR_CONF:-$ROOT/etc/kuryr/kuryr.conf}
[ -r "$CONF" ] || { echo "no kuryr.conf at $CONF (set KURYR_CONF)" >&2; exit 2; }
WORK=$(mktemp -d /tmp/kuryr-demo.XXXXXX)
# The demo's own router name on top of the stack's kuryr.conf (later --config-file wins), so the
# demo never touches another router sharing this OpenStack.
ROUTER_NAME=${DEMO_ROUTER_NAME:-kuryr-l7-router-demo}
printf '[octavia_defaults]\nl7_router_name = %s\n' "$ROUTER_NAME" > "$WORK/demo.conf"
# --node-port: the members are the nodes; the status responder answers 404/503 for them too
RESPONDER_SVC=kuryr-l7-router/kuryr-status-responder
if [ "$NODE_PORT" = 1 ]; then
  printf 'member_mode = NodePort\n[status_responder]\nservice = %s\n' "$RESPONDER_SVC" >> "$WORK/demo.conf"
fi
CONF_ARGS=(--config-file "$CONF" --config-file "$WORK/demo.conf")
# cargo's target directory (CARGO_TARGET_DIR or a wrapper may move it away from ./target)
BIN=$(cargo metadata --format-version 1 --no-deps --offline 2>/dev/null |
      /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])' || echo "$REPO/target")/debug/kuryr-l7-router
OCTAVIA_CONF=${OCTAVIA_CONF:-$ROOT/etc/octavia/octavia.conf}
LB_ID=""
RESPONDER_PID=""

cleanup() {
  local rc=$? at="step \"$STEP\""
  [ ! -s "$FAILED_FILE" ] || at=$(cat "$FAILED_FILE")
  rm -f "$FAILED_FILE"
  [ -z "$RESPONDER_PID" ] || kill "$RESPONDER_PID" 2>/dev/null || true
  if [ "${KEEP:-0}" = 1 ]; then
    step "cleanup skipped (KEEP=1): router $ROUTER_NAME ${LB_ID:+($LB_ID)} kept; $BIN show ${CONF_ARGS[*]}"
  elif [ -x "$BIN" ]; then
    step "8. cleanup: delete the demo router (cascade), its VIP port and its floating IP"
    # find it again by name: apply may have created it and failed before LB_ID was known
    "$BIN" "${CONF_ARGS[@]}" show -o json > "$WORK/final.json" 2>/dev/null || true
    /usr/bin/python3 - "$WORK/final.json" <<'EOF' || rc=1
import json, os, sys
sys.path.insert(0, "functional/dataplane")
import ostack
try:
    lb = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    print("no demo router to delete"); sys.exit(0)
tok = ostack.token()
o, n = ostack.Client(tok, ostack.OCT), ostack.Client(tok, ostack.NEU)
port = lb.get("vip_port_id")
fips = []
if port:
    fips += n.get("/v2.0/floatingips?port_id=" + port)[1]["floatingips"]
# an address allocated for this router but not associated (a run stopped half-way)
fips += [f for f in n.get("/v2.0/floatingips")[1]["floatingips"]
         if f.get("description", "").endswith(" router " + lb["id"])]
for f in {f["id"]: f for f in fips}.values():
    n.delete("/v2.0/floatingips/" + f["id"])
    print("deleted floating IP", f["floating_ip_address"])
ostack.delete_lb(o, n, lb["id"])
b = ostack.Client(tok, ostack.BAR)
for c in (lb.get("https") or {}).get("certificates", []):
    b.delete("/v1/secrets/" + c["secret_ref"].rstrip("/").rsplit("/", 1)[-1])
    print("deleted Barbican secret", c["name"])
print("deleted load balancer", lb["name"], lb["id"], "(cascade) and its VIP port", port)
EOF
  fi
  if [ "$STARTED_STACK" = 1 ] && [ "${KEEP_STACK:-0}" != 1 ]; then
    step "stopping the local OpenStack (KEEP_STACK=1 keeps it)"
    functional/openstack.sh stop || true
  fi
  # kept after a failure: the failed step's log is there
  if [ "$rc" = 0 ]; then rm -rf "$WORK"; fi
  echo
  if [ "$rc" = 0 ]; then echo "DEMO OK in $(( $(date +%s) - T0 ))s"
  else echo "DEMO FAILED (exit $rc) in $at (work directory kept: $WORK)"; fi
  exit "$rc"
}
trap cleanup EXIT

# ---------------------------------------------------------------------------------- 2. build
# HTTPS: a self-signed certificate made now (never stored in the repo) for a second host,
# secure.example.com, whose Ingress has spec.tls: the router gets a TERMINATED_HTTPS listener
# with the certificate in Barbican, and plain HTTP for that host is redirected to HTTPS (asked for
# by the Ingress's ssl-redirect annotation: the redirect is opt-in, `[octavia_defaults] ssl_redirect`).
mkdir -p "$WORK/tls"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 -subj "/CN=secure.example.com" \
  -addext "subjectAltName=DNS:secure.example.com" -keyout "$WORK/key.pem" -out "$WORK/crt.pem" 2>/dev/null
/usr/bin/python3 - "$WORK" > "$WORK/tls/50-secure.yaml" <<'EOF'
import sys
w = sys.argv[1]
ind = lambda f: "".join("    " + l for l in open(f))
print("""# Made by functional/demo.sh: a TLS Secret and an Ingress with spec.tls.
apiVersion: v1
kind: Secret
metadata: {name: secure-tls, namespace: shop}
type: kubernetes.io/tls
stringData:
  tls.crt: |
%s  tls.key: |
%s---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: secure
  namespace: shop
  creationTimestamp: "2025-03-01T09:00:00Z"
  annotations: {kuryr-l7-router.openstack.org/ssl-redirect: "true"}
spec:
  ingressClassName: kuryr-l7-router
  tls:
  - {secretName: secure-tls, hosts: [secure.example.com]}
  rules:
  - host: secure.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {name: http}}}}
""" % (ind(w + "/crt.pem"), ind(w + "/key.pem")))
EOF
MANIFESTS=(-f examples/ -f "$WORK/tls/")
if [ "$NODE_PORT" = 1 ]; then
  # examples/ as a cluster on an overlay pod network: Services type NodePort (node ports
  # 30080, 30081, ... in file order), the Nodes Ready with InternalIPs, and the status responder's
  # Service (type NodePort: a Service without node ports has no members in this mode).
  mkdir -p "$WORK/node-port"
  /usr/bin/python3 functional/dataplane/node_port_manifests.py examples "$WORK/node-port" "$RESPONDER_SVC"
  MANIFESTS=(-f "$WORK/node-port/" -f "$WORK/tls/")
fi

step "2. build, then validate the configuration (secrets masked)"
run cargo build --quiet --bin kuryr-l7-router
run "$BIN" "${CONF_ARGS[@]}" check-config

# ---------------------------------------------------------------------------------- 3. plan
step "3. plan: what the shop's Ingresses (examples/, + secure.example.com with TLS) become on the L7 router (no OpenStack needed)"
# shellcheck disable=SC2012  # the names of our own example files
echo "examples/: $(ls examples | tr '\n' ' ')+ $WORK/tls/50-secure.yaml (a TLS Secret made now, Ingress secure)"
if [ "$NODE_PORT" = 1 ]; then
  echo "NodePort mode (--node-port): member_mode = NodePort; examples/ rewritten to $WORK/node-port/:"
  echo "  Services type NodePort, Nodes Ready with InternalIPs 127.77.0.11-14, the status responder's Service $RESPONDER_SVC type NodePort"
fi
STEP_LOG=$WORK/plan.stderr
run "$BIN" "${CONF_ARGS[@]}" plan "${MANIFESTS[@]}"

# ---------------------------------------------------------------------------------- 4-5. apply
step "4. apply: create the router on Octavia and converge it (every write printed)"
STEP_LOG=$WORK/apply1.stderr
run "$BIN" "${CONF_ARGS[@]}" apply "${MANIFESTS[@]}" | tee "$WORK/apply1.txt"

step "5. apply again: nothing changed in the Ingresses, so nothing is written"
STEP_LOG=$WORK/apply2.stderr
run "$BIN" "${CONF_ARGS[@]}" apply "${MANIFESTS[@]}" | tee "$WORK/apply2.txt"
if ! grep -q '^0 write(s)' "$WORK/apply2.txt"; then
  echo "FAIL: the second apply wrote to Octavia (expected 0 writes)" >&2; exit 1
fi

# ---------------------------------------------------------------------------------- 6. show
step "6. show: the router as Octavia has it now"
run "$BIN" "${CONF_ARGS[@]}" show
"$BIN" "${CONF_ARGS[@]}" show -o json > "$WORK/router.json"
LB_ID=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$WORK/router.json")

# ---------------------------------------------------------------------------------- 7. data plane
step "7. data plane: real HTTP through haproxy as Octavia renders this router (load balancer $LB_ID)"
[ "$NODE_PORT" = 1 ] || cat <<'EOF'
Octavia's own templater renders the router's haproxy.cfg; haproxy runs it on 127.0.0.1, every
member (pod address:8080) is replaced by a local echo server named after its Service, and each
request below is sent with that Host header. "expected" is what Kubernetes Ingress semantics say
(host first: exact, then wildcard, then host-less rules; then the longest path; Exact before
Prefix; Prefix matches whole path elements; otherwise the default backend).
EOF
# host <TAB> path <TAB> expected Service (or an HTTP status) <TAB> why
cat > "$WORK/requests.tsv" <<'EOF'
shop.example.com	/	web	Prefix / of shop.example.com
shop.example.com	/products/42	web	Prefix / catches every other path
shop.example.com	/api	api	Prefix /api matches /api itself
shop.example.com	/api/orders?page=2	api	... and /api/<anything> (query ignored)
shop.example.com	/apix	web	Prefix /api does NOT match /apix (whole path elements)
shop.example.com	/api/v2	api-v2	longest prefix wins: /api/v2 over /api
shop.example.com	/api/v2/items/7	api-v2	nested prefix
shop.example.com	/api/v2x	api	/api/v2x is under /api, not /api/v2
shop.example.com	/login	auth	Exact /login
shop.example.com	/login/	web	Exact is exact: /login/ is not /login
shop.example.com	/static/app.js	static	Prefix /static
SHOP.Example.COM	/api/v2/items	api-v2	host names are case-insensitive
shop.example.com:8080	/api	api	Host with :port still matches the host
auth.shop.example.com	/login/reset	auth	an exact host beats the wildcard
auth.shop.example.com	/logout	auth	Exact /logout
auth.shop.example.com	/cart	503	no path of auth.shop.example.com matches: the no-route answer (haproxy's 503 without the status responder), never another Ingress's catch-all nor the wildcard
acme.shop.example.com	/	tenant	wildcard *.shop.example.com
Globex.Shop.Example.com:443	/cart	tenant	wildcard, mixed case, with :port
a.b.shop.example.com	/	fallback	a wildcard covers exactly one label
shop.example.com.evil.net	/	fallback	no suffix tricks: unknown host, default backend
static.example.com	/img/logo.png	static	second host
unknown.example.org	/healthz	web	host-less rule: any Host
unknown.example.org	/	fallback	nothing matches: the default backend (shop/default-backend)
EOF
DP_ARGS=()
if [ "$NODE_PORT" = 1 ]; then
  cat <<'EOF'
Octavia's own templater renders the router's haproxy.cfg; haproxy runs it on 127.0.0.1 and each
request below is sent with that Host header. "expected" is what Kubernetes Ingress semantics say.
NodePort mode: the members are the nodes (127.77.0.11-14) on each Service's node port. An echo
server listens on every node address and node port, standing in for kube-proxy (it answers as
the Service's pod it forwards to), so the server lines stay as Octavia rendered them ("via" shows
the node that took the request); the status responder (kuryr-l7-router status-responder) answers
for the members of the reserved pools (the responder Service's node ports), so a host's
unmatched path gets its 404.
EOF
  free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
  R404=$(free_port); R503=$(free_port); R500=$(free_port); RHEALTH=$(free_port)
  printf '[status_responder]\nnot_found_listen = 127.0.0.1:%s\nunavailable_listen = 127.0.0.1:%s\nserver_error_listen = 127.0.0.1:%s\nhealth_listen = 127.0.0.1:%s\n' \
    "$R404" "$R503" "$R500" "$RHEALTH" > "$WORK/responder.conf"
  "$BIN" status-responder --config-file "$WORK/responder.conf" > "$WORK/responder.log" 2>&1 &
  RESPONDER_PID=$!
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$R404") 2>/dev/null && break
    kill -0 "$RESPONDER_PID" 2>/dev/null || { echo "status-responder exited: $(cat "$WORK/responder.log")" >&2; exit 1; }
    sleep 0.1
  done
  # answered by the responder now: the no-route answer of a known host is its 404
  sed -i 's|^auth.shop.example.com\t/cart\t503\t.*|auth.shop.example.com\t/cart\t404\tno path of auth.shop.example.com matches: the no-route answer (the status responder'"'"'s 404), never another Ingress'"'"'s catch-all nor the wildcard|' "$WORK/requests.tsv"
  DP_ARGS=(--bind-members --member-map "$(/usr/bin/python3 - "$WORK/router.json" "$R404" "$R503" "$R500" <<'EOF'
import json, sys
lb = json.load(open(sys.argv[1]))
local = dict(zip(("kuryr-status-404", "kuryr-status-503", "kuryr-status-500"), sys.argv[2:]))
print(json.dumps({"%s:%d" % (m["address"], m["protocol_port"]): "127.0.0.1:" + local[p["name"]]
                  for p in lb["pools"] if p["name"] in local for m in p["members"]}))
EOF
)")
fi
/usr/bin/python3 - "$WORK/router.json" "$WORK/requests.tsv" > "$WORK/echo.json" 3> "$WORK/requests.json" <<'EOF'
import json, os, sys
lb = json.load(open(sys.argv[1]))
echo = {}
for p in lb["pools"]:
    if p["name"].startswith("kuryr-status-"):
        continue  # the status responder's members (--node-port), if any
    # pool name <namespace>_<service>[_<port>]: the echo server answers with the Service name
    svc = p["name"].split("_", 1)[1] if "_" in p["name"] else p["name"]
    for m in p["members"]:
        echo["%s:%d" % (m["address"], m["protocol_port"])] = svc
reqs = []
for line in open(sys.argv[2]):
    host, path, expect, why = line.rstrip("\n").split("\t")
    reqs.append({"host": host, "path": path, "expect": expect, "why": why})
json.dump(echo, sys.stdout)
with os.fdopen(3, "w") as f:
    json.dump(reqs, f)
EOF
rc=0
/usr/bin/python3 functional/dataplane/run.py "$LB_ID" --config-file "$OCTAVIA_CONF" \
  --echo "$(cat "$WORK/echo.json")" "${DP_ARGS[@]}" --requests "$WORK/requests.json" > "$WORK/result.json" || rc=$?
/usr/bin/python3 - "$WORK/result.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
if r.get("error"):
    print("data plane error:", r["error"], r.get("haproxy_check", ""), r.get("haproxy_log", ""))
    sys.exit(0)
rows = []
for x in r["results"]:
    q = x["request"]
    got = x["backend"] if x["backend"] is not None else "HTTP %s" % x["status"]
    rows.append(("ok " if x.get("match") else "BAD", "GET", q["host"], q["path"], got, x.get("expect", "-"),
                 q.get("why", ""), x.get("member_address") or ""))
node_port = any(row[7].startswith("127.77.") for row in rows)
print("%-3s  %-28s %-20s    %-9s %-10s %s" % ("", "Host", "path", "answered", "(expected)", "why"))
for ok, m, h, p, got, exp, why, member in rows:
    via = " [via node %s]" % member if node_port and member else ""
    print("%s  %-28s %-20s -> %-9s (%s)%s %s%s" % (ok, h, p, got, exp, " " * (10 - len(exp) - 2), why, via))
bad = sum(1 for row in rows if row[0] == "BAD")
print("\n%d request(s), %d as expected, %d wrong" % (len(rows), len(rows) - bad, bad))
EOF
if [ "$rc" != 0 ]; then
  echo "FAIL: data plane run.py exit $rc (1 = a request reached the wrong Service, 3 = haproxy failed)" >&2
  exit 1
fi
echo "every request reached the Service Kubernetes Ingress semantics say it must."

step "7b. HTTPS: secure.example.com over TLS with SNI (certificate from Barbican), plain HTTP redirected"
cat <<'EOF'
The same haproxy also renders the TERMINATED_HTTPS listener, with the certificate Octavia reads
from Barbican written as the amphora writes it. This Ingress asks for the redirect (annotation
kuryr-l7-router.openstack.org/ssl-redirect: "true"; off by default): HTTP requests for its TLS host
get a 308 to https (path and query kept), except cert-manager's /.well-known/acme-challenge/ path.
EOF
cat > "$WORK/https.json" <<'EOF'
[{"scheme": "https", "host": "secure.example.com", "path": "/", "expect": "web", "expect_subject": "secure.example.com"},
 {"scheme": "https", "host": "secure.example.com", "path": "/cart?item=1", "expect": "web"},
 {"scheme": "http", "host": "secure.example.com", "path": "/cart?item=1", "expect": "308",
  "expect_location": "https://secure.example.com/cart?item=1"},
 {"scheme": "http", "host": "secure.example.com", "path": "/.well-known/acme-challenge/token", "expect": "web"},
 {"scheme": "http", "host": "shop.example.com", "path": "/", "expect": "web"}]
EOF
rc=0
/usr/bin/python3 functional/dataplane/run.py "$LB_ID" --config-file "$OCTAVIA_CONF" \
  --echo "$(cat "$WORK/echo.json")" "${DP_ARGS[@]}" --requests "$WORK/https.json" > "$WORK/https-result.json" || rc=$?
/usr/bin/python3 - "$WORK/https-result.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
if r.get("error"):
    print("data plane error:", r["error"])
for x in r.get("results", []):
    q = x["request"]
    got = x["backend"] if x["backend"] is not None else "HTTP %s" % x["status"]
    tls = x.get("tls") or {}
    extra = ("certificate %s, %s" % (tls.get("subject"), tls.get("version"))) if tls else ""
    if x.get("location"):
        extra = "Location: " + x["location"]
    print("%s  %-5s %-20s %-36s -> %-9s %s" % ("ok " if x.get("match") else "BAD", q["scheme"], q["host"], q["path"], got, extra))
EOF
if [ "$rc" != 0 ]; then
  echo "FAIL: HTTPS data plane run.py exit $rc" >&2
  exit 1
fi
echo "HTTPS answered with the Ingress's certificate; plain HTTP for the TLS host was redirected."
