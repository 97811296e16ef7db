//! What a resize clears, and when.
//!
//! Data stored outside an array's shape must be the fill value before a grow shows it.
//! A shrink therefore clears what it cuts off (deletes the shards wholly outside, sets
//! the elements past the new edge in the shards that stay to the fill value) — but only
//! after the new shape is stored: a failure before that changes nothing, and one during
//! the clearing leaves the new shape with its data. What a clearing that did not finish
//! leaves outside the shape is recorded before the new shape is stored, in
//! [`RECORD_KEY`] next to `zarr.json` (the extent it may lie within); every resize first
//! clears what the record names (before its own metadata put, so before a grow shows
//! any of it), and the record is deleted once nothing is left outside the shape.

use serde_json::Value;

use crate::array::Array;
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::layout::object_text::ObjectText;
use crate::layout::Layout;
use crate::store::{join, StoreError};

/// The record of data a shrink may have left outside the array's shape, in its folder.
pub(crate) const RECORD_KEY: &str = "shardwright-resize.json";

/// `shape` as JSON text.
pub(super) fn shape_json(shape: &[u64]) -> String {
    Value::from(shape.to_vec()).to_string()
}

/// What a resize does once its metadata is stored.
pub(super) struct Plan {
    /// The array as stored before the resize.
    stored: Array,
    /// The new shape, when it cuts off part of the stored one.
    shrink: Option<Vec<u64>>,
    /// Whether a record is to be deleted at the end.
    record: bool,
}

impl Plan {
    /// Clear what the new shape cut off, then delete the record.
    ///
    /// # Errors
    /// The store's and the shard writers' errors (the record is then kept).
    pub(super) fn finish(self) -> Result<()> {
        if let Some(shape) = &self.shrink {
            self.stored.clear_outside(shape)?;
        }
        if self.record {
            let key = join(self.stored.path(), RECORD_KEY);
            self.stored.store().delete(&key)?;
        }
        Ok(())
    }
}

impl Array {
    /// Before the metadata put of a resize of this array (as stored now, its metadata
    /// `top`) to `shape`: clear what the record says may be left outside the stored
    /// shape, and if `shape` cuts off part of it, record the stored shape.
    pub(super) fn prepare_resize(&self, top: &ObjectText, shape: &[u64]) -> Result<Plan> {
        let key = join(self.path(), RECORD_KEY);
        let stored = self.layout().shape().to_vec();
        let record = self.store().get(&key)?;
        let left = record
            .as_deref()
            .map(|r| left_within(&key, r))
            .transpose()?;
        // (a record of another rank was left by an array made here before: its shards
        // have other keys)
        if let Some(extent) = left.filter(|e| e.len() == stored.len()) {
            let wider: Vec<u64> = extent.iter().zip(&stored).map(|(e, s)| *e.max(s)).collect();
            if wider != stored {
                let text = top.edit(&[("shape".into(), shape_json(&wider))], &[], "");
                let wide = self.with_layout(Layout::from_json(text.as_bytes())?);
                wide.clear_outside(&stored)?;
            }
        }
        let shrinks = shape.iter().zip(&stored).any(|(n, s)| n < s);
        if shrinks {
            let text = serde_json::json!({
                "extent": stored,
                "about": "data past the array's shape, up to this extent, may be left by \
                          a shrink whose clearing did not finish; the next resize clears it",
            });
            self.store().put(&key, &[text.to_string().as_bytes()])?;
        }
        Ok(Plan {
            stored: self.clone(),
            shrink: shrinks.then(|| shape.to_vec()),
            record: shrinks || record.is_some(),
        })
    }

    /// Delete the shards wholly outside `shape` and set the elements outside it in the
    /// shards meeting it to the fill value: only the stored shards are visited where the
    /// store lists ([`Array::stored_shards`]), else the shards meeting the slabs `shape`
    /// cuts off (none when no axis shrinks).
    pub(super) fn clear_outside(&self, shape: &[u64]) -> Result<()> {
        let kept = Domain::from_shape(shape.to_vec());
        let old = self.bounds();
        let inside = old
            .intersect(&kept)
            .unwrap_or_else(|| Domain::new(vec![0; shape.len()], vec![0; shape.len()]));
        let fill = self.layout().fill_value_bytes().to_vec();
        if let Some(stored) = self.stored_shards()? {
            // One listing: only the stored shards are visited, not the grid's cells.
            for index in stored {
                let shard = self.shard(&index)?;
                let within = kept
                    .intersect(&shard)
                    .is_some_and(|p| p.origin() == shard.origin() && p.shape() == shard.shape());
                if !within {
                    self.clear_shard_outside(&kept, &shard, &index, &fill, true)?;
                }
            }
            return Ok(());
        }
        let mut seen = std::collections::HashSet::new();
        for slab in outside_of(&old, &inside) {
            for shard in self.shards_meeting(&slab) {
                let Some(index) = shard.index().map(<[u64]>::to_vec) else {
                    return Err(Error::Internal(format!("shard {shard} has no grid index")));
                };
                if !seen.insert(index.clone()) {
                    continue;
                }
                self.clear_shard_outside(&kept, &shard, &index, &fill, false)?;
            }
        }
        Ok(())
    }

    /// Delete `shard` (at grid `index`) if it lies wholly outside `kept`, else set its
    /// elements outside `kept` to `fill` — if it is stored (`listed`: known to be).
    fn clear_shard_outside(
        &self,
        kept: &Domain,
        shard: &Domain,
        index: &[u64],
        fill: &[u8],
        listed: bool,
    ) -> Result<()> {
        let key = self.shard_key(index);
        match kept.intersect(shard).filter(|part| !part.is_empty()) {
            None => self.store().delete(&key)?,
            Some(part) => {
                if !listed && self.store().size(&key)?.is_none() {
                    return Ok(());
                }
                let writer = self.shard_writer(shard)?;
                for piece in outside_of(shard, &part) {
                    writer.write_region_value(&piece, fill)?;
                }
                writer.commit()?;
            }
        }
        Ok(())
    }
}

/// The extent a record (stored at `key`) says data may be left within.
fn left_within(key: &str, record: &[u8]) -> Result<Vec<u64>> {
    let extent = serde_json::from_slice::<Value>(record)
        .ok()
        .and_then(|v| serde_json::from_value::<Vec<u64>>(v.get("extent")?.clone()).ok());
    extent.ok_or_else(|| {
        Error::Store(StoreError::Io {
            key: key.to_string(),
            message: "not the record of an unfinished resize shardwright writes there; if \
                      nothing else wrote it, delete it and resize again (a grow may then \
                      show data a failed shrink left past the shape)"
                .to_string(),
        })
    })
}

/// `region` less `inside` (a box inside it), as disjoint boxes: per axis, the slabs past
/// `inside`'s stop, within `inside` along the axes before.
pub(super) fn outside_of(region: &Domain, inside: &Domain) -> Vec<Domain> {
    let mut out = Vec::new();
    let mut origin = region.origin().to_vec();
    let mut shape = region.shape().to_vec();
    let stops = region.stop().into_iter().zip(inside.stop());
    let starts = inside.origin().iter().zip(inside.shape());
    for (d, ((region_stop, stop), (&start, &extent))) in stops.zip(starts).enumerate() {
        if stop < region_stop {
            let mut o = origin.clone();
            let mut s = shape.clone();
            if let (Some(od), Some(sd)) = (o.get_mut(d), s.get_mut(d)) {
                *od = stop;
                *sd = region_stop - stop;
            }
            // inside `region`, which is a valid box
            if let Ok(slab) = Domain::try_new(o, s) {
                out.push(slab);
            }
        }
        if let (Some(od), Some(sd)) = (origin.get_mut(d), shape.get_mut(d)) {
            *od = start;
            *sd = extent;
        }
    }
    out
}
