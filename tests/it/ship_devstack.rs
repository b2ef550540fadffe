//! Shell lint: `bash -n` on every shell script of the repository (devstack plugin, functional
//! harness, CI entry point), and `shellcheck -S warning` on them when shellcheck is installed.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// devstack/plugin.sh, devstack/settings, functional/*.sh, functional/dataplane/*.sh, .ci/run.
fn scripts() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> =
        ["devstack/plugin.sh", "devstack/settings", ".ci/run"].iter().map(|p| root().join(p)).collect();
    for dir in ["functional", "functional/dataplane"] {
        let Ok(entries) = std::fs::read_dir(root().join(dir)) else { continue };
        let mut sh: Vec<PathBuf> =
            entries.map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "sh")).collect();
        sh.sort();
        out.extend(sh);
    }
    for p in &out {
        assert!(p.is_file(), "{} is missing", p.display());
    }
    out
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

#[test]
fn shell_scripts_parse() {
    let mut failures = Vec::new();
    for script in scripts() {
        let out = Command::new("bash").arg("-n").arg(&script).output().expect("bash runs");
        if !out.status.success() {
            failures.push(format!("{}:\n{}", rel(&script), String::from_utf8_lossy(&out.stderr)));
        }
    }
    assert!(failures.is_empty(), "bash -n failed:\n{}", failures.join("\n"));
}

#[test]
fn shell_scripts_pass_shellcheck() {
    if Command::new("shellcheck").arg("--version").output().is_err() {
        println!("NOTE: shellcheck is not installed; skipping the shellcheck part of the shell lint");
        return;
    }
    let scripts = scripts();
    let out = Command::new("shellcheck")
        .args(["-S", "warning", "-s", "bash", "-f", "gcc"])
        .args(&scripts)
        .current_dir(root())
        .output()
        .expect("shellcheck runs");
    assert!(
        out.status.success(),
        "shellcheck -S warning found problems:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn devstack_plugin_follows_the_conventions() {
    let plugin = std::fs::read_to_string(root().join("devstack/plugin.sh")).unwrap();
    assert!(plugin.contains("if is_service_enabled kuryr-l7-router"), "phases guarded by is_service_enabled");
    for phase in [
        r#""$1" == "stack" && "$2" == "install""#,
        r#""$1" == "stack" && "$2" == "post-config""#,
        r#""$1" == "stack" && "$2" == "extra""#,
        r#""$1" == "unstack""#,
        r#""$1" == "clean""#,
    ] {
        assert!(plugin.contains(phase), "devstack/plugin.sh does not handle {phase}");
    }
    assert!(plugin.contains("run_process kuryr-l7-router"), "the controller runs as a devstack service");
    assert!(plugin.contains("stop_process kuryr-l7-router"));
    let settings = std::fs::read_to_string(root().join("devstack/settings")).unwrap();
    for var in ["KURYR_ENABLE_INGRESS", "KURYR_L7_ROUTER_DIR", "KURYR_L7_ROUTER_REPO", "KURYR_L7_ROUTER_BIN"] {
        assert!(settings.contains(&format!("{var}=")), "devstack/settings has no default for {var}");
    }
    let sample = std::fs::read_to_string(root().join("devstack/local.conf.sample")).unwrap();
    for line in [
        "enable_plugin octavia ",
        "enable_plugin kuryr-l7-router ",
        "enable_service kuryr-l7-router",
        "KURYR_ENABLE_INGRESS=True",
    ] {
        assert!(sample.lines().any(|l| l.starts_with(line)), "devstack/local.conf.sample lacks `{line}`");
    }
}
