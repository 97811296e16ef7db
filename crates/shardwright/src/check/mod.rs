//! Checking a stored array for damage, and mending it: an fsck for sharded arrays,
//! whatever wrote them (shardwright, zarr-python, TensorStore, zarrs…).
//!
//! [`check`] visits the stored shards — those one listing of the array's folder finds
//! ([`Array::stored_shards`]), or, on a store that cannot list, every shard key of the
//! grid (a missing shard is the fill value, not damage) — and, for each, verifies
//!
//! - that it is long enough to hold its index (at the start or the end, as `zarr.json`
//!   says), and the index's `crc32c` checksum where its codecs have one;
//! - every index entry: the empty-slot marker, or a byte range inside the shard that does
//!   not overlap the index (chunks sharing bytes are allowed: a writer may store equal
//!   chunks once);
//! - unless [`CheckOptions::quick`], every inner chunk: it decodes, to a full chunk's size.
//!
//! An unsharded array's chunks are decoded one by one (quick: only a chunk of zero bytes,
//! a typical crash leftover, is found). Damage the format cannot show is not found: a byte
//! flipped inside a zstd frame without a content checksum may decode to other values.
//!
//! With [`CheckOptions::repair`], each damaged shard is rewritten right after it is
//! checked: every chunk that decodes is kept, its encoded bytes copied verbatim (no
//! re-encoding: the values are exactly those stored), the others become the fill value
//! and are listed ([`Repair::Rewritten`]); a shard with nothing left is removed. A shard
//! whose index fails its checksum loses its chunks unless the inner codecs verify what
//! they decode (a compressor or a checksum): the index is then read without its checksum,
//! and each chunk whose range lies in the shard, overlaps no other and decodes is kept.
//! Every rewrite is one atomic conditional put on the version that was checked
//! ([`Store::put_if`](crate::store::Store::put_if)), so a shard a live writer replaced meanwhile is never overwritten:
//! it is reported [`Repair::Skipped`]. A damaged chunk of an unsharded array is deleted
//! conditionally (or, on stores without a conditional delete, replaced by the fill chunk).
//!
//! A complete check also lists the crash debris under the array ([`Store::debris`](crate::store::Store::debris): stale
//! temporary files of dead writers, abandoned multipart uploads), and a repair removes it;
//! debris is not damage (no stored value depends on it), so it leaves the report clean.
//!
//! ```
//! use std::sync::Arc;
//! use shardwright::check::{check, CheckOptions, Repair};
//! use shardwright::store::{MemoryStore, Store};
//! use shardwright::{Array, ArraySpec};
//!
//! let store = Arc::new(MemoryStore::new());
//! let spec = ArraySpec::new(vec![8], "uint8", vec![2]).shards(vec![8]);
//! let array = Array::create(store.clone(), "a", &spec).unwrap();
//! let writer = array.shard_writer(&array.shard(&[0]).unwrap()).unwrap();
//! writer.write_region(&array.bounds(), &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
//! writer.commit().unwrap();
//! assert!(check(&array, &CheckOptions::default(), &mut |_| true).unwrap().is_clean());
//!
//! let mut shard = store.get("a/c/0").unwrap().unwrap();
//! shard[0] ^= 0xff; // the first chunk's zstd frame
//! store.put("a/c/0", &[&shard]).unwrap();
//! let options = CheckOptions { repair: true, ..CheckOptions::default() };
//! let report = check(&array, &options, &mut |_| true).unwrap();
//! assert_eq!(report.damaged[0].problems[0].chunk, Some(vec![0]));
//! assert_eq!(report.damaged[0].repair, Some(Repair::Rewritten { kept: 3, lost: vec![vec![0]] }));
//! assert_eq!(array.read(&array.bounds()).unwrap(), vec![0, 0, 3, 4, 5, 6, 7, 8]);
//! assert!(check(&array, &CheckOptions::default(), &mut |_| true).unwrap().is_clean());
//! ```

mod examine;
mod repair;
mod report;

pub use report::{coordinates, CheckProgress, CheckReport, DamagedShard, Problem, Repair};

use std::time::Instant;

use rayon::prelude::*;

use crate::array::Array;
use crate::domain::Domain;
use crate::error::Result;
use crate::store::StoreError;
use examine::{decode_chunks, read_index, Geometry};

/// What [`check`] does.
///
/// ```
/// let options = shardwright::check::CheckOptions { quick: true, ..Default::default() };
/// assert!(!options.repair);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckOptions {
    /// Check the shard indexes only (length, checksum, byte ranges), reading only the
    /// index of each shard; decode no chunk. A shard whose index looks damaged is read
    /// again whole, to confirm it on one consistent read (a live writer may have replaced
    /// it between the size and the ranged get), and, to repair it, its chunks decoded.
    pub quick: bool,
    /// Rewrite each damaged shard keeping the chunks that still decode (see the
    /// [module docs](self)).
    pub repair: bool,
}

/// What checking one grid cell found.
#[derive(Default)]
struct Cell {
    stored: bool,
    bytes_read: u64,
    chunks_checked: u64,
    chunks_decoded: u64,
    damaged: Option<DamagedShard>,
}

/// Check every stored shard (or chunk, for an unsharded array) of `array`, and with
/// [`CheckOptions::repair`] mend the damaged ones; see the [module docs](self). Shards
/// are checked in parallel on the global thread pool, a few at a time (memory holds a few
/// shards). `progress` is called after each batch; returning `false` stops the check (the
/// report then has [`complete`](CheckReport::complete) false).
///
/// ```
/// use std::sync::Arc;
/// use shardwright::check::{check, CheckOptions};
/// use shardwright::{Array, ArraySpec, MemoryStore, Store};
/// let store = Arc::new(MemoryStore::new());
/// let spec = ArraySpec::new(vec![4, 4], "uint16", vec![2, 2]).shards(vec![2, 4]);
/// let array = Array::create(store.clone(), "a", &spec).unwrap();
/// store.put("a/c/1/0", &[b"garbage"]).unwrap();
/// let report = check(&array, &CheckOptions { quick: true, repair: false }, &mut |_| true).unwrap();
/// assert_eq!((report.shards_stored, report.damaged.len()), (1, 1));
/// assert_eq!(report.damaged[0].key, "a/c/1/0");
/// assert!(report.damaged[0].problems[0].message.contains("shorter than its 36-byte index"));
/// ```
///
/// # Errors
/// [`Error::Store`](crate::Error::Store) when storage fails while reading (damage is
/// reported, never an error; a failed repair is [`Repair::Failed`] in the report).
pub fn check(
    array: &Array,
    options: &CheckOptions,
    progress: &mut dyn FnMut(&CheckProgress) -> bool,
) -> Result<CheckReport> {
    let started = Instant::now();
    let layout = array.layout();
    let geometry = Geometry::of(layout);
    let mut report = CheckReport {
        sharded: geometry.is_some(),
        quick: options.quick,
        repair: options.repair,
        shards_total: array.shard_grid().len(),
        complete: true,
        ..CheckReport::default()
    };
    let batch = (4 * rayon::current_num_threads()).max(16);
    // One listing where the store has one: the check costs what is stored, not the grid.
    let listed = array.stored_shards()?;
    let to_visit = listed
        .as_ref()
        .map_or(report.shards_total, |l| l.len() as u64);
    let mut cells: Box<dyn Iterator<Item = Domain>> = match listed {
        Some(indices) => Box::new(indices.into_iter().filter_map(|i| array.shard(&i).ok())),
        None => Box::new(array.shards()),
    };
    let mut done = 0u64;
    loop {
        let group: Vec<Domain> = cells.by_ref().take(batch).collect();
        if group.is_empty() {
            break;
        }
        let found: Vec<Cell> = group
            .par_iter()
            .map(|cell| match &geometry {
                // a rectilinear grid's shards differ in shape: each has its own geometry
                Some(_) if !layout.has_regular_shards() => {
                    let own = layout.shard_layout(cell.index().unwrap_or_default())?;
                    match Geometry::of(&own) {
                        Some(g) => check_shard(array, &g, cell, options),
                        None => Err(crate::Error::Internal("a shard without an index".into())),
                    }
                }
                Some(g) => check_shard(array, g, cell, options),
                None => check_chunk(array, cell, options),
            })
            .collect::<Result<_>>()?;
        done += group.len() as u64;
        for cell in found {
            report.shards_stored += u64::from(cell.stored);
            report.bytes_read += cell.bytes_read;
            report.chunks_checked += cell.chunks_checked;
            report.chunks_decoded += cell.chunks_decoded;
            report.damaged.extend(cell.damaged);
        }
        report.seconds = started.elapsed().as_secs_f64();
        let event = CheckProgress {
            shards_done: done,
            shards_total: to_visit,
            shards_stored: report.shards_stored,
            chunks_decoded: report.chunks_decoded,
            bytes_read: report.bytes_read,
            damaged: report.damaged.len() as u64,
        };
        if !progress(&event) {
            report.complete = false;
            break;
        }
    }
    if report.complete {
        report.debris = array.store().debris(array.path(), options.repair)?;
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

fn damaged(
    key: &str,
    cell: &Domain,
    size: u64,
    problems: Vec<Problem>,
    unreadable: bool,
) -> DamagedShard {
    DamagedShard {
        key: key.to_string(),
        shard: cell.index().unwrap_or_default().to_vec(),
        size,
        problems,
        index_unreadable: unreadable,
        repair: None,
    }
}

/// Check (and repair) the shard of `cell`.
fn check_shard(
    array: &Array,
    g: &Geometry<'_>,
    cell: &Domain,
    options: &CheckOptions,
) -> Result<Cell> {
    let store = array.store().as_ref();
    let index = cell.index().unwrap_or_default();
    let key = array.shard_key(index);
    let mut out = Cell::default();
    if options.quick {
        let Some(len) = store.size(&key)? else {
            return Ok(out);
        };
        let index_bytes = if len < g.index_size {
            Some(Vec::new())
        } else {
            match store.get_range(&key, g.index_range(len)) {
                Ok(Some(bytes)) => Some(bytes),
                Ok(None) => return Ok(out), // deleted since the size: missing, the fill value
                Err(StoreError::Range { .. }) => None, // replaced by a shorter value
                Err(e) => return Err(e.into()),
            }
        };
        if let Some(index_bytes) = index_bytes {
            out.bytes_read = index_bytes.len() as u64;
            let findings = read_index(g, index, &index_bytes, len);
            if findings.problems.is_empty() {
                out.stored = true;
                out.chunks_checked = findings.chunks_stored();
                return Ok(out);
            }
        }
        // Confirm on one read of the whole shard: a writer may have replaced it between
        // the size and the ranged get (a false alarm), and a repair needs its version.
    }
    let Some((bytes, version)) = store.get_versioned(&key)? else {
        return Ok(out); // deleted since the quick look: missing, the fill value
    };
    let len = bytes.len() as u64;
    out.bytes_read += len;
    out.stored = true;
    let mut findings = read_index(g, index, index_slice(g, &bytes), len);
    out.chunks_checked = findings.chunks_stored();
    if options.quick && findings.problems.is_empty() {
        return Ok(out);
    }
    if !options.quick || options.repair {
        decode_chunks(g, index, &bytes, &mut findings);
        out.chunks_decoded = findings.decoded;
    }
    if findings.problems.is_empty() {
        return Ok(out);
    }
    let mut report = damaged(
        &key,
        cell,
        len,
        findings.problems.clone(),
        findings.unreadable,
    );
    if options.repair {
        report.repair = Some(repair::rewrite_shard(
            store, g, &key, cell, &bytes, &version, &findings,
        ));
    }
    out.damaged = Some(report);
    Ok(out)
}

/// The index bytes of a stored shard (empty when it is shorter than an index).
fn index_slice<'b>(g: &Geometry<'_>, bytes: &'b [u8]) -> &'b [u8] {
    let range = g.index_range(bytes.len() as u64);
    usize::try_from(range.start)
        .ok()
        .zip(usize::try_from(range.end).ok())
        .and_then(|(a, b)| bytes.get(a..b))
        .unwrap_or_default()
}

/// Check (and repair) the chunk of `cell` of an unsharded array.
fn check_chunk(array: &Array, cell: &Domain, options: &CheckOptions) -> Result<Cell> {
    let store = array.store().as_ref();
    let coordinates = cell.index().unwrap_or_default();
    let layout = &*array.layout().shard_layout(coordinates)?;
    let key = array.shard_key(coordinates);
    let mut out = Cell::default();
    let problem = |message: String| Problem {
        chunk: Some(coordinates.to_vec()),
        message,
    };
    let (problem, len, full) = if options.quick {
        let Some(len) = store.size(&key)? else {
            return Ok(out);
        };
        let problem = (len == 0).then(|| problem("empty (0 bytes): not an encoded chunk".into()));
        (problem, len, None)
    } else {
        let Some((bytes, version)) = store.get_versioned(&key)? else {
            return Ok(out);
        };
        out.bytes_read = bytes.len() as u64;
        out.chunks_decoded = 1;
        let why = examine::chunk_error(layout, &bytes).map(problem);
        (why, bytes.len() as u64, Some(version))
    };
    out.stored = true;
    out.chunks_checked = 1;
    let Some(problem) = problem else {
        return Ok(out);
    };
    let mut report = damaged(&key, cell, len, vec![problem], false);
    if options.repair {
        let version = match full {
            Some(version) => Some(version),
            None => match store.get_versioned(&key)? {
                Some((bytes, version)) => {
                    out.bytes_read += bytes.len() as u64;
                    out.chunks_decoded += 1;
                    examine::chunk_error(layout, &bytes).map(|_| version)
                }
                None => None,
            },
        };
        report.repair = Some(match version {
            Some(version) => repair::clear_chunk(store, layout, &key, coordinates, &version),
            None => Repair::Skipped,
        });
    }
    out.damaged = Some(report);
    Ok(out)
}

#[cfg(test)]
mod tests;
