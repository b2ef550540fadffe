//! The whole controller (`runtime::run_with`) on a task of its own with one router's backend,
//! for the tests that run it against the fake API server (tests/support/fake_api.rs).

use kuryr_l7_router::config::Settings;
use kuryr_l7_router::controller::ControllerError;
use kuryr_l7_router::controller::writer::RouterBackend;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The controller's task: its result once stopped.
pub type Run = JoinHandle<Result<(), ControllerError>>;

/// Runs the controller on `settings` with `backend` as its router's until the sender returned
/// is fired or dropped.
pub fn spawn_controller<B: RouterBackend>(settings: Settings, backend: B) -> (oneshot::Sender<()>, Run) {
    let (stop, stopped) = oneshot::channel::<()>();
    let run =
        tokio::spawn(kuryr_l7_router::controller::runtime::run_with(settings, move |_, _| Ok(backend), async move {
            let _ = stopped.await;
        }));
    (stop, run)
}
