//! Writes that are not whole inner chunks: regions at any alignment, reading staged data
//! back, and absorbing another writer's staged data.

use super::partial::PartialChunk;
use super::slots::Slot;
use super::ShardWriter;
use crate::domain::copy::copy_block;
use crate::domain::Domain;
use crate::error::{Error, Result};

impl ShardWriter {
    /// Write `region` (any box inside the shard, aligned to inner chunks or not): `data`
    /// holds its elements in C order, native endian. Inner chunks the region covers whole
    /// are encoded at once; chunks it covers in part are kept raw until they are covered
    /// whole or until commit, where the rest of each comes from the stored chunk or the
    /// fill value.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use shardwright::{Array, ArraySpec, Domain, MemoryStore};
    /// let spec = ArraySpec::new(vec![8, 8], "uint8", vec![4, 4]).shards(vec![8, 8]);
    /// let array = Array::create(Arc::new(MemoryStore::new()), "", &spec).unwrap();
    /// let writer = array.shard_writer(&array.shard(&[0, 0]).unwrap()).unwrap();
    /// writer.write_region(&Domain::new(vec![2, 2], vec![4, 1]), &[1, 2, 3, 4]).unwrap();
    /// writer.commit().unwrap();
    /// let column = array.read(&Domain::new(vec![0, 2], vec![8, 1])).unwrap();
    /// assert_eq!(column, vec![0, 0, 1, 2, 3, 4, 0, 0]);
    /// ```
    ///
    /// # Errors
    /// [`Error::Domain`] for a region outside the shard, [`Error::DataLength`] for data of
    /// the wrong size.
    pub fn write_region(&self, region: &Domain, data: &[u8]) -> Result<()> {
        self.write_region_of(region, data, region)
    }

    /// Write `region`, a part of `data_region`, taking its elements from `data` (the raw
    /// elements of all of `data_region`): no intermediate copy of the part.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use shardwright::{Array, ArraySpec, Domain, MemoryStore};
    /// let spec = ArraySpec::new(vec![4], "uint8", vec![2]).shards(vec![2]);
    /// let array = Array::create(Arc::new(MemoryStore::new()), "", &spec).unwrap();
    /// let writer = array.shard_writer(&array.shard(&[1]).unwrap()).unwrap();
    /// let all = Domain::new(vec![0], vec![4]);
    /// writer.write_region_of(&Domain::new(vec![2], vec![2]), &[1, 2, 3, 4], &all).unwrap();
    /// writer.commit().unwrap();
    /// assert_eq!(array.read(&all).unwrap(), vec![0, 0, 3, 4]);
    /// ```
    ///
    /// # Errors
    /// As [`write_region`](Self::write_region); [`Error::Domain`] also when `region` is not
    /// inside `data_region`.
    pub fn write_region_of(
        &self,
        region: &Domain,
        data: &[u8],
        data_region: &Domain,
    ) -> Result<()> {
        region.check_inside(&self.shard)?;
        region.check_inside(data_region)?;
        let elem = self.layout.element_size();
        let expected = data_region.size() as usize * elem;
        if data.len() != expected {
            return Err(Error::DataLength {
                region: Box::new(data_region.clone()),
                shape: data_region.shape().to_vec(),
                expected,
                got: data.len(),
            });
        }
        if region.is_empty() {
            return Ok(());
        }
        let full = self.layout.chunk_shape().to_vec();
        for chunk in self.chunk_grid.cells_meeting(region) {
            let (piece, slot) = self.piece_and_slot(&chunk, region)?;
            let at = relative(&piece, data_region)?;
            if piece == chunk {
                let mut raw = if chunk.shape() == full.as_slice() {
                    self.slots.buffer(self.layout.raw_chunk_bytes())?
                } else {
                    self.layout.fill_chunk()?
                };
                let zero = vec![0; full.len()];
                copy_block(
                    data,
                    data_region.shape(),
                    at.origin(),
                    &mut raw,
                    &full,
                    &zero,
                    piece.shape(),
                    elem,
                );
                self.submit(slot, raw)?;
            } else {
                self.write_partial(slot, chunk, |p| {
                    p.write(&self.layout, &piece, data, data_region)
                })?;
            }
        }
        Ok(())
    }

    /// Write `region` from an owned buffer: one of the shard's inner chunks takes the
    /// no-copy path of [`write_chunk_owned`](Self::write_chunk_owned), any other region
    /// goes through [`write_region`](Self::write_region).
    ///
    /// # Errors
    /// As [`write_region`](Self::write_region).
    pub fn write_owned(&self, region: &Domain, data: Vec<u8>) -> Result<()> {
        if let Ok(slot) = self.slot_of(region) {
            self.write_slot_owned(slot, region, data)
        } else {
            self.write_region(region, &data)
        }
    }

    /// Write `value` (one element's bytes) to every element of `region`, without ever
    /// holding the raw region: the inner chunks it covers whole share one encoded chunk
    /// (encoded once; a chunk of the fill value costs nothing), the ones it covers in part
    /// get the value in their partly written elements.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use shardwright::{Array, ArraySpec, Domain, MemoryStore};
    /// let spec = ArraySpec::new(vec![6], "uint8", vec![2]).shards(vec![6]);
    /// let array = Array::create(Arc::new(MemoryStore::new()), "", &spec).unwrap();
    /// let writer = array.shard_writer(&array.shard(&[0]).unwrap()).unwrap();
    /// writer.write_region_value(&Domain::new(vec![1], vec![5]), &[7]).unwrap();
    /// writer.commit().unwrap();
    /// assert_eq!(array.read(&array.bounds()).unwrap(), vec![0, 7, 7, 7, 7, 7]);
    /// ```
    ///
    /// # Errors
    /// As [`write_region`](Self::write_region).
    pub fn write_region_value(&self, region: &Domain, value: &[u8]) -> Result<()> {
        if value.len() != self.layout.element_size() {
            return Err(Error::DataLength {
                region: Box::new(region.clone()),
                shape: vec![],
                expected: self.layout.element_size(),
                got: value.len(),
            });
        }
        if self.slot_of(region).is_ok() {
            return self.write_chunk_value(region, value);
        }
        region.check_inside(&self.shard)?;
        if region.is_empty() {
            return Ok(());
        }
        let mut constant = None;
        let share = self.covers_two_whole_chunks(region);
        for chunk in self.chunk_grid.cells_meeting(region) {
            let (piece, slot) = self.piece_and_slot(&chunk, region)?;
            if piece == chunk && !share {
                // One whole chunk: nothing to share, encode it on the pool.
                self.write_chunk_value(&chunk, value)?;
            } else if piece == chunk {
                self.write_value_at(slot, &chunk, value, &mut constant)?;
            } else {
                self.write_partial(slot, chunk, |p| p.write_value(&self.layout, &piece, value))?;
            }
        }
        Ok(())
    }

    /// Whether `region` covers at least two unclipped inner chunks whole (then sharing one
    /// encoded chunk between them pays).
    fn covers_two_whole_chunks(&self, region: &Domain) -> bool {
        let full = self.layout.chunk_shape();
        let mut whole = 0;
        for chunk in self.chunk_grid.cells_meeting(region) {
            if chunk.shape() == full && chunk.intersect(region).as_ref() == Some(&chunk) {
                whole += 1;
                if whole >= 2 {
                    return true;
                }
            }
        }
        false
    }

    /// Apply `change` to the partly written chunk in `slot`, creating it (from what was
    /// written to the slot whole, if anything) first; submit it once complete.
    fn write_partial(
        &self,
        slot: usize,
        chunk: Domain,
        change: impl FnOnce(&mut PartialChunk) -> Result<()>,
    ) -> Result<()> {
        let mut partials = self.partials();
        let mut partial = match partials.remove(&slot) {
            Some(p) => p,
            None => match self.slots.written_raw(slot, &self.layout)? {
                Some(raw) => PartialChunk::from_raw(&self.layout, chunk, raw)?,
                None => PartialChunk::empty(&self.layout, chunk)?,
            },
        };
        if let Err(err) = change(&mut partial) {
            // Elements copied but not marked as written are not part of the chunk.
            partials.insert(slot, partial);
            self.observe_slot(slot, None)?;
            return Err(err);
        }
        if partial.is_complete() {
            // Still under the lock: no other write of this chunk can come in between.
            let raw = partial.into_raw(&self.layout)?;
            self.submit_locked(&mut partials, slot, raw)
        } else {
            partials.insert(slot, partial);
            self.observe_slot(slot, None)
        }
    }

    /// Copy the data staged in this writer over `out`, a buffer of `region` (raw, C order)
    /// that already holds the stored data: read-your-writes for transactions.
    ///
    /// # Errors
    /// [`Error::Format`] if a staged chunk fails to decode or an encode failed.
    pub fn overlay_staged(&self, region: &Domain, out: &mut [u8]) -> Result<()> {
        let Some(within) = region.intersect(&self.shard) else {
            return Ok(());
        };
        let elem = self.layout.element_size();
        let full = self.layout.chunk_shape().to_vec();
        for chunk in self.chunk_grid.cells_meeting(&within) {
            let (piece, slot) = self.piece_and_slot(&chunk, &within)?;
            let in_chunk = relative(&piece, &chunk)?;
            let in_out = relative(&piece, region)?;
            let partial = self.partials().get(&slot).cloned();
            let raw = match partial {
                Some(p) => {
                    let mut raw = crate::buffer::zeroed(self.layout.raw_chunk_bytes())?;
                    copy_block(
                        out,
                        region.shape(),
                        in_out.origin(),
                        &mut raw,
                        &full,
                        in_chunk.origin(),
                        piece.shape(),
                        elem,
                    );
                    p.overlay_onto(&self.layout, &mut raw);
                    raw
                }
                None => match self.slots.written_raw(slot, &self.layout)? {
                    Some(raw) => raw,
                    None => continue,
                },
            };
            copy_block(
                &raw,
                &full,
                in_chunk.origin(),
                out,
                region.shape(),
                in_out.origin(),
                piece.shape(),
                elem,
            );
        }
        Ok(())
    }

    /// Take over everything `other` (a writer of the same shard) staged, as if it had been
    /// written to this writer now: its whole chunks replace this writer's, its partial
    /// chunks are laid over this writer's data.
    ///
    /// # Errors
    /// [`Error::NotAnInnerChunk`] if `other` writes another shard; [`Error::Format`] if
    /// one of its encodes failed.
    pub fn absorb(&self, other: ShardWriter) -> Result<()> {
        if other.key != self.key {
            return Err(Error::NotAnInnerChunk {
                region: Box::new(other.shard.clone()),
                shard: Box::new(self.shard.clone()),
                example: Box::new(self.shard.clone()),
            });
        }
        let slots = other.slots.finish()?.into_memory()?;
        let partials = std::mem::take(&mut *other.partials());
        for (slot, state) in slots.into_iter().enumerate() {
            if matches!(state, Slot::Encoded(_) | Slot::Empty) {
                // One step, as in `submit_locked`.
                let mut partials = self.partials();
                partials.remove(&slot);
                self.slots.set(slot, state);
                self.observe_slot(slot, None)?;
            }
        }
        for (slot, later) in partials {
            let chunk = later.chunk.clone();
            self.write_partial(slot, chunk, |p| {
                p.absorb(&self.layout, &later);
                Ok(())
            })?;
        }
        Ok(())
    }
}

/// `piece` (inside `outer`) in `outer`'s coordinates.
fn relative(piece: &Domain, outer: &Domain) -> Result<Domain> {
    piece
        .relative_to(outer)
        .ok_or_else(|| Error::Internal(format!("{piece:?} is not inside {outer:?}")))
}

impl ShardWriter {
    /// The part of `region` in `chunk` (a cell of the chunk grid that meets it) and the
    /// chunk's slot in the shard.
    fn piece_and_slot(&self, chunk: &Domain, region: &Domain) -> Result<(Domain, usize)> {
        let piece = chunk
            .intersect(region)
            .ok_or_else(|| Error::Internal(format!("{chunk:?} does not meet {region:?}")))?;
        let index = chunk
            .index()
            .ok_or_else(|| Error::Internal(format!("{chunk:?} has no grid index")))?;
        Ok((piece, self.layout.slot_in_shard(index)))
    }
}
