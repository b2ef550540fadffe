//! The helpers shared by the integration tests (tests/it/main.rs includes this file once; a test
//! reaches a helper as `crate::support::NAME`). benches/pipeline.rs, functional/dataplane.rs and
//! functional/leader.rs include some of these files on their own
//! (`#[path = "../tests/support/NAME.rs"] mod NAME;`), so a file here reaches a sibling only as
//! `super::NAME` (the same module in both layouts).

pub mod controller_run;
pub mod controller_settings;
pub mod eventually;
pub mod fake_api;
pub mod fake_octavia;
pub mod fake_settings;
pub mod gateway_case;
pub mod gateway_loop;
pub mod haproxy_eval;
pub mod http_request;
pub mod logs;
pub mod routed_hosts;
pub mod router_context;
