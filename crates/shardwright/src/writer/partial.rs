//! Inner chunks written only in part: a raw buffer of the full chunk and a bit per element
//! saying which elements were written. At commit they are completed from the stored chunk
//! (decoded) or the fill value.

use crate::buffer::{self, AllocError};
use crate::domain::copy::{copy_block, fill_block};
use crate::domain::Domain;
use crate::error::Error;
use crate::layout::Layout;

/// One partly written inner chunk.
#[derive(Debug, Clone)]
pub(crate) struct PartialChunk {
    /// The chunk, clipped to the array.
    pub(crate) chunk: Domain,
    /// Raw elements of the full (unclipped) chunk; only covered ones are meaningful.
    raw: Vec<u8>,
    /// One bit per element of the full chunk (C order).
    covered: Vec<u64>,
    /// Covered elements that lie in the array.
    n_covered: u64,
}

impl PartialChunk {
    /// A chunk with nothing written yet.
    pub(crate) fn empty(layout: &Layout, chunk: Domain) -> Result<Self, AllocError> {
        Self::with_raw(layout, chunk, buffer::zeroed(layout.raw_chunk_bytes())?)
    }

    fn with_raw(layout: &Layout, chunk: Domain, raw: Vec<u8>) -> Result<Self, AllocError> {
        let words = layout.chunk_elements().div_ceil(64);
        let mut covered = Vec::new();
        covered
            .try_reserve_exact(buffer::size_of(words, 1)?)
            .map_err(|_| AllocError::new(words.saturating_mul(8)))?;
        covered.resize(words as usize, 0u64);
        Ok(Self {
            chunk,
            raw,
            covered,
            n_covered: 0,
        })
    }

    /// A chunk whose every element is already written with `raw` (a full raw chunk).
    pub(crate) fn from_raw(layout: &Layout, chunk: Domain, raw: Vec<u8>) -> Result<Self, Error> {
        let mut partial = Self::with_raw(layout, chunk.clone(), raw)?;
        let origin = vec![0; chunk.ndim()];
        partial.mark(layout, &Domain::new(origin, chunk.shape().to_vec()))?;
        Ok(partial)
    }

    /// The bytes any partly written chunk of `layout` holds in memory (all hold as much).
    pub(crate) fn memory_for(layout: &Layout) -> usize {
        layout.raw_chunk_bytes() + layout.chunk_elements().div_ceil(64) as usize * 8
    }

    /// The bytes this chunk holds in memory.
    pub(crate) fn memory(&self) -> usize {
        self.raw.len() + self.covered.len() * 8
    }

    /// Whether every element of the chunk inside the array was written.
    pub(crate) fn is_complete(&self) -> bool {
        self.n_covered == self.chunk.size()
    }

    /// The full raw chunk, once complete (padding outside the array: the fill value).
    pub(crate) fn into_raw(self, layout: &Layout) -> Result<Vec<u8>, AllocError> {
        let mut base = layout.fill_chunk()?;
        self.overlay_onto(layout, &mut base);
        Ok(base)
    }

    /// Copy `piece` (a block of `data`, an array of `region`) into the chunk.
    pub(crate) fn write(
        &mut self,
        layout: &Layout,
        piece: &Domain,
        data: &[u8],
        region: &Domain,
    ) -> Result<(), Error> {
        let elem = layout.element_size();
        let at_src = inside(piece, region)?;
        let at_dst = inside(piece, &self.chunk)?;
        copy_block(
            data,
            region.shape(),
            at_src.origin(),
            &mut self.raw,
            layout.chunk_shape(),
            at_dst.origin(),
            piece.shape(),
            elem,
        );
        self.mark(layout, &at_dst)
    }

    /// Set every element of `piece` (inside the chunk, in array coordinates) to `value`
    /// (one element's bytes).
    pub(crate) fn write_value(
        &mut self,
        layout: &Layout,
        piece: &Domain,
        value: &[u8],
    ) -> Result<(), Error> {
        let at = inside(piece, &self.chunk)?;
        fill_block(
            &mut self.raw,
            layout.chunk_shape(),
            at.origin(),
            at.shape(),
            value,
        );
        self.mark(layout, &at)
    }

    /// Copy this chunk's written elements onto `base`, a full raw chunk.
    pub(crate) fn overlay_onto(&self, layout: &Layout, base: &mut [u8]) {
        let elem = layout.element_size();
        for (w, word) in self.covered.iter().enumerate() {
            let mut bits = *word;
            while bits != 0 {
                let b = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let i = (w * 64 + b) * elem;
                // Both are full raw chunks, so every covered element lies in both.
                if let (Some(to), Some(from)) =
                    (base.get_mut(i..i + elem), self.raw.get(i..i + elem))
                {
                    to.copy_from_slice(from);
                }
            }
        }
    }

    /// Merge a later partial write of the same chunk: its elements win.
    pub(crate) fn absorb(&mut self, layout: &Layout, later: &PartialChunk) {
        later.overlay_onto(layout, &mut self.raw);
        for (mine, theirs) in self.covered.iter_mut().zip(&later.covered) {
            *mine |= theirs;
        }
        self.n_covered = self.covered.iter().map(|w| u64::from(w.count_ones())).sum();
    }

    /// Mark the elements of `block` (relative to the chunk origin, inside the chunk) as
    /// written.
    fn mark(&mut self, layout: &Layout, block: &Domain) -> Result<(), Error> {
        let shape = layout.chunk_shape();
        let (Some((_, inner)), Some((&row_origin, outer_origin)), Some((&row_len, outer_shape))) = (
            shape.split_first(),
            block.origin().split_last(),
            block.shape().split_last(),
        ) else {
            return Err(Error::Internal("a partly written chunk of rank 0".into()));
        };
        // strides[d] = the product of shape[d + 1..]
        let mut strides: Vec<u64> = inner
            .iter()
            .rev()
            .scan(1u64, |acc, &n| {
                *acc *= n;
                Some(*acc)
            })
            .collect();
        strides.reverse();
        let (covered, n_covered) = (&mut self.covered, &mut self.n_covered);
        let mut mark_row = |start: u64| {
            for i in start..start + row_len {
                let bit = 1u64 << (i % 64);
                if let Some(word) = usize::try_from(i / 64)
                    .ok()
                    .and_then(|w| covered.get_mut(w))
                {
                    if *word & bit == 0 {
                        *word |= bit;
                        *n_covered += 1;
                    }
                }
            }
        };
        if outer_origin.is_empty() {
            mark_row(row_origin);
            return Ok(());
        }
        let rows = Domain::new(outer_origin.to_vec(), outer_shape.to_vec());
        let grid = crate::domain::Grid::new(rows.stop(), vec![1; outer_origin.len()])?;
        for row in grid.cells_meeting(&rows) {
            let start: u64 = row.origin().iter().zip(&strides).map(|(o, s)| o * s).sum();
            mark_row(start + row_origin);
        }
        Ok(())
    }
}

/// `piece` in the coordinates of `outer`, which holds it.
fn inside(piece: &Domain, outer: &Domain) -> Result<Domain, Error> {
    piece
        .relative_to(outer)
        .ok_or_else(|| Error::Internal(format!("{piece:?} is not inside {outer:?}")))
}
