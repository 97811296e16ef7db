//! What happens at commit: wait, merge with the stored shard if needed, store once.

use std::collections::BTreeMap;
use std::ops::Range;

use rayon::prelude::*;

use super::partial::PartialChunk;
use super::slots::{Finished, Slot};
use super::WriterOptions;
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::format::{chunk, index, shard, FormatError};
use crate::layout::Layout;
use crate::store::{Store, StoreError, Upload};

/// What one commit did.
///
/// ```
/// let stats = shardwright::CommitStats::default();
/// assert_eq!(stats.puts + stats.gets, 0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommitStats {
    /// Whole-object reads of the stored shard (0 without a merge; 1 + one per retry).
    pub gets: u64,
    /// Successful puts of the shard (0 or 1).
    pub puts: u64,
    /// Deletes of the shard (1 when every chunk ended up empty).
    pub deletes: u64,
    /// Bytes read from storage.
    pub bytes_read: u64,
    /// Bytes stored.
    pub bytes_written: u64,
    /// Inner chunks written whole through this writer.
    pub chunks_written: u64,
    /// Of those, chunks equal to the fill value everywhere (not stored).
    pub chunks_empty: u64,
    /// Inner chunks written in part, completed from the stored chunk or the fill value.
    pub chunks_partial: u64,
    /// Stored inner chunks decoded to complete partly written ones.
    pub chunks_decoded: u64,
    /// Stored inner chunks kept as they were (copied as encoded bytes).
    pub chunks_kept: u64,
    /// Conditional puts refused because another writer changed the shard (each retried).
    pub conflicts: u64,
}

impl std::ops::AddAssign for CommitStats {
    fn add_assign(&mut self, o: Self) {
        self.gets += o.gets;
        self.puts += o.puts;
        self.deletes += o.deletes;
        self.bytes_read += o.bytes_read;
        self.bytes_written += o.bytes_written;
        self.chunks_written += o.chunks_written;
        self.chunks_empty += o.chunks_empty;
        self.chunks_partial += o.chunks_partial;
        self.chunks_decoded += o.chunks_decoded;
        self.chunks_kept += o.chunks_kept;
        self.conflicts += o.conflicts;
    }
}

/// The shard a commit writes.
pub(super) struct Target<'a> {
    pub(super) layout: &'a Layout,
    pub(super) store: &'a dyn Store,
    pub(super) key: &'a str,
    pub(super) shard: &'a Domain,
    pub(super) options: &'a WriterOptions,
}

/// Whether the inner chunk in `slot` of `shard` holds any element of the array.
fn slot_meets_array(layout: &Layout, shard: &Domain, slot: usize) -> bool {
    let mut rest = slot as u64;
    let dims = layout
        .chunks_per_shard()
        .iter()
        .zip(shard.origin())
        .zip(layout.chunk_shape().iter().zip(layout.shape()))
        .rev();
    for ((&per, &origin), (&chunk, &size)) in dims {
        let local = rest % per.max(1);
        rest /= per.max(1);
        if origin + local * chunk >= size {
            return false;
        }
    }
    true
}

/// The byte range of each slot's chunk in a stored shard (the whole value, unsharded).
fn stored_ranges(layout: &Layout, bytes: &[u8]) -> Result<Vec<Option<Range<usize>>>, FormatError> {
    if layout.is_sharded() {
        shard::split(layout, bytes)
    } else {
        Ok(vec![Some(0..bytes.len())])
    }
}

pub(super) fn commit(
    target: &Target<'_>,
    finished: Finished,
    partials: BTreeMap<usize, PartialChunk>,
) -> Result<CommitStats> {
    let layout = target.layout;
    let mut stats = CommitStats::default();
    for slot in &finished.slots {
        match slot {
            Slot::Encoded(_) | Slot::Spilled { .. } => stats.chunks_written += 1,
            Slot::Empty => {
                stats.chunks_written += 1;
                stats.chunks_empty += 1;
            }
            Slot::Unwritten => {}
            Slot::Pending(_) => unreachable!("commit waits for every encode"),
        }
    }
    stats.chunks_partial = partials.len() as u64;
    if stats.chunks_written == 0 && partials.is_empty() {
        return Ok(stats);
    }
    let Finished {
        mut slots,
        mut upload,
        dead,
    } = finished;
    let needs_read = !partials.is_empty()
        || slots.iter().enumerate().any(|(i, s)| {
            matches!(s, Slot::Unwritten) && slot_meets_array(layout, target.shard, i)
        });
    if needs_read
        && upload
            .as_ref()
            .is_some_and(|u| !u.completes_conditionally())
    {
        // A merge must be stored conditionally, and this upload cannot complete on a
        // condition: read its live chunks back (memory: the encoded shard), drop it
        // (aborting it) and store the merged shard with one conditional put.
        slots = Finished {
            slots,
            upload: upload.take(),
            dead: 0,
        }
        .into_memory()?;
    }
    if let (true, Some(old)) = (dead > 0, upload.as_mut()) {
        // Chunks written twice left bytes in the upload that nothing points to.
        upload = Some(compact(target, old.as_mut(), &mut slots)?);
    }
    let base = upload.as_ref().map_or(0, |u| u.len());
    if !needs_read {
        // Every chunk is new: no read, and an unconditional put.
        let pieces: Vec<Piece<'_>> = slots.iter().map(Piece::of).collect();
        store(
            target,
            &pieces,
            upload.as_deref_mut(),
            base,
            None,
            &mut stats,
        )?;
        return Ok(stats);
    }

    for attempt_no in 0..=target.options.retries {
        if attempt_no > 0 {
            backoff(attempt_no);
        }
        let stored = target.store.get_versioned(target.key)?;
        stats.gets += 1;
        let (bytes, version) = match stored {
            Some((bytes, version)) => (Some(bytes), Some(version)),
            None => (None, None),
        };
        stats.bytes_read += bytes.as_ref().map_or(0, |b| b.len() as u64);
        let ranges = match bytes.as_deref().map(|b| stored_ranges(layout, b)) {
            None => None,
            Some(Ok(ranges)) => Some(ranges),
            Some(Err(FormatError::Corrupt(_))) if target.options.overwrite_corrupt => None,
            Some(Err(e @ FormatError::Corrupt(_))) => return Err(e.in_shard(target.key).into()),
            Some(Err(e)) => return Err(e.into()),
        };
        let stored_chunk = |slot: usize| -> Option<&[u8]> {
            let range = ranges.as_ref()?.get(slot)?.clone()?;
            // `split` checked every range against the shard's size.
            bytes.as_deref().and_then(|b| b.get(range))
        };

        // Complete the partly written chunks, in parallel: only these are decoded.
        let completed: Vec<(usize, bool, Option<Vec<u8>>)> = partials
            .par_iter()
            .map(|(&slot, partial)| {
                let (mut base, decoded) = match stored_chunk(slot).map(|e| chunk::decode(layout, e))
                {
                    Some(Ok(raw)) => (raw, true),
                    // A stored chunk that does not decode is rewritten from the fill value.
                    Some(Err(FormatError::Corrupt(_))) if target.options.overwrite_corrupt => {
                        (layout.fill_chunk()?, false)
                    }
                    Some(Err(e)) => return Err(e.in_shard(target.key).into()),
                    None => (layout.fill_chunk()?, false),
                };
                partial.overlay_onto(layout, &mut base);
                Ok((slot, decoded, chunk::encode(layout, base)?))
            })
            .collect::<Result<_>>()?;
        let mut attempt = stats;
        attempt.chunks_decoded = completed.iter().filter(|c| c.1).count() as u64;
        let completed: BTreeMap<usize, Option<Vec<u8>>> =
            completed.into_iter().map(|(s, _, e)| (s, e)).collect();

        let mut pieces: Vec<Piece<'_>> = Vec::with_capacity(slots.len());
        for (i, slot) in slots.iter().enumerate() {
            pieces.push(match (slot, completed.get(&i)) {
                (_, Some(done)) => done.as_deref().map_or(Piece::Empty, Piece::Bytes),
                (Slot::Unwritten, None) => match stored_chunk(i) {
                    Some(kept) => match verify_kept(layout, kept) {
                        Ok(()) => {
                            attempt.chunks_kept += 1;
                            Piece::Bytes(kept)
                        }
                        // A kept chunk that fails its checksum is dropped (the fill value).
                        Err(FormatError::Corrupt(_)) if target.options.overwrite_corrupt => {
                            Piece::Empty
                        }
                        Err(e) => return Err(e.in_shard(target.key).into()),
                    },
                    None => Piece::Empty,
                },
                (slot, None) => Piece::of(slot),
            });
        }
        let condition = Some(version.as_ref());
        match store(
            target,
            &pieces,
            upload.as_deref_mut(),
            base,
            condition,
            &mut attempt,
        ) {
            Ok(()) => return Ok(attempt),
            Err(Error::Store(StoreError::Conflict { .. })) => {
                stats = attempt;
                stats.chunks_kept = 0;
                stats.conflicts += 1;
            }
            Err(e) => return Err(e),
        }
    }
    Err(Error::Conflict {
        key: target.key.to_string(),
        attempts: target.options.retries + 1,
    })
}

/// Check a stored inner chunk that a merge keeps as encoded bytes (it is not decoded):
/// when the inner codec chain ends with `crc32c`, its checksum must hold, so a bit flipped
/// in the chunk — on disk or in transit, in the read of the shard to merge with — is a
/// [`FormatError::Corrupt`] and is never stored into the new shard. Without a chunk
/// checksum, nothing can tell a damaged chunk from a good one short of decoding it (and
/// many damaged frames still decode: zstd stores incompressible data as raw blocks), so
/// the chunk is carried over verbatim, as it was read; the shard index (with its own
/// `crc32c`, the default) and every chunk's byte range are always checked, so truncated
/// reads and damaged indexes are detected in any case.
fn verify_kept(layout: &Layout, encoded: &[u8]) -> Result<(), FormatError> {
    use zarrs::array::codec::Crc32cCodec;
    use zarrs::array::{BytesRepresentation, BytesToBytesCodecTraits};
    let chain = layout.inner_codecs();
    let Some(last) = chain.bytes_to_bytes_codecs().last() else {
        return Ok(());
    };
    let Some(crc) = last.as_any().downcast_ref::<Crc32cCodec>() else {
        return Ok(());
    };
    crc.decode(
        std::borrow::Cow::Borrowed(encoded),
        &BytesRepresentation::UnboundedSize,
        &crate::format::codec_options(),
    )
    .map(drop)
    .map_err(|e| FormatError::Corrupt(format!("a kept inner chunk fails its crc32c: {e}")))
}

/// Sleep before retry `n` (1, 2, ...): exponential from 1 ms, capped at 200 ms, with
/// jitter so writers that conflicted once do not collide again in lockstep.
fn backoff(n: u32) {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(n);
    let jitter = hasher.finish() % 1000; // per mille
    let base_us = (1000u64 << n.min(8)).min(200_000);
    std::thread::sleep(std::time::Duration::from_micros(
        base_us / 2 + base_us * jitter / 2000,
    ));
}

/// Copy the chunks of `slots` spilled to `old` into a new upload, in slot order, a
/// megabyte at a time, and point the slots at their new places. `old` is dropped (and its
/// bytes removed) by the caller.
fn compact(
    target: &Target<'_>,
    old: &mut dyn Upload,
    slots: &mut [Slot],
) -> Result<Box<dyn Upload>> {
    let mut new = target
        .store
        .begin_upload(target.key)?
        .ok_or_else(|| StoreError::io(target.key, "the store does not stream"))?;
    let mut batch = Vec::new();
    for slot in slots.iter_mut() {
        if let Slot::Spilled { offset, len } = *slot {
            let at = new.len() + batch.len() as u64;
            batch.extend_from_slice(&old.read(offset..offset + len)?);
            *slot = Slot::Spilled { offset: at, len };
            if batch.len() >= super::spill::STAGE_BYTES {
                new.append(&[&batch])?;
                batch.clear();
            }
        }
    }
    // The last batch is empty when no live chunk follows the last full batch, or when
    // every spilled chunk was written again (as the fill value, or in part).
    if !batch.is_empty() {
        new.append(&[&batch])?;
    }
    Ok(new)
}

/// What one slot of the stored shard holds.
#[derive(Debug, Clone, Copy)]
enum Piece<'a> {
    /// Nothing (an empty slot).
    Empty,
    /// These encoded bytes (in memory).
    Bytes(&'a [u8]),
    /// Bytes already in the upload.
    Uploaded { offset: u64, len: u64 },
}

impl<'a> Piece<'a> {
    fn of(slot: &'a Slot) -> Self {
        match slot {
            Slot::Encoded(bytes) => Piece::Bytes(bytes),
            &Slot::Spilled { offset, len } => Piece::Uploaded { offset, len },
            _ => Piece::Empty,
        }
    }
}

/// Store the shard made of `pieces` (one per slot): one put, or one delete when every
/// slot is empty. With an `upload` (holding the `Uploaded` pieces in its first `base`
/// bytes), the in-memory pieces and the index are appended to it and it completes;
/// otherwise the shard is assembled and put. With `condition`, the put (or delete) is
/// conditional on that version.
fn store(
    target: &Target<'_>,
    pieces: &[Piece<'_>],
    upload: Option<&mut (dyn Upload + 'static)>,
    base: u64,
    condition: Option<Option<&crate::store::Version>>,
    stats: &mut CommitStats,
) -> Result<()> {
    let (store, key) = (target.store, target.key);
    if pieces.iter().all(|p| matches!(p, Piece::Empty)) {
        // A merge that leaves nothing deletes only what it read: another writer's newer
        // shard must not vanish.
        match condition {
            None => store.delete(key)?,
            Some(Some(expected)) if !store.deletes_conditionally() => {
                // No conditional delete (object stores): store the empty value instead,
                // on the same condition, so a newer shard of another writer is kept.
                let empty = empty_value(target.layout, pieces.len())?;
                store.put_if(key, &[&empty], Some(expected))?;
                stats.puts += 1;
                stats.bytes_written += empty.len() as u64;
                return Ok(());
            }
            Some(expected) => store.delete_if(key, expected)?,
        }
        stats.deletes += 1;
        return Ok(());
    }
    if let Some(upload) = upload {
        if upload.len() != base {
            upload.truncate(base)?; // a merge retried after a conflict
        }
        let mut offset = base;
        let mut parts: Vec<&[u8]> = Vec::new();
        let entries: Vec<(u64, u64)> = pieces
            .iter()
            .map(|piece| match *piece {
                Piece::Empty => index::EMPTY,
                Piece::Uploaded { offset, len } => (offset, len),
                Piece::Bytes(bytes) => {
                    parts.push(bytes);
                    offset += bytes.len() as u64;
                    (offset - bytes.len() as u64, bytes.len() as u64)
                }
            })
            .collect();
        let index = index::encode(target.layout, &entries)?;
        parts.push(&index);
        upload.append(&parts)?;
        let n = upload.len();
        upload.complete(condition)?;
        stats.puts += 1;
        stats.bytes_written += n;
        return Ok(());
    }
    let chunks: Vec<Option<&[u8]>> = pieces
        .iter()
        .map(|piece| match *piece {
            Piece::Bytes(bytes) => Some(bytes),
            Piece::Empty => None,
            Piece::Uploaded { .. } => unreachable!("uploaded pieces come with their upload"),
        })
        .collect();
    let assembled;
    let parts: Vec<&[u8]> = if target.layout.is_sharded() {
        assembled = shard::assemble(target.layout, &chunks)?;
        assembled.parts()
    } else {
        // Not all empty (checked above): the one chunk of an unsharded array.
        vec![chunks
            .first()
            .copied()
            .flatten()
            .ok_or_else(|| Error::Internal(format!("'{key}': no chunk to store")))?]
    };
    let n: u64 = parts.iter().map(|p| p.len() as u64).sum();
    match condition {
        None => store.put(key, &parts)?,
        Some(expected) => store.put_if(key, &parts, expected)?,
    }
    stats.puts += 1;
    stats.bytes_written += n;
    Ok(())
}

/// What a key holding no data stores where it cannot be deleted: a shard of `slots` empty
/// slots (only its index), or the fill-value chunk of an unsharded array.
fn empty_value(layout: &crate::layout::Layout, slots: usize) -> Result<Vec<u8>> {
    if layout.is_sharded() {
        Ok(shard::assemble(layout, &vec![None; slots])?.to_vec())
    } else {
        Ok(crate::format::chunk::encode_fill(layout)?)
    }
}
