//! Reading a region of an array back: shards in parallel, inner chunks decoded with zarrs.
//! Works on a layout and a store alone (below the writers and [`Array`](crate::Array),
//! which reads through it).

use rayon::prelude::*;

use crate::buffer;
use crate::domain::copy::copy_block;
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::format::{chunk, shard};
use crate::layout::Layout;
use crate::store::{join, Store};

/// A stored part of a region: its domain and its raw elements.
type Piece = (Domain, Vec<u8>);

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
            .flat_map(|(pieces, _)| pieces)
            .collect();
        place_pieces(&pieces, &mut out, region, elem)?;
    }
    Ok(out)
}

/// The pieces of `region` inside `shard_domain` that are stored, one per stored inner
/// chunk met (the rest of the result keeps the fill value), and the bytes fetched.
fn read_in_shard(
    store: &dyn Store,
    layout: &Layout,
    path: &str,
    shard_domain: &Domain,
    region: &Domain,
) -> Result<(Vec<Piece>, u64)> {
    let elem = layout.element_size();
    let layout = &*layout.shard_layout(grid_index(shard_domain)?)?;
    let key = join(path, &layout.shard_key(grid_index(shard_domain)?));
    let Some(stored) = store.get(&key)? else {
        return Ok((Vec::new(), 0));
    };
    let ranges = if layout.is_sharded() {
        shard::split(layout, &stored).map_err(|e| e.in_shard(&key))?
    } else {
        vec![Some(0..stored.len())]
    };
    let within = meet(shard_domain, region)?;
    let mut pieces = Vec::new();
    for chunk_domain in layout.chunk_grid().cells_meeting(&within) {
        let Some(range) = slot_range(&ranges, layout, &chunk_domain, &key)? else {
            continue;
        };
        let piece = meet(&chunk_domain, &within)?;
        let encoded = stored.get(range).ok_or_else(|| {
            crate::format::FormatError::Corrupt("a chunk range outside the shard".into())
                .in_shard(&key)
        })?;
        let raw = chunk::decode(layout, encoded).map_err(|e| e.in_shard(&key))?;
        let at = inside(&piece, &chunk_domain)?;
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
    Ok((pieces, stored.len() as u64))
}

/// Read `region` as [`read_region`] does, fetching from each shard only what the region
/// needs: a shard the region covers only in part is read as its index (one ranged get at
/// its start or end, kept in the cache of [`read_region_cached`]) plus one ranged get per
/// inner chunk met, so reading a shard region by region fetches each chunk once; a shard
/// covered whole with one get. Returns the elements and the encoded bytes fetched. Shards are read one after
/// another, so memory holds the result plus one shard's pieces.
///
/// ```
/// use std::sync::Arc;
/// use shardwright::{domain::Domain, layout::ArraySpec, store::{InstrumentedStore, MemoryStore, Store}, Array};
/// let store = Arc::new(InstrumentedStore::new(Arc::new(MemoryStore::new())));
/// let spec = ArraySpec::new(vec![8], "uint8", vec![2]).shards(vec![8]);
/// let array = Array::create(store.clone(), "a", &spec).unwrap();
/// let writer = array.shard_writer(&array.shard(&[0]).unwrap()).unwrap();
/// writer.write_region(&array.bounds(), &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
/// writer.commit().unwrap();
/// let (bytes, fetched) = shardwright::read::read_region_ranged(store.as_ref(), array.layout(), "a", &Domain::new(vec![2], vec![2])).unwrap();
/// assert_eq!(bytes, vec![3, 4]);
/// let whole = store.size("a/c/0").unwrap().unwrap();
/// assert!(fetched < whole); // the index and one chunk, not the whole shard
/// ```
///
/// # Errors
/// As [`read_region`].
pub fn read_region_ranged(
    store: &dyn Store,
    layout: &Layout,
    path: &str,
    region: &Domain,
) -> Result<(Vec<u8>, u64)> {
    read_region_cached(store, layout, path, region, &IndexCache::new(0))
}

/// The byte ranges of the inner chunks of the last few shards read (their indexes), so
/// that reading a shard region by region fetches its index once: for sources that do not
/// change while they are read.
///
/// ```
/// let cache = shardwright::read::IndexCache::new(16);
/// assert_eq!(cache.capacity(), 16);
/// ```
#[derive(Debug, Default)]
pub struct IndexCache {
    capacity: usize,
    entries: std::sync::Mutex<std::collections::VecDeque<(String, ChunkRanges)>>,
}

type ChunkRanges = std::sync::Arc<Vec<Option<std::ops::Range<u64>>>>;

impl IndexCache {
    /// A cache of the indexes of `capacity` shards (0: none kept).
    #[must_use]
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            entries: std::sync::Mutex::default(),
        }
    }

    /// How many shards' indexes it keeps.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::VecDeque<(String, ChunkRanges)>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn get(&self, key: &str) -> Option<ChunkRanges> {
        self.lock()
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, r)| std::sync::Arc::clone(r))
    }

    fn put(&self, key: &str, ranges: ChunkRanges) {
        if self.capacity == 0 {
            return;
        }
        let mut entries = self.lock();
        if entries.len() >= self.capacity {
            entries.pop_front();
        }
        entries.push_back((key.to_string(), ranges));
    }
}

/// [`read_region_ranged`], keeping the shard indexes it reads in `cache`.
///
/// # Errors
/// As [`read_region`].
pub fn read_region_cached(
    store: &dyn Store,
    layout: &Layout,
    path: &str,
    region: &Domain,
    cache: &IndexCache,
) -> Result<(Vec<u8>, u64)> {
    region.check_inside(&layout.bounds())?;
    let elem = layout.element_size();
    let mut out = buffer::filled(region.size(), layout.fill_value_bytes())?;
    let mut fetched = 0;
    for shard_domain in layout.shard_grid().cells_meeting(region) {
        let within = meet(&shard_domain, region)?;
        if layout.is_sharded() && within.size() < shard_domain.size() {
            let target = Target {
                out: &mut out,
                region,
            };
            read_ranged(
                store,
                layout,
                path,
                &shard_domain,
                &within,
                cache,
                target,
                &mut fetched,
            )?;
            continue;
        }
        let (pieces, stored) = read_in_shard(store, layout, path, &shard_domain, region)?;
        fetched += stored;
        place_pieces(&pieces, &mut out, region, elem)?;
    }
    Ok((out, fetched))
}

/// The grid index a cell handed out by a grid carries.
fn grid_index(cell: &Domain) -> Result<&[u64]> {
    cell.index()
        .ok_or_else(|| Error::Internal(format!("grid cell {cell} has no index")))
}

/// The part of `a` in `b`, which meet (cells are handed out for the regions they meet).
fn meet(a: &Domain, b: &Domain) -> Result<Domain> {
    a.intersect(b)
        .ok_or_else(|| Error::Internal(format!("{a} does not meet {b}")))
}

/// `piece` relative to `base`, which holds it.
fn inside(piece: &Domain, base: &Domain) -> Result<Domain> {
    piece
        .relative_to(base)
        .ok_or_else(|| Error::Internal(format!("{piece} is not inside {base}")))
}

/// The stored byte range of the inner chunk `chunk_domain` (`None`: not stored), from the
/// ranges of its shard's slots.
fn slot_range<T: Clone>(
    ranges: &[Option<std::ops::Range<T>>],
    layout: &Layout,
    chunk_domain: &Domain,
    key: &str,
) -> Result<Option<std::ops::Range<T>>> {
    let slot = layout.slot_in_shard(grid_index(chunk_domain)?);
    match ranges.get(slot) {
        Some(range) => Ok(range.clone()),
        None => Err(crate::format::FormatError::Corrupt(format!(
            "index of {} entries has no slot {slot}",
            ranges.len()
        ))
        .in_shard(key)
        .into()),
    }
}

/// Copy each decoded `(piece, bytes)` into `out`, the result buffer of `region`.
fn place_pieces(
    pieces: &[(Domain, Vec<u8>)],
    out: &mut [u8],
    region: &Domain,
    elem: usize,
) -> Result<()> {
    for (piece, bytes) in pieces {
        let at = inside(piece, region)?;
        let zero = vec![0; piece.ndim()];
        copy_block(
            bytes,
            piece.shape(),
            &zero,
            out,
            region.shape(),
            at.origin(),
            piece.shape(),
            elem,
        );
    }
    Ok(())
}

/// Where ranged reads land: the result buffer of `region`.
struct Target<'a> {
    out: &'a mut [u8],
    region: &'a Domain,
}

/// Read the stored parts of `within` (a part of the shard `shard_domain`) into the
/// target with ranged gets, the index first (or from `cache`), then each inner chunk
/// met, each decoded chunk copied straight into place.
#[allow(clippy::too_many_arguments)]
fn read_ranged(
    store: &dyn Store,
    layout: &Layout,
    path: &str,
    shard_domain: &Domain,
    within: &Domain,
    cache: &IndexCache,
    target: Target<'_>,
    fetched: &mut u64,
) -> Result<()> {
    let layout = &*layout.shard_layout(grid_index(shard_domain)?)?;
    let key = join(path, &layout.shard_key(grid_index(shard_domain)?));
    let ranges = match cache.get(&key) {
        Some(ranges) => ranges,
        None => {
            let Some(ranges) = read_index(store, layout, &key, fetched)? else {
                return Ok(());
            };
            let ranges = std::sync::Arc::new(ranges);
            cache.put(&key, std::sync::Arc::clone(&ranges));
            ranges
        }
    };
    let elem = layout.element_size();
    for chunk_domain in layout.chunk_grid().cells_meeting(within) {
        let Some(range) = slot_range(&ranges, layout, &chunk_domain, &key)? else {
            continue;
        };
        let Some(encoded) = store.get_range(&key, range)? else {
            continue;
        };
        *fetched += encoded.len() as u64;
        let piece = meet(&chunk_domain, within)?;
        let raw = chunk::decode(layout, &encoded).map_err(|e| e.in_shard(&key))?;
        let from = inside(&piece, &chunk_domain)?;
        let to = inside(&piece, target.region)?;
        copy_block(
            &raw,
            layout.chunk_shape(),
            from.origin(),
            target.out,
            target.region.shape(),
            to.origin(),
            piece.shape(),
            elem,
        );
    }
    Ok(())
}

/// The chunk ranges of the shard at `key` from its index (a size and a ranged get), or
/// `None` if there is no shard.
fn read_index(
    store: &dyn Store,
    layout: &Layout,
    key: &str,
    fetched: &mut u64,
) -> Result<Option<Vec<Option<std::ops::Range<u64>>>>> {
    let spec = layout
        .index()
        .ok_or(crate::format::FormatError::NotSharded)?;
    let Some(len) = store.size(key)? else {
        return Ok(None);
    };
    let size = spec.encoded_size();
    if len < size {
        return Err(crate::format::FormatError::Corrupt(format!(
            "shard of {len} bytes is shorter than its {size}-byte index"
        ))
        .in_shard(key)
        .into());
    }
    let index_range = match spec.location() {
        crate::layout::IndexLocation::Start => 0..size,
        crate::layout::IndexLocation::End => len - size..len,
    };
    // a shard deleted between the size and the get: read as missing
    let Some(index_bytes) = store.get_range(key, index_range)? else {
        return Ok(None);
    };
    *fetched += index_bytes.len() as u64;
    let ranges = shard::split_index(layout, &index_bytes, len).map_err(|e| e.in_shard(key))?;
    Ok(Some(ranges))
}
