//! The order the one-pass driver reads level 0's blocks in, and (resuming) which of them
//! a missing shard needs.

use std::collections::HashSet;

use super::plan::{LevelPlan, Plan};
use super::PyramidError;
use crate::domain::{Domain, Grid};

/// A walk's result; a broken invariant of the plan is an `Invalid` error naming it.
type Result<T> = std::result::Result<T, PyramidError>;

fn internal(what: String) -> PyramidError {
    PyramidError::invalid(format!("internal error: {what}"))
}

/// The order level 0's blocks are read in, and which of them a resumed run needs.
pub(crate) struct Walk {
    pub(crate) plan: Plan,
    pub(crate) stored: Vec<HashSet<u64>>,
    pub(crate) resume: bool,
}

impl Walk {
    /// Visit level 0's blocks under `region` of level `k`: per shard of level `k` meeting
    /// it, per block whose origin lies in both, the blocks below it. `emit` returns false
    /// to stop.
    pub(crate) fn visit(
        &self,
        k: usize,
        region: &Domain,
        emit: &mut dyn FnMut(Domain) -> bool,
    ) -> Result<bool> {
        let level = self.level(k)?;
        let blocks = level.block_grid()?;
        for shard in level.shard_grid()?.cells_meeting(region) {
            // a cell met by `region` meets it
            let Some(part) = shard.intersect(region) else {
                continue;
            };
            for block in blocks_starting_in(&blocks, &part)? {
                let go_on = match k.checked_sub(1) {
                    None => !self.needed(0, &block)? || emit(block),
                    Some(below) => {
                        let from = self.upsampled(k, &block)?;
                        self.visit(below, &from, emit)?
                    }
                };
                if !go_on {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    fn level(&self, k: usize) -> Result<&LevelPlan> {
        self.plan
            .levels
            .get(k)
            .ok_or_else(|| internal(format!("no level {k} in the plan")))
    }

    /// The region of level `k - 1` that `block` of level `k` is made from.
    fn upsampled(&self, k: usize, block: &Domain) -> Result<Domain> {
        let f = &self.plan.factors;
        let origin = block
            .origin()
            .iter()
            .zip(f)
            .map(|(o, f)| o.saturating_mul(*f));
        let shape = block
            .shape()
            .iter()
            .zip(f)
            .map(|(s, f)| s.saturating_mul(*f));
        let below = Domain::from_shape(self.level(k.saturating_sub(1))?.shape.clone());
        Domain::try_new(origin.collect(), shape.collect())
            .map_err(|e| internal(e.to_string()))?
            .intersect(&below)
            .ok_or_else(|| internal(format!("block {block} has no source below")))
    }

    /// Whether `block` of level `k` feeds a shard not stored yet (at its level or above).
    pub(crate) fn needed(&self, k: usize, block: &Domain) -> Result<bool> {
        if !self.resume {
            return Ok(true);
        }
        let grid = self.level(k)?.shard_grid()?;
        let stored = self
            .stored
            .get(k)
            .ok_or_else(|| internal(format!("no stored shards for level {k}")))?;
        for shard in grid.cells_meeting(block) {
            let index = shard
                .index()
                .ok_or_else(|| internal(format!("shard {shard} has no grid index")))?;
            if !stored.contains(&grid.linear_index(index)) {
                return Ok(true);
            }
        }
        let Some(above) = self.plan.levels.get(k + 1) else {
            return Ok(false);
        };
        for parent in above
            .block_grid()?
            .cells_meeting(&self.plan.downsampled(block))
        {
            if self.needed(k + 1, &parent)? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// The cells of `grid` whose origin lies in `part`, in C order.
fn blocks_starting_in(grid: &Grid, part: &Domain) -> Result<Vec<Domain>> {
    let cell = grid.cell_shape();
    let lo: Vec<u64> = part
        .origin()
        .iter()
        .zip(cell)
        .map(|(o, c)| o.div_ceil(*c))
        .collect();
    let hi: Vec<u64> = part
        .stop()
        .iter()
        .zip(cell)
        .map(|(s, c)| s.div_ceil(*c))
        .collect();
    let mut out = Vec::new();
    if lo.iter().zip(&hi).any(|(l, h)| l >= h) {
        return Ok(out);
    }
    let mut index = lo.clone();
    loop {
        out.push(grid.cell(&index).map_err(|e| internal(e.to_string()))?);
        // advance the odometer, the last axis fastest; done when it wraps around
        let mut advanced = false;
        for ((i, l), h) in index.iter_mut().zip(&lo).zip(&hi).rev() {
            *i += 1;
            if *i < *h {
                advanced = true;
                break;
            }
            *i = *l;
        }
        if !advanced {
            return Ok(out);
        }
    }
}
