//! What a sharded array looks like, read from its `zarr.json`.
//!
//! A [`Layout`] holds the shape, data type, fill value, the shard grid and the inner-chunk
//! grid, the inner codec chain, the shard index codecs and location, and the storage key of
//! each shard. It is built with zarrs' metadata, data type and codec types; no codec is
//! implemented here. An array without a `sharding_indexed` codec is laid out as shards of one
//! chunk each, stored without an index.
//!
//! Supported: every fixed-size data type zarrs knows, and zarr-python's
//! `null_terminated_bytes` and `raw_bytes` (see [`data_types`](self::data_types)); inner
//! codecs `bytes` (either endian), `transpose`, `zstd`, `blosc`, `gzip`, `crc32c`; index codecs `bytes` and `crc32c`; index
//! at the start or the end; rank 1 to 8; the `regular` and `rectilinear` chunk grids (a
//! rectilinear grid's shards differ in shape: [`Layout::for_shard`] gives each shard's
//! layout); the `default` and `v2` chunk key encodings. Anything else is a
//! [`LayoutError::Unsupported`] naming it.
//!
//! ```
//! use shardwright::layout::{ArraySpec, Layout};
//!
//! let json = ArraySpec::new(vec![100, 100], "uint16", vec![10, 10])
//!     .shards(vec![50, 50])
//!     .to_json()
//!     .unwrap();
//! let layout = Layout::from_json(json.as_bytes()).unwrap();
//! assert_eq!(layout.shard_grid().grid_shape(), &[2, 2]);
//! assert_eq!(layout.chunks_per_shard(), &[5, 5]);
//! assert_eq!(layout.shard_key(&[1, 0]), "c/1/0");
//! ```

mod create;
pub mod data_types;
pub(crate) mod object_text;
mod parse;
mod per_shard;

pub use per_shard::IndexSpec;

pub use create::{grown_grid, ArraySpec, Compressor};
pub use data_types::element_size_of;
use parse::{
    cell_extent, check_codec_limits, check_codec_names, check_divides, check_sizes,
    chunk_key_encoding, codec_chain, decode_stages, grid_cells, index_spec, inner_codecs_metadata,
    invalid, largest_extent, non_zero, plain_zstd, sharding_config, unsupported,
};
pub(crate) use parse::{BytesCodec, DecodeStage};

use std::num::NonZeroU64;
use std::sync::Arc;

use zarrs::array::{
    ArrayMetadataV3, ArrayToBytesCodecTraits, ChunkKeyEncoding, CodecChain, DataType, FillValue,
};

use crate::domain::{Domain, Grid};

/// The highest rank supported.
pub const MAX_RANK: usize = 8;

/// The most inner chunks one shard may hold (its index is then 256 MiB).
pub const MAX_CHUNKS_PER_SHARD: u64 = 1 << 24;

/// The largest raw inner chunk supported, in bytes.
pub const MAX_RAW_CHUNK_BYTES: u64 = 1 << 34;

const INNER_CODECS: &[&str] = &["bytes", "transpose", "zstd", "blosc", "gzip", "crc32c"];
const INDEX_CODECS: &[&str] = &["bytes", "crc32c"];

/// Errors of the `layout` layer: metadata that cannot be read or is not supported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// `zarr.json` is not valid Zarr v3 array metadata.
    #[error("invalid zarr.json: {0}")]
    Invalid(String),
    /// Shapes that do not fit together: ranks differ, a zero extent, chunks that do not
    /// divide shards.
    #[error("shape mismatch: {0}")]
    Shape(String),
    /// The array uses something shardwright does not support; the text names it.
    #[error("unsupported: {0}")]
    Unsupported(String),
}

/// Where the index of a shard lies within the shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexLocation {
    /// Before the inner chunks.
    Start,
    /// After the inner chunks (zarr-python's and TensorStore's default).
    End,
}

/// The settings of an inner codec chain that is `bytes` (native little endian) then `zstd`
/// and nothing else: chunks of such a chain are encoded by compressing their raw bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ZstdSettings {
    /// The compression level.
    pub(crate) level: i32,
    /// Whether frames carry a content checksum.
    pub(crate) checksum: bool,
}

/// The layout of one sharded Zarr v3 array. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct Layout {
    metadata: Arc<ArrayMetadataV3>,
    /// The text of the `zarr.json` read, when read from one.
    json: Option<Arc<str>>,
    shape: Vec<u64>,
    data_type: DataType,
    data_type_name: String,
    data_type_spec: String,
    fill_value: FillValue,
    element_size: usize,
    shard_shape: Vec<u64>,
    chunk_shape: Vec<u64>,
    chunk_shape_nz: Vec<NonZeroU64>,
    chunks_per_shard: Vec<u64>,
    /// The grid index of the first inner chunk of the one shard a layout from
    /// [`Layout::for_shard`] describes; `None` for an array's layout.
    first_chunk: Option<Vec<u64>>,
    inner_codecs: Arc<CodecChain>,
    index: Option<IndexSpec>,
    key_encoding: ChunkKeyEncoding,
    plain_zstd: Option<ZstdSettings>,
    decode_stages: Arc<[DecodeStage]>,
    array_codecs: Arc<CodecChain>,
    shard_grid: Grid,
    chunk_grid: Grid,
}

impl Layout {
    /// Read a layout from the bytes of a `zarr.json` file.
    ///
    /// # Errors
    /// [`LayoutError::Invalid`] for JSON that is not Zarr v3 array metadata,
    /// [`LayoutError::Unsupported`] for a data type, codec, grid or key encoding outside the
    /// supported set (the message names it).
    pub fn from_json(json: &[u8]) -> Result<Self, LayoutError> {
        let value: serde_json::Value =
            serde_json::from_slice(json).map_err(|e| invalid(format!("not JSON: {e}")))?;
        match value.get("zarr_format").and_then(serde_json::Value::as_u64) {
            Some(3) => {}
            Some(v) => return Err(unsupported(format!("Zarr format version {v} (only 3)"))),
            None => return Err(invalid("no zarr_format field")),
        }
        if value.get("node_type").and_then(serde_json::Value::as_str) != Some("array") {
            return Err(invalid("node_type is not \"array\" (a group?)"));
        }
        let metadata: ArrayMetadataV3 =
            serde_json::from_value(value).map_err(|e| invalid(e.to_string()))?;
        let mut layout = Self::from_metadata(metadata)?;
        // valid JSON is valid UTF-8
        layout.json = std::str::from_utf8(json).ok().map(Arc::from);
        Ok(layout)
    }

    /// Build a layout from parsed Zarr v3 array metadata.
    ///
    /// # Errors
    /// As [`Layout::from_json`].
    pub fn from_metadata(metadata: ArrayMetadataV3) -> Result<Self, LayoutError> {
        let shape = metadata.shape.clone();
        if shape.is_empty() || shape.len() > MAX_RANK {
            return Err(unsupported(format!(
                "rank {} (supported: 1 to {MAX_RANK})",
                shape.len()
            )));
        }
        if !metadata.storage_transformers.is_empty() {
            return Err(unsupported("storage transformers"));
        }
        let resolved = data_types::resolve(&metadata.data_type)?;
        let data_type_name = metadata.data_type.name().to_string();
        let element_size = resolved.element_size;
        let fill_value = resolved.fill_value(&metadata.fill_value).ok_or_else(|| {
            invalid(format!(
                "fill value {} is not a {data_type_name}",
                metadata.fill_value
            ))
        })?;
        let (data_type, data_type_spec) = (resolved.codec_type, resolved.spec);
        let cells = grid_cells(&metadata.chunk_grid, &shape)?;
        // The first cell's extents, and the largest along each dimension.
        let first: Vec<u64> = cells.iter().map(|c| cell_extent(c, 0)).collect();
        let largest: Vec<u64> = cells.iter().map(largest_extent).collect();
        let key_encoding = chunk_key_encoding(&metadata.chunk_key_encoding)?;

        let (chunk_shape, inner_codecs, index) = match metadata.codecs.as_slice() {
            [only] if only.name() == "sharding_indexed" => {
                let config = sharding_config(only)?;
                check_codec_names(&config.codecs, INNER_CODECS, "inner")?;
                check_codec_names(&config.index_codecs, INDEX_CODECS, "index")?;
                let chunk_shape: Vec<u64> = config.chunk_shape.iter().map(|c| c.get()).collect();
                (
                    chunk_shape,
                    codec_chain(&config.codecs, "inner")?,
                    Some(config),
                )
            }
            codecs => {
                if let Some(sharding) = codecs.iter().find(|c| c.name() == "sharding_indexed") {
                    return Err(unsupported(format!(
                        "codec '{}' combined with other outer codecs",
                        sharding.name()
                    )));
                }
                check_codec_names(codecs, INNER_CODECS, "array")?;
                (first.clone(), codec_chain(codecs, "array")?, None)
            }
        };
        if chunk_shape.len() != shape.len() {
            return Err(LayoutError::Shape(format!(
                "inner chunk shape {chunk_shape:?} does not have the array's rank {}",
                shape.len()
            )));
        }
        if chunk_shape.contains(&0) {
            return Err(LayoutError::Shape(format!(
                "inner chunk shape {chunk_shape:?} has a zero extent"
            )));
        }
        if index.is_some() {
            check_divides(&cells, &chunk_shape)?;
        }
        let shard_shape = first;
        let chunks_per_shard: Vec<u64> = shard_shape
            .iter()
            .zip(&chunk_shape)
            .map(|(s, c)| s / c)
            .collect();
        let largest_chunk = if index.is_some() {
            chunk_shape.clone()
        } else {
            largest.clone()
        };
        check_sizes(&shape, &largest, &largest_chunk, element_size)?;
        let inner_metadata = inner_codecs_metadata(&metadata);
        check_codec_limits(&inner_metadata, &largest_chunk, element_size)?;
        let plain_zstd = plain_zstd(&inner_metadata);
        let (decode_stages, array_codecs) =
            decode_stages(&inner_metadata, &inner_codecs, &chunk_shape, element_size)?;
        let chunk_shape_nz = non_zero(&chunk_shape, "inner chunk shape")?;
        // At most one cell per element (whose count fits in 64 bits, checked above).
        let shard_grid = Grid::rectilinear(shape.clone(), cells)
            .map_err(|e| LayoutError::Shape(e.to_string()))?;
        // Shard boundaries fall on inner chunk boundaries, so the inner chunks of a sharded
        // array make a regular grid whatever its shard grid; an unsharded array's chunks
        // are its shards.
        let chunk_grid = if index.is_some() {
            Grid::new(shape.clone(), chunk_shape.clone())
                .map_err(|e| LayoutError::Shape(e.to_string()))?
        } else {
            shard_grid.clone()
        };
        // Check that the inner chain accepts this data type (e.g. bytes without endian on
        // a multi-byte type is rejected here rather than at the first write).
        inner_codecs
            .encoded_representation(&chunk_shape_nz, &data_type, &fill_value)
            .map_err(|e| unsupported(format!("codecs for data type '{data_type_name}': {e}")))?;

        let index = match index {
            None => None,
            Some(config) => Some(index_spec(&config, &chunks_per_shard)?),
        };
        Ok(Self {
            metadata: Arc::new(metadata),
            json: None,
            shape,
            data_type,
            data_type_name,
            data_type_spec,
            fill_value,
            element_size,
            shard_shape,
            chunk_shape,
            chunk_shape_nz,
            chunks_per_shard,
            first_chunk: None,
            inner_codecs,
            index,
            key_encoding,
            plain_zstd,
            decode_stages,
            array_codecs,
            shard_grid,
            chunk_grid,
        })
    }

    /// The zstd settings when the inner chain is `bytes` (native) then `zstd` alone.
    pub(crate) fn plain_zstd(&self) -> Option<ZstdSettings> {
        self.plain_zstd
    }

    /// The inner chain's bytes-to-bytes codecs, in chain order, each with a bound on what
    /// it may decode to (so a corrupt frame cannot make a decoder allocate what it claims).
    pub(crate) fn decode_stages(&self) -> &[DecodeStage] {
        &self.decode_stages
    }

    /// The inner chain without its bytes-to-bytes codecs (what runs after them on decode).
    pub(crate) fn array_codecs(&self) -> &CodecChain {
        &self.array_codecs
    }

    /// The Zarr v3 metadata this layout was read from.
    #[must_use]
    pub fn metadata(&self) -> &ArrayMetadataV3 {
        &self.metadata
    }

    /// The text of the `zarr.json` this layout was read from, as stored: its attributes
    /// as written (integers beyond 64 bits included, which [`metadata`](Self::metadata)
    /// holds as floats); `None` for a layout built from parsed metadata.
    ///
    /// ```
    /// use shardwright::layout::{ArraySpec, Layout};
    /// let json = ArraySpec::new(vec![4], "uint8", vec![2]).to_json().unwrap();
    /// assert_eq!(Layout::from_json(json.as_bytes()).unwrap().json(), Some(json.as_str()));
    /// ```
    #[must_use]
    pub fn json(&self) -> Option<&str> {
        self.json.as_deref()
    }

    /// The array shape.
    #[must_use]
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }

    /// The number of dimensions.
    #[must_use]
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// The whole array as a domain.
    #[must_use]
    pub fn bounds(&self) -> Domain {
        Domain::from_shape(self.shape.clone())
    }

    /// The Zarr v3 name of the data type, e.g. `"uint16"`.
    #[must_use]
    pub fn data_type_name(&self) -> &str {
        &self.data_type_name
    }

    /// The data type as one string (its *spec*): the Zarr v3 name of a type without a
    /// configuration (`"uint16"`), else the compact JSON of the `data_type` object
    /// (`{"name":"fixed_length_utf32","configuration":{"length_bytes":20}}`); what
    /// [`ArraySpec::new`] takes. See [`data_types`](self::data_types) (module docs).
    ///
    /// ```
    /// use shardwright::layout::{ArraySpec, Layout};
    /// let spec = r#"{"name":"null_terminated_bytes","configuration":{"length_bytes":5}}"#;
    /// let json = ArraySpec::new(vec![4], spec, vec![2]).fill_value(serde_json::json!("")).to_json().unwrap();
    /// assert_eq!(Layout::from_json(json.as_bytes()).unwrap().data_type_spec(), spec);
    /// ```
    #[must_use]
    pub fn data_type_spec(&self) -> &str {
        &self.data_type_spec
    }

    /// The zarrs data type the codecs encode (zarrs' raw bits of the same size for
    /// `null_terminated_bytes` and `raw_bytes`, which zarrs does not know).
    #[must_use]
    pub fn data_type(&self) -> &DataType {
        &self.data_type
    }

    /// The size of one element in bytes.
    #[must_use]
    pub fn element_size(&self) -> usize {
        self.element_size
    }

    /// The zarrs fill value.
    #[must_use]
    pub fn fill_value(&self) -> &FillValue {
        &self.fill_value
    }

    /// The fill value as one element's native-endian bytes.
    #[must_use]
    pub fn fill_value_bytes(&self) -> &[u8] {
        self.fill_value.as_ne_bytes()
    }

    /// The shape of a shard (the outer chunk grid's cell, unclipped). A rectilinear grid's
    /// shards differ: this is then the first shard's shape, and [`Layout::for_shard`]'s
    /// layout gives each shard's own.
    #[must_use]
    pub fn shard_shape(&self) -> &[u64] {
        &self.shard_shape
    }

    /// The shape of an inner chunk (equal to the shard shape for an unsharded array; the
    /// first chunk's for an unsharded rectilinear grid, see [`Layout::for_shard`]).
    #[must_use]
    pub fn chunk_shape(&self) -> &[u64] {
        &self.chunk_shape
    }

    pub(crate) fn chunk_shape_nz(&self) -> &[NonZeroU64] {
        &self.chunk_shape_nz
    }

    /// The number of inner chunks along each dimension of a shard (of the first shard for
    /// a rectilinear grid, see [`Layout::for_shard`]).
    #[must_use]
    pub fn chunks_per_shard(&self) -> &[u64] {
        &self.chunks_per_shard
    }

    /// The number of inner chunk slots in one shard.
    #[must_use]
    pub fn slots_per_shard(&self) -> usize {
        self.chunks_per_shard.iter().product::<u64>() as usize
    }

    /// The size in bytes of one raw (decoded) inner chunk.
    #[must_use]
    pub fn raw_chunk_bytes(&self) -> usize {
        self.chunk_shape.iter().product::<u64>() as usize * self.element_size
    }

    /// Whether the array uses the `sharding_indexed` codec.
    #[must_use]
    pub fn is_sharded(&self) -> bool {
        self.index.is_some()
    }

    /// How shard indexes are encoded, for a sharded array.
    #[must_use]
    pub fn index(&self) -> Option<&IndexSpec> {
        self.index.as_ref()
    }

    /// The codec chain of inner chunks (of whole chunks, for an unsharded array).
    #[must_use]
    pub fn inner_codecs(&self) -> &Arc<CodecChain> {
        &self.inner_codecs
    }

    /// Whether every shard has the same shape (a `regular` chunk grid, or a `rectilinear`
    /// one listing no extents): then [`Layout::for_shard`] is the layout itself.
    #[must_use]
    pub fn has_regular_shards(&self) -> bool {
        self.shard_grid.is_regular()
    }

    /// The grid of shards over the array.
    #[must_use]
    pub fn shard_grid(&self) -> Grid {
        self.shard_grid.clone()
    }

    /// The grid of inner chunks over the whole array.
    #[must_use]
    pub fn chunk_grid(&self) -> Grid {
        self.chunk_grid.clone()
    }

    /// A raw inner chunk (full shape) of the fill value.
    ///
    /// # Errors
    /// [`AllocError`](crate::buffer::AllocError) when the memory cannot be had.
    pub fn fill_chunk(&self) -> Result<Vec<u8>, crate::buffer::AllocError> {
        crate::buffer::filled(self.chunk_elements(), self.fill_value_bytes())
    }

    /// The number of elements of a full inner chunk.
    #[must_use]
    pub fn chunk_elements(&self) -> u64 {
        self.chunk_shape.iter().product()
    }

    /// The C-order slot, within its shard, of the inner chunk with (global) grid index
    /// `chunk_index`.
    ///
    /// ```
    /// use shardwright::layout::{ArraySpec, Layout};
    /// let json = ArraySpec::new(vec![8, 8], "uint8", vec![2, 2]).shards(vec![4, 4]).to_json().unwrap();
    /// let layout = Layout::from_json(json.as_bytes()).unwrap();
    /// assert_eq!(layout.slot_in_shard(&[3, 2]), 2); // shard (1, 1), local (1, 0)
    /// ```
    #[must_use]
    pub fn slot_in_shard(&self, chunk_index: &[u64]) -> usize {
        let cps = self.chunks_per_shard();
        let mut slot = 0u64;
        for (d, (c, n)) in chunk_index.iter().zip(cps).enumerate() {
            let local = match self.first_chunk.as_ref().and_then(|f| f.get(d)) {
                Some(first) => c.saturating_sub(*first),
                None => c % n,
            };
            slot = slot * n + local;
        }
        slot as usize
    }

    /// The storage key of a shard, relative to the array's folder, e.g. `c/0/1/2`.
    #[must_use]
    pub fn shard_key(&self, shard_index: &[u64]) -> String {
        self.key_encoding.encode(shard_index).as_str().to_string()
    }
}

#[cfg(test)]
mod tests;
