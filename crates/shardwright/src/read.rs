//! Reading a region of an array back: shards in parallel, inner chunks decoded with zarrs.
//! Works on a layout and a store alone (below the writers and [`Array`](crate::Array),
//! which reads through it).

use rayon::prelude::*;

use crate::buffer;
use crate::domain::copy::copy_block;
use crate::domain::Domain;
use crate::error::Result;
use crate::format::{chunk, shard};
use crate::layout::Layout;
use crate::store::{join, Store};

/// Read `region` of the array laid out as `layout`, whose folder in `store` is `path`, as
/// raw elements (C order, native endian). The result buffer is allocated fallibly: a region
/// larger than memory is an [`Error::OutOfMemory`](crate::Error::OutOfMemory) naming its
/// size. Shards are read and decoded in parallel, a few at a time, so memory holds the
/// result plus the pieces of those few shards.
///
/// ```
/// use std::sync::Arc;
/// use shardwright::{domain::Domain, layout::ArraySpec, store::MemoryStore, Array};
/// let spec = ArraySpec::new(vec![4], "uint8", vec![2]).shards(vec![4]).fill_value(serde_json::json!(9));
/// let array = Array::create(Arc::new(MemoryStore::new()), "a", &spec).unwrap();
/// let region = Domain::new(vec![1], vec![2]);
/// let bytes = shardwright::read::read_region(array.store().as_ref(), array.layout(), "a", &region);
/// assert_eq!(bytes.unwrap(), vec![9, 9]);
/// ```
///
/// # Errors
/// [`Error::Domain`](crate::Error::Domain) for a region outside the array,
/// [`Error::Format`](crate::Error::Format) for a corrupt stored shard,
/// [`Error::Store`](crate::Error::Store) if storage fails,
/// [`Error::OutOfMemory`](crate::Error::OutOfMemory) for a result larger than memory.
pub fn read_region(
    store: &dyn Store,
    layout: &Layout,
    path: &str,
    region: &Domain,
) -> Result<Vec<u8>> {
    region.check_inside(&layout.bounds())?;
    let elem = layout.element_size();
    let mut out = buffer::filled(region.size(), layout.fill_value_bytes())?;
    if region.is_empty() {
        return Ok(out);
    }
    let shards: Vec<Domain> = layout.shard_grid().cells_meeting(region).collect();
    let batch = 2 * rayon::current_num_threads().max(1);
    for group in shards.chunks(batch) {
        let pieces: Vec<(Domain, Vec<u8>)> = group
            .par_iter()
            .map(|s| read_in_shard(store, layout, path, s, region))
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
    }
    Ok(out)
}

/// The pieces of `region` inside `shard_domain` that are stored, one per stored inner
/// chunk met (the rest of the result keeps the fill value).
fn read_in_shard(
    store: &dyn Store,
    layout: &Layout,
    path: &str,
    shard_domain: &Domain,
    region: &Domain,
) -> Result<Vec<(Domain, Vec<u8>)>> {
    let elem = layout.element_size();
    let index = shard_domain.index().expect("grid cells carry their index");
    let key = join(path, &layout.shard_key(index));
    let Some(stored) = store.get(&key)? else {
        return Ok(Vec::new());
    };
    let ranges = if layout.is_sharded() {
        shard::split(layout, &stored).map_err(|e| e.in_shard(&key))?
    } else {
        vec![Some(0..stored.len())]
    };
    let within = shard_domain.intersect(region).expect("shard meets region");
    let mut pieces = Vec::new();
    for chunk_domain in layout.chunk_grid().cells_meeting(&within) {
        let chunk_index = chunk_domain.index().expect("grid cells carry their index");
        let Some(range) = ranges[layout.slot_in_shard(chunk_index)].clone() else {
            continue;
        };
        let piece = chunk_domain.intersect(&within).expect("chunk meets region");
        let raw = chunk::decode(layout, &stored[range]).map_err(|e| e.in_shard(&key))?;
        let at = piece
            .relative_to(&chunk_domain)
            .expect("piece inside chunk");
        let mut bytes = buffer::zeroed(buffer::size_of(piece.size(), elem)?)?;
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
        pieces.push((piece, bytes));
    }
    Ok(pieces)
}
