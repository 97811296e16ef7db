//! [`ImageAppender`]: frames appended to level 0 of a multiscale image, every coarser
//! level growing with it.
//!
//! A chain of [`Appender`]s, one per level. Level `l + 1` is fed by level `l`'s frames:
//! they gather in a group of `factors[axis]` frames (raw, the only frames held besides
//! the appenders' rows), which the pyramid's own kernel
//! ([`downsample`](crate::pyramid::downsample::downsample)) reduces to one frame of level
//! `l + 1` — so every level equals the pyramid of the final level 0 (blocks start at 0,
//! a partial block at an edge reduces what exists). Each level's shards are stored once,
//! as its slabs complete.
//!
//! [`finish`](ImageAppender::finish) reduces the partial group of each level (what
//! exists, as the pyramid does at an edge) and finishes every appender. A level's last
//! frame made from a partial group changes when more frames come: opening an appender
//! again therefore cuts each coarser level back to the frames made from whole groups
//! (and to what the level below holds, after a crash between the levels' stores), and
//! feeds the frames of the level below past them to it again, read from storage.

use crate::array::Array;
use crate::domain::copy::copy_block;
use crate::error::{Error, Result};
use crate::image::Image;
use crate::pyramid::downsample::{downsample, Method};

use super::Appender;

/// Appends frames to level 0 of an image; see the [module docs](self).
#[derive(Debug)]
pub struct ImageAppender {
    levels: Vec<Appender>,
    /// `groups[l]`: level `l`'s frames waiting to be reduced into level `l + 1`.
    groups: Vec<Group>,
    factors: Vec<u64>,
    method: Method,
    data_type: String,
    axis: usize,
}

/// Frames of one level gathered along the axis until a group is whole.
#[derive(Debug)]
struct Group {
    /// The level's shape with the group's extent (`factors[axis]`) along the axis.
    shape: Vec<u64>,
    data: Vec<u8>,
    count: u64,
}

impl Image {
    /// Finish the image (see [`Image::finish`]), then an [`ImageAppender`] of frames
    /// along `axis`, continuing from level 0's shape.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use shardwright::image::Image;
    /// use shardwright::pyramid::plan::PlanRequest;
    /// use shardwright::pyramid::build::BuildOptions;
    /// use shardwright::{Compressor, MemoryStore};
    /// let request = PlanRequest { factors: vec![2, 2], levels: Some(2), ..Default::default() };
    /// let options = BuildOptions::new(request, Compressor::None);
    /// let store = Arc::new(MemoryStore::new());
    /// let image = Image::create(store, "img", &[2, 4], "uint8", None, &options).unwrap();
    /// let mut appender = image.appender(0).unwrap();
    /// appender.append(&[8; 8], &[2, 4]).unwrap(); // two frames of shape (4,)
    /// let levels = appender.finish().unwrap();
    /// assert_eq!(levels[1].layout().shape(), &[2, 2]);
    /// ```
    ///
    /// # Errors
    /// As [`Image::finish`] and [`ImageAppender::new`].
    pub fn appender(self, axis: usize) -> Result<ImageAppender> {
        let levels = self.levels().to_vec();
        let (factors, method) = (self.plan().factors.clone(), self.plan().method);
        self.finish()?;
        ImageAppender::new(&levels, &factors, method, axis)
    }
}

impl ImageAppender {
    /// An appender of frames along `axis` to `levels[0]`, each level above downsampled
    /// from the one below by `factors` with `method` (as the pyramid that made them).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use shardwright::append::ImageAppender;
    /// use shardwright::pyramid::downsample::Method;
    /// use shardwright::{Array, ArraySpec, MemoryStore};
    /// let store = Arc::new(MemoryStore::new());
    /// let level0 = Array::create(store.clone(), "0", &ArraySpec::new(vec![0, 4], "uint8", vec![2, 4])).unwrap();
    /// let level1 = Array::create(store, "1", &ArraySpec::new(vec![0, 2], "uint8", vec![2, 2])).unwrap();
    /// let mut appender = ImageAppender::new(&[level0, level1], &[2, 2], Method::Max, 0).unwrap();
    /// appender.append(&[1, 2, 3, 4, 5, 6, 7, 8], &[2, 4]).unwrap();
    /// let levels = appender.finish().unwrap();
    /// assert_eq!(levels[1].read(&levels[1].bounds()).unwrap(), [6, 8]);
    /// ```
    ///
    /// # Errors
    /// As [`Array::appender`] and [`Array::resize`] (cutting the coarser levels back),
    /// [`Error::Pyramid`] for factors of the wrong length or a method the data type has
    /// no kernel for, and [`Error::Layout`] for levels of other ranks.
    pub fn new(levels: &[Array], factors: &[u64], method: Method, axis: usize) -> Result<Self> {
        let Some(first) = levels.first() else {
            return Err(Error::Internal("an image has at least level 0".into()));
        };
        let data_type = first.layout().data_type_spec().to_string();
        crate::pyramid::downsample::check_supported(&data_type, method)
            .map_err(crate::pyramid::PyramidError::from)?;
        let ndim = first.layout().ndim();
        if factors.len() != ndim || levels.iter().any(|l| l.layout().ndim() != ndim) {
            return Err(crate::pyramid::PyramidError::invalid(format!(
                "factors {factors:?} and every level must have {ndim} dimensions"
            ))
            .into());
        }
        // Fresh handles, without an observer (an image's levels report to its feeding,
        // which is finished).
        let levels = levels
            .iter()
            .map(|level| {
                let mut options = level.options().clone();
                options.observer = None;
                Ok(Array::open(level.store().clone(), level.path())?.with_options(options))
            })
            .collect::<Result<Vec<_>>>()?;
        let levels = levels.as_slice();
        let step = factors.get(axis).copied().unwrap_or(1).max(1);
        // What each level keeps: the frames made from whole groups of the level below.
        let mut keep = Vec::with_capacity(levels.len());
        let mut below = None;
        for level in levels {
            let length = level.layout().shape().get(axis).copied().unwrap_or(0);
            let kept = below.map_or(length, |b: u64| length.min(b / step));
            if kept < length {
                let mut shape = level.layout().shape().to_vec();
                if let Some(x) = shape.get_mut(axis) {
                    *x = kept;
                }
                level.resize(shape)?;
            }
            keep.push(kept);
            below = Some(kept);
        }
        let appenders = levels
            .iter()
            .map(|l| l.appender(axis))
            .collect::<Result<Vec<_>>>()?;
        let groups = appenders
            .iter()
            .take(levels.len().saturating_sub(1))
            .map(|a| {
                let mut shape = a.array().layout().shape().to_vec();
                if let Some(x) = shape.get_mut(axis) {
                    *x = step;
                }
                let bytes = shape.iter().product::<u64>() * a.elem as u64;
                Ok(Group {
                    data: crate::buffer::zeroed(usize::try_from(bytes).unwrap_or(usize::MAX))?,
                    shape,
                    count: 0,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let mut appender = Self {
            levels: appenders,
            groups,
            factors: factors.to_vec(),
            method,
            data_type,
            axis,
        };
        // From the top down, so each group gets its level's stored frames before the
        // frames the refeeding below makes.
        for l in (1..levels.len()).rev() {
            let (Some(kept), Some(below)) = (keep.get(l), keep.get(l - 1)) else {
                continue;
            };
            let mut at = kept * step;
            while at < *below {
                let next = (at + step).min(*below);
                let Some(source) = appender.levels.get(l - 1) else {
                    break;
                };
                let region = source.between(at, next);
                let data = source.array().read(&region)?;
                appender.feed(l - 1, &data, region.shape())?;
                at = next;
            }
        }
        Ok(appender)
    }

    /// The frames of level 0 along the axis so far.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use shardwright::append::ImageAppender;
    /// # use shardwright::pyramid::downsample::Method;
    /// # use shardwright::{Array, ArraySpec, MemoryStore};
    /// # let store = Arc::new(MemoryStore::new());
    /// # let level0 = Array::create(store.clone(), "0", &ArraySpec::new(vec![0, 4], "uint8", vec![2, 4])).unwrap();
    /// # let level1 = Array::create(store, "1", &ArraySpec::new(vec![0, 2], "uint8", vec![2, 2])).unwrap();
    /// let mut appender = ImageAppender::new(&[level0, level1], &[2, 2], Method::Mean, 0).unwrap();
    /// appender.append(&[9; 12], &[3, 4]).unwrap();
    /// assert_eq!(appender.length(), 3);
    /// ```
    #[must_use]
    pub fn length(&self) -> u64 {
        self.levels.first().map_or(0, Appender::length)
    }

    /// Each level's shape once every frame appended so far is stored (the coarser levels
    /// without the frames their partial groups will make).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use shardwright::append::ImageAppender;
    /// # use shardwright::pyramid::downsample::Method;
    /// # use shardwright::{Array, ArraySpec, MemoryStore};
    /// # let store = Arc::new(MemoryStore::new());
    /// # let level0 = Array::create(store.clone(), "0", &ArraySpec::new(vec![0, 4], "uint8", vec![2, 4])).unwrap();
    /// # let level1 = Array::create(store, "1", &ArraySpec::new(vec![0, 2], "uint8", vec![2, 2])).unwrap();
    /// let mut appender = ImageAppender::new(&[level0, level1], &[2, 2], Method::Mean, 0).unwrap();
    /// appender.append(&[9; 12], &[3, 4]).unwrap(); // the third frame waits for a fourth
    /// assert_eq!(appender.shapes(), vec![vec![3, 4], vec![1, 2]]);
    /// ```
    #[must_use]
    pub fn shapes(&self) -> Vec<Vec<u64>> {
        self.levels.iter().map(Appender::shape).collect()
    }

    /// Append frames to level 0 as [`Appender::append`] does; the coarser levels follow.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use shardwright::append::ImageAppender;
    /// # use shardwright::pyramid::downsample::Method;
    /// # use shardwright::{Array, ArraySpec, MemoryStore};
    /// # let store = Arc::new(MemoryStore::new());
    /// # let level0 = Array::create(store.clone(), "0", &ArraySpec::new(vec![0, 4], "uint8", vec![2, 4])).unwrap();
    /// # let level1 = Array::create(store, "1", &ArraySpec::new(vec![0, 2], "uint8", vec![2, 2])).unwrap();
    /// let mut appender = ImageAppender::new(&[level0, level1], &[2, 2], Method::Mean, 0).unwrap();
    /// appender.append(&[2; 4], &[4]).unwrap(); // one frame
    /// appender.append(&[4; 8], &[2, 4]).unwrap(); // a block of two
    /// let levels = appender.finish().unwrap();
    /// assert_eq!(levels[1].read(&levels[1].bounds()).unwrap(), [3, 3, 4, 4]);
    /// ```
    ///
    /// # Errors
    /// As [`Appender::append`] (a frame of the wrong shape appends nothing to any level),
    /// and a kernel's errors. Once any level failed to store a slab, every later call
    /// returns its error before appending anything (level 0's frames are kept for
    /// [`finish`](Self::finish)).
    pub fn append(&mut self, data: &[u8], shape: &[u64]) -> Result<()> {
        self.check()?;
        let Some(level0) = self.levels.first_mut() else {
            return Ok(());
        };
        level0.append(data, shape)?;
        let mut block = level0.frame.clone();
        if shape.len() == block.len() {
            block = shape.to_vec();
        }
        if self.groups.is_empty() {
            return Ok(());
        }
        self.feed(0, data, &block)
    }

    /// Wait until every level's complete slabs are stored and shown.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use shardwright::append::ImageAppender;
    /// # use shardwright::pyramid::downsample::Method;
    /// # use shardwright::{Array, ArraySpec, MemoryStore};
    /// # let store = Arc::new(MemoryStore::new());
    /// # let level0 = Array::create(store.clone(), "0", &ArraySpec::new(vec![0, 4], "uint8", vec![2, 4])).unwrap();
    /// # let level1 = Array::create(store.clone(), "1", &ArraySpec::new(vec![0, 2], "uint8", vec![2, 2])).unwrap();
    /// let mut appender = ImageAppender::new(&[level0, level1], &[2, 2], Method::Mean, 0).unwrap();
    /// appender.append(&[1; 16], &[4, 4]).unwrap();
    /// appender.flush().unwrap(); // level 0's slab of 2 frames and level 1's are shown
    /// assert_eq!(Array::open(store.clone(), "0").unwrap().layout().shape(), &[4, 4]);
    /// assert_eq!(Array::open(store, "1").unwrap().layout().shape(), &[2, 2]);
    /// ```
    ///
    /// # Errors
    /// As [`Appender::flush`] (every level is flushed; the first error is returned).
    pub fn flush(&mut self) -> Result<()> {
        let mut first = None;
        for level in &mut self.levels {
            if let Err(e) = level.flush() {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Reduce each level's partial group (what exists), then finish every level's
    /// appender; returns the levels with their final shapes, level 0 first.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use shardwright::append::ImageAppender;
    /// # use shardwright::pyramid::downsample::Method;
    /// # use shardwright::{Array, ArraySpec, MemoryStore};
    /// # let store = Arc::new(MemoryStore::new());
    /// # let level0 = Array::create(store.clone(), "0", &ArraySpec::new(vec![0, 4], "uint8", vec![2, 4])).unwrap();
    /// # let level1 = Array::create(store, "1", &ArraySpec::new(vec![0, 2], "uint8", vec![2, 2])).unwrap();
    /// let mut appender = ImageAppender::new(&[level0, level1], &[2, 2], Method::Max, 0).unwrap();
    /// appender.append(&[1, 2, 3, 4, 5, 6, 7, 8, 0, 9, 0, 0], &[3, 4]).unwrap();
    /// let levels = appender.finish().unwrap(); // the partial group (one frame) too
    /// assert_eq!(levels[0].layout().shape(), &[3, 4]);
    /// assert_eq!(levels[1].read(&levels[1].bounds()).unwrap(), [6, 8, 9, 0]);
    /// ```
    ///
    /// # Errors
    /// As [`Appender::finish`] and the kernels'. Every level is finished that can be
    /// (level 0 always stores its frames, whatever a coarser level's failure), then the
    /// first error is returned.
    pub fn finish(mut self) -> Result<Vec<Array>> {
        let mut first = self.check().err();
        if first.is_none() {
            for l in 0..self.groups.len() {
                if let Err(e) = self.reduce(l) {
                    first = Some(e);
                    break;
                }
            }
        }
        let mut finished = Vec::with_capacity(self.levels.len());
        for level in self.levels {
            match level.finish() {
                Ok(array) => finished.push(array),
                Err(e) => {
                    first.get_or_insert(e);
                }
            }
        }
        first.map_or(Ok(finished), Err)
    }

    /// The first level's error that lost frames, if any: none is appended to then. A
    /// slab whose store finished meanwhile is settled first, so its failure shows.
    fn check(&mut self) -> Result<()> {
        for level in &mut self.levels {
            level.check()?;
            level.settle(false)?;
        }
        Ok(())
    }

    /// Gather the frames of level `l` in `data` (of shape `block`) into its group,
    /// reducing each whole group into level `l + 1`.
    fn feed(&mut self, l: usize, data: &[u8], block: &[u64]) -> Result<()> {
        let axis = self.axis;
        let frames = block.get(axis).copied().unwrap_or(0);
        let elem = self.levels.first().map_or(1, |a| a.elem);
        let mut taken = 0;
        while taken < frames {
            let Some(group) = self.groups.get_mut(l) else {
                return Ok(());
            };
            let room = group.shape.get(axis).copied().unwrap_or(1) - group.count;
            let n = room.min(frames - taken);
            let mut part = block.to_vec();
            let mut from = vec![0; block.len()];
            let mut to = vec![0; block.len()];
            if let (Some(p), Some(f), Some(t)) =
                (part.get_mut(axis), from.get_mut(axis), to.get_mut(axis))
            {
                (*p, *f, *t) = (n, taken, group.count);
            }
            copy_block(
                data,
                block,
                &from,
                &mut group.data,
                &group.shape,
                &to,
                &part,
                elem,
            );
            group.count += n;
            taken += n;
            if group.count == group.shape.get(axis).copied().unwrap_or(1) {
                self.reduce(l)?;
            }
        }
        Ok(())
    }

    /// Reduce level `l`'s group (whole or not; nothing if empty) into a frame of level
    /// `l + 1`, append it there and feed it on.
    fn reduce(&mut self, l: usize) -> Result<()> {
        let axis = self.axis;
        let elem = self.levels.first().map_or(1, |a| a.elem);
        let Some(group) = self.groups.get_mut(l) else {
            return Ok(());
        };
        if group.count == 0 {
            return Ok(());
        }
        let mut shape = group.shape.clone();
        if let Some(x) = shape.get_mut(axis) {
            *x = group.count;
        }
        let input = if shape == group.shape {
            std::mem::take(&mut group.data)
        } else {
            let bytes = shape.iter().product::<u64>() * elem as u64;
            let mut part = crate::buffer::zeroed(usize::try_from(bytes).unwrap_or(usize::MAX))?;
            let zero = vec![0; shape.len()];
            copy_block(
                &group.data,
                &group.shape,
                &zero,
                &mut part,
                &shape,
                &zero,
                &shape,
                elem,
            );
            part
        };
        let out = downsample(&input, &shape, &self.factors, &self.data_type, self.method)
            .map_err(crate::pyramid::PyramidError::from)?;
        if group.data.is_empty() {
            group.data = input;
        }
        group.count = 0;
        let out_shape: Vec<u64> = shape
            .iter()
            .zip(&self.factors)
            .map(|(s, f)| s.div_ceil((*f).max(1)))
            .collect();
        if let Some(next) = self.levels.get_mut(l + 1) {
            next.append(&out, &out_shape)?;
        }
        if l + 1 < self.groups.len() {
            self.feed(l + 1, &out, &out_shape)?;
        }
        Ok(())
    }
}
