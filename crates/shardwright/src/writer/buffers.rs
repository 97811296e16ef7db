//! Raw chunk buffers reused from chunk to chunk and from shard writer to shard writer.
//!
//! Each `w[c] = data` copies into a raw buffer that an encode task drops when it is done.
//! Allocating a fresh buffer for each chunk (and for each new shard writer) made glibc grow
//! its heap and give the top back over and over, a page fault per 4 KiB every time; one
//! pool for the process keeps a few buffers instead. It holds at most [`MAX_BUFFERS`]
//! buffers and [`MAX_BYTES`] in all (buffers past that are freed), so memory stays within
//! the bound of raw chunks in flight.

use std::sync::{Mutex, PoisonError};

/// The most buffers kept.
pub(crate) const MAX_BUFFERS: usize = 32;

/// The most bytes kept (buffers' capacities).
pub(crate) const MAX_BYTES: usize = 64 << 20;

#[derive(Default)]
struct Pool {
    buffers: Vec<Vec<u8>>,
    bytes: usize,
}

static POOL: Mutex<Pool> = Mutex::new(Pool {
    buffers: Vec::new(),
    bytes: 0,
});

/// An empty buffer with room for `len` bytes (and not more than twice that), if the pool
/// has one.
pub(crate) fn take(len: usize) -> Option<Vec<u8>> {
    if std::env::var_os("SW_NOPOOL").is_some() {
        return None;
    }
    let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
    let fits = pool
        .buffers
        .iter()
        .rposition(|b| b.capacity() >= len && b.capacity() / 2 <= len)?;
    let mut buffer = pool.buffers.swap_remove(fits);
    pool.bytes -= buffer.capacity();
    buffer.clear();
    Some(buffer)
}

/// Keep `buffer` for [`take`], or free it if the pool is full.
pub(crate) fn give(buffer: Vec<u8>) {
    if std::env::var_os("SW_NOPOOL").is_some() {
        return;
    }
    let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
    if pool.buffers.len() < MAX_BUFFERS && pool.bytes + buffer.capacity() <= MAX_BYTES {
        pool.bytes += buffer.capacity();
        pool.buffers.push(buffer);
    }
}
