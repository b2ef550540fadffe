//! The settings of a controller that watches the fake API server (tests/support/fake_api.rs) and
//! answers for its Ingresses and Gateways through the status responder Service, shared by
//! tests/it/controller_gateway.rs and tests/it/conformance_status.rs
//! (`crate::support::controller_settings`).

use std::path::Path;

/// Ingress enabled, no leader election, a free health port; `file_name` names the text in errors.
pub fn status_responder_settings(
    api_root: &str,
    token_file: &Path,
    file_name: &str,
) -> kuryr_l7_router::config::Settings {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let text = format!(
        "[kubernetes]\napi_root = {api_root}\ntoken_file = {}\nenable_ingress = True\nleader_election = False\n\
         health_port = {free}\n\n[neutron_defaults]\nlb_subnet = 3c0f6c8e-1b2d-4c3e-8f9a-0b1c2d3e4f5a\n\n\
         [status_responder]\nservice = kuryr-l7-router/kuryr-status-responder\n\n\
         [neutron]\nauth_url = https://keystone.example.com:5000/v3\nusername = kuryr\npassword = x\nproject_name = service\n",
        token_file.display()
    );
    kuryr_l7_router::config::load_texts(&[(file_name.into(), text)], Vec::new()).unwrap().settings
}
