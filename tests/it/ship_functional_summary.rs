//! A functional test that did not run is shown as skipped, never as passed: without
//! `KURYR_FUNCTIONAL=1` it writes a marker past libtest's capture (functional/common/mod.rs),
//! functional/summary.sh counts the markers, and a functional phase that ran no test fails
//! functional/test.sh (and so `.ci/run`).

#[path = "../../functional/common/mod.rs"]
#[allow(unused_imports)]
mod common;

use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs summary.sh on `log`; (exit success, stdout + stderr).
fn summary(log: &str, require_run: bool) -> (bool, String) {
    let dir = std::env::temp_dir().join(format!("kuryr-summary-{}-{}", std::process::id(), log.len()));
    std::fs::write(&dir, log).unwrap();
    let mut cmd = Command::new("bash");
    cmd.arg(root().join("functional/summary.sh")).arg("functional phase").arg(&dir);
    if require_run {
        cmd.arg("--require-run");
    }
    let out = cmd.output().expect("bash runs");
    let _ = std::fs::remove_file(&dir);
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

const SKIP: &str =
    "FUNCTIONAL TEST SKIPPED: create_and_converge (set KURYR_FUNCTIONAL=1 and run functional/openstack.sh start)";

#[test]
fn skipped_tests_are_counted_as_skipped_and_a_phase_that_ran_none_fails() {
    let result = |p: u32, f: u32, i: u32| {
        format!("test result: ok. {p} passed; {f} failed; {i} ignored; 0 measured; 0 filtered out; finished in 0.01s")
    };
    let filtered = "test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 7 filtered out; finished in 0.00s";
    // (log, --require-run, succeeds, first line)
    let cases = [
        (
            format!("{SKIP}\ntest create_and_converge ... ok\n{}\n", result(1, 0, 0)),
            true,
            false,
            "0 ran (0 passed, 0 failed), 1 skipped",
        ),
        (format!("{}\n{filtered}\n", result(3, 0, 1)), true, true, "3 ran (3 passed, 0 failed), 0 skipped, 1 ignored"),
        (format!("{SKIP}\n{}\n", result(2, 0, 0)), true, true, "1 ran (1 passed, 0 failed), 1 skipped"),
        (format!("{filtered}\n"), true, false, "0 ran"),
        (String::new(), true, false, "0 ran"),
        // The unit phase only reports: its functional tests are skipped by design.
        (format!("{SKIP}\n{}\n", result(1, 0, 0)), false, true, "0 ran (0 passed, 0 failed), 1 skipped"),
    ];
    for (log, require, ok, first) in cases {
        let (success, out) = summary(&log, require);
        assert_eq!(success, ok, "{log}\n{out}");
        assert!(out.starts_with(&format!("functional phase: {first}")), "{log}\n{out}");
        if log.contains(SKIP) {
            assert!(out.contains("skipped: create_and_converge"), "{out}");
        }
    }
}

/// The child half of [`a_functional_test_without_the_stack_says_it_is_skipped`]: a functional
/// test's gate, as every functional test calls it.
#[test]
fn gate_of_a_functional_test() {
    if std::env::var("KURYR_SUMMARY_CHILD").is_ok() {
        assert!(!common::enabled());
    }
}

/// libtest's name of [`gate_of_a_functional_test`] in this binary: its path without the crate
/// (`ship_functional_summary::gate_of_a_functional_test` in tests/it), as `--exact` takes it and
/// the skip marker prints it (a functional test's marker shows its path in its binary the same way).
fn gate_test_name() -> String {
    match module_path!().split_once("::") {
        Some((_crate, module)) => format!("{module}::gate_of_a_functional_test"),
        None => "gate_of_a_functional_test".to_string(),
    }
}

/// The gate writes the marker with the test's name where summary.sh sees it, even when libtest
/// captures the test's output (this test runs its child half as a separate process).
#[test]
fn a_functional_test_without_the_stack_says_it_is_skipped() {
    let name = gate_test_name();
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &name, "--test-threads=1"])
        .env("KURYR_SUMMARY_CHILD", "1")
        .env_remove("KURYR_FUNCTIONAL")
        .output()
        .unwrap();
    assert!(out.status.success());
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let marker = format!("{} {name} (", common::SKIP_MARKER);
    assert!(all.contains(&marker), "{all}");
    assert!(all.contains("1 passed"), "libtest still counts it as passed: the marker is what tells: {all}");
}
