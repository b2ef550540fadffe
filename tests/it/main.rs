//! The integration tests: ONE test binary (issue 32). Each `tests/*.rs` file was a test binary
//! of its own that linked the whole crate with kube, tokio and reqwest; as modules of this one,
//! the crate is linked once. A module is one former file, its tests named `MODULE::TEST`:
//! `cargo test --test it MODULE::` runs one module, `cargo test NAME` still finds a test by its
//! name (or part of it). A new integration test is a module here (a new `tests/*.rs` file would
//! be a binary of its own again). The functional tests (functional/, the `functional_*` targets
//! of Cargo.toml) stay binaries of their own: functional/test.sh runs them in parallel.
//!
//! Every test of the binary shares one process: a test that changes process-wide state (the
//! global tracing subscriber: `support::logs`) does it through `support`, once for all.

#[path = "../support/mod.rs"]
mod support;

mod barbican_http;
mod certificate;
mod cli_apply_gateway;
mod cli_move_cancel;
mod cli_offline;
mod cli_show;
mod cli_teardown;
mod config_load;
mod config_sample;
mod conformance_report;
mod conformance_status;
mod controller_client;
mod controller_gateway;
mod controller_gateway_client_ca;
mod controller_gateway_hosts;
mod controller_gateway_keep;
mod controller_gateway_limits;
mod controller_gateway_refusals;
mod controller_gateway_routers;
mod controller_health;
mod controller_holds;
mod controller_isolation;
mod controller_k8s;
mod controller_leader;
mod controller_members;
mod controller_node_port;
mod controller_pipeline;
mod controller_router_set;
mod controller_runtime;
mod controller_secrets;
mod controller_set_changes;
mod controller_set_health;
mod controller_set_outputs;
mod controller_set_records;
mod controller_set_rollback;
mod controller_stamps;
mod driver_certificates;
mod driver_client_ca;
mod driver_diff;
mod driver_holds;
mod driver_isolation;
mod driver_listeners;
mod driver_redirects;
mod driver_restart;
mod driver_router;
mod gateway_client_ca_driver;
mod gateway_conformance;
mod gateway_haproxy_order;
mod octavia_2025_bodies;
mod octavia_create_limit;
mod octavia_create_permits;
mod openstack_http;
mod placement;
mod placement_split;
mod preflight_http;
mod reliability_bad_input;
mod reliability_security;
mod ship_check_imports;
mod ship_devstack;
mod ship_dockerfile;
mod ship_functional_summary;
mod ship_functional_waves;
mod ship_manifests;
mod ship_secret_namespaces;
mod show_reasons;
mod status_responder;
mod translate_health;
mod translate_prop;
mod translate_quota;
mod translate_routing;
mod translate_status;
mod translate_tenancy;
mod translate_tls;
mod translate_zone;
