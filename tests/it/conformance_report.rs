//! Issue 33 §6: the committed Gateway API ConformanceReport (docs/conformance/, written by
//! functional/conformance-report.sh) has the upstream v1.6.1 shape, its statistics add up, every
//! test it names is an upstream test of the GATEWAY-HTTP profile (the inventory written beside
//! it), every failure is a case we run, and its supported features are the ones we declare.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/conformance");

/// One upstream test of the inventory: its level and whether it is provisional.
struct Upstream {
    level: String,
    provisional: bool,
    features: BTreeSet<String>,
}

fn inventory() -> BTreeMap<String, Upstream> {
    let text = std::fs::read_to_string(Path::new(DIR).join("gateway-api-v1.6.1-http-tests.tsv")).unwrap();
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols.len(), 4, "{line}");
        let features = cols[3].split(',').map(String::from).collect();
        out.insert(cols[0].into(), Upstream { level: cols[1].into(), provisional: cols[2] == "true", features });
    }
    out
}

/// The upstream tests our case files restate (`A + B`: two).
fn our_cases() -> BTreeSet<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/gateway/cases");
    let mut out = BTreeSet::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
        let test = text.lines().find_map(|l| l.strip_prefix("test: ")).unwrap().to_string();
        out.extend(test.split(" + ").map(String::from));
    }
    out
}

fn names(v: &Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().map(|x| x.as_str().unwrap().to_string()).collect()).unwrap_or_default()
}

/// A level's status: result and statistics consistent with its lists; its named tests.
fn check_status(what: &str, s: &Value) -> (u64, Vec<String>, Vec<String>) {
    let stat = |k: &str| s["statistics"][k].as_u64().unwrap_or_else(|| panic!("{what}: statistics.{k}"));
    let (passed, failed, skipped) = (stat("Passed"), stat("Failed"), stat("Skipped"));
    let (failed_tests, skipped_tests) = (names(&s["failedTests"]), names(&s["skippedTests"]));
    assert_eq!(failed as usize, failed_tests.len(), "{what}: Failed counts failedTests");
    assert_eq!(skipped as usize, skipped_tests.len(), "{what}: Skipped counts skippedTests");
    let want = if failed > 0 {
        "failure"
    } else if skipped > 0 {
        "partial"
    } else {
        "success"
    };
    assert_eq!(s["result"], want, "{what}: the result the suite derives from the statistics");
    (passed, failed_tests, skipped_tests)
}

#[test]
fn the_committed_conformance_report_has_the_upstream_shape_and_adds_up() {
    let reports: Vec<_> = std::fs::read_dir(DIR)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with("-report.yaml"))
        .collect();
    assert!(!reports.is_empty(), "no report under {DIR}");
    let inventory = inventory();
    let ours = our_cases();
    let declared: BTreeSet<String> =
        kuryr_l7_router::gateway::status::SUPPORTED_FEATURES.iter().map(|f| f.to_string()).collect();
    let core_features: BTreeSet<String> = ["Gateway", "HTTPRoute", "ReferenceGrant"].map(String::from).into();
    let rfc3339 = regex::Regex::new(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d").unwrap();
    for path in reports {
        let what = path.display().to_string();
        let r: Value = serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(r["apiVersion"], "gateway.networking.k8s.io/v1", "{what}");
        assert_eq!(r["kind"], "ConformanceReport", "{what}");
        assert_eq!(r["gatewayAPIVersion"], "v1.6.1", "{what}");
        assert_eq!(r["gatewayAPIChannel"], "standard", "{what}");
        assert!(r["mode"].as_str().is_some_and(|m| !m.is_empty()), "{what}: mode");
        let date = r["date"].as_str().unwrap_or_else(|| panic!("{what}: date is a string"));
        assert!(rfc3339.is_match(date), "{what}: {date}");
        // Upstream's Implementation.Validate: every field set.
        for k in ["organization", "project", "url", "version"] {
            assert!(r["implementation"][k].as_str().is_some_and(|v| !v.is_empty()), "{what}: implementation.{k}");
        }
        assert!(!names(&r["implementation"]["contact"]).is_empty(), "{what}: implementation.contact");

        let profiles = r["profiles"].as_array().unwrap();
        assert_eq!(profiles.len(), 1, "{what}: one profile");
        let p = &profiles[0];
        assert_eq!(p["name"], "GATEWAY-HTTP", "{what}");
        let (core_passed, core_failed, core_skipped) = check_status(&format!("{what} core"), &p["core"]);
        let (ext_passed, ext_failed, ext_skipped) = check_status(&format!("{what} extended"), &p["extended"]);

        // The supported features are those we declare; the unsupported, the rest of the profile's.
        let supported: BTreeSet<String> = names(&p["extended"]["supportedFeatures"]).into_iter().collect();
        assert_eq!(supported, &declared - &core_features, "{what}: regenerate the report after a feature change");
        let unsupported: BTreeSet<String> = names(&p["extended"]["unsupportedFeatures"]).into_iter().collect();
        assert!(supported.is_disjoint(&unsupported), "{what}");

        // Every test named is an upstream test of the profile, at the level it is listed at;
        // each failure is a case we run.
        let provisional = names(&r["succeededProvisionalTests"]);
        for (level, listed) in [("core", [&core_failed, &core_skipped]), ("extended", [&ext_failed, &ext_skipped])] {
            for t in listed.into_iter().flatten() {
                let u = inventory.get(t).unwrap_or_else(|| panic!("{what}: {t} is not an upstream GATEWAY-HTTP test"));
                assert_eq!(u.level, level, "{what}: {t}");
            }
        }
        for t in core_failed.iter().chain(&ext_failed).chain(&provisional) {
            assert!(ours.contains(t), "{what}: {t} is reported run, and no case of ours restates it");
        }
        for t in &provisional {
            assert!(inventory.get(t).is_some_and(|u| u.provisional), "{what}: {t} is not a provisional test");
        }
        // The statistics add up: each non-provisional test we could run (every feature
        // declared) is counted once at its level; the provisional ones only when run.
        let runnable = |level: &str| {
            inventory
                .iter()
                .filter(|(_, u)| u.level == level && u.features.is_subset(&declared))
                .filter(|(t, u)| !u.provisional || ours.contains(*t))
                .count() as u64
        };
        let core_total = core_passed + core_failed.len() as u64 + core_skipped.len() as u64;
        let ext_total = ext_passed + ext_failed.len() as u64 + ext_skipped.len() as u64;
        assert_eq!(core_total, runnable("core"), "{what}: core tests counted");
        assert_eq!(ext_total, runnable("extended"), "{what}: extended tests counted");
        // A skipped test is one we have no case for: a case we have is run, not skipped.
        for t in core_skipped.iter().chain(&ext_skipped) {
            assert!(!ours.contains(t), "{what}: {t} has a case of ours and is reported skipped");
        }
        let summary = p["summary"].as_str().unwrap();
        assert!(summary.starts_with("Core tests ") && summary.contains(". Extended tests "), "{what}: {summary}");
    }
}
