//! Where a chunk goes in its shard: the slot of an inner chunk, checks of what is written
//! against it, and the padding of a chunk clipped at the array's edge.

use super::ShardWriter;
use crate::domain::copy::copy_block;
use crate::domain::Domain;
use crate::error::{Error, Result};

impl ShardWriter {
    pub(super) fn check_len(&self, chunk: &Domain, got: usize) -> Result<()> {
        let expected = chunk.size() as usize * self.layout.element_size();
        if got != expected {
            return Err(Error::DataLength {
                region: Box::new(chunk.clone()),
                shape: chunk.shape().to_vec(),
                expected,
                got,
            });
        }
        Ok(())
    }

    /// The slot of `chunk`, which must be one of the shard's inner chunks.
    pub(super) fn slot_of(&self, chunk: &Domain) -> Result<usize> {
        chunk.check_inside(&self.shard)?;
        if chunk.is_empty() {
            return Err(Error::NotAnInnerChunk {
                region: Box::new(chunk.clone()),
                shard: Box::new(self.shard.clone()),
                example: Box::new(self.chunk_grid.cell(&vec![0; chunk.ndim()])?),
            });
        }
        // On the hot path: no allocation unless the chunk is not an inner chunk.
        let (cs, shape, cps) = (
            self.layout.chunk_shape(),
            self.layout.shape(),
            self.layout.chunks_per_shard(),
        );
        // `check_inside` gave the chunk the shard's rank, and put it inside the shard
        // (inside the array): the zips below cover every dimension.
        let mut slot = 0u64;
        let dims = cs
            .iter()
            .zip(shape)
            .zip(cps)
            .zip(chunk.origin().iter().zip(chunk.shape()))
            .zip(self.shard.origin());
        for ((((&c, &size), &per), (&o, &len)), &shard_origin) in dims {
            // (shards begin on inner chunk boundaries: a rectilinear grid's too)
            let inside = o - shard_origin;
            if !inside.is_multiple_of(c) || len != c.min(size.saturating_sub(o)) {
                let index = self.chunk_grid.cell_index_at(chunk.origin());
                return Err(Error::NotAnInnerChunk {
                    region: Box::new(chunk.clone()),
                    shard: Box::new(self.shard.clone()),
                    example: Box::new(self.chunk_grid.cell(&index)?),
                });
            }
            slot = slot * per + inside / c;
        }
        Ok(slot as usize)
    }

    /// A full inner chunk of the fill value with `data` (of `chunk`'s clipped shape) at
    /// its origin.
    pub(super) fn padded(&self, chunk: &Domain, data: &[u8]) -> Result<Vec<u8>> {
        let elem = self.layout.element_size();
        let full = self.layout.chunk_shape();
        let mut raw = self.layout.fill_chunk()?;
        let zero = vec![0; full.len()];
        copy_block(
            data,
            chunk.shape(),
            &zero,
            &mut raw,
            full,
            &zero,
            chunk.shape(),
            elem,
        );
        Ok(raw)
    }
}
