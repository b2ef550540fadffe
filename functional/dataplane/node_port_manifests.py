#!/usr/bin/python3
"""examples/ as a NodePort cluster (functional/demo.sh --node-port).

Usage: node_port_manifests.py SRC_DIR DST_DIR RESPONDER_NAMESPACE/NAME

Writes every manifest of SRC_DIR to DST_DIR with its Services `type: NodePort` (node ports
30080, 30081, ... in file order) and its Nodes Ready with an InternalIP (NODE_IPS) and 4 CPUs,
plus 90-status-responder.yaml: the status responder's Namespace and Service, type NodePort
(not-found 30404, unavailable 30503, server-error 30500). In NodePort mode a Service without
node ports has no members (docs/configuration.md, "Member modes").
"""
import os
import sys

import yaml

NODE_IPS = {"node-a1": "127.77.0.11", "node-a2": "127.77.0.12",
            "node-b1": "127.77.0.13", "node-b2": "127.77.0.14"}
RESPONDER_PORTS = [("not-found", 8404, 30404), ("unavailable", 8503, 30503),
                   ("server-error", 8500, 30500)]


def main(src, dst, responder):
    port = 30080
    for f in sorted(os.listdir(src)):
        docs = [d for d in yaml.safe_load_all(open(os.path.join(src, f))) if d]
        for d in docs:
            if d["kind"] == "Service":
                d["spec"]["type"] = "NodePort"
                for p in d["spec"]["ports"]:
                    p["nodePort"] = port
                    port += 1
            elif d["kind"] == "Node":
                d["status"] = {
                    "allocatable": {"cpu": "4"},
                    "conditions": [{"type": "Ready", "status": "True"}],
                    "addresses": [{"type": "InternalIP", "address": NODE_IPS[d["metadata"]["name"]]}]}
        with open(os.path.join(dst, f), "w") as out:
            yaml.safe_dump_all(docs, out, sort_keys=False)
    ns, name = responder.split("/")
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
               "spec": {"type": "NodePort", "selector": {"app.kubernetes.io/name": name},
                        "ports": [{"name": n, "port": p, "targetPort": n, "nodePort": np}
                                  for n, p, np in RESPONDER_PORTS]}}
    with open(os.path.join(dst, "90-status-responder.yaml"), "w") as out:
        yaml.safe_dump_all([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}, service],
                           out, sort_keys=False)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
