//! [`Appender`]: frames appended along one axis of an array as they come (a camera, a
//! simulation writing step after step), each shard stored once, the array's shape grown
//! only over what is stored.
//!
//! The shards whose index along the axis is the current one form the open *slab*. Frames
//! are copied into the open *row* (one inner chunk's extent along the axis, across the
//! whole frame: the only raw data held); a full row is written into the slab's
//! [`ShardWriter`]s, which keep encoded bytes only (streamed to storage where the store
//! streams). When the slab is complete its shards are committed in the background
//! ([`ShardWriter::commit_background`]) while the next slab fills; once they are all
//! stored, and only then, `zarr.json`'s shape grows over the slab (through
//! [`Array::resize`], every other member kept byte for byte). A reader, or a crash,
//! therefore only ever sees whole stored slabs.
//!
//! [`Appender::flush`] waits until every complete slab is stored and shown;
//! [`Appender::finish`] stores the last, partial slab (rows past the end hold the fill
//! value, as an array of that shape has) and sets the exact shape. A process killed
//! mid-run loses the frames of the open slab only.
//!
//! Opening an appender continues from the stored shape: when it ends inside a slab, that
//! slab's writers merge with its stored shards (each read once, at its commit), and the
//! elements past the stored end in it are set to the fill value; shards stored past the
//! shape (left by a run killed between storing a slab and growing the shape) are
//! deleted — found by one listing where the store lists, else looked for in the two
//! slabs past the end (all a killed appender can leave) — so growing never shows stale
//! data. One appender per array at a time: another writer of the rows past the shape
//! meanwhile would be overwritten or deleted.
//!
//! ```
//! use std::sync::Arc;
//! use shardwright::{Array, ArraySpec, MemoryStore};
//!
//! let spec = ArraySpec::new(vec![0, 4], "uint8", vec![2, 4]).shards(vec![4, 4]);
//! let array = Array::create(Arc::new(MemoryStore::new()), "acq.zarr", &spec).unwrap();
//! let mut appender = array.appender(0).unwrap();
//! for t in 0..5u8 {
//!     appender.append(&[t; 4], &[4]).unwrap(); // one frame of shape (4,)
//! }
//! appender.flush().unwrap(); // the first slab (4 frames) is stored and shown
//! assert_eq!(appender.array().layout().shape(), &[4, 4]);
//! let array = appender.finish().unwrap();
//! assert_eq!(array.layout().shape(), &[5, 4]);
//! assert_eq!(array.read(&array.bounds()).unwrap()[16..], [4, 4, 4, 4]);
//! ```

use crate::array::Array;
use crate::domain::copy::copy_block;
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::writer::{PendingCommit, ShardWriter};

pub use image::ImageAppender;

/// How many slabs past a listing-less store's end an appender looks for shards left
/// there (a killed appender leaves at most the one it was storing).
const SLABS_SWEPT: u64 = 2;

/// How many slabs past the end a listing is searched for shards left there.
const SLABS_LISTED: u64 = 1 << 20;

/// Appends frames along one axis of an array; see the [module docs](self).
#[derive(Debug)]
pub struct Appender {
    /// The array with the shape shown now.
    array: Array,
    axis: usize,
    /// The array's shape with 1 along the axis.
    frame: Vec<u64>,
    elem: usize,
    shard_len: u64,
    chunk_len: u64,
    /// The frames along the axis so far, stored or not.
    length: u64,
    /// The extent along the axis shown in `zarr.json`.
    shown: u64,
    /// The open row's raw elements (`chunk_len` frames), the fill value where not written.
    row: Vec<u8>,
    /// Frames before this one are not written by this appender (it opened inside a row).
    from: u64,
    /// The open slab's index and writers.
    slab: Option<(u64, Vec<ShardWriter>)>,
    /// The complete slab being stored, and the extent to show once it is.
    storing: Option<(Vec<PendingCommit>, u64)>,
    /// A failure that lost appended frames: every later call returns it.
    failed: Option<Error>,
}

impl Array {
    /// An [`Appender`] of frames along `axis`, continuing from the stored shape (see the
    /// [`append`](crate::append) module). It reads `zarr.json` again (this handle may be
    /// stale) and deletes what a killed appender left past the shape.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use shardwright::{Array, ArraySpec, MemoryStore};
    /// let spec = ArraySpec::new(vec![3, 0], "int16", vec![3, 2]).shards(vec![3, 4]);
    /// let array = Array::create(Arc::new(MemoryStore::new()), "t", &spec).unwrap();
    /// let mut appender = array.appender(1).unwrap();
    /// let block: Vec<u8> = (0..6i16).flat_map(i16::to_ne_bytes).collect();
    /// appender.append(&block, &[3, 2]).unwrap(); // two frames of shape (3,)
    /// assert_eq!(appender.finish().unwrap().layout().shape(), &[3, 2]);
    /// ```
    ///
    /// # Errors
    /// [`Error::Layout`] for an axis the array does not have, [`Error::NotFound`] if its
    /// `zarr.json` is gone, [`Error::Store`] and the writers' errors for the clearing.
    pub fn appender(&self, axis: usize) -> Result<Appender> {
        Appender::open(self, axis)
    }
}

impl Appender {
    /// The frames along the axis so far (stored before, shown, or still open).
    #[must_use]
    pub fn length(&self) -> u64 {
        self.length
    }

    /// The array's shape once every frame appended so far is stored.
    #[must_use]
    pub fn shape(&self) -> Vec<u64> {
        let mut shape = self.array.layout().shape().to_vec();
        set(&mut shape, self.axis, self.length);
        shape
    }

    /// The array with the shape shown now (whole stored slabs only).
    #[must_use]
    pub fn array(&self) -> &Array {
        &self.array
    }

    /// The axis appended along.
    #[must_use]
    pub fn axis(&self) -> usize {
        self.axis
    }

    /// Append one frame (`shape`: the array's shape without the axis) or a block of `k`
    /// frames (`shape`: the array's shape with `k` along the axis); `data` holds its
    /// elements in C order, native endian. The frames are copied; a slab they complete
    /// is stored in the background.
    ///
    /// # Errors
    /// [`Error::FrameShape`] or [`Error::DataLength`] for data of the wrong shape or size
    /// (nothing is appended then, and the appender stays usable); the writers' and the
    /// store's errors for a slab that failed to be stored (its frames are lost, and every
    /// later call returns the same error).
    pub fn append(&mut self, data: &[u8], shape: &[u64]) -> Result<()> {
        self.check()?;
        let k = self.frames_in(shape)?;
        let mut block = self.frame.clone();
        set(&mut block, self.axis, k);
        let expected = block
            .iter()
            .product::<u64>()
            .saturating_mul(self.elem as u64);
        if data.len() as u64 != expected {
            return Err(Error::DataLength {
                region: Box::new(Domain::from_shape(block.clone())),
                shape: block,
                expected: usize::try_from(expected).unwrap_or(usize::MAX),
                got: data.len(),
            });
        }
        self.settle(false)?;
        let mut row_shape = self.frame.clone();
        set(&mut row_shape, self.axis, self.chunk_len);
        let mut taken = 0;
        while taken < k {
            let start = self.row_start();
            let at = self.length - start;
            let n = (k - taken).min(self.chunk_len - at);
            let mut part = self.frame.clone();
            set(&mut part, self.axis, n);
            let (source, target) = (self.along(taken), self.along(at));
            copy_block(
                data,
                &block,
                &source,
                &mut self.row,
                &row_shape,
                &target,
                &part,
                self.elem,
            );
            self.length += n;
            taken += n;
            if self.length == start + self.chunk_len {
                let written = self.write_row(start);
                self.keep(written)?;
            }
        }
        Ok(())
    }

    /// Wait until every complete slab is stored and shown in `zarr.json`.
    ///
    /// # Errors
    /// As [`append`](Self::append), for a slab that failed to be stored.
    pub fn flush(&mut self) -> Result<()> {
        self.check()?;
        self.settle(true)
    }

    /// Store the last (partial) slab, wait for every slab, and set the exact shape;
    /// returns the array with it.
    ///
    /// # Errors
    /// As [`flush`](Self::flush); the frames of the open slab are then lost.
    pub fn finish(mut self) -> Result<Array> {
        self.check()?;
        let done = self.finish_slab();
        self.keep(done)?;
        self.settle(true)?;
        self.grow(self.length)?;
        Ok(self.array)
    }

    /// The error of an earlier failure, if any.
    fn check(&self) -> Result<()> {
        match &self.failed {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// `result`, remembering an error (appended frames were lost with it).
    fn keep<T>(&mut self, result: Result<T>) -> Result<T> {
        if let Err(e) = &result {
            self.failed = Some(e.clone());
            self.slab = None;
        }
        result
    }

    /// The number of frames a block of shape `shape` holds.
    fn frames_in(&self, shape: &[u64]) -> Result<u64> {
        let mut without = self.frame.clone();
        without.remove(self.axis);
        if shape == without.as_slice() {
            return Ok(1);
        }
        let k = shape.get(self.axis).copied().unwrap_or(0);
        let mut block = self.frame.clone();
        set(&mut block, self.axis, k);
        if shape.len() == self.frame.len() && shape == block.as_slice() {
            return Ok(k);
        }
        let mut text: Vec<String> = self.frame.iter().map(u64::to_string).collect();
        set_text(&mut text, self.axis, "k");
        Err(Error::FrameShape {
            axis: self.axis,
            frame: without,
            block: format!("({})", text.join(", ")),
            got: shape.to_vec(),
        })
    }

    /// A position `at` along the axis, 0 elsewhere.
    fn along(&self, at: u64) -> Vec<u64> {
        let mut origin = vec![0; self.frame.len()];
        set(&mut origin, self.axis, at);
        origin
    }

    /// The box from `start` to `stop` along the axis, whole across it.
    fn between(&self, start: u64, stop: u64) -> Domain {
        let mut shape = self.frame.clone();
        set(&mut shape, self.axis, stop.saturating_sub(start));
        Domain::new(self.along(start), shape)
    }

    /// The first frame of the open row.
    fn row_start(&self) -> u64 {
        self.length / self.chunk_len * self.chunk_len
    }

    /// The slab `index`'s writers, made now (nothing is stored).
    fn open_slab(&mut self, index: u64) -> Result<&mut Vec<ShardWriter>> {
        if self.slab.as_ref().map(|(i, _)| *i) != Some(index) {
            let start = index * self.shard_len;
            let end = start + self.shard_len;
            let wide = self.reaching(end)?;
            let writers = wide
                .shards_meeting(&self.between(start, end))
                .map(|shard| wide.shard_writer(&shard))
                .collect::<Result<Vec<_>>>()?;
            self.slab = Some((index, writers));
        }
        match &mut self.slab {
            Some((_, writers)) => Ok(writers),
            None => Err(Error::Internal("no open slab".into())),
        }
    }

    /// Write `region` (the fill value) into every writer of the open slab it meets.
    fn fill(&mut self, region: &Domain) -> Result<()> {
        if region.is_empty() {
            return Ok(());
        }
        let fill = self.array.layout().fill_value_bytes().to_vec();
        let start = region.origin().get(self.axis).copied().unwrap_or(0);
        for writer in self.open_slab(start / self.shard_len)? {
            if let Some(part) = region.intersect(writer.shard()) {
                writer.write_region_value(&part, &fill)?;
            }
        }
        Ok(())
    }

    /// Write the open row (from `start`) into the slab's writers, padded with the fill
    /// value past the frames appended, and fill the row buffer again.
    fn put_row(&mut self, start: u64) -> Result<()> {
        let stop = start + self.chunk_len;
        let region = self.between(self.from.max(start), stop);
        let whole = self.between(start, stop);
        let row = std::mem::take(&mut self.row);
        let written = (|| {
            for writer in self.open_slab(start / self.shard_len)?.iter() {
                if let Some(part) = region.intersect(writer.shard()) {
                    writer.write_region_of(&part, &row, &whole)?;
                }
            }
            Ok::<(), Error>(())
        })();
        self.row = row;
        written?;
        let fill = self.array.layout().fill_value_bytes();
        if fill.iter().all(|b| *b == 0) {
            self.row.fill(0);
        } else {
            for element in self.row.chunks_exact_mut(self.elem) {
                element.copy_from_slice(fill);
            }
        }
        Ok(())
    }

    /// Write the full open row (from `start`); store the slab if the row ends it.
    fn write_row(&mut self, start: u64) -> Result<()> {
        self.put_row(start)?;
        let stop = start + self.chunk_len;
        self.from = stop;
        if stop.is_multiple_of(self.shard_len) {
            self.store_slab()?;
        }
        Ok(())
    }

    /// Commit the open slab in the background, once the one before is stored and shown.
    fn store_slab(&mut self) -> Result<()> {
        self.settle(true)?;
        if let Some((index, writers)) = self.slab.take() {
            let end = ((index + 1) * self.shard_len).min(self.length);
            let pending = writers
                .into_iter()
                .map(ShardWriter::commit_background)
                .collect();
            self.storing = Some((pending, end));
        }
        Ok(())
    }

    /// Write the open row's frames and the fill value over the rest of the open slab
    /// (if one is open or frames wait), then commit it.
    fn finish_slab(&mut self) -> Result<()> {
        let start = self.row_start();
        let pending_row = self.length > self.from.max(start);
        if !pending_row && self.slab.is_none() {
            return Ok(());
        }
        if pending_row {
            self.put_row(start)?;
        }
        let tail = self.length.div_ceil(self.chunk_len) * self.chunk_len;
        let index = self
            .slab
            .as_ref()
            .map_or(start / self.shard_len, |(i, _)| *i);
        let end = (index + 1) * self.shard_len;
        self.fill(&self.between(tail.max(index * self.shard_len), end))?;
        self.store_slab()
    }

    /// Once the slab being stored is (`wait`: wait for it), show it in `zarr.json`.
    fn settle(&mut self, wait: bool) -> Result<()> {
        let ready = self
            .storing
            .as_ref()
            .is_some_and(|(pending, _)| wait || pending.iter().all(PendingCommit::is_finished));
        if !ready {
            return Ok(());
        }
        let Some((pending, end)) = self.storing.take() else {
            return Ok(());
        };
        let mut first = None;
        for commit in pending {
            if let Err(e) = commit.wait() {
                first.get_or_insert(e);
            }
        }
        let stored = match first {
            Some(e) => Err(e),
            None => self.grow(end),
        };
        self.keep(stored)
    }

    /// Show `end` frames along the axis in `zarr.json`, if it shows fewer.
    fn grow(&mut self, end: u64) -> Result<()> {
        if end > self.shown {
            let mut shape = self.array.layout().shape().to_vec();
            set(&mut shape, self.axis, end);
            self.array = self.array.resize(shape)?;
            self.shown = end;
        }
        Ok(())
    }
}

/// `v[axis] = value`.
fn set(v: &mut [u64], axis: usize, value: u64) {
    if let Some(x) = v.get_mut(axis) {
        *x = value;
    }
}

fn set_text(v: &mut [String], axis: usize, value: &str) {
    if let Some(x) = v.get_mut(axis) {
        *x = value.to_string();
    }
}

mod image;
#[cfg(test)]
mod image_tests;
mod open;
#[cfg(test)]
mod tests;
