//! What differs from shard to shard: each shard's index, and (for a rectilinear grid, whose
//! shards differ in shape) each shard's own [`Layout`].

use std::borrow::Cow;
use std::num::NonZeroU64;
use std::sync::Arc;

use zarrs::array::CodecChain;

use super::parse::{decode_stages, index_shape_and_size, inner_codecs_metadata, non_zero};
use super::{IndexLocation, Layout, LayoutError};

/// How the index of each shard is encoded.
#[derive(Debug, Clone)]
pub struct IndexSpec {
    pub(crate) codecs: Arc<CodecChain>,
    pub(crate) location: IndexLocation,
    pub(crate) encoded_size: u64,
    /// The decoded index's array shape: the inner chunks per shard, then 2.
    pub(crate) shape: Vec<NonZeroU64>,
}

impl IndexSpec {
    /// Where the index lies in a shard.
    #[must_use]
    pub fn location(&self) -> IndexLocation {
        self.location
    }

    /// The size in bytes of an encoded index.
    #[must_use]
    pub fn encoded_size(&self) -> u64 {
        self.encoded_size
    }

    /// The same index codecs and location for a shard of `chunks_per_shard` inner chunks.
    fn for_chunks(&self, chunks_per_shard: &[u64]) -> Result<Self, LayoutError> {
        index_shape_and_size(Arc::clone(&self.codecs), self.location, chunks_per_shard)
    }
}

impl Layout {
    /// The layout of the shard at grid index `shard_index`: for an array whose shards all
    /// have one shape (a regular shard grid) the layout itself; for a rectilinear grid, a
    /// layout whose shard shape, inner chunks per shard and index (and, unsharded, chunk
    /// shape) are that shard's. Everything that encodes, decodes, assembles or splits one
    /// shard takes this layout.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use shardwright::domain::AxisCells;
    /// use shardwright::layout::{ArraySpec, Layout};
    /// let json = ArraySpec::new(vec![10], "uint8", vec![2])
    ///     .shard_cells(vec![AxisCells::Edges(vec![4, 6])])
    ///     .to_json()
    ///     .unwrap();
    /// let layout = Arc::new(Layout::from_json(json.as_bytes()).unwrap());
    /// assert_eq!(layout.for_shard(&[1]).unwrap().chunks_per_shard(), &[3]);
    /// assert_eq!(layout.for_shard(&[1]).unwrap().slot_in_shard(&[4]), 2);
    /// ```
    ///
    /// # Errors
    /// [`LayoutError::Shape`] for an index outside the shard grid.
    pub fn for_shard(self: &Arc<Self>, shard_index: &[u64]) -> Result<Arc<Self>, LayoutError> {
        Ok(match self.shard_layout(shard_index)? {
            Cow::Borrowed(_) => Arc::clone(self),
            Cow::Owned(layout) => Arc::new(layout),
        })
    }

    /// [`Layout::for_shard`] without an `Arc`: the layout itself (borrowed) for a regular
    /// shard grid, that shard's own layout (owned) for a rectilinear one.
    ///
    /// ```
    /// use std::borrow::Cow;
    /// use shardwright::layout::{ArraySpec, Layout};
    /// let json = ArraySpec::new(vec![10], "uint8", vec![2]).shards(vec![4]).to_json().unwrap();
    /// let layout = Layout::from_json(json.as_bytes()).unwrap();
    /// assert!(matches!(layout.shard_layout(&[2]).unwrap(), Cow::Borrowed(_)));
    /// ```
    ///
    /// # Errors
    /// As [`Layout::for_shard`].
    pub fn shard_layout(&self, shard_index: &[u64]) -> Result<Cow<'_, Self>, LayoutError> {
        if self.shard_grid.is_regular() {
            return Ok(Cow::Borrowed(self));
        }
        let cell = self
            .shard_grid
            .cell_unclipped(shard_index)
            .map_err(|e| LayoutError::Shape(e.to_string()))?;
        let mut layout = self.clone();
        layout.shard_shape = cell.shape().to_vec();
        if layout.index.is_none() {
            // An unsharded array's chunk is its shard: its codecs see this chunk's shape.
            layout.chunk_shape = cell.shape().to_vec();
            layout.chunk_shape_nz = non_zero(&layout.chunk_shape, "chunk shape")?;
            let inner_metadata = inner_codecs_metadata(&layout.metadata);
            layout.decode_stages = decode_stages(
                &inner_metadata,
                &layout.inner_codecs,
                &layout.chunk_shape,
                layout.element_size,
            )?
            .0;
        }
        layout.chunks_per_shard = layout
            .shard_shape
            .iter()
            .zip(&layout.chunk_shape)
            .map(|(s, c)| s / c)
            .collect();
        // an unsharded array's chunk grid is its shard grid
        layout.first_chunk = Some(if layout.index.is_none() {
            shard_index.to_vec()
        } else {
            cell.origin()
                .iter()
                .zip(&layout.chunk_shape)
                .map(|(o, c)| o / c)
                .collect()
        });
        if let Some(index) = &layout.index {
            layout.index = Some(index.for_chunks(&layout.chunks_per_shard)?);
        }
        Ok(Cow::Owned(layout))
    }

    /// The grid index of the first inner chunk of the shard at `shard_index` (of the one
    /// shard a [`Layout::for_shard`] layout describes, whatever index is given).
    ///
    /// ```
    /// use shardwright::layout::{ArraySpec, Layout};
    /// let json = ArraySpec::new(vec![8, 8], "uint8", vec![2, 2]).shards(vec![4, 4]).to_json().unwrap();
    /// let layout = Layout::from_json(json.as_bytes()).unwrap();
    /// assert_eq!(layout.shard_first_chunk(&[1, 0]), vec![2, 0]);
    /// ```
    #[must_use]
    pub fn shard_first_chunk(&self, shard_index: &[u64]) -> Vec<u64> {
        match &self.first_chunk {
            Some(first) => first.clone(),
            None => shard_index
                .iter()
                .zip(&self.chunks_per_shard)
                .map(|(s, n)| s * n)
                .collect(),
        }
    }
}
