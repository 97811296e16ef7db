//! Reading a region of an array back: shards in parallel, inner chunks decoded with zarrs.

use rayon::prelude::*;

use crate::array::Array;
use crate::domain::copy::{copy_block, fill};
use crate::domain::Domain;
use crate::error::Result;
use crate::format::{chunk, shard};
use crate::writer::{in_shard, slot_in_shard};

/// Read `region` of `array` as raw elements (C order, native endian).
///
/// ```
/// use std::sync::Arc;
/// use shardwright::{domain::Domain, layout::ArraySpec, store::MemoryStore, Array};
/// let spec = ArraySpec::new(vec![4], "uint8", vec![2]).shards(vec![4]).fill_value(serde_json::json!(9));
/// let array = Array::create(Arc::new(MemoryStore::new()), "", &spec).unwrap();
/// assert_eq!(shardwright::read::read_region(&array, &Domain::new(vec![1], vec![2])).unwrap(), vec![9, 9]);
/// ```
///
/// # Errors
/// As [`Array::read`].
pub fn read_region(array: &Array, region: &Domain) -> Result<Vec<u8>> {
    region.check_inside(&array.bounds())?;
    let layout = array.layout();
    let elem = layout.element_size();
    let mut out = vec![0u8; region.size() as usize * elem];
    if region.is_empty() {
        return Ok(out);
    }
    let shards: Vec<Domain> = array.shards_meeting(region).collect();
    let pieces: Vec<(Domain, Vec<u8>)> = shards
        .par_iter()
        .map(|s| read_in_shard(array, s, region))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect();
    for (piece, bytes) in pieces {
        let at = piece.relative_to(region).expect("piece inside region");
        let zero = vec![0; piece.ndim()];
        copy_block(
            &bytes,
            piece.shape(),
            &zero,
            &mut out,
            region.shape(),
            at.origin(),
            piece.shape(),
            elem,
        );
    }
    Ok(out)
}

/// The pieces of `region` inside `shard_domain`, one per inner chunk met.
fn read_in_shard(
    array: &Array,
    shard_domain: &Domain,
    region: &Domain,
) -> Result<Vec<(Domain, Vec<u8>)>> {
    let layout = array.layout();
    let elem = layout.element_size();
    let index = shard_domain.index().expect("grid cells carry their index");
    let key = array.shard_key(index);
    let stored = array.store().get(&key)?;
    let ranges = match (&stored, layout.is_sharded()) {
        (Some(bytes), true) => Some(shard::split(layout, bytes).map_err(|e| in_shard(e, &key))?),
        (Some(bytes), false) => Some(vec![Some(0..bytes.len())]),
        (None, _) => None,
    };
    let within = shard_domain.intersect(region).expect("shard meets region");
    let mut pieces = Vec::new();
    for chunk_domain in array.chunks_meeting(&within) {
        let piece = chunk_domain.intersect(&within).expect("chunk meets region");
        let mut bytes = vec![0u8; piece.size() as usize * elem];
        let chunk_index = chunk_domain.index().expect("grid cells carry their index");
        let slot = slot_in_shard(layout, shard_domain, chunk_index);
        let range = ranges.as_ref().and_then(|r| r[slot].clone());
        match (range, &stored) {
            (Some(range), Some(shard_bytes)) => {
                let raw =
                    chunk::decode(layout, &shard_bytes[range]).map_err(|e| in_shard(e, &key))?;
                let at = piece
                    .relative_to(&chunk_domain)
                    .expect("piece inside chunk");
                let zero = vec![0; piece.ndim()];
                copy_block(
                    &raw,
                    layout.chunk_shape(),
                    at.origin(),
                    &mut bytes,
                    piece.shape(),
                    &zero,
                    piece.shape(),
                    elem,
                );
            }
            _ => fill(&mut bytes, layout.fill_value_bytes()),
        }
        pieces.push((piece, bytes));
    }
    Ok(pieces)
}
