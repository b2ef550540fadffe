#!/usr/bin/python3
"""HTTPS requests in a loop through haproxy rendered by Octavia's templater, re-rendered and
reloaded the way an amphora applies a listener update, while the caller rotates a certificate.

Usage:
  rotation.py LB_ID --echo JSON --request JSON [--interval 0.05] [--rerender 1.0]
              [--config-file octavia.conf] [--timeout 5]

  --echo      member address:port -> name, as run.py's (one echo server per member)
  --request   one run.py request object (scheme "https", host, path; sni as in run.py)

Protocol: once haproxy serves the first request, prints `READY` (one line). From then on a
client thread sends the request again every --interval seconds, each on a fresh TLS
connection, and records the certificate served (SHA-256 of its DER) or the error. Every
--rerender seconds the load balancer is read again from Octavia's database and rendered with
Octavia's own code (certificates fetched from Barbican by the amphora driver's methods, as
run.py does), checked with `haproxy -c`, and haproxy (master-worker, as the amphora's
`haproxy -Ws`) is reloaded with SIGUSR2, as the amphora's `systemctl reload` does. A render or
check that fails is recorded (the amphora's update would fail there) and the old config stays.
Reads `stop` on stdin, then prints one JSON document and exits:
  {"requests": N, "failures": [{"t": s, "error": "..."}], "render_failures": [...],
   "reloads": N, "served": [{"fingerprint": "...", "subject": "...", "first": s, "last": s,
   "count": N}, ...] (in order of first use), "last_fingerprint": "..."}
"""
import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import echo  # noqa: E402
import render_haproxy  # noqa: E402
import run  # noqa: E402


def render_into(lb_id, conf, run_dir, port_map, member_map, cfg_path, haproxy):
    """Read the LB again, render it into cfg_path; None, or why it failed."""
    from octavia.db import api as db_apis
    from octavia.db import repositories as repo
    try:
        session = db_apis.get_session()
        lb = repo.LoadBalancerRepository().get(session, id=lb_id)
        _, text, _ = render_haproxy.render_local(lb, conf, run_dir, port_map, member_map)
        session.close()
    except Exception as e:  # a secret the listener names that Barbican no longer has, ...
        return "render: %s: %s" % (type(e).__name__, e)
    tmp = cfg_path + ".new"
    with open(tmp, "w") as f:
        f.write(text)
    chk = subprocess.run([haproxy, "-c", "-f", tmp], capture_output=True, text=True)
    if chk.returncode != 0:
        return "haproxy -c: %s" % (chk.stdout + chk.stderr).strip()[-500:]
    os.replace(tmp, cfg_path)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lb_id")
    ap.add_argument("--echo", required=True)
    ap.add_argument("--request", required=True)
    ap.add_argument("--interval", type=float, default=0.05)
    ap.add_argument("--rerender", type=float, default=1.0)
    ap.add_argument("--haproxy", default=shutil.which("haproxy") or "/usr/sbin/haproxy")
    ap.add_argument("--config-file", default=render_haproxy.DEFAULT_CONF)
    ap.add_argument("--timeout", type=float, default=5.0)
    a = ap.parse_args()
    req = json.loads(a.request)
    run_dir = tempfile.mkdtemp(prefix="dp-rotation-")
    servers, member_map = [], {}
    for addr, name in json.loads(a.echo).items():
        s = echo.EchoServers({name: 0})
        servers.append(s)
        member_map[addr] = "127.0.0.1:%d" % s.ports[name]
    proc = None
    out = {"requests": 0, "failures": [], "render_failures": [], "reloads": 0, "served": []}
    try:
        conf, lb = render_haproxy.load_lb(a.lb_id, a.config_file)
        lport = req.get("listener_port") or run.default_listener_port(lb, "https")
        port_map = {l.protocol_port: run.free_port() for l in lb.listeners}
        cfg_path = os.path.join(run_dir, "haproxy.cfg")
        err = render_into(a.lb_id, conf, run_dir, port_map, member_map, cfg_path, a.haproxy)
        if err:
            raise SystemExit(err)
        log = open(os.path.join(run_dir, "haproxy.log"), "w")
        proc = subprocess.Popen([a.haproxy, "-W", "-db", "-f", cfg_path], stdout=log, stderr=log,
                                stdin=subprocess.DEVNULL)
        if not run.wait_listening(port_map[lport], proc):
            raise SystemExit("haproxy did not start")
        t0 = time.monotonic()
        stop = threading.Event()
        served = {}

        def client():
            while not stop.is_set():
                t = round(time.monotonic() - t0, 3)
                out["requests"] += 1
                try:
                    conn, ssock = run._connect(port_map[lport], req, a.timeout)
                    der = ssock.getpeercert(binary_form=True)
                    fp = hashlib.sha256(der).hexdigest()
                    conn.request("GET", req["path"], headers={"Host": req["host"], "Connection": "close"})
                    status = conn.getresponse().status
                    conn.close()
                    if status != 200:
                        out["failures"].append({"t": t, "error": "HTTP %d" % status})
                    s = served.setdefault(fp, {"fingerprint": fp, "first": t, "count": 0})
                    if s["count"] == 0:
                        from cryptography import x509
                        s["subject"] = x509.load_der_x509_certificate(der).subject.rfc4514_string()
                        out["served"].append(s)
                    s["count"] += 1
                    s["last"] = t
                    out["last_fingerprint"] = fp
                except Exception as e:  # refused, reset, handshake failure, timeout
                    out["failures"].append({"t": t, "error": "%s: %s" % (type(e).__name__, e)})
                stop.wait(a.interval)

        def reloader():
            while not stop.wait(a.rerender):
                err = render_into(a.lb_id, conf, run_dir, port_map, member_map, cfg_path, a.haproxy)
                if err:
                    out["render_failures"].append({"t": round(time.monotonic() - t0, 3), "error": err})
                    continue
                proc.send_signal(signal.SIGUSR2)
                out["reloads"] += 1

        threads = [threading.Thread(target=client, daemon=True), threading.Thread(target=reloader, daemon=True)]
        for th in threads:
            th.start()
        while not out["served"] and not out["failures"] and time.monotonic() - t0 < 10:
            time.sleep(0.02)
        print("READY", flush=True)
        for line in sys.stdin:
            if line.strip() == "stop":
                break
        stop.set()
        for th in threads:
            th.join(a.timeout + 5)
    finally:
        if proc and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
        for s in servers:
            s.stop()
        shutil.rmtree(run_dir, ignore_errors=True)
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
