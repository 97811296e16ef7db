//! Peak resident memory of this process (Linux), resettable between measurements.

/// Reset the kernel's peak-RSS mark for this process (Linux: `/proc/self/clear_refs`).
pub(crate) fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Peak RSS since the last reset, in MiB.
pub(crate) fn peak_mib() -> f64 {
    status_kib("VmHWM:").unwrap_or(0) as f64 / 1024.0
}

/// Current RSS, in MiB.
pub(crate) fn current_mib() -> f64 {
    status_kib("VmRSS:").unwrap_or(0) as f64 / 1024.0
}
