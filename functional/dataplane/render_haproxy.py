#!/usr/bin/python3
"""Render the haproxy config of an Octavia load balancer with Octavia's own code,
then make it runnable as a local process on loopback.

Usage:
  render_haproxy.py LB_ID [--port N | --port-map JSON] [--member-map JSON]
                    [--run-dir DIR] [--config-file octavia.conf] [--raw] [--out FILE]

The load balancer is loaded from Octavia's database with
octavia.db.repositories.LoadBalancerRepository().get() (the same data model the
amphora driver gets) and rendered by
octavia.common.jinja.haproxy.combined_listeners.jinja_cfg.JinjaTemplater(...).build_config()
with the arguments rest_api_driver.update_amphora_listeners() uses. Certificates of
TERMINATED_HTTPS listeners are fetched from Barbican and written by the amphora REST
driver's own methods (driver_tls_certs()). Then only the amphora-specific parts are
rewritten (see localize()); every acl / http-request / use_backend / default_backend /
backend / server option stays as rendered.

--raw prints Octavia's output untouched (no localisation).
Must run with /usr/bin/python3 (Debian's python3-octavia).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import warnings

# SQLAlchemy 1.4 warns about Octavia's overlapping _tags relationships on every query
warnings.filterwarnings("ignore", module="sqlalchemy")
warnings.filterwarnings("ignore", message=".*relationship.*_tags.*")

# the stack functional/openstack.sh started (`openstack.sh run` sets ROOT: /tmp/ostack25 for 2025.1)
DEFAULT_CONF = os.path.join(os.environ.get("ROOT", "/tmp/ostack"), "etc/octavia/octavia.conf")


def _init_conf(config_file):
    from oslo_config import cfg
    from octavia.common import config  # noqa: F401  registers all option groups
    cfg.CONF(["--config-file", config_file], project="octavia")
    return cfg.CONF


def local_haproxy_version(binary="haproxy"):
    """['2', '6'] like the amphora agent's /info haproxy_version split to major.minor."""
    try:
        out = subprocess.run([binary, "-v"], capture_output=True, text=True).stdout
        m = re.search(r"version (\d+)\.(\d+)", out)
        if m:
            return [m.group(1), m.group(2)]
    except OSError:
        pass
    return ["2", "6"]


def load_lb(lb_id, config_file=DEFAULT_CONF):
    """Return (CONF, LoadBalancer data model) loaded by Octavia's repository code."""
    conf = _init_conf(config_file)
    from octavia.db import api as db_apis
    from octavia.db import repositories as repo
    session = db_apis.get_session()
    lb = repo.LoadBalancerRepository().get(session, id=lb_id)
    if lb is None:
        raise SystemExit("load balancer %s not found in Octavia's database" % lb_id)
    return conf, lb


def pick_amphora(lb):
    """The amphora the worker would render for: an ALLOCATED amphora of the LB
    (MASTER first). With the noop compute driver rows exist; if none, a stand-in."""
    from octavia.common import constants as consts
    from octavia.common import data_models
    amps = [a for a in (lb.amphorae or []) if a.status != consts.DELETED]
    amps.sort(key=lambda a: (a.status != consts.AMPHORA_ALLOCATED, a.role != consts.ROLE_MASTER))
    if amps:
        return amps[0]
    return data_models.Amphora(id="00000000-0000-0000-0000-00000000dp00",
                               load_balancer_id=lb.id, status=consts.AMPHORA_ALLOCATED,
                               role=consts.ROLE_STANDALONE, vrrp_ip="127.0.0.1",
                               lb_network_ip="127.0.0.1")


def needs_tls(listeners):
    """True when the amphora driver would fetch anything from the cert manager for these
    listeners (listener certificate / SNI / client CA / CRL, pool client cert / CA / CRL)."""
    for l in listeners:
        if (l.tls_certificate_id or l.sni_containers or l.client_ca_tls_certificate_id
                or l.client_crl_container_id):
            return True
        pools = list(l.pools) + [p.redirect_pool for p in l.l7policies if p.redirect_pool]
        if any(p.tls_certificate_id or p.ca_tls_certificate_id or p.crl_container_id
               for p in pools):
            return True
    return False


class LocalAgentCerts:
    """Stands in for the amphora agent's certificate API (the only agent calls the driver's
    certificate methods make): `PUT .../loadbalancer/<obj_id>/certificates/<name>` is a file
    <cert_root>/<obj_id>/<name>, mode 0600, bytes as sent - what the agent's
    upload_certificate() writes under [haproxy_amphora] base_cert_dir."""

    def __init__(self, cert_root):
        self.cert_root = cert_root
        self.files = []

    def get_cert_md5sum(self, amp, obj_id, name, ignore=()):
        return None  # nothing uploaded yet: the driver always uploads

    def upload_cert_pem(self, amp, obj_id, name, pem):
        d = os.path.join(self.cert_root, obj_id)
        os.makedirs(d, mode=0o700, exist_ok=True)
        path = os.path.join(d, name)
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
            f.write(pem)
        self.files.append(path)


def driver_tls_certs(lb, listeners, amphora, cert_root):
    """The certificate part of rest_api_driver.update_amphora_listeners() (non-split config,
    obj_id = LB id), run with the driver's own methods on a real
    HaproxyAmphoraLoadBalancerDriver: its cert manager is stevedore-loaded from octavia.conf
    [certificates] cert_manager (barbican_cert_manager: Octavia's service auth, the same
    project-scoped RequestContext the driver passes to load_certificates_data()), PEMs are
    cert_parser.build_pem(), names are <sha1 of the certificate>.pem and the crt-list is
    <listener id>.pem listing [haproxy_amphora] base_cert_dir/<lb id>/<cert>.pem, default
    certificate first. Uploads land in LocalAgentCerts(cert_root).
    Returns (tls_certs for build_config, [files written]). Any error propagates (the driver
    would mark the listener ERROR in the database; the harness must not write there)."""
    import collections
    from octavia.amphorae.drivers.haproxy import rest_api_driver
    drv = rest_api_driver.HaproxyAmphoraLoadBalancerDriver()
    agent = LocalAgentCerts(cert_root)
    drv.clients = collections.defaultdict(lambda: agent)  # any amphora api_version
    if not getattr(amphora, "api_version", None):
        # what update_amphora_listeners' _populate_amphora_api_version() asks the agent for;
        # a current agent answers 1.x (the non-split config rendered here). In memory only.
        amphora.api_version = "1.0"
    obj_id = lb.id
    certs = {}
    for listener in listeners:  # the loop body of update_amphora_listeners, minus its except
        certs.update({listener.tls_certificate_id: drv._process_tls_certificates(
            listener, amphora, obj_id)['tls_cert']})
        certs.update({listener.client_ca_tls_certificate_id: drv._process_secret(
            listener, listener.client_ca_tls_certificate_id, amphora, obj_id)})
        certs.update({listener.client_crl_container_id: drv._process_secret(
            listener, listener.client_crl_container_id, amphora, obj_id)})
        certs.update(drv._process_listener_pool_certs(listener, amphora, obj_id))
    return certs, agent.files


def render_octavia(lb, conf, haproxy_versions=None, cert_root=None):
    """Exactly the non-split path of rest_api_driver.update_amphora_listeners():
    JinjaTemplater(base_amp_path=..., base_crt_dir=..., haproxy_template=...,
    connection_logging=...).build_config(host_amphora, listeners, tls_certs, haproxy_versions).
    tls_certs: when a listener or pool refers to certificates, what driver_tls_certs() returns
    (its files are written under cert_root, default: a temp dir removed afterwards - the
    rendering does not depend on where they are); otherwise {} (the driver's dict would only
    hold None entries then, which render the same)."""
    import shutil
    from octavia.common import constants as consts
    from octavia.common.jinja.haproxy.combined_listeners import jinja_cfg
    if not lb.listeners:
        raise SystemExit("load balancer %s has no listeners: nothing to render" % lb.id)
    listeners = [l for l in lb.listeners if l.protocol not in consts.LVS_PROTOCOLS]
    if not listeners:
        raise SystemExit("load balancer %s has only UDP/SCTP listeners (LVS, not haproxy)" % lb.id)
    amphora = pick_amphora(lb)
    tls_certs = {}
    if needs_tls(listeners):
        tmp = None if cert_root else tempfile.mkdtemp(prefix="dp-certs-")
        try:
            tls_certs, _ = driver_tls_certs(lb, listeners, amphora, cert_root or tmp)
        finally:
            if tmp:
                shutil.rmtree(tmp, ignore_errors=True)
    templater = jinja_cfg.JinjaTemplater(
        base_amp_path=conf.haproxy_amphora.base_path,
        base_crt_dir=conf.haproxy_amphora.base_cert_dir,
        haproxy_template=conf.haproxy_amphora.haproxy_template,
        connection_logging=conf.haproxy_amphora.connection_logging)
    return templater.build_config(host_amphora=amphora, listeners=listeners,
                                  tls_certs=tls_certs,
                                  haproxy_versions=haproxy_versions or local_haproxy_version())


def localize_crt_lists(cert_root, amp_cert_dir):
    """The driver writes crt-list files (<listener id>.pem: one certificate path a line) with
    amphora paths ([haproxy_amphora] base_cert_dir/<lb id>/<cert>.pem): point them at the
    files under cert_root. PEM files (they hold `-----BEGIN`) are left as written."""
    prefix = amp_cert_dir.rstrip("/") + "/"
    for d, _, names in os.walk(cert_root):
        for name in names:
            path = os.path.join(d, name)
            with open(path, "rb") as f:
                data = f.read()
            if b"-----BEGIN" in data:
                continue
            lines = [cert_root + "/" + l[len(prefix):] if l.startswith(prefix) else l
                     for l in data.decode().split("\n")]
            with open(path, "w") as f:
                f.write("\n".join(lines))


def localize(cfg_text, lb, run_dir, port_map, member_map, tag_backend=True,
             max_global_conn=4000, amp_cert_dir=None):
    """Rewrite only what ties the config to an amphora.

    - global: drop `daemon` (run in foreground), `user nobody`, the two `log /run/rsyslog/...`
      lines; `stats socket` and `server-state-file` move to run_dir.
    - global `maxconn` capped at max_global_conn (haproxy derives its fd limit from it and
      cannot raise the process limit here); frontend maxconn lines are kept.
    - `peers <lb>_peers` section removed, and the ` peers <lb>_peers` suffix of stick-table lines.
    - frontend `bind <vip>:<listener port> ...` -> `bind 127.0.0.1:<port_map[listener port]> ...`
      (binds on additional VIPs are dropped).
    - `server <member_id> <addr>:<port> ...` -> address from member_map (`addr:port` keys).
    - amp_cert_dir ([haproxy_amphora] base_cert_dir): certificate paths under it (`crt-list`,
      `ca-file`, `crl-file`, `crt` on bind / server lines) -> <run_dir>/certs/...
    - tag_backend: one extra line per HTTP frontend,
      `http-response set-header X-Dp-Backend %b/%s` (haproxy backend and server names, i.e.
      <pool_id>:<listener_id>/<member_id>) so the caller learns who answered.
    Returns (text, notes)."""
    notes = []
    out = []
    state = os.path.join(run_dir, "servers-state")
    os.makedirs(run_dir, exist_ok=True)
    if not os.path.exists(state):
        open(state, "w").close()
    listener_ports = {l.id: l.protocol_port for l in lb.listeners}
    vips = {lb.vip.ip_address} | {v.ip_address for v in (lb.additional_vips or [])}
    in_peers = False
    section = None
    cur_frontend = None
    frontend_mode_http = False
    cert_prefix = amp_cert_dir.rstrip("/") + "/" if amp_cert_dir else None
    cert_root = os.path.join(run_dir, "certs")
    for line in cfg_text.splitlines():
        if cert_prefix and cert_prefix in line:
            line = " ".join(cert_root + "/" + t[len(cert_prefix):] if t.startswith(cert_prefix)
                            else t for t in line.split(" "))
        s = line.strip()
        indent = line[:len(line) - len(line.lstrip())]
        if line and not line[0].isspace():
            in_peers = s.startswith("peers ")
            section = s.split()[0] if s else None
            cur_frontend = s.split()[1] if section == "frontend" else None
            frontend_mode_http = False
            if in_peers:
                notes.append("removed peers section %s" % s.split()[1])
                continue
        if in_peers:
            continue
        if section == "global":
            if s in ("daemon", "user nobody") or s.startswith("log "):
                out.append(indent + "# dp: removed: " + s)
                continue
            if s.startswith("stats socket "):
                out.append(indent + "stats socket %s mode 0600 level admin" % os.path.join(run_dir, "stats.sock"))
                continue
            if s.startswith("maxconn ") and int(s.split()[1]) > max_global_conn:
                # haproxy sizes its fd limit from this (2 fds/conn); 50000 needs ~100k fds
                out.append(indent + "maxconn %d  # dp: was %s" % (max_global_conn, s.split()[1]))
                continue
            if s.startswith("server-state-file "):
                out.append(indent + "server-state-file %s" % os.path.join(run_dir, "servers-state"))
                continue
        if s.startswith("stick-table ") and " peers " in s:
            line = re.sub(r" peers \S+", "", line)
        if section == "frontend" and s.startswith("bind "):
            addr = s.split()[1]
            host, _, lport = addr.rpartition(":")
            host = host.strip("[]")
            if host not in vips:
                out.append(line)
                continue
            if host != lb.vip.ip_address:
                out.append(indent + "# dp: removed additional-VIP bind: " + s)
                continue
            lport = int(lport)
            local = port_map.get(lport)
            if local is None:
                raise SystemExit("no local port for listener port %d (use --port or --port-map)" % lport)
            line = indent + "bind 127.0.0.1:%d%s" % (local, s[len("bind ") + len(addr):])
        if section == "frontend" and s == "mode http":
            frontend_mode_http = True
            out.append(line)
            if tag_backend:
                out.append(indent + "http-response set-header X-Dp-Backend %b/%s")
            continue
        if section == "backend" and s.startswith("server "):
            parts = s.split()
            if len(parts) >= 3:
                key = parts[2]
                if key in member_map:
                    parts[2] = member_map[key]
                    line = indent + " ".join(parts)
                else:
                    notes.append("member %s (server %s) not in member map: left as is" % (key, parts[1]))
        out.append(line)
    return "\n".join(out) + "\n", notes


def parse_port_map(lb, port, port_map_json):
    if port_map_json:
        return {int(k): int(v) for k, v in json.loads(port_map_json).items()}
    ports = sorted({l.protocol_port for l in lb.listeners})
    if port is None:
        raise SystemExit("--port or --port-map is required")
    if len(ports) > 1:
        raise SystemExit("LB has listeners on ports %s: use --port-map '{\"80\": 18080, ...}'" % ports)
    return {ports[0]: int(port)}


def render_local(lb, conf, run_dir, port_map, member_map, tag_backend=True):
    """Render with Octavia's code (certificates written by the driver's methods into
    <run_dir>/certs/<lb id>/), then localize config and crt-lists.
    Returns (octavia_rendered_text, local_text, notes)."""
    cert_root = os.path.join(run_dir, "certs")
    amp_cert_dir = conf.haproxy_amphora.base_cert_dir
    raw = render_octavia(lb, conf, cert_root=cert_root)
    notes = []
    if os.path.isdir(cert_root):
        localize_crt_lists(cert_root, amp_cert_dir)
        n = sum(len(f) for _, _, f in os.walk(cert_root))
        notes.append("%d certificate file(s) written by the amphora driver's methods under %s "
                     "(amphora path %s)" % (n, cert_root, amp_cert_dir))
    text, more = localize(raw, lb, run_dir, port_map, member_map or {}, tag_backend,
                          amp_cert_dir=amp_cert_dir)
    return raw, text, notes + more


def render(lb_id, run_dir, port=None, port_map_json=None, member_map=None,
           config_file=DEFAULT_CONF, tag_backend=True):
    """Library entry point: returns (config_text, lb data model, notes)."""
    conf, lb = load_lb(lb_id, config_file)
    pm = parse_port_map(lb, port, port_map_json)
    _, text, notes = render_local(lb, conf, run_dir, pm, member_map, tag_backend)
    return text, lb, notes


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lb_id")
    ap.add_argument("--port", type=int, help="local port for the (single) listener; default 18080")
    ap.add_argument("--port-map", help='JSON {"<listener port>": <local port>} for several listeners')
    ap.add_argument("--member-map", default="{}",
                    help='JSON {"10.0.0.5:8080": "127.0.0.1:18001"}: member address -> local server')
    ap.add_argument("--run-dir", help="dir for stats socket / server-state file / certs/ "
                    "(default: new temp dir)")
    ap.add_argument("--config-file", default=DEFAULT_CONF)
    ap.add_argument("--raw", action="store_true", help="print Octavia's rendering untouched")
    ap.add_argument("--no-tag", action="store_true", help="do not add the X-Dp-Backend response header")
    ap.add_argument("--out", help="write the config here as well as to stdout")
    a = ap.parse_args()
    if a.raw:
        conf, lb = load_lb(a.lb_id, a.config_file)
        text = render_octavia(lb, conf)
    else:
        run_dir = a.run_dir or tempfile.mkdtemp(prefix="dp-haproxy-")
        port = a.port if (a.port or a.port_map) else 18080
        text, lb, notes = render(a.lb_id, run_dir, port, a.port_map, json.loads(a.member_map),
                                 a.config_file, not a.no_tag)
        for n in notes:
            print("render_haproxy: " + n, file=sys.stderr)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
