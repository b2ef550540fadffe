//! Resident memory of the bench process, per phase: what a structure holds (VmRSS after
//! giving freed memory back) and what a step briefly needs (VmHWM after a peak reset).

/// A line of `/proc/self/status`, in KiB.
fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with(field)).map(|l| l.to_string()))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

pub fn rss_mib() -> f64 {
    status_kib("VmRSS:") as f64 / 1024.0
}

pub fn hwm_mib() -> f64 {
    status_kib("VmHWM:") as f64 / 1024.0
}

unsafe extern "C" {
    fn malloc_trim(pad: usize) -> i32;
}

/// Gives freed memory back to the system (glibc), then resets VmHWM to the current RSS
/// (`/proc/self/clear_refs`, Linux >= 4.0), so that the next peak is the next step's own.
/// Returns the resident set after the trim.
pub fn settle() -> f64 {
    // SAFETY: glibc's malloc_trim only releases free heap pages.
    unsafe { malloc_trim(0) };
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    rss_mib()
}

/// What `f`'s result holds (resident growth, freed memory given back) and `f`'s peak, both
/// above the settled start.
pub fn measure<T>(f: impl FnOnce() -> T) -> (T, f64, f64) {
    let start = settle();
    let out = f();
    let peak = hwm_mib() - start;
    (out, settle() - start, peak)
}

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes allocated and not yet freed, when a bench registers [`Counting`] as its global
/// allocator (0 otherwise). Set against the resident set, it tells what a structure really
/// holds from what the allocator keeps around it (freed gaps between live blocks).
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, counting live bytes.
pub struct Counting;

// SAFETY: every call is forwarded to the system allocator unchanged; only a counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            LIVE.fetch_add(new_size, Ordering::Relaxed);
        }
        p
    }
}

pub fn live_mib() -> f64 {
    LIVE.load(Ordering::Relaxed) as f64 / (1024.0 * 1024.0)
}

/// What `f`'s result holds in live bytes (see [`Counting`]), next to [`measure`]'s resident
/// figures: `(result, held, peak, live)`.
pub fn measure_live<T>(f: impl FnOnce() -> T) -> (T, f64, f64, f64) {
    let live = live_mib();
    let (out, held, peak) = measure(f);
    (out, held, peak, live_mib() - live)
}
