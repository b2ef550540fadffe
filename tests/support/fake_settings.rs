//! The settings of a controller on the fake API server (tests/support/fake_api.rs) with invented
//! OpenStack credentials (its routers are simulated): shared by tests/it/controller_runtime.rs,
//! tests/it/controller_router_set.rs and benches/pipeline.rs (`#[path = ...] mod fake_settings;`).

/// Ingress enabled, no leader election; `kubernetes` and `octavia` are extra lines of
/// `[kubernetes]` and `[octavia_defaults]`; `file_name` names the text in errors.
pub fn fake_cluster_settings(
    file_name: &str,
    api_root: &str,
    token_file: &std::path::Path,
    health_port: u16,
    kubernetes: &str,
    octavia: &str,
) -> kuryr_l7_router::config::Settings {
    let text = format!(
        "[kubernetes]
{kubernetes}
api_root = {api_root}
token_file = {}
enable_ingress = True
leader_election = False
health_port = {health_port}

[neutron_defaults]
project = 5b4c1b6e0c2d4b1a9f3e2d1c0b9a8f7e
lb_subnet = 3C0F6C8E-1B2D-4C3E-8F9A-0B1C2D3E4F5A

[octavia_defaults]
{octavia}

[neutron]
auth_url = https://keystone.example.com:5000/v3
username = kuryr
password = s3cr3t-PaSS
project_name = service
",
        token_file.display()
    );
    kuryr_l7_router::config::load_texts(&[(file_name.into(), text)], Vec::new()).unwrap().settings
}

/// The file of the bearer token the settings name (the fake API server takes any), in a
/// temporary directory: keep the directory while the controller reads the file.
#[allow(dead_code)] // benches/pipeline.rs includes this file and writes its own
pub fn token_file() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "fake-token\n").unwrap();
    (dir, token)
}
