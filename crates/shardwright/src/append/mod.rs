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
//! A slab stored in the background is shown by the first [`Appender::append`],
//! [`Appender::flush`] or [`Appender::finish`] after its store completes (nothing runs
//! in between). [`Appender::flush`] waits until every complete slab is stored and
//! shown; [`Appender::finish`] stores the last, partial slab (rows past the end hold the
//! fill value, as an array of that shape has) and sets the exact shape. A process
//! killed mid-run keeps the frames shown in `zarr.json` and loses the others: those of
//! the open slab, and those of the slab being stored, or stored but not yet shown (the
//! next appender deletes it). After a [`flush`](Appender::flush), only the open slab's
//! frames are at stake.
//!
//! Opening an appender continues from the stored shape: when it ends inside a slab, that
//! slab's writers merge with its stored shards (each read once, at its commit), and the
//! elements past the stored end in it are set to the fill value; shards stored past the
//! shape (left by a run killed between storing a slab and growing the shape) are
//! deleted — found by one listing where the store lists, else looked for in the two
//! slabs past the end (all a killed appender can leave) — so growing never shows stale
//! data. Before that, the clearing of a shrink that was cut short (its record lies next
//! to `zarr.json`, see [`Array::resize`]) is finished, since every resize, so every
//! grow, would first clear what it names: the slabs appended since. One appender per array at a time: another writer of the rows past the shape
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

impl Appender {
    /// The frames along the axis so far (stored before, shown, or still open).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use shardwright::{Array, ArraySpec, MemoryStore};
    /// let spec = ArraySpec::new(vec![3, 2], "uint8", vec![2, 2]).shards(vec![4, 2]);
    /// let array = Array::create(Arc::new(MemoryStore::new()), "t", &spec).unwrap();
    /// let mut appender = array.appender(0).unwrap();
    /// assert_eq!(appender.length(), 3); // continues from the stored shape
    /// appender.append(&[1, 2], &[2]).unwrap();
    /// assert_eq!(appender.length(), 4);
    /// ```
    #[must_use]
    pub fn length(&self) -> u64 {
        self.length
    }

    /// The array's shape once every frame appended so far is stored.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use shardwright::{Array, ArraySpec, MemoryStore};
    /// let spec = ArraySpec::new(vec![0, 2], "uint8", vec![2, 2]).shards(vec![4, 2]);
    /// let array = Array::create(Arc::new(MemoryStore::new()), "t", &spec).unwrap();
    /// let mut appender = array.appender(0).unwrap();
    /// appender.append(&[1, 2], &[2]).unwrap();
    /// assert_eq!(appender.shape(), vec![1, 2]);
    /// assert_eq!(appender.array().layout().shape(), &[0, 2]); // not stored yet
    /// ```
    #[must_use]
    pub fn shape(&self) -> Vec<u64> {
        let mut shape = self.array.layout().shape().to_vec();
        set(&mut shape, self.axis, self.length);
        shape
    }

    /// The array with the shape shown now (whole stored slabs only).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use shardwright::{Array, ArraySpec, MemoryStore};
    /// let spec = ArraySpec::new(vec![0, 2], "uint8", vec![2, 2]).shards(vec![2, 2]);
    /// let array = Array::create(Arc::new(MemoryStore::new()), "t", &spec).unwrap();
    /// let mut appender = array.appender(0).unwrap();
    /// appender.append(&[1, 2, 3, 4, 5, 6], &[3, 2]).unwrap();
    /// appender.flush().unwrap();
    /// let shown = appender.array();
    /// assert_eq!(shown.layout().shape(), &[2, 2]); // the open slab's frame is not shown
    /// assert_eq!(shown.read(&shown.bounds()).unwrap(), [1, 2, 3, 4]);
    /// ```
    #[must_use]
    pub fn array(&self) -> &Array {
        &self.array
    }

    /// The axis appended along.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use shardwright::{Array, ArraySpec, MemoryStore};
    /// let spec = ArraySpec::new(vec![2, 0], "uint8", vec![2, 2]);
    /// let array = Array::create(Arc::new(MemoryStore::new()), "t", &spec).unwrap();
    /// assert_eq!(array.appender(1).unwrap().axis(), 1);
    /// ```
    #[must_use]
    pub fn axis(&self) -> usize {
        self.axis
    }

    /// Append one frame (`shape`: the array's shape without the axis) or a block of `k`
    /// frames (`shape`: the array's shape with `k` along the axis); `data` holds its
    /// elements in C order, native endian. The frames are copied; a slab they complete
    /// is stored in the background.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use shardwright::{Array, ArraySpec, ErrorKind, MemoryStore};
    /// let spec = ArraySpec::new(vec![0, 3], "uint8", vec![2, 3]).shards(vec![2, 3]);
    /// let array = Array::create(Arc::new(MemoryStore::new()), "t", &spec).unwrap();
    /// let mut appender = array.appender(0).unwrap();
    /// appender.append(&[1, 2, 3], &[3]).unwrap(); // one frame
    /// appender.append(&[4, 5, 6, 7, 8, 9], &[2, 3]).unwrap(); // a block of two
    /// let err = appender.append(&[1, 2], &[2]).unwrap_err(); // refused, nothing appended
    /// assert_eq!(err.kind(), ErrorKind::Shape);
    /// assert_eq!(appender.length(), 3);
    /// ```
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
    /// ```
    /// use std::sync::Arc;
    /// use shardwright::{Array, ArraySpec, MemoryStore};
    /// let store = Arc::new(MemoryStore::new());
    /// let spec = ArraySpec::new(vec![0, 2], "uint8", vec![2, 2]).shards(vec![2, 2]);
    /// let array = Array::create(store.clone(), "t", &spec).unwrap();
    /// let mut appender = array.appender(0).unwrap();
    /// appender.append(&[7; 4], &[2, 2]).unwrap(); // a whole slab, stored in the background
    /// appender.flush().unwrap();
    /// assert_eq!(Array::open(store, "t").unwrap().layout().shape(), &[2, 2]);
    /// ```
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
    /// ```
    /// use std::sync::Arc;
    /// use shardwright::{Array, ArraySpec, MemoryStore};
    /// let spec = ArraySpec::new(vec![0, 2], "uint8", vec![2, 2]).shards(vec![4, 2]);
    /// let array = Array::create(Arc::new(MemoryStore::new()), "t", &spec).unwrap();
    /// let mut appender = array.appender(0).unwrap();
    /// appender.append(&[3, 4], &[2]).unwrap();
    /// let array = appender.finish().unwrap();
    /// assert_eq!(array.layout().shape(), &[1, 2]);
    /// assert_eq!(array.read(&array.bounds()).unwrap(), [3, 4]);
    /// ```
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
mod slabs;
#[cfg(test)]
mod tests;
