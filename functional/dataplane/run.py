#!/usr/bin/python3
"""Send real HTTP requests through haproxy configured by Octavia's own templater.

Usage:
  run.py LB_ID --requests FILE|-  (--echo JSON | --member-map JSON)
         [--port N | --port-map JSON] [--haproxy /usr/sbin/haproxy]
         [--config-file octavia.conf] [--keep] [--timeout 5]

  --echo '{"10.0.0.11:8080": "svc-a", "10.0.0.12:8080": "svc-b"}'
        member address:port -> name. run.py starts one echo server per entry on a free
        loopback port and points that member at it; `backend` in the results is the name.
  --member-map '{"10.0.0.11:8080": "127.0.0.1:18001"}'
        member address:port -> an already running server (e.g. echo.py);
        `backend` is whatever that server's JSON body says in "backend" (or null).
  --bind-members
        with --echo: each echo server listens on its member's own address:port (e.g. node
        InternalIPs 127.x.y.z on the Service's node port) and the rendered `server` lines keep
        Octavia's addresses; health checks with `port` (monitor_port) then reach that address.
  --health '{"127.0.0.11:32001": 200, "127.0.0.12:32001": 503}'
        kube-proxy's /healthz stand-ins (healthCheckNodePort): address:port -> the status
        every request gets (echo.HealthServer); their hit counts are in "health_hits".
  --check-servers S
        before the requests, wait up to S seconds until haproxy has run the first health check
        of every server that has one (stats socket `show stat`), then report "servers": per
        server its haproxy state, the Octavia-rendered `server` line and its backend's
        `option httpchk` / `http-check` lines.
  --requests: JSON list (file, or - for stdin) of
        {"host": "Www.Example.com:8080", "path": "/foo?x=1",
         "method": "GET", "headers": {..}, "listener_port": 80, "expect": "svc-a"}
        only "path" is required; "host": null sends no Host header; "listener_port"
        picks the listener (default: the lowest port of a TERMINATED_HTTPS listener for
        https, of another listener for http).
        "websocket": true: a WebSocket upgrade instead (plain only; see send_websocket).
        TLS: "scheme": "https" (default "http"), "sni": "name" (default: the Host
        header's host; null = no SNI); "client_cert" / "client_key": PEM files of a
        client certificate to present; "expect_subject": the certificate subject (RFC 4514
        string, e.g. "CN=a.example.com,O=x") or just its CN; "expect_location": the
        Location header (redirects are never followed).
  --port / --port-map: local port(s) haproxy binds on 127.0.0.1 (default: free ports).

Output (stdout, one JSON document):
  {"lb_id": ..., "ok": true|false, "haproxy_check": "...", "results": [
     {"request": {...}, "status": 200, "backend": "svc-a",
      "haproxy_backend": "<pool_id>:<listener_id>", "pool_id": ..., "pool_name": ...,
      "member_id": ..., "member_name": ..., "member_address": "addr:port" (Octavia's),
      "location": null, "body": {...}|"text",
      "proto": "HTTP/1.1", "headers": {...},
      "tls": null | {"subject": "CN=...", "subject_cn": ..., "issuer": "CN=...",
                     "san": ["..."], "chain_len": 2, "version": "TLSv1.3"},
      "expect": "svc-a", "match": true}, ...]}
  `backend` is the echo name, or null when no echo server answered (no rule and no
  default pool -> status 503; REJECT -> 403; redirects -> 301/302/308 with "location").
  `expect` (optional, per request) is compared with `backend`, or with str(status) when
  backend is null (e.g. "503", "308"), or with "error" when no answer came at all (a TLS
  handshake refused, e.g. a client certificate haproxy does not accept; "error" says
  why); "match" is all given expectations (expect,
  expect_subject, expect_location) and "ok" is all matches.
  `chain_len`: certificates the server sent (SSLSocket.get_unverified_chain() on python
  3.13+, else `openssl s_client -showcerts` on a second connection with the same SNI).

Exit status: 0 all expectations met (or none given), 1 a mismatch, 2 usage,
  3 haproxy config check failed / haproxy did not start (stderr and results say why).
"""
import argparse
import base64
import http.client
import json
import os
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import echo  # noqa: E402
import render_haproxy  # noqa: E402


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_listening(port, proc, timeout=10):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            return False
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            time.sleep(0.02)
    return False


def _connect(port, req, timeout):
    """A connected http.client connection: plain, or TLS with SNI (no verification: the
    certificate is reported, not trusted). Returns (conn, ssl socket or None)."""
    if req.get("scheme", "http") != "https":
        return http.client.HTTPConnection("127.0.0.1", port, timeout=timeout), None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if req.get("client_cert"):
        # a client certificate for the listener's client-CA validation (ca-file ... verify ...)
        ctx.load_cert_chain(req["client_cert"], req.get("client_key"))
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        ssock = ctx.wrap_socket(raw, server_hostname=sni_of(req))
    except Exception:
        raw.close()
        raise
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.sock = ssock  # http.client connects only when sock is None
    return c, ssock


def sni_of(req):
    """"sni" if given (null = send none), else the Host header's host part."""
    if "sni" in req:
        return req["sni"]
    host = req.get("host", "localhost")
    if host is None:
        return None
    return host.rsplit(":", 1)[0] if not host.endswith("]") else host


def name_str(name):
    return name.rfc4514_string()


def tls_info(ssock, port, sni, timeout):
    """subject / issuer / DNS SANs of the peer certificate, TLS version, and the length of
    the chain the server sent (leaf + intermediates)."""
    from cryptography import x509
    cert = x509.load_der_x509_certificate(ssock.getpeercert(binary_form=True))
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
        sans = san.value.get_values_for_type(x509.DNSName)
    except x509.ExtensionNotFound:
        sans = []
    cn = cert.subject.get_attributes_for_oid(x509.oid.NameOID.COMMON_NAME)
    info = {"subject": name_str(cert.subject), "subject_cn": cn[0].value if cn else None,
            "issuer": name_str(cert.issuer), "san": sans, "version": ssock.version(),
            "chain_len": None}
    if hasattr(ssock, "get_unverified_chain"):  # python 3.13+
        info["chain_len"] = len(ssock.get_unverified_chain())
    else:
        info["chain_len"] = s_client_chain_len(port, sni, timeout)
    return info


def s_client_chain_len(port, sni, timeout):
    """Fallback before python 3.13: `openssl s_client -showcerts` on a second connection with
    the same SNI; counts the certificates the server sent. None if openssl is missing."""
    cmd = ["openssl", "s_client", "-connect", "127.0.0.1:%d" % port, "-showcerts"]
    cmd += ["-servername", sni] if sni else ["-noservername"]
    try:
        out = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=timeout).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.count("-----BEGIN CERTIFICATE-----")


def send(port, req, timeout):
    """One request on a fresh connection; redirects are not followed.
    Returns (status, headers, body bytes, tls info or None)."""
    method = req.get("method", "GET")
    headers = dict(req.get("headers") or {})
    host = req.get("host", "localhost")
    if host is not None:
        headers["Host"] = host
    headers.setdefault("Connection", "close")
    c, ssock = _connect(port, req, timeout)
    try:
        tls = tls_info(ssock, port, sni_of(req), timeout) if ssock else None
        if host is None:
            c.putrequest(method, req["path"], skip_host=True, skip_accept_encoding=True)
            for k, v in headers.items():
                c.putheader(k, v)
            c.endheaders()
        else:
            c.request(method, req["path"], headers=headers)
        r = c.getresponse()
        raw = r.read()
        hdrs = dict(r.getheaders())
        hdrs[":proto"] = "HTTP/%d.%d" % divmod(r.version, 10)
        return r.status, hdrs, raw, tls
    finally:
        c.close()


def send_websocket(port, req, timeout):
    """A WebSocket upgrade (RFC 6455) on a fresh plain connection, then the frames the upstream
    HTTPRouteBackendProtocolWebSocket test sends (a text and a binary one), each to come back
    unchanged, then a close. Returns (status, headers, body bytes, None): on 101 the body is
    JSON {"accept_ok", "echoed": [text, binary]} with "backend" (the 101's X-Echo-Backend) only
    when the Sec-WebSocket-Accept is right and both frames came back; else the answer's body."""
    key = base64.b64encode(os.urandom(16)).decode()
    lines = ["GET %s HTTP/1.1" % req["path"], "Host: %s" % req.get("host", "localhost"),
             "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: " + key,
             "Sec-WebSocket-Version: 13", "Origin: ws://gateway/ws"]
    lines += ["%s: %s" % kv for kv in (req.get("headers") or {}).items()]
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        f = s.makefile("rb")
        status_line = f.readline().decode("latin-1").split()
        hdrs = {":proto": status_line[0]}
        while True:
            line = f.readline().decode("latin-1")
            if line.strip() == "":
                break
            k, _, v = line.partition(":")
            hdrs[k.strip()] = v.strip()
        lower = {k.lower(): v for k, v in hdrs.items()}  # haproxy sends header names lower-cased
        status = int(status_line[1])
        if status != 101:
            return status, hdrs, f.read(int(lower.get("content-length") or 0)), None
        accept_ok = lower.get("sec-websocket-accept") == echo.ws_accept(key)
        echoed = []
        for opcode, payload in ((1, b"Websocket Support!"), (2, bytes([1, 2, 3, 4, 5, 6, 7]))):
            echo.ws_write_frame(s.sendall, opcode, payload, mask=True)
            echoed.append(echo.ws_read_frame(f.read) == (opcode, payload))
        echo.ws_write_frame(s.sendall, 8, struct.pack("!H", 1000), mask=True)
        body = {"accept_ok": accept_ok, "echoed": echoed}
        if accept_ok and all(echoed):
            body["backend"] = lower.get("x-echo-backend")
        return status, hdrs, json.dumps(body).encode(), None
    finally:
        s.close()


def default_listener_port(lb, scheme):
    """The lowest port of a TERMINATED_HTTPS listener for https, of any other listener for
    http; the lowest listener port if there is none of that kind."""
    tls = scheme == "https"
    ports = sorted(l.protocol_port for l in lb.listeners
                   if (l.protocol == "TERMINATED_HTTPS") == tls)
    return ports[0] if ports else min(l.protocol_port for l in lb.listeners)


def check(req, res):
    """Compare the optional expectations of req with res; None when there are none."""
    verdicts = []
    if "expect" in req:
        got = res["backend"] if res["backend"] is not None else str(res["status"])
        if res["status"] is None and res.get("error"):
            got = "error"
        verdicts.append(got == str(req["expect"]))
    if "expect_subject" in req:
        tls = res.get("tls") or {}
        verdicts.append(req["expect_subject"] in (tls.get("subject"), tls.get("subject_cn")))
    if "expect_location" in req:
        verdicts.append(res["location"] == req["expect_location"])
    return all(verdicts) if verdicts else None


def stats(run_dir):
    """haproxy's `show stat` on the stats socket, one dict per proxy/server row."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(2)
    try:
        s.connect(os.path.join(run_dir, "stats.sock"))
        s.sendall(b"show stat\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    lines = data.decode().splitlines()
    if not lines or not lines[0].startswith("# "):
        return []
    head = lines[0][2:].split(",")
    return [dict(zip(head, l.split(","))) for l in lines[1:] if l]


def checked(row):
    """True once haproxy has a result of the server's health check (or it has none)."""
    if row["status"] == "no check":
        return True
    return row.get("check_status", "").lstrip("* ") not in ("", "INI", "UNK")


def wait_servers(run_dir, raw, timeout):
    """Wait until every server with a health check has had its first result; then the servers'
    states with the Octavia-rendered `server` line of each (see --check-servers)."""
    rendered, checks = {}, {}
    section = None
    for line in raw.splitlines():
        s = line.strip()
        if line and not line[0].isspace():
            section = line.split()[1] if line.startswith("backend ") else None
        elif section and s.startswith("server "):
            rendered[(section, s.split()[1])] = s
        elif section and (s.startswith("option httpchk") or s.startswith("http-check ")):
            checks.setdefault(section, []).append(s)
    t0 = time.monotonic()
    rows = []
    while time.monotonic() - t0 < timeout:
        try:
            rows = [r for r in stats(run_dir) if r["svname"] not in ("FRONTEND", "BACKEND")]
        except OSError:
            rows = []
        if rows and all(checked(r) for r in rows):
            break
        time.sleep(0.1)
    return [{"backend": r["pxname"], "server": r["svname"], "status": r["status"],
             "check_status": r.get("check_status"), "check_code": r.get("check_code"),
             "checked": checked(r), "line": rendered.get((r["pxname"], r["svname"])),
             "backend_checks": checks.get(r["pxname"], [])}
            for r in rows]


def describe(lb):
    pools, members = {}, {}
    for p in lb.pools:
        pools[p.id] = p.name
        for m in p.members:
            members[m.id] = (m.name, "%s:%s" % (m.ip_address, m.protocol_port))
    return pools, members


def run(lb_id, requests, echo_spec=None, member_map=None, port=None, port_map=None,
        haproxy="/usr/sbin/haproxy", config_file=render_haproxy.DEFAULT_CONF, keep=False,
        timeout=5.0, bind_members=False, health=None, check_servers=None):
    """Library entry point; returns (exit_code, result dict)."""
    run_dir = tempfile.mkdtemp(prefix="dp-run-")
    servers = None
    health_servers = {}
    proc = None
    out = {"lb_id": lb_id, "run_dir": run_dir if keep else None, "ok": False, "results": []}
    try:
        member_map = dict(member_map or {})
        if echo_spec:
            servers = {}
            for addr, name in echo_spec.items():  # one server per member; names may repeat
                if bind_members:  # on the member's own address: the server line stays as is
                    host, _, mport = addr.rpartition(":")
                    servers[addr] = echo.EchoServers({name: int(mport)}, host.strip("[]"))
                    member_map[addr] = addr
                    continue
                s = echo.EchoServers({name: 0})
                servers[addr] = s
                member_map[addr] = "127.0.0.1:%d" % s.ports[name]
        for addr, status in (health or {}).items():
            host, _, hport = addr.rpartition(":")
            health_servers[addr] = echo.HealthServer(host.strip("[]"), int(hport), int(status))
        conf, lb = render_haproxy.load_lb(lb_id, config_file)
        lports = sorted({l.protocol_port for l in lb.listeners})
        if port_map:
            pm = {int(k): int(v) for k, v in port_map.items()}
        elif port and len(lports) == 1:
            pm = {lports[0]: int(port)}
        else:
            pm = {lp: free_port() for lp in lports}
        raw, text, notes = render_haproxy.render_local(lb, conf, run_dir, pm, member_map)
        out["notes"] = notes
        out["port_map"] = {str(k): v for k, v in pm.items()}
        cfg_path = os.path.join(run_dir, "haproxy.cfg")
        with open(cfg_path, "w") as f:
            f.write(text)
        with open(os.path.join(run_dir, "octavia-rendered.cfg"), "w") as f:
            f.write(raw)
        chk = subprocess.run([haproxy, "-c", "-f", cfg_path], capture_output=True, text=True)
        out["haproxy_check"] = (chk.stdout + chk.stderr).strip()
        if chk.returncode != 0:
            out["error"] = "haproxy -c failed"
            out["config"] = text
            return 3, out
        log = open(os.path.join(run_dir, "haproxy.log"), "w")
        proc = subprocess.Popen([haproxy, "-db", "-f", cfg_path], stdout=log, stderr=log,
                                stdin=subprocess.DEVNULL)
        for lp, local in pm.items():
            if not wait_listening(local, proc):
                out["error"] = "haproxy did not listen on 127.0.0.1:%d" % local
                proc.terminate()
                proc.wait(5)
                with open(os.path.join(run_dir, "haproxy.log")) as f:
                    out["haproxy_log"] = f.read()
                return 3, out
        if check_servers:
            out["servers"] = wait_servers(run_dir, raw, float(check_servers))
        pools, members = describe(lb)
        all_ok = True
        for req in requests:
            lport = req.get("listener_port") or default_listener_port(lb, req.get("scheme", "http"))
            res = {"request": req, "status": None, "backend": None, "haproxy_backend": None,
                   "pool_id": None, "pool_name": None, "member_id": None, "member_name": None,
                   "member_address": None,
                   "location": None, "tls": None}
            try:
                sender = send_websocket if req.get("websocket") else send
                st, hdrs, raw_body, res["tls"] = sender(pm[lport], req, timeout)
                res["status"] = st
                res["proto"] = hdrs.pop(":proto")
                res["headers"] = hdrs
                res["location"] = hdrs.get("Location") or hdrs.get("location")
                tag = hdrs.get("X-Dp-Backend") or hdrs.get("x-dp-backend")
                if tag and "/" in tag:
                    hb, srv = tag.split("/", 1)
                    res["haproxy_backend"] = hb
                    pid = hb.split(":", 1)[0]
                    if pid in pools:
                        res["pool_id"], res["pool_name"] = pid, pools[pid]
                    if srv in members:
                        res["member_id"] = srv
                        res["member_name"], res["member_address"] = members[srv]
                try:
                    body = json.loads(raw_body)
                except ValueError:
                    body = raw_body.decode(errors="replace")[:300]
                res["body"] = body
                if isinstance(body, dict) and "backend" in body:
                    res["backend"] = body["backend"]
            except Exception as e:  # connection reset, timeout, TLS handshake failure
                res["error"] = "%s: %s" % (type(e).__name__, e)
            verdict = check(req, res)
            if verdict is not None:
                if "expect" in req:
                    res["expect"] = req["expect"]
                res["match"] = verdict
                all_ok = all_ok and verdict
            out["results"].append(res)
        out["ok"] = all_ok
        if health_servers:
            out["health_hits"] = {a: h.hits for a, h in health_servers.items()}
        return (0 if all_ok else 1), out
    finally:
        if proc and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
        if servers:
            for s in servers.values():
                s.stop()
        for h in health_servers.values():
            h.stop()
        if not keep:
            shutil.rmtree(run_dir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lb_id")
    ap.add_argument("--requests", required=True)
    ap.add_argument("--echo")
    ap.add_argument("--member-map")
    ap.add_argument("--port", type=int)
    ap.add_argument("--port-map")
    ap.add_argument("--haproxy", default=shutil.which("haproxy") or "/usr/sbin/haproxy")
    ap.add_argument("--config-file", default=render_haproxy.DEFAULT_CONF)
    ap.add_argument("--keep", action="store_true", help="keep the run dir (haproxy.cfg, log)")
    ap.add_argument("--timeout", type=float, default=5.0)
    ap.add_argument("--bind-members", action="store_true")
    ap.add_argument("--health")
    ap.add_argument("--check-servers", type=float)
    a = ap.parse_args()
    if not a.echo and not a.member_map:
        ap.error("one of --echo / --member-map is required")
    try:
        reqs = json.load(sys.stdin if a.requests == "-" else open(a.requests))
        assert isinstance(reqs, list)
    except Exception as e:
        ap.error("--requests must be a JSON list: %s" % e)
    code, out = run(a.lb_id, reqs, json.loads(a.echo) if a.echo else None,
                    json.loads(a.member_map) if a.member_map else None, a.port,
                    json.loads(a.port_map) if a.port_map else None, a.haproxy,
                    a.config_file, a.keep, a.timeout, a.bind_members,
                    json.loads(a.health) if a.health else None, a.check_servers)
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")
    if code == 3:
        print("run.py: %s" % out.get("error"), file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
