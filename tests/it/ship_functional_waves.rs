//! functional/test.sh runs the functional tests in parallel, except those that stop, pause or
//! restart a service of the stack they share: those run alone (its ALONE list). A test that
//! starts injecting such a fault and is not listed would break the tests running beside it, so
//! this checks the list against the sources: every test whose body names one of the
//! `functional/openstack.sh` verbs that act on a service is listed, and every listed test exists.

use std::collections::BTreeSet;
use std::path::Path;

/// The `functional/openstack.sh` verbs that stop, pause or restart a service.
const SERVICE_VERBS: &[&str] = &[
    "\"stop-service\"",
    "\"pause-service\"",
    "\"start-service\"",
    "\"resume-service\"",
    "\"token-expiration\"",
    "\"octavia-fixes\"",
];

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The functional binaries (Cargo.toml `[[test]]` name → path).
fn functional_binaries() -> Vec<(String, String)> {
    let cargo = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    let mut out = Vec::new();
    let mut name = None;
    for line in cargo.lines() {
        if let Some(n) = line.strip_prefix("name = \"").and_then(|l| l.strip_suffix('"')) {
            name = Some(n.to_string());
        }
        if let (Some(n), Some(p)) = (&name, line.strip_prefix("path = \"").and_then(|l| l.strip_suffix('"')))
            && n.starts_with("functional_")
        {
            out.push((n.clone(), p.to_string()));
        }
    }
    assert!(out.len() >= 5, "functional binaries found in Cargo.toml: {out:?}");
    out
}

/// The sources of one binary: its root and the modules it includes with `#[path = "…"]`.
fn sources(root: &Path) -> Vec<std::path::PathBuf> {
    let text = std::fs::read_to_string(root).unwrap();
    let mut files = vec![root.to_path_buf()];
    for line in text.lines() {
        if let Some(p) = line.trim().strip_prefix("#[path = \"").and_then(|l| l.strip_suffix("\"]")) {
            files.push(root.parent().unwrap().join(p));
        }
    }
    files
}

/// Splits a source at its test attributes: (test name, text up to the next test).
fn tests_of(text: &str) -> Vec<(String, String)> {
    let starts: Vec<usize> =
        text.match_indices("#[tokio::test").chain(text.match_indices("#[test]")).map(|(i, _)| i).collect();
    let mut starts = starts;
    starts.sort();
    let mut out = Vec::new();
    for (k, &s) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(text.len());
        let body = &text[s..end];
        let name = body.split("fn ").nth(1).and_then(|r| r.split('(').next()).unwrap().trim().to_string();
        out.push((name, body.to_string()));
    }
    out
}

/// ALONE of functional/test.sh: "binary<TAB>test" entries.
fn alone_list() -> BTreeSet<(String, String)> {
    let script = std::fs::read_to_string(repo().join("functional/test.sh")).unwrap();
    let list = script.split("ALONE=(").nth(1).and_then(|r| r.split("\n)").next()).expect("ALONE=( … ) in test.sh");
    list.lines()
        .filter_map(|l| l.trim().strip_prefix("$'").and_then(|l| l.strip_suffix('\'')))
        .map(|e| {
            let (b, t) = e.split_once("\\t").expect("binary\\ttest");
            (b.to_string(), t.to_string())
        })
        .collect()
}

#[test]
fn every_test_that_stops_pauses_or_restarts_a_service_runs_alone() {
    let alone = alone_list();
    assert!(!alone.is_empty());
    let mut faulting = BTreeSet::new();
    let mut all = BTreeSet::new();
    for (binary, path) in functional_binaries() {
        for file in sources(&repo().join(&path)) {
            let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            for (test, body) in tests_of(&text) {
                all.insert((binary.clone(), test.clone()));
                if SERVICE_VERBS.iter().any(|v| body.contains(v)) {
                    faulting.insert((binary.clone(), test));
                }
            }
        }
    }
    assert!(faulting.len() >= 4, "the fault tests are found: {faulting:?}");
    let missing: Vec<_> = faulting.difference(&alone).collect();
    assert!(missing.is_empty(), "tests acting on a service, not in functional/test.sh's ALONE: {missing:?}");
    let stale: Vec<_> = alone.iter().filter(|a| !all.contains(*a)).collect();
    assert!(stale.is_empty(), "ALONE names tests that do not exist: {stale:?}");
}

#[test]
fn the_test_splitter_finds_a_fault_in_a_test_body() {
    let src = "#[tokio::test]\nasync fn quiet() {\n    work();\n}\n\n#[tokio::test]\nasync fn loud() {\n    let _u = inject(&[\"pause-service\", \"x\"]);\n}\n";
    let tests = tests_of(src);
    assert_eq!(tests.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["quiet", "loud"]);
    assert!(!SERVICE_VERBS.iter().any(|v| tests[0].1.contains(v)));
    assert!(SERVICE_VERBS.iter().any(|v| tests[1].1.contains(v)));
}
