//! Reading the pieces of `zarr.json` a [`Layout`](super::Layout) is made of: the chunk
//! grid (regular or rectilinear), the key encoding, the sharding configuration and its index codecs, and the limits
//! on sizes. Each failure is a [`LayoutError`] naming what was found.

use std::num::NonZeroU64;
use std::sync::Arc;

use zarrs::array::{
    ArrayToBytesCodecTraits, BytesRepresentation, ChunkKeyEncoding, CodecChain, FillValue,
};
use zarrs::metadata::v3::MetadataV3;
use zarrs::metadata_ext::chunk_grid::rectilinear::{
    ChunkEdgeLengths, RectilinearChunkGridConfiguration, RunLengthElement,
};
use zarrs::metadata_ext::codec::sharding::{ShardingCodecConfiguration, ShardingIndexLocation};

use crate::domain::AxisCells;

use super::{
    IndexLocation, IndexSpec, LayoutError, ZstdSettings, MAX_CHUNKS_PER_SHARD, MAX_RAW_CHUNK_BYTES,
};

/// `extents` as non-zero numbers, or a shape error naming `what` they are.
pub(super) fn non_zero(extents: &[u64], what: &str) -> Result<Vec<NonZeroU64>, LayoutError> {
    extents
        .iter()
        .map(|&e| NonZeroU64::new(e))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| LayoutError::Shape(format!("{what} {extents:?} has a zero extent")))
}

pub(super) fn unsupported(what: impl Into<String>) -> LayoutError {
    LayoutError::Unsupported(what.into())
}

pub(super) fn invalid(what: impl Into<String>) -> LayoutError {
    LayoutError::Invalid(what.into())
}

pub(super) fn check_codec_names(
    codecs: &[MetadataV3],
    allowed: &[&str],
    role: &str,
) -> Result<(), LayoutError> {
    for codec in codecs {
        if !allowed.contains(&codec.name()) {
            return Err(unsupported(format!(
                "{role} codec '{}' (supported: {})",
                codec.name(),
                allowed.join(", ")
            )));
        }
    }
    Ok(())
}

pub(super) fn codec_chain(
    codecs: &[MetadataV3],
    role: &str,
) -> Result<Arc<CodecChain>, LayoutError> {
    CodecChain::from_metadata(codecs)
        .map(Arc::new)
        .map_err(|e| invalid(format!("{role} codecs: {e}")))
}

/// Refuse arrays, shards and chunks too large to address or hold: one slot per inner chunk
/// and one raw chunk per encode are allocated, and element counts must fit in 64 bits.
pub(super) fn check_sizes(
    shape: &[u64],
    shard_shape: &[u64],
    chunk_shape: &[u64],
    element_size: usize,
) -> Result<(), LayoutError> {
    if checked_product(element_size as u64, shape.iter().copied()).is_none() {
        return Err(unsupported(format!(
            "arrays of shape {shape:?} (more than 2^64 bytes)"
        )));
    }
    let per_shard = checked_product(1, shard_shape.iter().zip(chunk_shape).map(|(s, c)| s / c));
    if per_shard.is_none_or(|n| n > MAX_CHUNKS_PER_SHARD) {
        return Err(unsupported(format!(
            "shards of {shard_shape:?} with inner chunks of {chunk_shape:?} (at most \
             {MAX_CHUNKS_PER_SHARD} inner chunks per shard)"
        )));
    }
    let raw = checked_product(element_size as u64, chunk_shape.iter().copied());
    if raw.is_none_or(|n| n > MAX_RAW_CHUNK_BYTES) {
        return Err(unsupported(format!(
            "inner chunks of shape {chunk_shape:?} (at most {MAX_RAW_CHUNK_BYTES} bytes raw)"
        )));
    }
    Ok(())
}

fn checked_product(start: u64, mut values: impl Iterator<Item = u64>) -> Option<u64> {
    values.try_fold(start, |a, c| a.checked_mul(c))
}

/// The codecs that encode inner chunks (the whole chain, for an unsharded array).
pub(super) fn inner_codecs_metadata(metadata: &zarrs::array::ArrayMetadataV3) -> Vec<MetadataV3> {
    match metadata.codecs.as_slice() {
        [only] if only.name() == "sharding_indexed" => {
            sharding_config(only).map(|c| c.codecs).unwrap_or_default()
        }
        codecs => codecs.to_vec(),
    }
}

/// The largest raw chunk blosc (version 1) compresses.
const BLOSC_MAX_BYTES: u64 = (i32::MAX as u64) - 16;

/// Refuse chunks a codec in the chain cannot encode, before any data is written.
pub(super) fn check_codec_limits(
    codecs: &[MetadataV3],
    chunk_shape: &[u64],
    element_size: usize,
) -> Result<(), LayoutError> {
    let raw = chunk_shape.iter().product::<u64>() * element_size as u64;
    if raw > BLOSC_MAX_BYTES && codecs.iter().any(|c| c.name() == "blosc") {
        return Err(unsupported(format!(
            "blosc on inner chunks of {raw} bytes (blosc takes at most {BLOSC_MAX_BYTES})"
        )));
    }
    Ok(())
}

/// The most cells a rectilinear grid may list along one dimension (inside the array).
pub(super) const MAX_LISTED_CELLS: usize = 1 << 24;

/// The chunk grid of `zarr.json` as the cells along each dimension: `regular`, or
/// `rectilinear` (zarr-python's `kind: "inline"`, each dimension a bare extent or a list of
/// extents, run-length encoded or not). Listed cells past the array's extent hold nothing
/// and are left out (the metadata keeps them as written).
pub(super) fn grid_cells(grid: &MetadataV3, shape: &[u64]) -> Result<Vec<AxisCells>, LayoutError> {
    let rank = shape.len();
    match grid.name() {
        "regular" => {
            #[derive(serde::Deserialize)]
            struct Regular {
                chunk_shape: Vec<u64>,
            }
            let regular: Regular = grid
                .to_typed_configuration()
                .map_err(|e| invalid(format!("regular chunk grid: {e}")))?;
            if regular.chunk_shape.len() != rank || regular.chunk_shape.contains(&0) {
                return Err(LayoutError::Shape(format!(
                    "chunk shape {:?} does not fit an array of rank {rank}",
                    regular.chunk_shape
                )));
            }
            Ok(regular
                .chunk_shape
                .into_iter()
                .map(AxisCells::Regular)
                .collect())
        }
        "rectilinear" => {
            let config: RectilinearChunkGridConfiguration = grid
                .to_typed_configuration()
                .map_err(|e| invalid(format!("rectilinear chunk grid: {e}")))?;
            let RectilinearChunkGridConfiguration::Inline { chunk_shapes } = config;
            if chunk_shapes.len() != rank {
                return Err(LayoutError::Shape(format!(
                    "rectilinear chunk grid of rank {} for an array of rank {rank}",
                    chunk_shapes.len()
                )));
            }
            chunk_shapes
                .iter()
                .zip(shape)
                .enumerate()
                .map(|(dim, (lengths, extent))| match lengths {
                    ChunkEdgeLengths::Scalar(c) => Ok(AxisCells::Regular(c.get())),
                    ChunkEdgeLengths::Varying(runs) => listed_cells(dim, runs, *extent),
                })
                .collect()
        }
        other => Err(unsupported(format!(
            "chunk grid '{other}' (supported: 'regular', 'rectilinear')"
        ))),
    }
}

/// The (unclipped) extent of cell `i` along a dimension divided as `cells`.
pub(super) fn cell_extent(cells: &AxisCells, i: usize) -> u64 {
    match cells {
        AxisCells::Regular(c) => *c,
        AxisCells::Edges(edges) => edges.get(i).copied().unwrap_or(0),
    }
}

/// The largest (unclipped) extent of a cell along a dimension divided as `cells`.
pub(super) fn largest_extent(cells: &AxisCells) -> u64 {
    match cells {
        AxisCells::Regular(c) => *c,
        AxisCells::Edges(edges) => edges.iter().copied().max().unwrap_or(0),
    }
}

/// Refuse a shard grid whose shards are not made of whole inner chunks of `chunk_shape`.
pub(super) fn check_divides(cells: &[AxisCells], chunk_shape: &[u64]) -> Result<(), LayoutError> {
    let regular: Option<Vec<u64>> = cells
        .iter()
        .map(|c| match c {
            AxisCells::Regular(c) => Some(*c),
            AxisCells::Edges(_) => None,
        })
        .collect();
    if let Some(shard_shape) = regular {
        if shard_shape.iter().zip(chunk_shape).any(|(s, c)| s % c != 0) {
            return Err(LayoutError::Shape(format!(
                "inner chunk shape {chunk_shape:?} does not divide shard shape {shard_shape:?}"
            )));
        }
        return Ok(());
    }
    for (dim, (cells, chunk)) in cells.iter().zip(chunk_shape).enumerate() {
        let bad = match cells {
            AxisCells::Regular(c) => (c % chunk != 0).then_some(*c),
            AxisCells::Edges(edges) => edges.iter().copied().find(|e| e % chunk != 0),
        };
        if let Some(extent) = bad {
            return Err(LayoutError::Shape(format!(
                "inner chunk shape {chunk_shape:?} does not divide the shards: a shard extent \
                 of {extent} along dimension {dim} is not a multiple of {chunk}"
            )));
        }
    }
    Ok(())
}

/// The extents a rectilinear grid lists along dimension `dim`, run-length decoded, up to
/// the first cell that reaches `extent` (at least one).
fn listed_cells(
    dim: usize,
    runs: &[RunLengthElement],
    extent: u64,
) -> Result<AxisCells, LayoutError> {
    let mut edges = Vec::new();
    let mut sum = 0u64;
    'runs: for run in runs {
        let (value, count) = match run {
            RunLengthElement::Single(v) => (v.get(), 1),
            RunLengthElement::Repeated([v, n]) => (v.get(), n.get()),
        };
        for _ in 0..count {
            if (sum >= extent && !edges.is_empty()) || edges.len() >= MAX_LISTED_CELLS {
                break 'runs;
            }
            edges.push(value);
            sum = sum.saturating_add(value);
        }
    }
    if sum < extent {
        if edges.len() >= MAX_LISTED_CELLS {
            return Err(unsupported(format!(
                "rectilinear chunk grid, dimension {dim}: more than {MAX_LISTED_CELLS} cells"
            )));
        }
        return Err(LayoutError::Shape(format!(
            "rectilinear chunk grid, dimension {dim}: extents adding up to {sum}, short of the \
             array's extent {extent}"
        )));
    }
    Ok(AxisCells::Edges(edges))
}

pub(super) fn chunk_key_encoding(metadata: &MetadataV3) -> Result<ChunkKeyEncoding, LayoutError> {
    if !matches!(metadata.name(), "default" | "v2") {
        return Err(unsupported(format!(
            "chunk key encoding '{}'",
            metadata.name()
        )));
    }
    ChunkKeyEncoding::from_metadata(metadata)
        .map_err(|e| invalid(format!("chunk key encoding: {e}")))
}

pub(super) fn sharding_config(
    metadata: &MetadataV3,
) -> Result<zarrs::metadata_ext::codec::sharding::ShardingCodecConfigurationV1, LayoutError> {
    let config: ShardingCodecConfiguration = metadata
        .to_typed_configuration()
        .map_err(|e| invalid(format!("sharding_indexed configuration: {e}")))?;
    match config {
        ShardingCodecConfiguration::V1(config) => Ok(config),
        _ => Err(unsupported("sharding_indexed configuration version")),
    }
}

pub(super) fn index_spec(
    config: &zarrs::metadata_ext::codec::sharding::ShardingCodecConfigurationV1,
    chunks_per_shard: &[u64],
) -> Result<IndexSpec, LayoutError> {
    let codecs = codec_chain(&config.index_codecs, "index")?;
    let location = match config.index_location {
        ShardingIndexLocation::Start => IndexLocation::Start,
        ShardingIndexLocation::End => IndexLocation::End,
    };
    index_shape_and_size(codecs, location, chunks_per_shard)
}

/// The index of a shard of `chunks_per_shard` inner chunks encoded with `codecs`.
pub(super) fn index_shape_and_size(
    codecs: Arc<CodecChain>,
    location: IndexLocation,
    chunks_per_shard: &[u64],
) -> Result<IndexSpec, LayoutError> {
    let mut index_shape = non_zero(chunks_per_shard, "inner chunks per shard")?;
    // one (offset, nbytes) pair per inner chunk
    index_shape.push(NonZeroU64::MIN.saturating_add(1));
    let u64_type = zarrs::array::data_type::uint64();
    let representation = codecs
        .encoded_representation(&index_shape, &u64_type, &FillValue::from(u64::MAX))
        .map_err(|e| invalid(format!("index codecs: {e}")))?;
    let BytesRepresentation::FixedSize(encoded_size) = representation else {
        return Err(unsupported(format!(
            "index codecs with a variable encoded size ({representation})"
        )));
    };
    Ok(IndexSpec {
        codecs,
        location,
        encoded_size,
        shape: index_shape,
    })
}

/// The settings of an inner chain that is `bytes` (little endian, or no endian for 1-byte
/// types) followed by `zstd` alone, on a little-endian machine: encoding such a chunk is
/// compressing its raw bytes, which the `format` layer does with a reused zstd context.
pub(super) fn plain_zstd(codecs: &[MetadataV3]) -> Option<ZstdSettings> {
    if !cfg!(target_endian = "little") {
        return None;
    }
    let [bytes, zstd] = codecs else { return None };
    if bytes.name() != "bytes" || zstd.name() != "zstd" {
        return None;
    }
    let endian = bytes
        .configuration()
        .and_then(|c| c.get("endian"))
        .map(serde_json::Value::as_str);
    if !matches!(endian, None | Some(Some("little"))) {
        return None;
    }
    let config = zstd.configuration()?;
    let level = i32::try_from(config.get("level")?.as_i64()?).ok()?;
    let checksum = match config.get("checksum") {
        None => false,
        Some(value) => value.as_bool()?,
    };
    Some(ZstdSettings { level, checksum })
}

/// A bytes-to-bytes codec of an inner chain, as the chunk decoder treats it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BytesCodec {
    /// `zstd`: decoded by shardwright into a buffer of the stage's bound.
    Zstd,
    /// `blosc`: its header's claimed size is checked against the bound first.
    Blosc,
    /// `gzip`: its trailer's claimed size is checked against the bound first.
    Gzip,
    /// `crc32c`: strips and checks 4 bytes.
    Crc32c,
}

/// One bytes-to-bytes codec of an inner chain and the most bytes it may decode to: the
/// encoded size bound of everything before it in the chain.
#[derive(Debug, Clone)]
pub(crate) struct DecodeStage {
    /// Which codec.
    pub(crate) codec: BytesCodec,
    /// What it decodes to (its input on encode).
    pub(crate) decoded: BytesRepresentation,
    /// The most bytes it may decode to.
    pub(crate) bound: usize,
}

/// The bytes-to-bytes stages of an inner chain with their bounds, and the chain without
/// them. The array-to-bytes codec is `bytes`, so the first stage decodes to exactly one raw
/// chunk; each later stage to at most the encoded bound zarrs gives for the one before.
pub(super) fn decode_stages(
    metadata: &[MetadataV3],
    chain: &CodecChain,
    chunk_shape: &[u64],
    element_size: usize,
) -> Result<(Arc<[DecodeStage]>, Arc<CodecChain>), LayoutError> {
    let kinds: Vec<BytesCodec> = metadata
        .iter()
        .filter_map(|c| match c.name() {
            "zstd" => Some(BytesCodec::Zstd),
            "blosc" => Some(BytesCodec::Blosc),
            "gzip" => Some(BytesCodec::Gzip),
            "crc32c" => Some(BytesCodec::Crc32c),
            _ => None,
        })
        .collect();
    let codecs = chain.bytes_to_bytes_codecs();
    if kinds.len() != codecs.len() {
        return Err(invalid(format!(
            "inner codecs: {} bytes-to-bytes codecs named, {} built",
            kinds.len(),
            codecs.len()
        )));
    }
    let raw = checked_product(element_size as u64, chunk_shape.iter().copied())
        .ok_or_else(|| unsupported(format!("inner chunks of shape {chunk_shape:?}")))?;
    let mut decoded = BytesRepresentation::FixedSize(raw);
    let mut stages = Vec::with_capacity(kinds.len());
    for (codec, stage) in kinds.into_iter().zip(codecs) {
        let bound = decoded
            .size()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| {
                unsupported(format!("inner codecs with an unbounded size ({decoded})"))
            })?;
        let encoded = stage.encoded_representation(&decoded);
        stages.push(DecodeStage {
            codec,
            decoded,
            bound,
        });
        decoded = encoded;
    }
    let array_codecs = CodecChain::new(
        chain.array_to_array_codecs().to_vec(),
        chain.array_to_bytes_codec().clone(),
        Vec::new(),
    );
    Ok((stages.into(), Arc::new(array_codecs)))
}
