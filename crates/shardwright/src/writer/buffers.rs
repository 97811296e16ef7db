//! Raw chunk buffers reused from chunk to chunk and from shard writer to shard writer.
//!
//! Each `w[c] = data` copies into a raw buffer that an encode task hands back when it is
//! done. Allocating a fresh buffer for each chunk (and for each new shard writer) made glibc
//! grow its heap and give the top back over and over, a page fault per 4 KiB every time;
//! one pool for the process keeps a few buffers instead. It holds at most [`MAX_BUFFERS`]
//! buffers and [`MAX_BYTES`] in all; a buffer given back to a full pool pushes out the
//! oldest ones (so a process that moves on to another chunk size pools the new size), and
//! memory stays within the bound of raw chunks in flight plus that cap.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

/// The most buffers kept.
pub(crate) const MAX_BUFFERS: usize = 32;

/// The most bytes kept (buffers' capacities).
pub(crate) const MAX_BYTES: usize = 64 << 20;

struct Pool {
    /// Oldest first.
    buffers: VecDeque<Vec<u8>>,
    bytes: usize,
}

static POOL: Mutex<Pool> = Mutex::new(Pool {
    buffers: VecDeque::new(),
    bytes: 0,
});

/// An empty buffer with room for `len` bytes (and not more than twice that), if the pool
/// has one.
pub(crate) fn take(len: usize) -> Option<Vec<u8>> {
    let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
    let fits = pool
        .buffers
        .iter()
        .rposition(|b| b.capacity() >= len && b.capacity() / 2 <= len)?;
    let mut buffer = pool.buffers.remove(fits)?;
    pool.bytes -= buffer.capacity();
    buffer.clear();
    Some(buffer)
}

/// Keep `buffer` for [`take`], pushing out the oldest buffers if the pool is full; a
/// buffer larger than the whole pool is freed.
pub(crate) fn give(buffer: Vec<u8>) {
    if buffer.capacity() > MAX_BYTES || buffer.capacity() == 0 {
        return;
    }
    let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
    while pool.buffers.len() >= MAX_BUFFERS || pool.bytes + buffer.capacity() > MAX_BYTES {
        let Some(old) = pool.buffers.pop_front() else {
            break;
        };
        pool.bytes -= old.capacity();
    }
    pool.bytes += buffer.capacity();
    pool.buffers.push_back(buffer);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_empty_with_room_and_a_new_size_pushes_out_the_old() {
        // One test, since the pool is the process's.
        for _ in 0..MAX_BUFFERS {
            give(vec![7u8; 1000]);
        }
        let b = take(900).expect("a pooled buffer");
        assert!(b.is_empty() && b.capacity() >= 900);
        assert!(
            take(400).is_none(),
            "a buffer more than twice as large is not handed out"
        );
        // Another chunk size: given back to a full pool, it is kept.
        for _ in 0..MAX_BUFFERS {
            give(Vec::with_capacity(1 << 20));
        }
        assert!(take(1 << 20).is_some());
        let pool = POOL.lock().unwrap();
        assert!(pool.buffers.len() <= MAX_BUFFERS && pool.bytes <= MAX_BYTES);
        assert_eq!(
            pool.bytes,
            pool.buffers.iter().map(Vec::capacity).sum::<usize>()
        );
    }
}
