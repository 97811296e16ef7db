//! Keeping the levels of a pyramid in step with a level 0 that changed: after level 0 grew
//! (an append, a resize) or some of its regions were written again, [`update_levels`]
//! resizes the levels above to the shapes the new level 0 makes and rewrites only the
//! upper-level shards the changed regions reach, each whole, with one put.

use std::collections::BTreeMap;

use super::downsample::{self, Method};
use super::plan::level_shapes;
use super::PyramidError;
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::Array;

/// What [`update_levels`] did.
#[derive(Debug, Clone, Default)]
pub struct UpdateReport {
    /// The arrays, level 0 first, with the shapes the new level 0 makes.
    pub levels: Vec<Array>,
    /// Shards rewritten per level (0 for level 0, which is never written).
    pub shards_written: Vec<u64>,
    /// Raw bytes read back from the levels below the rewritten shards.
    pub bytes_read: u64,
    /// Bytes stored.
    pub bytes_written: u64,
    /// Puts of the rewritten shards (one each, or none for a shard left all fill value).
    pub puts: u64,
    /// Gets of the shard commits (0: each shard is written whole).
    pub gets: u64,
}

/// The region of level `k + 1` that `region` of level `k` (shape `below`) reaches: every
/// element whose block of `factors` meets it (a block left partial at the old edge too).
///
/// ```
/// use shardwright::pyramid::update::reached;
/// use shardwright::Domain;
/// let r = reached(&Domain::new(vec![5], vec![4]), &[2], &[9]);
/// assert_eq!((r.origin().to_vec(), r.shape().to_vec()), (vec![2], vec![3]));
/// ```
#[must_use]
pub fn reached(region: &Domain, factors: &[u64], below: &[u64]) -> Domain {
    let origin: Vec<u64> = region
        .origin()
        .iter()
        .zip(factors)
        .map(|(o, f)| o / f)
        .collect();
    let shape = region
        .stop()
        .iter()
        .zip(factors)
        .zip(below)
        .zip(&origin)
        .map(|(((s, f), b), o)| (*s).min(*b).div_ceil(*f).saturating_sub(*o))
        .collect();
    Domain::new(origin, shape)
}

/// The region of level `k` (shape `below`) that `region` of level `k + 1` is made from.
fn under(region: &Domain, factors: &[u64], below: &[u64]) -> Domain {
    let origin: Vec<u64> = region
        .origin()
        .iter()
        .zip(factors)
        .map(|(o, f)| o * f)
        .collect();
    let shape = region
        .stop()
        .iter()
        .zip(factors)
        .zip(below)
        .zip(&origin)
        .map(|(((s, f), b), o)| (s * f).min(*b).saturating_sub(*o))
        .collect();
    Domain::new(origin, shape)
}

/// Bring the levels above level 0 in step with it after the regions `dirty` of level 0
/// changed (or appeared, when it grew): resize `arrays[1..]` to the shapes level 0's
/// shape makes (each the one below divided by `factors`, rounded up, as
/// [`level_shapes`]), then, bottom-up, rewrite each shard of level `k` that the changed
/// regions of level `k - 1` reach, whole, from level `k - 1` read back (already updated),
/// downsampled with `method` as [`downsample::downsample_part`] (TensorStore's values);
/// the rewritten shards are what changed at level `k`. Level 0 is only read. `arrays` is
/// level 0 first; a level stored whole meanwhile by anyone else is rewritten the same.
///
/// ```
/// use std::sync::Arc;
/// use shardwright::pyramid::{update::update_levels, Method};
/// use shardwright::{Array, ArraySpec, Domain, MemoryStore};
/// let store = Arc::new(MemoryStore::new());
/// let spec = |n| ArraySpec::new(vec![n], "uint8", vec![2]).shards(vec![4]);
/// let level0 = Array::create(store.clone(), "img/0", &spec(8)).unwrap();
/// let level1 = Array::create(store.clone(), "img/1", &spec(2)).unwrap();
/// // level 0 grew from 4 to 8 elements: 4..8 are new
/// let w = level0.shard_writer(&level0.shard(&[1]).unwrap()).unwrap();
/// w.write_region(&Domain::new(vec![4], vec![4]), &[2, 4, 6, 8]).unwrap();
/// w.commit().unwrap();
/// let report = update_levels(&[level0, level1], &[2], Method::Mean, &[Domain::new(vec![4], vec![4])]).unwrap();
/// let top = &report.levels[1];
/// assert_eq!(top.read(&top.bounds()).unwrap(), vec![0, 0, 3, 7]);
/// assert_eq!(report.shards_written, vec![0, 1]);
/// ```
///
/// # Errors
/// [`Error::Pyramid`] for factors of the wrong length or a data type `method` has no
/// kernel for, the arrays' resize, read and writer errors otherwise. Shards rewritten before
/// an error stay (each whole); calling again with the same `dirty` finishes the job.
pub fn update_levels(
    arrays: &[Array],
    factors: &[u64],
    method: Method,
    dirty: &[Domain],
) -> Result<UpdateReport> {
    let Some(level0) = arrays.first() else {
        return Ok(UpdateReport::default());
    };
    let shape0 = level0.layout().shape().to_vec();
    if factors.len() != shape0.len() || factors.contains(&0) {
        return Err(PyramidError::invalid(format!(
            "factors {} must have {} values of at least 1, one per axis of level 0 (shape {})",
            super::plan::shape_text(factors),
            shape0.len(),
            super::plan::shape_text(&shape0)
        ))
        .into());
    }
    let data_type = level0.layout().data_type_spec().to_string();
    downsample::check_supported(&data_type, method).map_err(PyramidError::from)?;
    let shapes = level_shapes(&shape0, factors, Some(arrays.len()));
    let mut report = UpdateReport {
        levels: vec![level0.clone()],
        shards_written: vec![0; arrays.len()],
        ..UpdateReport::default()
    };
    let bounds0 = level0.bounds();
    let mut changed: Vec<Domain> = dirty.iter().filter_map(|d| d.intersect(&bounds0)).collect();
    for (k, (array, shape)) in arrays.iter().zip(&shapes).enumerate().skip(1) {
        if array.layout().data_type_spec() != data_type {
            return Err(PyramidError::invalid(format!(
                "level {k} ('{}') holds {}; level 0 holds {data_type}",
                array.path(),
                array.layout().data_type_spec()
            ))
            .into());
        }
        let array = if array.layout().shape() == &shape[..] {
            array.clone()
        } else {
            array.resize(shape.clone())?
        };
        let below = report
            .levels
            .last()
            .cloned()
            .ok_or_else(|| Error::Internal("no level below".into()))?;
        let below_shape = below.layout().shape().to_vec();
        // the shards reached, each once, in C order
        let mut touched = BTreeMap::new();
        for region in &changed {
            for shard in array.shards_meeting(&reached(region, factors, &below_shape)) {
                if let Some(index) = shard.index() {
                    touched.insert(index.to_vec(), shard.clone());
                }
            }
        }
        let mut next = Vec::with_capacity(touched.len());
        for shard in touched.into_values() {
            let source = under(&shard, factors, &below_shape);
            let data = below.read(&source)?;
            report.bytes_read += data.len() as u64;
            let down = downsample::downsample_part(
                &data,
                source.origin(),
                source.shape(),
                &below_shape,
                factors,
                &data_type,
                method,
            )
            .map_err(PyramidError::from)?;
            drop(data);
            let writer = array.shard_writer(&shard)?;
            writer.write_region(&shard, &down)?;
            let stats = writer.commit()?;
            report.puts += stats.puts;
            report.gets += stats.gets;
            report.bytes_written += stats.bytes_written;
            if let Some(n) = report.shards_written.get_mut(k) {
                *n += 1;
            }
            next.push(shard);
        }
        changed = next;
        report.levels.push(array);
    }
    Ok(report)
}

/// The regions of level 0 (now of `shape`) that are new or changed since the levels were
/// made from it at shape `old`: along each axis that grew, the slab past the old edge;
/// along each that shrank, the slab from the start of the block of `factors` holding the
/// new edge (that block is partial now).
///
/// ```
/// use shardwright::pyramid::update::changed_regions;
/// let regions = changed_regions(&[3, 10], &[5, 10], &[1, 2]);
/// assert_eq!(regions.len(), 1);
/// assert_eq!((regions[0].origin().to_vec(), regions[0].shape().to_vec()), (vec![3, 0], vec![2, 10]));
/// assert!(changed_regions(&[5, 10], &[5, 10], &[1, 2]).is_empty());
/// ```
#[must_use]
pub fn changed_regions(old: &[u64], shape: &[u64], factors: &[u64]) -> Vec<Domain> {
    let mut out = Vec::new();
    for (d, ((o, n), f)) in old.iter().zip(shape).zip(factors).enumerate() {
        if o == n || *n == 0 {
            continue;
        }
        let lo = if n > o { *o } else { (n - 1) / f * f };
        let mut origin = vec![0; shape.len()];
        let mut extent = shape.to_vec();
        if let (Some(a), Some(e)) = (origin.get_mut(d), extent.get_mut(d)) {
            *a = lo;
            *e = n - lo;
        }
        out.push(Domain::new(origin, extent));
    }
    out
}
