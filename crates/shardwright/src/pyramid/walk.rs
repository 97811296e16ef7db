//! The order the one-pass driver reads level 0's blocks in, and (resuming) which of them
//! a missing shard needs.

use std::collections::HashSet;

use super::plan::Plan;
use crate::domain::{Domain, Grid};

/// The order level 0's blocks are read in, and which of them a resumed run needs.
pub(super) struct Walk<'a> {
    pub(super) plan: &'a Plan,
    pub(super) stored: &'a [HashSet<u64>],
    pub(super) resume: bool,
}

impl Walk<'_> {
    /// Visit level 0's blocks under `region` of level `k`: per shard of level `k` meeting
    /// it, per block whose origin lies in both, the blocks below it. `emit` returns false
    /// to stop.
    pub(super) fn visit(
        &self,
        k: usize,
        region: &Domain,
        emit: &mut dyn FnMut(Domain) -> bool,
    ) -> bool {
        let level = &self.plan.levels[k];
        for shard in level.shard_grid().cells_meeting(region) {
            let part = shard.intersect(region).expect("shard meets region");
            for block in blocks_starting_in(&level.block_grid(), &part) {
                let go_on = if k == 0 {
                    !self.needed(0, &block) || emit(block)
                } else {
                    let below = self.upsampled(k, &block);
                    self.visit(k - 1, &below, emit)
                };
                if !go_on {
                    return false;
                }
            }
        }
        true
    }

    /// The region of level `k - 1` that `block` of level `k` is made from.
    fn upsampled(&self, k: usize, block: &Domain) -> Domain {
        let f = &self.plan.factors;
        let origin: Vec<u64> = block.origin().iter().zip(f).map(|(o, f)| o * f).collect();
        let shape: Vec<u64> = block.shape().iter().zip(f).map(|(s, f)| s * f).collect();
        Domain::new(origin, shape)
            .intersect(&Domain::from_shape(self.plan.levels[k - 1].shape.clone()))
            .expect("a block's source region is inside the level below")
    }

    /// Whether `block` of level `k` feeds a shard not stored yet (at its level or above).
    pub(super) fn needed(&self, k: usize, block: &Domain) -> bool {
        if !self.resume {
            return true;
        }
        let level = &self.plan.levels[k];
        let grid = level.shard_grid();
        if grid
            .cells_meeting(block)
            .any(|s| !self.stored[k].contains(&grid.linear_index(s.index().expect("indexed"))))
        {
            return true;
        }
        k + 1 < self.plan.levels.len()
            && self.plan.levels[k + 1]
                .block_grid()
                .cells_meeting(&self.plan.downsampled(block))
                .any(|b| self.needed(k + 1, &b))
    }
}

/// The cells of `grid` whose origin lies in `part`, in C order.
fn blocks_starting_in(grid: &Grid, part: &Domain) -> Vec<Domain> {
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
        return out;
    }
    let mut index = lo.clone();
    loop {
        out.push(grid.cell(&index).expect("index inside the grid"));
        let mut d = index.len();
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            index[d] += 1;
            if index[d] < hi[d] {
                break;
            }
            index[d] = lo[d];
        }
    }
}
