//! The order an image's level-0 shards are best written in, and small helpers over
//! level-0 chunks.

use std::collections::HashSet;

use crate::domain::copy::copy_block;
use crate::domain::{Domain, Grid};
use crate::error::{Error, Result};
use crate::pyramid::plan::Plan;
use crate::pyramid::walk::Walk;
use crate::Array;

/// Every shard of `grid` (level 0's shard grid), in the order the one-pass driver reads
/// level 0 (nested under each coarser level's shards and blocks): the order in which the
/// coarser levels' blocks complete soonest.
pub(crate) fn nested_shards(plan: &Plan, grid: &Grid) -> Result<Vec<Domain>> {
    let walk = Walk {
        plan: plan.clone(),
        stored: vec![HashSet::new(); plan.levels.len()],
        resume: false,
    };
    let top = plan.levels.len().saturating_sub(1);
    let top_shape = plan
        .levels
        .last()
        .map(|l| l.shape.clone())
        .unwrap_or_default();
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut failed = None;
    walk.visit(top, &Domain::from_shape(top_shape), &mut |block| {
        for shard in grid.cells_meeting(&block) {
            let Some(index) = shard.index() else {
                failed = Some(Error::Internal(format!("shard {shard} has no grid index")));
                return false;
            };
            if seen.insert(grid.linear_index(index)) {
                out.push(shard);
            }
        }
        true
    })?;
    match failed {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// The linear indices of level 0's inner chunks inside the shards `shards` (linear shard
/// indices).
pub(crate) fn chunks_of_shards(level0: &Array, shards: &HashSet<u64>) -> HashSet<u64> {
    let grid = level0.shard_grid();
    let chunks = level0.chunk_grid();
    let mut out = HashSet::new();
    for shard in level0.shards() {
        if shard
            .index()
            .is_some_and(|i| shards.contains(&grid.linear_index(i)))
        {
            for chunk in chunks.cells_meeting(&shard) {
                if let Some(i) = chunk.index() {
                    out.insert(chunks.linear_index(i));
                }
            }
        }
    }
    out
}

/// The elements of `part` (inside `region`) cut from `data` (the elements of `region`).
pub(crate) fn cut(data: &[u8], region: &Domain, part: &Domain, element: usize) -> Result<Vec<u8>> {
    let from = part
        .relative_to(region)
        .ok_or_else(|| Error::Internal(format!("{part} is not inside {region}")))?;
    let mut out = vec![0; part.size() as usize * element];
    copy_block(
        data,
        region.shape(),
        from.origin(),
        &mut out,
        part.shape(),
        &vec![0; part.ndim()],
        part.shape(),
        element,
    );
    Ok(out)
}
