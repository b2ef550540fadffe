#!/bin/bash
# Self-test of the data-plane harness against the local OpenStack (functional/openstack.sh).
# Creates a dp-<random> LB with L7 policies over REST, routes real HTTP requests through haproxy
# rendered by Octavia's templater, asserts the backends, cascade-deletes the LB.
# Exit 0 = pass; non-zero = mismatch (1), setup error (2), haproxy failure (3).
set -euo pipefail
cd "$(dirname "$0")"
exec /usr/bin/python3 ./selftest.py "$@"
