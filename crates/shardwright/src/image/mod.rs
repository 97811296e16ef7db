//! Images you write level 0 into, whose coarser levels fill as you write: [`Image`].
//!
//! An image is an OME-Zarr 0.5 multiscale: level arrays `0`, `1`, … under one group. Its
//! level 0 is an ordinary [`Array`] whose writers report to the image (a
//! [`ShardObserver`](crate::ShardObserver)): each inner chunk handed to a level-0 writer
//! is downsampled on the encode threads as it is encoded, and when the writer's shard is
//! stored, the downsampled chunks go to the one-pass pyramid driver, which assembles the
//! blocks of level 1, writes and downsamples them into level 2 as they complete, and so
//! on. So each shard of every level is stored once, and no level is read back to make the
//! next, in any order level 0's shards are written. [`Image::finish`] completes the blocks
//! and shards that level 0's unwritten parts (the fill value) left open and writes the
//! group's OME metadata last: an image with it is complete.
//!
//! Memory: per level-0 writer, its chunks downsampled (a quarter of the raw shard for
//! 2×2 factors) until its shard is stored; per coarser level, the blocks being assembled
//! and the encoded bytes of its open shards. Writing level 0's shards in
//! [`Image::shards_in_order`] keeps one block per level open at a time; C order holds a
//! row of blocks per level.
//!
//! ```
//! use std::sync::Arc;
//! use shardwright::image::Image;
//! use shardwright::pyramid::{build::BuildOptions, plan::PlanRequest};
//! use shardwright::{Compressor, Domain, MemoryStore};
//!
//! let request = PlanRequest { factors: vec![2, 2], levels: Some(3), chunks: Some(vec![vec![4, 4]]),
//!                             shards: Some(vec![vec![8, 8]]), ..Default::default() };
//! let options = BuildOptions::new(request, Compressor::None);
//! let image = Image::create(Arc::new(MemoryStore::new()), "img", &[16, 16], "uint8", None, &options).unwrap();
//! let level0 = image.levels()[0].clone();
//! for shard in image.shards_in_order().unwrap() {
//!     let writer = level0.shard_writer(&shard).unwrap();
//!     for chunk in writer.inner_chunks() {
//!         writer.write_chunk_value(&chunk, &[chunk.origin()[0] as u8]).unwrap();
//!     }
//!     writer.commit().unwrap();
//! }
//! let report = image.finish().unwrap();
//! assert_eq!(report.shards_written, vec![4, 1, 1]);
//! // level 1 is the 2×2 mean of level 0: rows 0-3 hold 0, rows 4-7 hold 4, ...
//! let level1 = &report.levels[1];
//! assert_eq!(level1.read(&Domain::new(vec![2, 0], vec![1, 1])).unwrap(), vec![4]);
//! ```

mod feed;
mod order;
pub(crate) mod record;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use crate::array::METADATA_KEY;
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::pyramid::driver::Driver;
use crate::pyramid::levels::{group_document, level_arrays, level_paths, stored_shards};
use crate::pyramid::options::BuildOptions;
use crate::pyramid::plan::Plan;
use crate::pyramid::source::element_size;
use crate::pyramid::walk::Walk;
use crate::pyramid::window::ChannelWindows;
use crate::pyramid::{downsample, PyramidError};
use crate::store::{join, Store};
use crate::Array;
use feed::{Feed, Journal};
use record::{read_group, Reopened};

/// An image being written: see the [module docs](self).
#[derive(Debug)]
pub struct Image {
    store: Arc<dyn Store>,
    path: String,
    options: BuildOptions,
    plan: Plan,
    feed: Arc<Feed>,
    /// The level arrays, level 0 reporting to `feed`.
    levels: Vec<Array>,
    /// Level-0 shards stored when the image was opened.
    stored0: HashSet<u64>,
    /// Level 0 without the observer.
    level0: Array,
    started: Instant,
}

impl Drop for Image {
    /// An image dropped without [`finish`](Image::finish) or [`abandon`](Image::abandon)
    /// is abandoned: its feeding thread stops; shards stored stay, each whole.
    fn drop(&mut self) {
        self.feed.stop();
    }
}

/// What an image's writing did, from its creation (or opening) to [`Image::finish`].
#[derive(Debug, Clone)]
pub struct ImageReport {
    /// The level arrays, level 0 first (level 0 without the image's observer).
    pub levels: Vec<Array>,
    /// Shards stored per level: level 0's through the image, the others by it.
    pub shards_written: Vec<u64>,
    /// Bytes the image stored for the coarser levels (shards and metadata).
    pub bytes_written: u64,
    /// Puts of the coarser levels' shards.
    pub puts: u64,
    /// Level-0 regions written again after their levels were made: their coarser shards
    /// were recomputed from the stored data.
    pub rewritten: usize,
    /// Wall time since the image was created or opened.
    pub seconds: f64,
}

impl Image {
    /// Create an image of `shape` and `data_type` (a Zarr v3 name) at `path` in `store`,
    /// planned as `options` says (factors, levels, method, chunks, shards, axes,
    /// compressor, metadata), with `fill_value` (JSON, as in `zarr.json`; `None`: the data
    /// type's default). With `options.resume`, continue the image at `path` instead (it
    /// must have been made with the same settings; see [`Image::open`]).
    ///
    /// # Errors
    /// [`Error::Pyramid`] for settings that do not fit the shape, [`Error::AlreadyExists`]
    /// if something is at `path` already (unless resuming), [`Error::Store`] otherwise.
    pub fn create(
        store: Arc<dyn Store>,
        path: &str,
        shape: &[u64],
        data_type: &str,
        fill_value: Option<serde_json::Value>,
        options: &BuildOptions,
    ) -> Result<Self> {
        Self::make(store, path, (shape, data_type, fill_value), options, None)
    }

    /// [`create`](Self::create), continuing after what the group's record says (`group`:
    /// the group document, when the caller has read it already).
    fn make(
        store: Arc<dyn Store>,
        path: &str,
        (shape, data_type, fill_value): (&[u64], &str, Option<serde_json::Value>),
        options: &BuildOptions,
        group: Option<&serde_json::Value>,
    ) -> Result<Self> {
        let path = path.trim_matches('/').to_string();
        let mut plan = options.request.plan(shape, data_type)?;
        if group.is_some() {
            // Opened again: the levels keep the grids they were made with (the plan clips
            // chunks and shards to the shape now, and an image appended to has grown).
            for (k, level) in level_paths(&path, &plan).iter().enumerate() {
                if let Ok(array) = Array::open(Arc::clone(&store), level) {
                    let layout = array.layout();
                    plan.adopt_grid(k, layout.chunk_shape(), layout.shard_shape());
                }
            }
        }
        // Everything the finished image will need checks now, before anything is written.
        group_document(&plan, options, &path, &[])?;
        let group_key = join(&path, METADATA_KEY);
        let reopened = if let Some(group) = group {
            Reopened::of(group)
        } else if options.resume {
            match store.get(&group_key)? {
                Some(bytes) => Reopened::of(&read_group(&bytes, &path)?),
                None => Reopened::default(),
            }
        } else {
            if store.size(&group_key)?.is_some() {
                return Err(Error::AlreadyExists(path));
            }
            let pending = record::pending_group(
                &plan,
                options,
                &Default::default(),
                Some(&Default::default()),
            )?;
            store.put(&group_key, &[&pending])?;
            Reopened::default()
        };
        let fill = fill_value.or_else(|| (data_type == "bool").then(|| serde_json::json!(false)));
        let arrays = level_arrays(
            (data_type, fill),
            &store,
            &level_paths(&path, &plan),
            &plan,
            options,
        )?;
        Self::start(store, path, plan, arrays, options.clone(), reopened)
    }

    /// Continue the image at `path` in `store` that [`Image::create`] started (after a
    /// crash, an error, or a finished image that more of level 0 is to be written into),
    /// with the settings it recorded.
    ///
    /// # Errors
    /// [`Error::NotFound`] if nothing is there, [`Error::Pyramid`] if the group is not an
    /// image `create` made or its arrays differ from its record.
    pub fn open(store: Arc<dyn Store>, path: &str) -> Result<Self> {
        let path = path.trim_matches('/').to_string();
        let group_key = join(&path, METADATA_KEY);
        let bytes = store
            .get(&group_key)?
            .ok_or_else(|| Error::NotFound(path.clone()))?;
        let group = read_group(&bytes, &path)?;
        let options = record::options_from(&group, &path)?;
        let level0 = Array::open(Arc::clone(&store), &join(&path, "0"))?;
        crate::pyramid::add_levels::refuse_rectilinear(&level0, "open the image over")?;
        let (shape, data_type) = (
            level0.layout().shape().to_vec(),
            level0.layout().data_type_spec().to_string(),
        );
        Self::make(
            store,
            &path,
            (&shape, &data_type, None),
            &options,
            Some(&group),
        )
    }

    fn start(
        store: Arc<dyn Store>,
        path: String,
        plan: Plan,
        arrays: Vec<Array>,
        options: BuildOptions,
        reopened: Reopened,
    ) -> Result<Self> {
        let stored = if options.resume {
            stored_shards(&arrays)?
        } else {
            vec![HashSet::new(); arrays.len()]
        };
        let data_type = arrays
            .first()
            .map(|a| a.layout().data_type_spec().to_string())
            .unwrap_or_default();
        let element = element_size(&data_type).ok_or_else(|| {
            PyramidError::Downsample(downsample::DownsampleError::UnsupportedDataType {
                data_type: data_type.clone(),
                method: plan.method,
            })
        })?;
        let level0 = arrays
            .first()
            .cloned()
            .ok_or_else(|| Error::Internal("an image without level 0".into()))?;
        let stored0 = stored.first().cloned().unwrap_or_default();
        let walk = Arc::new(Walk {
            plan: plan.clone(),
            stored,
            resume: options.resume,
        });
        let mut driver = Driver::new(
            walk,
            arrays.clone(),
            data_type,
            element,
            options.commits_in_flight,
        );
        driver.fill = level0.layout().fill_value_bytes().to_vec();
        driver.level0_stored = true;
        let fed = order::chunks_of_shards(&level0, &stored0);
        let journal = Journal {
            store: Arc::clone(&store),
            key: join(&path, METADATA_KEY),
            plan: plan.clone(),
            options: options.clone(),
            rewritten: reopened.rewritten.clone().unwrap_or_default(),
            everything: reopened.rewritten.is_none(),
            kept: reopened.kept.clone(),
        };
        let feed = Arc::new(Feed::new(
            level0.clone(),
            driver,
            fed,
            stored0.clone(),
            journal,
            reopened.finished,
        ));
        {
            // level-0 shards written again in a session that stopped before finishing
            let mut state = feed.lock();
            match &reopened.rewritten {
                Some(rewritten) => {
                    for index in rewritten {
                        if let Ok(shard) = level0.shard(index) {
                            state.dirty.push(shard);
                        }
                    }
                }
                None => state.dirty.push(level0.bounds()),
            }
        }
        feed.start()?;
        let mut levels = arrays;
        if let Some(first) = levels.first_mut() {
            *first = level0
                .clone()
                .observed_by(Arc::clone(&feed) as Arc<dyn crate::ShardObserver>);
        }
        let image = Self {
            store,
            path,
            options,
            plan,
            feed,
            levels,
            stored0,
            level0,
            started: Instant::now(),
        };
        image.feed_stored()?;
        Ok(image)
    }

    /// Resuming: hand the driver the stored level-0 shards that a missing coarser shard
    /// needs (the levels above lost what they had been given when the last run stopped).
    fn feed_stored(&self) -> Result<()> {
        if self.stored0.is_empty() {
            return Ok(());
        }
        let level0 = self.level0.clone();
        let grid = level0.shard_grid().clone();
        let mut state = self.feed.lock();
        for shard in order::nested_shards(&self.plan, &grid)? {
            let Some(index) = shard.index() else { continue };
            if !self.stored0.contains(&grid.linear_index(index)) {
                continue;
            }
            let walk = Arc::clone(&state.driver.walk);
            let blocks = self
                .plan
                .levels
                .first()
                .map(|l| l.block_grid())
                .transpose()?;
            let needed = match blocks {
                Some(blocks) => {
                    let mut any = false;
                    for block in blocks.cells_meeting(&shard) {
                        if walk.needed(0, &block)? {
                            any = true;
                            break;
                        }
                    }
                    any
                }
                None => false,
            };
            if !needed {
                continue;
            }
            let data = level0.read(&shard)?;
            for chunk in level0.chunk_grid().cells_meeting(&shard) {
                let part = order::cut(&data, &shard, &chunk, level0.layout().element_size())?;
                let payload = self.feed.payload(&chunk, &part, false)?;
                // Not new to `fed` (stored chunks are marked fed at open): feed it as new.
                if let Some(index) = chunk.index() {
                    state.fed.remove(&level0.chunk_grid().linear_index(index));
                }
                self.feed.absorb(&mut state, &chunk, &payload)?;
            }
        }
        Ok(())
    }

    /// The grid indices of level 0's shards never stored through the image nor found
    /// stored (`None` past [`MAX_ABSENT`](crate::pyramid::add_levels::MAX_ABSENT)).
    fn absent_shards(&self) -> Option<Vec<Vec<u64>>> {
        let fed = self.feed.shards_fed();
        let grid = self.level0.shard_grid();
        let absent: Vec<Vec<u64>> = grid
            .cells()
            .filter_map(|cell| cell.index().map(<[u64]>::to_vec))
            .filter(|index| !fed.contains(&grid.linear_index(index)))
            .take(crate::pyramid::add_levels::MAX_ABSENT + 1)
            .collect();
        (absent.len() <= crate::pyramid::add_levels::MAX_ABSENT).then_some(absent)
    }

    /// The level arrays, level 0 first; level 0's writers feed the levels above.
    #[must_use]
    pub fn levels(&self) -> &[Array] {
        &self.levels
    }

    /// The plan of the levels.
    #[must_use]
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The path of the image's group in its store.
    #[must_use]
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Level 0's shards not stored yet, in the order that completes the coarser levels'
    /// blocks soonest (nested under each coarser level's shards and blocks), so that one
    /// block per level is being assembled at a time.
    ///
    /// # Errors
    /// [`Error::Pyramid`] if the plan's grids are broken (an internal error).
    pub fn shards_in_order(&self) -> Result<Vec<Domain>> {
        let grid = self.level0.shard_grid().clone();
        Ok(order::nested_shards(&self.plan, &grid)?
            .into_iter()
            .filter(|s| {
                s.index()
                    .is_none_or(|i| !self.stored0.contains(&grid.linear_index(i)))
            })
            .collect())
    }

    /// Finish the image: complete the coarser levels' blocks and shards that level 0's
    /// unwritten parts left open (with the fill value, as level 0 reads there), recompute
    /// the coarser shards under level-0 regions written again after their levels were
    /// made, then write the group's OME metadata, last. Call it once every level-0 writer
    /// has committed.
    ///
    /// # Errors
    /// The first error feeding the levels met (the shards stored stay, each whole: open
    /// the image again to continue), or the store's.
    pub fn finish(self) -> Result<ImageReport> {
        self.feed.stop();
        let mut state = self.feed.lock();
        if let Some(error) = state.error.take().or_else(|| self.feed.failure()) {
            let _ = state.driver.finish(&mut |_| true);
            return Err(error);
        }
        let flushed = state.driver.flush_partial(&mut |_| true);
        let finished = state.driver.finish(&mut |_| true);
        flushed?;
        finished?;
        let dirty = std::mem::take(&mut state.dirty);
        let rewritten = dirty.len();
        let top_stored = state
            .driver
            .walk
            .stored
            .last()
            .is_some_and(|s| !s.is_empty());
        // (level 0, the top of a one-level image, is not written by the driver)
        let top_windows = (dirty.is_empty() && !top_stored && self.plan.levels.len() > 1)
            .then(|| state.driver.windows.windows());
        let mut report = ImageReport {
            levels: Vec::new(),
            shards_written: std::iter::once(state.shards_done)
                .chain(state.driver.progress.shards_done.iter().skip(1).copied())
                .collect(),
            bytes_written: state.driver.progress.bytes_written,
            puts: state.driver.puts,
            rewritten,
            seconds: 0.0,
        };
        drop(state);
        let mut arrays = self.levels.clone();
        if let Some(first) = arrays.first_mut() {
            *first = self.level0.clone();
        }
        if !dirty.is_empty() {
            let updated = crate::pyramid::update::update_levels(
                &arrays,
                &self.plan.factors,
                self.plan.method,
                &dirty,
            )?;
            report.puts += updated.puts;
            report.bytes_written += updated.bytes_written;
        }
        // The top level's windows, seen as its blocks were written; read back (it is the
        // smallest level) when some of it was stored before or rewritten since.
        let windows = match (&top_windows, arrays.last()) {
            (Some(windows), _) => windows.clone(),
            (None, Some(top)) => {
                let mut windows = ChannelWindows::for_array(top);
                windows.observe_array(top)?;
                windows.windows()
            }
            (None, None) => Vec::new(),
        };
        let text = group_document(&self.plan, &self.options, &self.path, &windows)?;
        let absent = self.absent_shards();
        let group = record::finished_group(&text, &self.plan, &self.options, absent.as_deref())?;
        self.store.put(&join(&self.path, METADATA_KEY), &[&group])?;
        report.bytes_written += group.len() as u64;
        report.levels = arrays;
        report.seconds = self.started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// Stop writing after an error: wait for the coarser shards being stored, drop the
    /// blocks and shards still open. Everything stored is whole; [`Image::open`]
    /// continues.
    ///
    /// # Errors
    /// The error of a coarser shard's commit, if one failed.
    pub fn abandon(self) -> Result<()> {
        self.feed.stop();
        let mut state = self.feed.lock();
        for writers in &mut state.driver.writers {
            writers.clear();
        }
        for blocks in &mut state.driver.blocks {
            blocks.clear();
        }
        state.driver.finish(&mut |_| true)
    }
}

#[cfg(test)]
mod tests;
