//! Buffers whose size comes from the user (a region to read, an inner chunk, a staged
//! region): allocated fallibly, so a request larger than memory is an error naming the
//! size, never an abort of the process. Used by every layer; uses only `domain`'s `fill`.
//!
//! ```
//! use shardwright::buffer::{filled, zeroed};
//! assert_eq!(zeroed(3).unwrap(), vec![0, 0, 0]);
//! assert_eq!(filled(2, &[1, 2]).unwrap(), vec![1, 2, 1, 2]);
//! assert!(zeroed(usize::MAX / 2).is_err());
//! ```

/// An allocation of `bytes` that the system refused (or a size that overflows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("out of memory: could not allocate {bytes} bytes ({})", human(*.bytes))]
pub struct AllocError {
    bytes: u64,
}

impl AllocError {
    /// The error for a request of `bytes`.
    #[must_use]
    pub fn new(bytes: u64) -> Self {
        Self { bytes }
    }

    /// The size requested.
    #[must_use]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// `bytes` in binary units, e.g. `16.0 TiB`.
fn human(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS.get(unit).copied().unwrap_or("EiB"))
}

/// The size in bytes of `count` elements of `element_size` bytes, if it fits in memory's
/// address space.
///
/// # Errors
/// [`AllocError`] naming the (saturated) size when it overflows.
pub fn size_of(count: u64, element_size: usize) -> Result<usize, AllocError> {
    count
        .checked_mul(element_size as u64)
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| isize::try_from(n).is_ok())
        .ok_or(AllocError::new(count.saturating_mul(element_size as u64)))
}

/// The most memory this process can have: RAM plus swap, or less where a cgroup (a
/// container's limit) says so (Linux; elsewhere no limit is known).
fn memory_ceiling() -> u64 {
    static CEILING: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *CEILING.get_or_init(|| {
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let kib = |field: &str| -> Option<u64> {
            let line = meminfo.lines().find(|l| l.starts_with(field))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        };
        let system = match (kib("MemTotal:"), kib("SwapTotal:")) {
            (Some(ram), swap) => (ram + swap.unwrap_or(0)).saturating_mul(1024),
            (None, _) => u64::MAX,
        };
        let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
            .unwrap_or(u64::MAX);
        system.min(cgroup)
    })
}

/// A buffer of `len` zero bytes. Zeroed pages come from the system on first touch, so
/// this costs no pass over the memory. A request of a gigabyte or more is also checked
/// against the memory the process can have at all (RAM plus swap, or its cgroup's limit):
/// where the system overcommits memory, such an allocation would "succeed" and the process
/// be killed when it touched the pages.
///
/// # Errors
/// [`AllocError`] when the memory cannot be had.
pub fn zeroed(len: usize) -> Result<Vec<u8>, AllocError> {
    if len == 0 {
        return Ok(Vec::new());
    }
    if len >= 1 << 30 && len as u64 > memory_ceiling() {
        return Err(AllocError::new(len as u64));
    }
    let layout = std::alloc::Layout::array::<u8>(len).map_err(|_| AllocError::new(len as u64))?;
    // SAFETY: `layout` has a non-zero size. A non-null pointer from `alloc_zeroed` is a
    // block of `len` initialized (zero) bytes with the alignment of `u8`, allocated by the
    // global allocator with this layout, which is what `Vec::from_raw_parts` requires for
    // a capacity and length of `len`.
    unsafe {
        let ptr = std::alloc::alloc_zeroed(layout);
        if ptr.is_null() {
            return Err(AllocError::new(len as u64));
        }
        Ok(Vec::from_raw_parts(ptr, len, len))
    }
}

/// A copy of `data`.
///
/// # Errors
/// [`AllocError`] when the memory cannot be had.
pub fn copied(data: &[u8]) -> Result<Vec<u8>, AllocError> {
    if data.len() >= 1 << 30 && data.len() as u64 > memory_ceiling() {
        return Err(AllocError::new(data.len() as u64));
    }
    let mut buffer = Vec::new();
    buffer
        .try_reserve_exact(data.len())
        .map_err(|_| AllocError::new(data.len() as u64))?;
    buffer.extend_from_slice(data);
    Ok(buffer)
}

/// A buffer of `count` copies of `value` (one element's bytes).
///
/// # Errors
/// [`AllocError`] when the memory cannot be had or the size overflows.
pub fn filled(count: u64, value: &[u8]) -> Result<Vec<u8>, AllocError> {
    let mut buffer = zeroed(size_of(count, value.len())?)?;
    if value.iter().any(|&b| b != 0) {
        crate::domain::copy::fill(&mut buffer, value);
    }
    Ok(buffer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_request_is_an_error_naming_its_size() {
        let err = zeroed(1 << 62).unwrap_err();
        assert_eq!(err.bytes(), 1 << 62);
        assert!(err
            .to_string()
            .contains("4611686018427387904 bytes (4.0 EiB)"));
        let err = size_of(u64::MAX / 2, 4).unwrap_err();
        assert_eq!(err.bytes(), u64::MAX);
    }

    #[test]
    fn buffers_hold_what_was_asked() {
        assert!(zeroed(0).unwrap().is_empty());
        assert_eq!(filled(3, &[0, 7]).unwrap(), vec![0, 7, 0, 7, 0, 7]);
        assert_eq!(filled(2, &[0, 0]).unwrap(), vec![0; 4]);
    }
}
