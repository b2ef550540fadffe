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
