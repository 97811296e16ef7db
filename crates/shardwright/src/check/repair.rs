//! Mending a damaged shard (or unsharded chunk), conditionally on the version checked.

use super::examine::{Findings, Geometry};
use super::Repair;
use crate::domain::Domain;
use crate::format::{chunk, shard};
use crate::layout::Layout;
use crate::store::{Store, StoreError, Version};

/// The outcome of a conditional put or delete.
fn outcome(result: Result<(), StoreError>, done: Repair) -> Repair {
    match result {
        Ok(()) => done,
        Err(StoreError::Conflict { .. }) => Repair::Skipped,
        Err(e) => Repair::Failed(e.to_string()),
    }
}

/// Rewrite the shard at `key` (grid cell `cell`), read as `bytes` at `version`, keeping
/// every chunk `findings` found usable, copied verbatim; the rest become the fill value.
/// A shard with no usable chunk is removed (or, where the store cannot delete
/// conditionally, replaced by a shard of empty slots). Only if the stored shard is still
/// `version`: otherwise [`Repair::Skipped`].
pub(super) fn rewrite_shard(
    store: &dyn Store,
    g: &Geometry<'_>,
    key: &str,
    cell: &Domain,
    bytes: &[u8],
    version: &Version,
    findings: &Findings,
) -> Repair {
    let shard_index = cell.index().unwrap_or_default();
    let lost: Vec<Vec<u64>> = if findings.unreadable {
        // which chunks were stored is unknown: every chunk of the shard is the fill value now
        g.layout
            .chunk_grid()
            .cells_meeting(cell)
            .filter_map(|c| c.index().map(<[u64]>::to_vec))
            .collect()
    } else {
        findings
            .stored
            .iter()
            .zip(&findings.ranges)
            .enumerate()
            .filter(|(_, (stored, range))| **stored && range.is_none())
            .map(|(slot, _)| g.chunk_of(shard_index, slot))
            .collect()
    };
    let kept: Vec<Option<&[u8]>> = findings
        .ranges
        .iter()
        .map(|r| {
            let r = r.as_ref()?;
            bytes.get(usize::try_from(r.start).ok()?..usize::try_from(r.end).ok()?)
        })
        .collect();
    let count = kept.iter().flatten().count() as u64;
    if count == 0 && store.deletes_conditionally() {
        return outcome(
            store.delete_if(key, Some(version)),
            Repair::Removed { lost },
        );
    }
    let assembled = match shard::assemble(g.layout, &kept) {
        Ok(assembled) => assembled,
        Err(e) => return Repair::Failed(e.to_string()),
    };
    let done = if count == 0 {
        Repair::Removed { lost }
    } else {
        Repair::Rewritten { kept: count, lost }
    };
    outcome(store.put_if(key, &assembled.parts(), Some(version)), done)
}

/// Make the damaged chunk at `key` (an unsharded array's, at `coordinates`) the fill value:
/// delete it, conditionally on `version` (where the store cannot delete conditionally:
/// store the encoded fill chunk in its place, conditionally).
pub(super) fn clear_chunk(
    store: &dyn Store,
    layout: &Layout,
    key: &str,
    coordinates: &[u64],
    version: &Version,
) -> Repair {
    let done = Repair::Removed {
        lost: vec![coordinates.to_vec()],
    };
    if store.deletes_conditionally() {
        return outcome(store.delete_if(key, Some(version)), done);
    }
    match chunk::encode_fill(layout) {
        Ok(fill) => outcome(store.put_if(key, &[&fill], Some(version)), done),
        Err(e) => Repair::Failed(e.to_string()),
    }
}
