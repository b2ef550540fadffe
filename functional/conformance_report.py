#!/usr/bin/env python3
"""Write a Gateway API ConformanceReport (gateway.networking.k8s.io/v1, the upstream schema of
conformance/apis/v1) from the outcomes our conformance tests recorded.

usage: conformance_report.py RESULTS UPSTREAM OUT

RESULTS   the JSON lines the tests append when KURYR_CONFORMANCE_RESULTS names the file
          (tests/support/gateway_case.rs): {"test", "source", "passed", "why"} per test and
          source, and {"supportedFeatures"}: the features we declare (GatewayClass
          status.supportedFeatures, `gateway::status::SUPPORTED_FEATURES`)
UPSTREAM  a v1.6.1 checkout holding conformance/ and pkg/features/ (the test inventory: each
          test's ShortName, Features and Provisional flag; the GATEWAY-HTTP profile's features)
OUT       the report file (YAML)

The result of each upstream test is computed as the upstream suite computes it
(conformance/utils/suite/reports.go):
- a test belongs to GATEWAY-HTTP when each of its features is a core or extended feature of the
  profile; it is extended when any of them is not core;
- a test with a feature we do not declare is not run, and not counted (its features are in
  unsupportedFeatures);
- a test we run passes when every source that ran it passed (our fixtures, the upstream
  manifests, the data plane through Octavia-rendered haproxy), else it fails;
- a test we could run (every feature declared) but have no case for is counted skipped, never
  passed; a provisional one is left out, as the suite leaves provisional tests out unless asked;
- result: failure with any failed test, partial with any skipped one, else success.
Environment: KURYR_REPORT_ORGANIZATION, _PROJECT, _URL, _VERSION, _CONTACT (comma-separated),
_MODE (default `default`), _DATE (default now).
"""

import datetime
import json
import os
import re
import sys

GATEWAY_API_VERSION = "v1.6.1"
PROFILE = "GATEWAY-HTTP"
CORE = {"Gateway", "ReferenceGrant", "HTTPRoute"}
# The sets of pkg/features whose union is the profile's extended features
# (conformance/utils/suite/profiles.go, GatewayHTTPConformanceProfile).
EXTENDED_SETS = [
    "GatewayExtendedFeatures",
    "HTTPRouteExtendedFeatures",
    "BackendTLSPolicyCoreFeatures",
    "BackendTLSPolicyExtendedFeatures",
]


def features_of(upstream):
    """The feature names by Go constant, and the profile's extended feature names."""
    consts, variables, sets = {}, {}, {}
    d = os.path.join(upstream, "pkg/features")
    for f in sorted(os.listdir(d)):
        if not f.endswith(".go"):
            continue
        text = open(os.path.join(d, f), encoding="utf-8").read()
        for m in re.finditer(r'\b(Support\w+)\s*(?:FeatureName)?\s*=\s*"([^"]+)"', text):
            consts[m.group(1)] = m.group(2)
        # Not every variable's name ends in `Feature` (v1.6.1: HTTPRouteNamedRouteRule,
        # HTTPRouteCORS), so a set's members are its identifiers, resolved below.
        for m in re.finditer(r"\b(\w+)\s*=\s*Feature\{\s*Name:\s*(Support\w+)", text):
            variables[m.group(1)] = m.group(2)
        for m in re.finditer(r"\b(\w+Features)\s*=\s*sets\.New\(([^)]*)\)", text):
            sets[m.group(1)] = re.findall(r"\b(\w+)\b", re.sub(r"//[^\n]*", "", m.group(2)))
    extended = set()
    for s in EXTENDED_SETS:
        if s not in sets:
            sys.exit(f"conformance_report: pkg/features has no {s}: not a v1.6 checkout?")
        unknown = [v for v in sets[s] if v not in variables]
        if unknown:
            sys.exit(f"conformance_report: {s} names {unknown}, which are no Feature of pkg/features")
        extended |= {consts[variables[v]] for v in sets[s]}
    return consts, extended - CORE


def tests_of(upstream, consts):
    """Each upstream conformance test: name -> (features, provisional)."""
    out = {}
    d = os.path.join(upstream, "conformance/tests")
    for f in sorted(os.listdir(d)):
        if not f.endswith(".go"):
            continue
        text = open(os.path.join(d, f), encoding="utf-8").read()
        for block in text.split("ConformanceTest{")[1:]:
            name = re.search(r'ShortName:\s*"(\w+)"', block)
            feats = re.search(r"Features:\s*\[\]features\.FeatureName\{([^}]*)\}", block)
            if not name:
                continue
            names = re.findall(r"features\.(Support\w+)", feats.group(1)) if feats else []
            provisional = re.search(r"Provisional:\s*true", block.split("Test:")[0]) is not None
            out[name.group(1)] = ({consts[n] for n in names}, provisional)
    return out


def results_of(path):
    """Per test: the sources that ran it and whether each passed, and why not; and the features
    we declare."""
    out, supported = {}, None
    for line in open(path, encoding="utf-8"):
        if line.strip():
            r = json.loads(line)
            if "supportedFeatures" in r:
                supported = set(r["supportedFeatures"])
            else:
                out.setdefault(r["test"], []).append(r)
    if supported is None:
        sys.exit(f"conformance_report: {path} records no supportedFeatures (did gateway_conformance::conformance_cases run?)")
    return out, supported


def status(passed, failed, skipped):
    result = "failure" if failed else "partial" if skipped else "success"
    s = {"result": result, "statistics": {"Failed": len(failed), "Passed": len(passed), "Skipped": len(skipped)}}
    if skipped:
        s["skippedTests"] = sorted(skipped)
    if failed:
        s["failedTests"] = sorted(failed)
    return s


def summary_of(s):
    if s["result"] == "success":
        return "succeeded"
    if s["result"] == "partial":
        return f"partially succeeded with {s['statistics']['Skipped']} test skips"
    return f"failed with {s['statistics']['Failed']} test failures"


def yaml_scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    # JSON strings are YAML strings; plain when nothing in them needs quoting (a date is quoted,
    # as upstream's: a YAML timestamp otherwise).
    if not re.match(r"\d{4}-", v) and re.fullmatch(r"[A-Za-z0-9@/._][A-Za-z0-9@/._:+ -]*", v) and not v.endswith(" ") and ": " not in v:
        return v
    return json.dumps(v)


def to_yaml(v, indent=0):
    pad = "  " * indent
    lines = []
    if isinstance(v, dict):
        for k in sorted(v):
            x = v[k]
            if isinstance(x, (dict, list)) and x:
                lines.append(f"{pad}{k}:")
                lines.append(to_yaml(x, indent + (1 if isinstance(x, dict) else 0)))
            else:
                lines.append(f"{pad}{k}: {yaml_scalar(x) if not isinstance(x, (dict, list)) else '[]'}")
    else:
        for x in v:
            if isinstance(x, dict):
                body = to_yaml(x, indent + 1).split("\n")
                lines.append(f"{pad}- {body[0].strip()}")
                lines.extend(body[1:])
            else:
                lines.append(f"{pad}- {yaml_scalar(x)}")
    return "\n".join(lines)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    results_path, upstream, out_path = sys.argv[1:]
    consts, extended = features_of(upstream)
    tests = tests_of(upstream, consts)
    results, supported = results_of(results_path)
    unknown = sorted(set(results) - set(tests))
    if unknown:
        sys.exit(f"conformance_report: results for tests upstream {GATEWAY_API_VERSION} does not have: {unknown}")
    levels = {"core": ([], [], []), "extended": ([], [], [])}
    provisional_passed, sources = [], set()
    for name, (feats, provisional) in sorted(tests.items()):
        if not feats or not feats <= CORE | extended:
            continue  # another profile's test
        if not feats <= supported:
            continue  # a feature we do not declare: not run, not counted
        passed, failed, skipped = levels["extended" if feats - CORE else "core"]
        ran = results.get(name, [])
        sources |= {r["source"] for r in ran}
        if not ran:
            if not provisional:
                skipped.append(name)
        elif all(r["passed"] for r in ran):
            passed.append(name)
            if provisional:
                provisional_passed.append(name)
        else:
            failed.append(name)
    core, ext = status(*levels["core"]), status(*levels["extended"])
    ext["supportedFeatures"] = sorted(supported & extended)
    ext["unsupportedFeatures"] = sorted(extended - supported)
    env = lambda k, d: os.environ.get("KURYR_REPORT_" + k) or d  # noqa: E731
    report = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "ConformanceReport",
        "date": env("DATE", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")),
        "gatewayAPIVersion": GATEWAY_API_VERSION,
        "gatewayAPIChannel": "standard",
        "mode": env("MODE", "default"),
        "implementation": {
            "organization": env("ORGANIZATION", "openstack"),
            "project": env("PROJECT", "kuryr-l7-router"),
            "url": env("URL", "https://opendev.org/openstack/kuryr-l7-router"),
            "version": env("VERSION", "v0.1.0"),
            "contact": env("CONTACT", "https://opendev.org/openstack/kuryr-l7-router").split(","),
        },
        "profiles": [
            {
                "name": PROFILE,
                "summary": f"Core tests {summary_of(core)}. Extended tests {summary_of(ext)}.",
                "core": core,
                "extended": ext,
            }
        ],
    }
    if provisional_passed:
        report["succeededProvisionalTests"] = sorted(provisional_passed)
    why = [
        f"#   {name}: {r['source']}: {w}"
        for name in sorted(levels["core"][1] + levels["extended"][1])
        for r in results[name]
        if not r["passed"]
        for w in r["why"][:3]
    ]
    header = [
        "# Generated by functional/conformance-report.sh from the recorded outcomes of:",
        f"#   {', '.join(sorted(sources))} (see docs/gateway-api.md, 'Conformance report').",
    ]
    if why:
        header += ["# Why the failed tests fail:"] + why
    with open(out_path, "w", encoding="utf-8") as f:
        f.write("\n".join(header) + "\n" + to_yaml(report) + "\n")
    # The profile's upstream tests, beside the report: what its test names and counts are checked
    # against (tests/it/conformance_report.rs) without an upstream checkout.
    inventory = os.path.join(os.path.dirname(out_path) or ".", f"gateway-api-{GATEWAY_API_VERSION}-http-tests.tsv")
    with open(inventory, "w", encoding="utf-8") as f:
        f.write(f"# The {PROFILE} tests of Gateway API {GATEWAY_API_VERSION}: name, level, provisional, features\n")
        for name, (feats, provisional) in sorted(tests.items()):
            if feats and feats <= CORE | extended:
                level = "extended" if feats - CORE else "core"
                f.write(f"{name}\t{level}\t{str(provisional).lower()}\t{','.join(sorted(feats))}\n")
    print(f"{out_path}: {report['profiles'][0]['summary']}")


if __name__ == "__main__":
    main()
