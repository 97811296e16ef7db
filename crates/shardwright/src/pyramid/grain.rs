//! Reading level 0 from a source whose chunks do not nest in the pyramid's blocks.
//!
//! A source decodes whole chunks ([`Source::read_grain`]): reading a block that covers a
//! part of a chunk costs the whole chunk. When the source's chunks are larger than level
//! 0's blocks (a Zarr v2 array chunked `(64, 512, 512)` feeding blocks of
//! `(32, 128, 128)`), reading block by block would decode each chunk once per block it
//! meets — 32 times there. [`GrainReader`] instead reads the source one chunk (*grain
//! cell*) at a time, keeps each until the last block needing it has been served (it knows
//! how many will, from the level-0 block grid and the resume filter), and cuts the blocks
//! out of the cells held.
//!
//! Memory: the cells held at once stay under [`GrainReader::budget`] bytes, the cells
//! meeting the smallest stretch of level 0 the walk reads without leaving it (a level's
//! block, or a top-level shard, seen at level 0) that covers a whole cell; past it, the
//! least recently used cell is dropped and read again if needed. With cells that tile
//! that stretch (the usual case: power-of-two chunks), each cell is read exactly once.

use std::collections::HashMap;

use super::plan::Plan;
use super::source::{source_error, Source};
use super::walk::Walk;
use super::PyramidError;
use crate::domain::copy::copy_block;
use crate::domain::{Domain, Grid};

/// A source cell held for the blocks still to come.
struct Held {
    region: Domain,
    data: Vec<u8>,
    uses_left: u64,
    last_used: u64,
}

/// Reads level 0's blocks from a source through its grain cells: see the module docs.
pub(super) struct GrainReader<'a> {
    source: &'a dyn Source,
    cells: Grid,
    blocks: Grid,
    element: usize,
    held: HashMap<u64, Held>,
    held_bytes: u64,
    /// The most raw bytes of cells held at once.
    pub(super) budget: u64,
    clock: u64,
    /// Raw bytes read from the source so far (cells read twice count twice).
    pub(super) bytes_read: u64,
}

impl<'a> GrainReader<'a> {
    /// A reader for level 0 of `plan` from `source`, or `None` when the source has no grain
    /// or its cells nest in level 0's blocks (each cell then meets one block only).
    pub(super) fn new(source: &'a dyn Source, plan: &Plan, element: usize) -> Option<Self> {
        let level = plan.levels.first()?;
        let grain = source.read_grain()?;
        let fits = grain.len() == level.shape.len() && grain.iter().all(|g| *g > 0);
        let nests = level
            .block
            .iter()
            .zip(&grain)
            .zip(&level.shape)
            .all(|((b, g), s)| b % g == 0 || b >= s);
        if !fits || nests {
            return None;
        }
        let cells = Grid::new(level.shape.clone(), grain.clone()).ok()?;
        Some(Self {
            source,
            blocks: level.block_grid().ok()?,
            budget: Self::budget(plan, &grain, element),
            cells,
            element,
            held: HashMap::new(),
            held_bytes: 0,
            clock: 0,
            bytes_read: 0,
        })
    }

    /// The most raw bytes of source cells held at once, for cells of `grain` and elements
    /// of `element` bytes.
    pub(super) fn budget(plan: &Plan, grain: &[u64], element: usize) -> u64 {
        let (Some(first), Some(last)) = (plan.levels.first(), plan.levels.last()) else {
            return 0;
        };
        let shape = &first.shape;
        let top = plan.levels.len() - 1;
        // Stretches of level 0 the walk reads consecutively, smallest first, with the
        // spacing of their origins.
        let mut stretches: Vec<(Vec<u64>, Vec<u64>)> = (plan.levels.iter().enumerate())
            .map(|(k, level)| plan_footprint(plan, k, &level.block))
            .collect();
        stretches.push(plan_footprint(plan, top, &last.shards));
        let covers = |extent: &[u64]| {
            extent
                .iter()
                .zip(grain)
                .zip(shape)
                .all(|((e, g), s)| e >= g || e >= s)
        };
        let cells: u64 = match stretches.into_iter().find(|(extent, _)| covers(extent)) {
            Some((extent, spacing)) => extent
                .iter()
                .zip(&spacing)
                .zip(grain)
                .zip(shape)
                .map(|(((e, p), g), s)| {
                    let across = if e % g == 0 && p % g == 0 {
                        e / g
                    } else {
                        e.div_ceil(*g) + 1
                    };
                    across.min(s.div_ceil(*g))
                })
                .product(),
            None => shape
                .iter()
                .zip(grain)
                .map(|(s, g)| s.div_ceil(*g))
                .product(),
        };
        cells * grain.iter().product::<u64>() * element as u64
    }

    /// The bytes of level-0 `block`, cut from the source's cells (read as needed).
    pub(super) fn read(&mut self, block: &Domain, walk: &Walk) -> Result<Vec<u8>, PyramidError> {
        let mut out = vec![0; block.size() as usize * self.element];
        for cell in self.cells.cells_meeting(block) {
            let Some(index) = cell.index() else {
                return Err(internal(format!("grid cell {cell} has no index")));
            };
            let key = self.cells.linear_index(index);
            self.clock += 1;
            if !self.held.contains_key(&key) {
                let data = self.source.read(&cell)?;
                let expected = cell.size() * self.element as u64;
                if data.len() as u64 != expected {
                    return Err(source_error(
                        &cell,
                        format!("it gave {} bytes, expected {expected}", data.len()),
                    ));
                }
                self.bytes_read += expected;
                let mut uses = 0;
                for b in self.blocks.cells_meeting(&cell) {
                    if walk.needed(0, &b)? {
                        uses += 1;
                    }
                }
                self.held_bytes += expected;
                let held = Held {
                    region: cell.clone(),
                    data,
                    uses_left: uses,
                    last_used: 0,
                };
                self.held.insert(key, held);
            }
            let Some(held) = self.held.get_mut(&key) else {
                return Err(internal(format!("cell {cell} was not kept")));
            };
            held.last_used = self.clock;
            held.uses_left = held.uses_left.saturating_sub(1);
            let Some(piece) = held.region.intersect(block) else {
                return Err(internal(format!("cell {cell} does not meet {block}")));
            };
            let from: Vec<u64> = piece
                .origin()
                .iter()
                .zip(held.region.origin())
                .map(|(p, c)| p - c)
                .collect();
            let to: Vec<u64> = piece
                .origin()
                .iter()
                .zip(block.origin())
                .map(|(p, b)| p - b)
                .collect();
            copy_block(
                &held.data,
                held.region.shape(),
                &from,
                &mut out,
                block.shape(),
                &to,
                piece.shape(),
                self.element,
            );
            if held.uses_left == 0 {
                self.drop_cell(key);
            }
        }
        while self.held_bytes > self.budget {
            let Some(oldest) = self
                .held
                .iter()
                .min_by_key(|(_, h)| h.last_used)
                .map(|(k, _)| *k)
            else {
                break;
            };
            self.drop_cell(oldest);
        }
        Ok(out)
    }

    fn drop_cell(&mut self, key: u64) {
        if let Some(held) = self.held.remove(&key) {
            self.held_bytes -= held.data.len() as u64;
        }
    }
}

/// The extent of level 0 that `extent` of level `k` is made from (each level's blocks
/// starting in it, down to level 0), and the spacing of such stretches' origins.
fn plan_footprint(plan: &Plan, k: usize, extent: &[u64]) -> (Vec<u64>, Vec<u64>) {
    let mut spacing = extent.to_vec();
    let top_shape = plan.levels.get(k).map_or(&[][..], |l| &l.shape[..]);
    let mut extent: Vec<u64> = extent
        .iter()
        .zip(top_shape)
        .map(|(e, s)| (*e).min(*s))
        .collect();
    for below in plan.levels.iter().take(k).rev() {
        let axes = extent.iter_mut().zip(spacing.iter_mut());
        let per_axis = plan.factors.iter().zip(&below.block).zip(&below.shape);
        for ((e, p), ((&f, &b), &s)) in axes.zip(per_axis) {
            *e = e.saturating_mul(f).div_ceil(b).saturating_mul(b).min(s);
            *p = p.saturating_mul(f);
        }
    }
    (extent, spacing)
}

fn internal(what: String) -> PyramidError {
    PyramidError::invalid(format!("internal error: {what}"))
}
