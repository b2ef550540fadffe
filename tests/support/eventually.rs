//! Polling until a condition holds, for the tests that drive the whole controller against the
//! fake API server (tests/it/controller_*.rs as `crate::support::eventually`, functional/leader.rs
//! with `#[path = "../tests/support/eventually.rs"] mod eventually;`).

use std::time::{Duration, Instant};

/// Waits until `f` returns `Some`, polling every `poll`, failing after `secs` with `what` in the
/// message.
pub async fn eventually_every<T>(what: &str, secs: u64, poll: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out after {secs} s waiting for: {what}");
        tokio::time::sleep(poll).await;
    }
}
