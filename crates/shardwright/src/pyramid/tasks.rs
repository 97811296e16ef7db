//! A pyramid built as independent tasks, one per shard of each level, for a scheduler that
//! runs them where it likes (Dask's `shardwright.dask.pyramid`).
//!
//! [`LevelTasks::prepare`] plans the pyramid and creates its level arrays, empty.
//! Level 0's shards are then written by whoever has the source (any shard writer); a shard
//! of level `k ≥ 1` is written by [`LevelTasks::write_shard`] from level `k - 1` as stored,
//! once the shards of level `k - 1` it reads ([`LevelTasks::inputs`]) are: it reads the
//! same blocks of `lcm(inner chunk, factors)` that the one-pass driver downsamples and
//! downsamples each the same way, so every level equals [`build::pyramid`]'s bit for bit.
//! [`LevelTasks::finish`] writes the group's metadata last. A task that runs twice (a
//! retry, a worker lost) writes the same shard again, whole: every shard put is atomic.
//!
//! ```
//! use std::sync::Arc;
//! use shardwright::pyramid::{build, plan::PlanRequest, source::BufferSource, tasks::LevelTasks};
//! use shardwright::{Compressor, MemoryStore, store::Store};
//!
//! let data: Vec<u8> = (0..64u8).collect();
//! let source = BufferSource::new(data.clone(), vec![8, 8], "uint8");
//! let request = PlanRequest { factors: vec![2, 2], levels: Some(2), chunks: Some(vec![vec![2, 2]]),
//!                             shards: Some(vec![vec![4, 4]]), ..Default::default() };
//! let options = build::BuildOptions::new(request, Compressor::None);
//! let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
//! let tasks = LevelTasks::prepare(&source, Arc::clone(&store), "p.zarr", &options).unwrap();
//! // level 0 from the source (here in one go), then level 1 shard by shard
//! let level0 = &tasks.levels()[0];
//! for shard in level0.shards() {
//!     let writer = level0.shard_writer(&shard).unwrap();
//!     writer.write_region_of(&shard, &data, &level0.bounds()).unwrap();
//!     writer.commit().unwrap();
//! }
//! assert_eq!(tasks.inputs(1, &[0, 0]).unwrap(), vec![vec![0, 0], vec![0, 1], vec![1, 0], vec![1, 1]]);
//! tasks.write_shard(1, &[0, 0]).unwrap();
//! tasks.finish().unwrap();
//! let level1 = tasks.levels()[1].read(&tasks.levels()[1].bounds()).unwrap();
//! // the means of the 2×2 blocks (0, 1, 8, 9) and (2, 3, 10, 11), 4.5 and 6.5, ties to even
//! assert_eq!(level1[..2], [4, 6]);
//! ```
//!
//! [`build::pyramid`]: super::build::pyramid

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use super::downsample::{self, Method};
use super::levels::{
    group_document, level_arrays, level_paths, pretty, stored_shards, SETTINGS_KEY,
};
use super::ome::set_windows;
use super::options::BuildOptions;
use super::plan::lcm;
use super::source::Source;
use super::window::ChannelWindows;
use super::PyramidError;
use crate::array::METADATA_KEY;
use crate::domain::{Domain, Grid};
use crate::error::{Error, Result};
use crate::store::{join, Store};
use crate::writer::CommitStats;
use crate::Array;

/// A prepared pyramid whose shards are written one task at a time.
#[derive(Clone)]
pub struct LevelTasks {
    store: Arc<dyn Store>,
    path: String,
    levels: Vec<Array>,
    factors: Vec<u64>,
    method: Method,
    group: Vec<u8>,
}

impl std::fmt::Debug for LevelTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LevelTasks")
            .field("path", &self.path)
            .field("levels", &self.levels.len())
            .field("factors", &self.factors)
            .field("method", &self.method)
            .finish_non_exhaustive()
    }
}

impl LevelTasks {
    /// Plan the pyramid of `source` (its shape, data type and fill value; it is not read)
    /// at `path` in `store` and create its level arrays, or with `options.resume` open the
    /// ones a stopped job made (checked to be made the same way). The group's metadata is
    /// not written: [`finish`](Self::finish) does, once every shard is stored.
    ///
    /// # Errors
    /// As [`build::pyramid`](super::build::pyramid): settings that do not fit the source,
    /// [`Error::AlreadyExists`] for a complete pyramid at `path` (unless resuming).
    pub fn prepare(
        source: &dyn Source,
        store: Arc<dyn Store>,
        path: &str,
        options: &BuildOptions,
    ) -> Result<Self> {
        let path = path.trim_matches('/').to_string();
        let plan = options.request.plan(&source.shape(), &source.data_type())?;
        let group = group_document(&plan, options, &path, &[])?;
        let group = super::add_levels_group::with_level0_record(&group, &plan, None)?;
        if !options.resume && store.size(&join(&path, METADATA_KEY))?.is_some() {
            return Err(Error::AlreadyExists(path));
        }
        let levels = level_arrays(
            (&source.data_type(), source.fill_value()),
            &store,
            &level_paths(&path, &plan),
            &plan,
            options,
        )?;
        Ok(Self {
            store,
            path,
            levels,
            factors: plan.factors.clone(),
            method: plan.method,
            group,
        })
    }

    /// The tasks of a prepared pyramid, opened again (on another machine): its `levels`
    /// level arrays at `path/0`, `path/1`, …, and `group`, the document
    /// [`group_document`](Self::group_document) gave. Nothing is created.
    ///
    /// # Errors
    /// [`Error::NotFound`] for a level array that is not there; [`PyramidError::Invalid`]
    /// for arrays without the record of how the pyramid makes them.
    pub fn open(store: Arc<dyn Store>, path: &str, levels: usize, group: Vec<u8>) -> Result<Self> {
        let path = path.trim_matches('/').to_string();
        let arrays = (0..levels)
            .map(|k| Array::open(Arc::clone(&store), &join(&path, &k.to_string())))
            .collect::<Result<Vec<_>>>()?;
        let first = arrays
            .first()
            .ok_or_else(|| PyramidError::invalid("a pyramid has at least one level"))?;
        let (factors, method) = settings(first)?;
        Ok(Self {
            store,
            path,
            levels: arrays,
            factors,
            method,
            group,
        })
    }

    /// The level arrays, level 0 first.
    #[must_use]
    pub fn levels(&self) -> &[Array] {
        &self.levels
    }

    /// The group's `zarr.json` that [`finish`](Self::finish) writes.
    #[must_use]
    pub fn group_document(&self) -> &[u8] {
        &self.group
    }

    /// The linear indices of the shards already stored, per level (a resumed job skips
    /// them).
    ///
    /// # Errors
    /// [`Error::Store`] when the store cannot be asked.
    pub fn stored(&self) -> Result<Vec<HashSet<u64>>> {
        stored_shards(&self.levels)
    }

    fn level_pair(&self, level: usize) -> Result<(&Array, &Array)> {
        let upper = self.levels.get(level);
        let lower = level.checked_sub(1).and_then(|k| self.levels.get(k));
        match (lower, upper) {
            (Some(lower), Some(upper)) => Ok((lower, upper)),
            _ => Err(PyramidError::invalid(format!(
                "level {level} is not downsampled from another: the levels are 1 to {} \
                 (level 0 is written from the source)",
                self.levels.len().saturating_sub(1)
            ))
            .into()),
        }
    }

    /// The blocks of level `level - 1` that shard `index` of `level` is downsampled from:
    /// those of `lcm(inner chunk, factors)` meeting the shard's region there.
    fn blocks(&self, level: usize, index: &[u64]) -> Result<(Domain, Vec<Domain>)> {
        let (lower, upper) = self.level_pair(level)?;
        let shard = upper.shard(index)?;
        let block: Vec<u64> = lower
            .layout()
            .chunk_shape()
            .iter()
            .zip(&self.factors)
            .map(|(c, f)| lcm(*c, *f))
            .collect();
        let grid = Grid::new(lower.layout().shape().to_vec(), block)
            .map_err(|e| PyramidError::invalid(format!("level {} blocks: {e}", level - 1)))?;
        let origin: Vec<u64> = shard
            .origin()
            .iter()
            .zip(&self.factors)
            .map(|(o, f)| o * f)
            .collect();
        let stop: Vec<u64> = shard
            .stop()
            .iter()
            .zip(&self.factors)
            .zip(lower.layout().shape())
            .map(|((s, f), n)| (s * f).min(*n))
            .collect();
        let shape = stop.iter().zip(&origin).map(|(s, o)| s - o).collect();
        let region = Domain::try_new(origin, shape)?;
        Ok((shard, grid.cells_meeting(&region).collect()))
    }

    /// The shard indices of level `level - 1` that shard `index` of `level` reads: the
    /// tasks it waits for.
    ///
    /// # Errors
    /// [`PyramidError::Invalid`] for level 0 or a level past the top; [`Error::Domain`]
    /// for an index outside the level's shard grid.
    pub fn inputs(&self, level: usize, index: &[u64]) -> Result<Vec<Vec<u64>>> {
        let (lower, _) = self.level_pair(level)?;
        let (_, blocks) = self.blocks(level, index)?;
        let mut shards = BTreeSet::new();
        for block in &blocks {
            for shard in lower.shards_meeting(block) {
                shards.insert(shard.index().map(<[u64]>::to_vec).unwrap_or_default());
            }
        }
        Ok(shards.into_iter().collect())
    }

    /// Write shard `index` of `level` (1 or more) from level `level - 1` as stored: one
    /// put. Memory: the shard's raw bytes and one block of the level below.
    ///
    /// # Errors
    /// As [`inputs`](Self::inputs); reading the level below and committing the shard as
    /// a shard writer does.
    pub fn write_shard(&self, level: usize, index: &[u64]) -> Result<CommitStats> {
        let (lower, upper) = self.level_pair(level)?;
        let (shard, blocks) = self.blocks(level, index)?;
        let data_type = upper.layout().data_type_spec().to_string();
        let writer = upper.shard_writer(&shard)?;
        for block in blocks {
            let data = lower.read(&block)?;
            // The block as a part of the level: TensorStore's values for the whole level.
            let down = downsample::downsample_part(
                &data,
                block.origin(),
                block.shape(),
                lower.layout().shape(),
                &self.factors,
                &data_type,
                self.method,
            )
            .map_err(PyramidError::from)?;
            drop(data);
            let region = Domain::try_new(
                block
                    .origin()
                    .iter()
                    .zip(&self.factors)
                    .map(|(o, f)| o / f)
                    .collect(),
                downsample::output_shape(block.shape(), &self.factors),
            )?;
            if let Some(part) = region.intersect(&shard) {
                writer.write_region_of(&part, &down, &region)?;
            }
        }
        if !writer.is_complete() {
            return Err(Error::Internal(format!(
                "the blocks of level {} did not cover shard {shard} of level {level}",
                level - 1
            )));
        }
        writer.commit()
    }

    /// Write the group's `zarr.json` (the OME `multiscales`): the pyramid is complete.
    /// With `omero` channels, their windows are computed first from the stored top level
    /// (read once), as [`build::pyramid`](super::build::pyramid) computes them. Returns
    /// the bytes written.
    ///
    /// # Errors
    /// [`Error::Store`] when the put or a read of the top level fails.
    pub fn finish(&self) -> Result<u64> {
        let mut group: serde_json::Value = serde_json::from_slice(&self.group)
            .map_err(|e| PyramidError::invalid(format!("the group document is not JSON: {e}")))?;
        let text = match (group.pointer("/attributes/ome/omero"), self.levels.last()) {
            (Some(_), Some(top)) => {
                let mut windows = ChannelWindows::for_array(top);
                windows.observe_array(top)?;
                set_windows(&mut group, &windows.windows());
                pretty(&group)?
            }
            _ => self.group.clone(),
        };
        self.store.put(&join(&self.path, METADATA_KEY), &[&text])?;
        Ok(text.len() as u64)
    }
}

/// The factors and method recorded in a level array's attributes.
fn settings(array: &Array) -> Result<(Vec<u64>, Method)> {
    let missing = || {
        Error::from(PyramidError::invalid(format!(
            "the array at '{}' has no record of how a pyramid makes it (attribute \
             \"{SETTINGS_KEY}\" with \"factors\" and \"method\")",
            array.path()
        )))
    };
    let record = array
        .layout()
        .metadata()
        .attributes
        .get(SETTINGS_KEY)
        .ok_or_else(missing)?;
    let factors = record
        .get("factors")
        .and_then(|f| f.as_array())
        .and_then(|f| {
            f.iter()
                .map(serde_json::Value::as_u64)
                .collect::<Option<Vec<_>>>()
        })
        .ok_or_else(missing)?;
    let method = record
        .get("method")
        .and_then(|m| m.as_str())
        .and_then(|m| m.parse::<Method>().ok())
        .ok_or_else(missing)?;
    Ok((factors, method))
}

#[cfg(test)]
#[path = "tasks_tests.rs"]
mod tests;
