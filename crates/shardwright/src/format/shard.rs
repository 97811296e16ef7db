//! Assembling a shard from encoded inner chunks, and splitting a stored one.

use std::ops::Range;

use super::{index, FormatError};
use crate::layout::{IndexLocation, Layout};

/// A shard ready to store: the encoded index and the encoded chunks, as a list of byte
/// slices in storage order (so a store can write them without joining them first).
#[derive(Debug)]
pub struct AssembledShard<'a> {
    index: Vec<u8>,
    chunks: Vec<&'a [u8]>,
    location: IndexLocation,
}

impl AssembledShard<'_> {
    /// The pieces in storage order.
    #[must_use]
    pub fn parts(&self) -> Vec<&[u8]> {
        let mut parts = Vec::with_capacity(self.chunks.len() + 1);
        if self.location == IndexLocation::Start {
            parts.push(&self.index[..]);
        }
        parts.extend(self.chunks.iter().copied());
        if self.location == IndexLocation::End {
            parts.push(&self.index[..]);
        }
        parts
    }

    /// The total size in bytes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.index.len() + self.chunks.iter().map(|c| c.len()).sum::<usize>()
    }

    /// Whether the shard is empty (never: a shard has at least its index).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The shard as one buffer.
    #[must_use]
    pub fn to_vec(&self) -> Vec<u8> {
        self.parts().concat()
    }
}

/// Lay encoded inner chunks out in slot (C) order and add the index. `chunks` holds one
/// entry per slot of the shard; `None` is an empty slot.
///
/// # Errors
/// [`FormatError::SlotCount`] when `chunks` does not have one entry per slot,
/// [`FormatError::NotSharded`] for a layout without shards.
pub fn assemble<'a>(
    layout: &Layout,
    chunks: &[Option<&'a [u8]>],
) -> Result<AssembledShard<'a>, FormatError> {
    let spec = layout.index().ok_or(FormatError::NotSharded)?;
    let mut offset = match spec.location() {
        IndexLocation::Start => spec.encoded_size(),
        IndexLocation::End => 0,
    };
    let mut entries = Vec::with_capacity(chunks.len());
    let mut stored = Vec::with_capacity(chunks.len());
    for chunk in chunks {
        match chunk {
            Some(bytes) => {
                entries.push((offset, bytes.len() as u64));
                offset += bytes.len() as u64;
                stored.push(*bytes);
            }
            None => entries.push(index::EMPTY),
        }
    }
    Ok(AssembledShard {
        index: index::encode(layout, &entries)?,
        chunks: stored,
        location: spec.location(),
    })
}

/// Split a stored shard into the byte range of each slot's chunk (`None`: empty slot),
/// checking the index checksum and that every range lies inside the shard's data.
///
/// # Errors
/// [`FormatError::Corrupt`] for a shard too short to hold its index, an index that fails
/// its checksum, or an entry pointing outside the shard; [`FormatError::NotSharded`] for a
/// layout without shards.
pub fn split(layout: &Layout, shard: &[u8]) -> Result<Vec<Option<Range<usize>>>, FormatError> {
    let spec = layout.index().ok_or(FormatError::NotSharded)?;
    let size = usize::try_from(spec.encoded_size()).unwrap_or(usize::MAX);
    let short = || {
        FormatError::Corrupt(format!(
            "shard of {} bytes is shorter than its {size}-byte index",
            shard.len()
        ))
    };
    let (index_bytes, data) = match spec.location() {
        IndexLocation::Start => {
            let (index, _) = shard.split_at_checked(size).ok_or_else(short)?;
            (index, size..shard.len())
        }
        IndexLocation::End => {
            let at = shard.len().checked_sub(size).ok_or_else(short)?;
            let (_, index) = shard.split_at_checked(at).ok_or_else(short)?;
            (index, 0..at)
        }
    };
    let ranges = split_index(layout, index_bytes, shard.len() as u64)?;
    debug_assert!(ranges
        .iter()
        .flatten()
        .all(|r| r.start >= data.start as u64 && r.end <= data.end as u64));
    Ok(ranges
        .into_iter()
        .map(|r| r.map(|r| r.start as usize..r.end as usize))
        .collect())
}

/// The byte range of each inner chunk in a stored shard of `shard_len` bytes, from its
/// encoded index alone (read with a ranged get: the first or last bytes of the shard), so
/// a reader can fetch only the chunks it needs.
///
/// # Errors
/// As [`split`].
pub fn split_index(
    layout: &Layout,
    index_bytes: &[u8],
    shard_len: u64,
) -> Result<Vec<Option<Range<u64>>>, FormatError> {
    let spec = layout.index().ok_or(FormatError::NotSharded)?;
    let size = spec.encoded_size();
    if shard_len < size {
        return Err(FormatError::Corrupt(format!(
            "shard of {shard_len} bytes is shorter than its {size}-byte index"
        )));
    }
    let data = match spec.location() {
        IndexLocation::Start => size..shard_len,
        IndexLocation::End => 0..shard_len - size,
    };
    let entries = index::decode(layout, index_bytes)?;
    entries
        .into_iter()
        .enumerate()
        .map(|(slot, entry)| {
            if entry == index::EMPTY {
                return Ok(None);
            }
            let (offset, nbytes) = entry;
            match offset.checked_add(nbytes) {
                Some(end) if offset >= data.start && end <= data.end => Ok(Some(offset..end)),
                _ => Err(FormatError::Corrupt(format!(
                    "index entry {slot} ({offset}, {nbytes}) points outside the shard's data \
                     (bytes {}..{})",
                    data.start, data.end
                ))),
            }
        })
        .collect()
}
