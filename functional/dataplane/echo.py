#!/usr/bin/python3
"""Multi-port HTTP echo server: each port answers with JSON naming itself.

Usage: echo.py [--host 127.0.0.1] NAME=PORT [NAME=PORT ...]
  PORT 0 picks a free port. Once all ports listen, one line per server is printed
  to stdout: `READY NAME PORT`, then `READY` alone. Runs until SIGTERM/SIGINT.

Every request (any method) gets 200 with Content-Type application/json and body
  {"backend": NAME, "method": "GET", "path": "/foo?x=1", "proto": "HTTP/1.1", "host": "<Host header>",
   "port": PORT, "headers": {...}}
and the header X-Echo-Backend: NAME.
A WebSocket upgrade (`Upgrade: websocket`, RFC 6455) gets 101 with X-Echo-Backend: NAME, then
every text or binary frame is sent back as it came, until a close frame (answered) or EOF:
what the upstream conformance echo server (echo-basic) does on its /ws path.
"""
import base64
import hashlib
import json
import os
import signal
import struct
import sys
import threading

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def ws_accept(key):
    """Sec-WebSocket-Accept for the client's Sec-WebSocket-Key (RFC 6455 section 4.2.2)."""
    return base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()


def ws_read_frame(read):
    """One frame from read(n) -> bytes: (opcode, payload unmasked), or None at EOF."""
    head = read(2)
    if len(head) < 2:
        return None
    opcode, n, masked = head[0] & 0x0F, head[1] & 0x7F, head[1] & 0x80
    if n == 126:
        n = struct.unpack("!H", read(2))[0]
    elif n == 127:
        n = struct.unpack("!Q", read(8))[0]
    mask = read(4) if masked else b"\0\0\0\0"
    payload = read(n)
    if len(payload) < n:
        return None
    return opcode, bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def ws_write_frame(write, opcode, payload, mask=False):
    """One final frame through write(bytes); a client masks its frames (RFC 6455 5.3)."""
    n = len(payload)
    head = bytes([0x80 | opcode])
    bit = 0x80 if mask else 0
    if n < 126:
        head += bytes([bit | n])
    elif n < 1 << 16:
        head += bytes([bit | 126]) + struct.pack("!H", n)
    else:
        head += bytes([bit | 127]) + struct.pack("!Q", n)
    if mask:
        key = os.urandom(4)
        head += key
        payload = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
    write(head + payload)
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def make_handler(name):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _websocket(self):
            self.send_response(101, "Switching Protocols")
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            self.send_header("Sec-WebSocket-Accept", ws_accept(self.headers.get("Sec-WebSocket-Key", "")))
            self.send_header("X-Echo-Backend", name)
            self.end_headers()
            self.wfile.flush()
            self.close_connection = True
            while True:
                frame = ws_read_frame(self.rfile.read)
                if frame is None:
                    return
                opcode, payload = frame
                if opcode == 8:  # close: answered with the same status, then the end
                    ws_write_frame(self.wfile.write, 8, payload[:2])
                    return
                ws_write_frame(self.wfile.write, 10 if opcode == 9 else opcode, payload)

        def _answer(self):
            if (self.headers.get("Upgrade") or "").lower() == "websocket":
                return self._websocket()
            n = int(self.headers.get("Content-Length") or 0)
            if n:
                self.rfile.read(n)
            body = json.dumps({"backend": name, "method": self.command, "path": self.path,
                               "proto": self.request_version,
                               "host": self.headers.get("Host"),
                               "port": self.server.server_address[1],
                               "headers": dict(self.headers.items())}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-Echo-Backend", name)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = do_OPTIONS = _answer

        def log_message(self, fmt, *args):
            pass
    return Handler


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # haproxy closes idle keep-alive connections when it stops: not worth a traceback
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class HealthServer:
    """kube-proxy's health check stand-in (`healthCheckNodePort` of an externalTrafficPolicy: Local
    Service): every request gets `status` and kube-proxy's JSON body, whose `localEndpoints` says
    how many ready endpoints of the Service the node has (200 only with at least one).
    Library use: h = HealthServer("127.0.0.11", 32001, 503, "shop/local"); h.hits; h.stop()"""

    def __init__(self, host, port, status, service="", local_endpoints=None):
        self.hits = 0
        owner = self
        body = json.dumps({"service": {"namespace": service.partition("/")[0],
                                       "name": service.partition("/")[2]},
                           "localEndpoints": local_endpoints if local_endpoints is not None
                           else (1 if status == 200 else 0),
                           "serviceProxyHealthy": True}).encode()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                owner.hits += 1
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, fmt, *args):
                pass
        self.server = QuietServer((host, int(port)), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class EchoServers:
    """Library use: s = EchoServers({"a": 0, "b": 0}, host); s.ports -> {"a": 41234, ...}; s.stop()"""

    def __init__(self, spec, host="127.0.0.1"):
        self.servers = {}
        self.ports = {}
        for name, port in spec.items():
            srv = QuietServer((host, int(port)), make_handler(name))
            self.servers[name] = srv
            self.ports[name] = srv.server_address[1]
            threading.Thread(target=srv.serve_forever, daemon=True).start()

    def stop(self):
        for srv in self.servers.values():
            srv.shutdown()
            srv.server_close()


def main(argv):
    host = "127.0.0.1"
    if len(argv) >= 2 and argv[0] == "--host":
        host, argv = argv[1], argv[2:]
    if not argv or any("=" not in a for a in argv):
        print(__doc__, file=sys.stderr)
        return 2
    spec = {}
    for a in argv:
        name, port = a.rsplit("=", 1)
        spec[name] = int(port)
    servers = EchoServers(spec, host)
    for name, port in servers.ports.items():
        print("READY %s %d" % (name, port))
    print("READY", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    servers.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
