//! What happens at commit: wait, merge with the stored shard if needed, store once.

use super::slots::Slot;
use crate::domain::Domain;
use crate::error::Result;
use crate::format::shard;
use crate::layout::Layout;
use crate::store::Store;

/// What one commit did.
///
/// ```
/// let stats = shardwright::CommitStats::default();
/// assert_eq!(stats.puts + stats.gets, 0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommitStats {
    /// Whole-object reads of the stored shard (0, or 1 when merging).
    pub gets: u64,
    /// Puts of the shard (0 or 1).
    pub puts: u64,
    /// Deletes of the shard (1 when every chunk ended up empty).
    pub deletes: u64,
    /// Bytes read from storage.
    pub bytes_read: u64,
    /// Bytes stored.
    pub bytes_written: u64,
    /// Inner chunks written through this writer.
    pub chunks_written: u64,
    /// Of those, chunks equal to the fill value everywhere (not stored).
    pub chunks_empty: u64,
    /// Stored inner chunks kept as they were (copied as encoded bytes).
    pub chunks_kept: u64,
}

impl std::ops::AddAssign for CommitStats {
    fn add_assign(&mut self, other: Self) {
        self.gets += other.gets;
        self.puts += other.puts;
        self.deletes += other.deletes;
        self.bytes_read += other.bytes_read;
        self.bytes_written += other.bytes_written;
        self.chunks_written += other.chunks_written;
        self.chunks_empty += other.chunks_empty;
        self.chunks_kept += other.chunks_kept;
    }
}

/// Whether the inner chunk in `slot` of `shard` holds any element of the array.
fn slot_meets_array(layout: &Layout, shard: &Domain, slot: usize) -> bool {
    let cps = layout.chunks_per_shard();
    let mut rest = slot as u64;
    for d in (0..cps.len()).rev() {
        let local = rest % cps[d];
        rest /= cps[d];
        let origin = shard.origin()[d] + local * layout.chunk_shape()[d];
        if origin >= layout.shape()[d] {
            return false;
        }
    }
    true
}

pub(super) fn commit(
    layout: &Layout,
    store: &dyn Store,
    key: &str,
    shard_domain: &Domain,
    slots: Vec<Slot>,
) -> Result<CommitStats> {
    let mut stats = CommitStats::default();
    for slot in &slots {
        match slot {
            Slot::Encoded(_) => stats.chunks_written += 1,
            Slot::Empty => {
                stats.chunks_written += 1;
                stats.chunks_empty += 1;
            }
            Slot::Unwritten => {}
            Slot::Pending(_) => unreachable!("commit waits for every encode"),
        }
    }
    if stats.chunks_written == 0 {
        return Ok(stats);
    }

    if !layout.is_sharded() {
        match &slots[0] {
            Slot::Encoded(bytes) => {
                store.put(key, &[bytes])?;
                stats.puts = 1;
                stats.bytes_written = bytes.len() as u64;
            }
            _ => {
                store.delete(key)?;
                stats.deletes = 1;
            }
        }
        return Ok(stats);
    }

    let needs_merge = slots
        .iter()
        .enumerate()
        .any(|(i, s)| matches!(s, Slot::Unwritten) && slot_meets_array(layout, shard_domain, i));
    let stored = if needs_merge {
        stats.gets = 1;
        store.get(key)?
    } else {
        None
    };
    let stored_ranges = match &stored {
        Some(bytes) => {
            stats.bytes_read = bytes.len() as u64;
            Some(shard::split(layout, bytes)?)
        }
        None => None,
    };

    let chunks: Vec<Option<&[u8]>> = slots
        .iter()
        .enumerate()
        .map(|(i, slot)| match slot {
            Slot::Encoded(bytes) => Some(&bytes[..]),
            Slot::Empty => None,
            _ => {
                let range = stored_ranges.as_ref().and_then(|r| r[i].clone())?;
                stats.chunks_kept += 1;
                stored.as_deref().map(|b| &b[range])
            }
        })
        .collect();

    if chunks.iter().all(Option::is_none) {
        store.delete(key)?;
        stats.deletes = 1;
        return Ok(stats);
    }
    let assembled = shard::assemble(layout, &chunks)?;
    store.put(key, &assembled.parts())?;
    stats.puts = 1;
    stats.bytes_written = assembled.len() as u64;
    Ok(stats)
}
