//! The global tracing subscriber of the integration tests. They share one process (tests/it), and
//! a process has one global subscriber, so the tests that need one take this one:
//!
//! - a [`Capture`] records the log lines of every thread, at every level and of every target,
//!   while it lives (tests/it/barbican_http.rs: a payload is never logged);
//! - a [`ThreadCapture`] records the log lines of its own thread up to a level, as plain text
//!   (tests/it/controller_secrets.rs, tests/it/controller_stamps.rs);
//! - what `RUST_LOG` selects (errors without it) goes to the output of the test that logged it
//!   (libtest shows it for a failed test, and with `-- --nocapture`; tests/it/controller_runtime.rs).
//!
//! A test that captures with a subscriber of its own thread (`tracing::subscriber::set_default`)
//! calls [`init`] first. While such a subscriber is the only one registered, tracing caches
//! "never" for a callsite first reached on a thread without a subscriber (another test's), and
//! this test then misses that line; with the global one registered too, tracing asks both.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::dynamic_filter_fn;
use tracing_subscriber::prelude::*;

/// What the captures recorded, in order.
static LINES: Mutex<Vec<u8>> = Mutex::new(Vec::new());
/// The captures alive: the capture layer records only while there is one.
static CAPTURES: AtomicUsize = AtomicUsize::new(0);

struct Lines;

impl std::io::Write for Lines {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        LINES.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Installs the global subscriber, once per process.
pub fn init() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        // Asked at every event (not cached per callsite): a capture may start at any time.
        let capture = tracing_subscriber::fmt::layer()
            .with_writer(|| Lines)
            .with_filter(dynamic_filter_fn(|_, _| CAPTURES.load(Ordering::SeqCst) > 0));
        let output = tracing_subscriber::fmt::layer().with_test_writer().with_filter(EnvFilter::from_default_env());
        let subscriber = tracing_subscriber::registry().with(capture).with(output);
        // The `log` records of the dependencies (reqwest's, rustls') as well only with RUST_LOG:
        // bridged, every one of them would cost a call into the subscriber in every test.
        let installed = if std::env::var_os("RUST_LOG").is_some() {
            subscriber.try_init().is_ok()
        } else {
            tracing::subscriber::set_global_default(subscriber).is_ok()
        };
        assert!(installed, "the integration tests install no other global subscriber");
    });
}

/// Every log line of the process while it lives (see the module's doc).
pub struct Capture(());

pub fn capture() -> Capture {
    init();
    CAPTURES.fetch_add(1, Ordering::SeqCst);
    Capture(())
}

impl Capture {
    /// Every line captured so far, by this capture and any other.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&LINES.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        CAPTURES.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The log lines of the thread that made it, up to its level, without colours, while it lives
/// (a subscriber of this thread, registered after the global one: see the module's doc).
pub struct ThreadCapture {
    lines: SharedLines,
    _guard: tracing::subscriber::DefaultGuard,
}

#[derive(Clone, Default)]
struct SharedLines(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for SharedLines {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Records this thread's log lines up to `level` (see [`ThreadCapture`]).
pub fn capture_thread(level: tracing::Level) -> ThreadCapture {
    init();
    let lines = SharedLines::default();
    let sink = lines.clone();
    let subscriber =
        tracing_subscriber::fmt().with_max_level(level).with_writer(move || sink.clone()).with_ansi(false).finish();
    ThreadCapture { lines, _guard: tracing::subscriber::set_default(subscriber) }
}

impl ThreadCapture {
    /// Every line recorded so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.lines.0.lock().unwrap()).into_owned()
    }
}
