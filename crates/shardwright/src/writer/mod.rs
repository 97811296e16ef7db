//! [`ShardWriter`]: buffers the inner chunks of one shard as encoded bytes and stores the
//! shard once, at [`commit`](ShardWriter::commit).
//!
//! `write_chunk` copies the data into an owned buffer (padded with the fill value where
//! the chunk is clipped at the array edge), hands it to an encode task on a rayon pool and
//! returns; when `max_in_flight` raw chunks are already waiting, it waits first — that
//! backpressure is what bounds memory. Encoded chunks equal to the fill value are kept as
//! empty slots. With a store that streams and the index at the end of the shard (see
//! [`WriterOptions::stream`]), encoded chunks are appended to an upload as they finish, in
//! the order they were written, through a 1 MiB staging buffer, so memory holds about a
//! megabyte plus the raw chunks in flight; otherwise the encoded chunks stay in memory.
//!
//! At commit the writer waits for its encode tasks, then:
//! - every inner chunk that meets the array was written: the shard (chunks in the order
//!   written, then the index) is stored with one put — completing the upload — and no get
//!   (one delete instead if every chunk is empty);
//! - some were not, or some were written only in part ([`write_region`](ShardWriter::write_region)):
//!   the stored shard is read once; the chunks not written keep their stored encoded bytes,
//!   copied as they are (never decoded); only partly written chunks are decoded, completed
//!   and encoded. The put is then conditional on the stored shard being unchanged since it
//!   was read; on a conflict the writer re-reads, re-merges and retries (`retries` times)
//!   before failing with a [`StoreError::Conflict`](crate::store::StoreError::Conflict);
//! - nothing was written: no I/O at all.
//!
//! Dropping a writer without committing aborts it: nothing is stored, and a streaming
//! writer's upload (with any folder it created) is removed; a writer that never streamed
//! makes no storage call at all.
//!
//! ```
//! use std::sync::Arc;
//! use shardwright::layout::ArraySpec;
//! use shardwright::store::MemoryStore;
//! use shardwright::Array;
//!
//! let spec = ArraySpec::new(vec![8, 8], "uint8", vec![4, 4]).shards(vec![8, 8]);
//! let array = Array::create(Arc::new(MemoryStore::new()), "a.zarr", &spec).unwrap();
//! let shard = array.shards().next().unwrap();
//! let writer = array.shard_writer(&shard).unwrap();
//! for chunk in writer.inner_chunks() {
//!     writer.write_chunk(&chunk, &vec![7u8; chunk.size() as usize]).unwrap();
//! }
//! let stats = writer.commit().unwrap();
//! assert_eq!((stats.puts, stats.gets, stats.chunks_written), (1, 0, 4));
//! assert_eq!(array.read(&array.bounds()).unwrap(), vec![7u8; 64]);
//! ```

mod buffers;
mod commit;
mod meter;
mod observer;
mod options;
mod partial;
mod pending;
mod region;
mod slot;
mod slots;
mod spill;
mod values;

pub use commit::CommitStats;
pub(crate) use meter::Meter;
pub use observer::ShardObserver;
pub use options::{WriterOptions, DEFAULT_RETRIES};
pub use pending::PendingCommit;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::domain::{Domain, Grid, GridCells};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::store::Store;
use meter::Share;
use partial::PartialChunk;
use slots::SlotTable;

/// Writes one shard. See the [module docs](self).
#[derive(Debug)]
pub struct ShardWriter {
    layout: Arc<Layout>,
    store: Arc<dyn Store>,
    key: String,
    shard: Domain,
    chunk_grid: Grid,
    slots: Arc<SlotTable>,
    partials: Mutex<BTreeMap<usize, PartialChunk>>,
    /// The bytes held (slots and partly written chunks), counted as they change.
    share: Arc<Share>,
    options: WriterOptions,
    /// This writer's id for its observer (unique in the process).
    id: u64,
    /// The next sequence number of a report to the observer.
    seq: AtomicU64,
    /// Drops the upload of a writer dropped without committing.
    _abort: AbortOnDrop,
}

/// The ids of writers made so far.
static WRITERS: AtomicU64 = AtomicU64::new(0);

/// Aborts the slot table's upload when the writer goes (a no-op after a commit took it),
/// and takes the writer's bytes out of the meter it was counted into.
#[derive(Debug)]
struct AbortOnDrop(
    Arc<SlotTable>,
    Arc<Share>,
    Option<(Arc<dyn ShardObserver>, u64)>,
);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
        self.1.detach();
        // After a commit the observer has forgotten the writer: this is a no-op then.
        if let Some((observer, id)) = &self.2 {
            observer.aborted(*id);
        }
    }
}

/// The partly written chunks of a writer, locked; when unlocked, the change in their
/// number is counted in the writer's [`Share`] (every one holds as many bytes).
pub(crate) struct Partials<'a> {
    map: MutexGuard<'a, BTreeMap<usize, PartialChunk>>,
    before: usize,
    each: usize,
    share: &'a Share,
}

impl std::ops::Deref for Partials<'_> {
    type Target = BTreeMap<usize, PartialChunk>;
    fn deref(&self) -> &Self::Target {
        &self.map
    }
}

impl std::ops::DerefMut for Partials<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.map
    }
}

impl Drop for Partials<'_> {
    fn drop(&mut self) {
        self.share
            .change(self.before * self.each, self.map.len() * self.each);
    }
}

impl ShardWriter {
    /// A writer of the shard `shard` (a domain from the shard grid) stored at `key`.
    ///
    /// # Errors
    /// [`Error::Domain`] if `shard` is not a cell of the layout's shard grid.
    pub fn new(
        layout: Arc<Layout>,
        store: Arc<dyn Store>,
        key: String,
        shard: &Domain,
        options: &WriterOptions,
    ) -> Result<Self> {
        let index = shard_index_of(&layout, shard)?;
        let shard = layout.shard_grid().cell(&index)?;
        let streams = options.stream
            && store.streams()
            && layout
                .index()
                .is_some_and(|i| i.location() == crate::layout::IndexLocation::End);
        let sink = streams.then(|| spill::Sink::new(Arc::clone(&store), key.clone()));
        let share = Arc::new(Share::default());
        let id = WRITERS.fetch_add(1, Ordering::Relaxed);
        let observed = options.observer.clone().map(|o| (o, id));
        let slots = SlotTable::new(
            layout.slots_per_shard(),
            options.max_in_flight_or_default(),
            sink,
            Arc::clone(&share),
        );
        Ok(Self {
            chunk_grid: layout.chunk_grid(),
            layout,
            store,
            key,
            shard,
            _abort: AbortOnDrop(Arc::clone(&slots), Arc::clone(&share), observed),
            slots,
            partials: Mutex::new(BTreeMap::new()),
            share,
            options: options.clone(),
            id,
            seq: AtomicU64::new(0),
        })
    }

    /// The shard being written, clipped to the array, with its grid index.
    #[must_use]
    pub fn shard(&self) -> &Domain {
        &self.shard
    }

    /// This writer's id, as its array's [`ShardObserver`] hears it (unique in the process).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use shardwright::{Array, ArraySpec, MemoryStore};
    /// # let array = Array::create(Arc::new(MemoryStore::new()), "", &ArraySpec::new(vec![4], "uint8", vec![2]).shards(vec![2])).unwrap();
    /// let a = array.shard_writer(&array.shard(&[0]).unwrap()).unwrap();
    /// let b = array.shard_writer(&array.shard(&[0]).unwrap()).unwrap();
    /// assert_ne!(a.id(), b.id());
    /// ```
    #[must_use]
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The storage key the shard is written to.
    #[must_use]
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The layout of the array.
    #[must_use]
    pub fn layout(&self) -> &Arc<Layout> {
        &self.layout
    }

    /// The inner chunks of the shard that meet the array, clipped to it, in C order.
    #[must_use]
    pub fn inner_chunks(&self) -> GridCells {
        self.chunk_grid.cells_meeting(&self.shard)
    }

    /// A zeroed buffer of `len` bytes for [`write_chunk_owned`](Self::write_chunk_owned)
    /// or [`write_owned`](Self::write_owned): the buffer of an inner chunk whose encode
    /// finished, when one is free, so that writing chunk after chunk reuses the same few
    /// buffers instead of allocating (and page-faulting) a new one each time.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use shardwright::{Array, ArraySpec, MemoryStore};
    /// # let array = Array::create(Arc::new(MemoryStore::new()), "", &ArraySpec::new(vec![4], "uint8", vec![2]).shards(vec![4])).unwrap();
    /// # let writer = array.shard_writer(&array.shards().next().unwrap()).unwrap();
    /// for chunk in writer.inner_chunks() {
    ///     let mut raw = writer.buffer(chunk.size() as usize).unwrap();
    ///     raw.fill(9);
    ///     writer.write_chunk_owned(&chunk, raw).unwrap();
    /// }
    /// assert_eq!(writer.commit().unwrap().chunks_written, 2);
    /// ```
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when the memory cannot be had.
    pub fn buffer(&self, len: usize) -> Result<Vec<u8>> {
        self.slots.buffer(len)
    }

    /// How many inner chunks have been written whole so far.
    #[must_use]
    pub fn chunks_written(&self) -> usize {
        self.slots.written()
    }

    /// The bytes this writer holds: encoded chunks, raw chunks waiting to be encoded,
    /// and partly written chunks.
    #[must_use]
    pub fn staged_memory(&self) -> usize {
        let partials: usize = self.partials().values().map(PartialChunk::memory).sum();
        self.slots.memory() + partials
    }

    /// Whether every inner chunk that meets the array has been written whole, so the
    /// commit needs no read.
    #[must_use]
    pub fn is_complete(&self) -> bool {
        // Only slots of chunks inside the array can be written, so a count suffices.
        self.partials().is_empty() && self.slots.written() == self.inner_chunks().len()
    }

    fn partials(&self) -> Partials<'_> {
        let map = self.partials.lock().unwrap_or_else(PoisonError::into_inner);
        Partials {
            before: map.len(),
            map,
            each: PartialChunk::memory_for(&self.layout),
            share: &self.share,
        }
    }

    /// Count this writer's bytes (see [`staged_memory`](Self::staged_memory), streamed
    /// chunks on their way to storage aside) into `meter`, as they change, until it is
    /// committed or dropped.
    pub(crate) fn attach(&self, meter: &Arc<Meter>) {
        self.share.attach(meter);
    }

    fn submit(&self, slot: usize, raw: Vec<u8>) -> Result<()> {
        self.submit_locked(&mut self.partials(), slot, raw)
    }

    /// Submit a whole chunk for `slot`, with the partial chunks locked: the chunk replaces
    /// whatever part of it was written before, and dropping that part and marking the slot
    /// pending are one step for any other thread writing the same chunk (which would
    /// otherwise start a partial chunk from the slot's old state in between, and have the
    /// commit complete it from the stored chunk, losing this write).
    fn submit_locked(
        &self,
        partials: &mut BTreeMap<usize, PartialChunk>,
        slot: usize,
        raw: Vec<u8>,
    ) -> Result<()> {
        partials.remove(&slot);
        #[cfg(test)]
        race_point();
        let report = self.report_for(slot)?;
        self.slots.submit(
            slot,
            raw,
            &self.layout,
            self.options.pool.as_deref(),
            report,
        )
    }

    /// Record `slot` as written with the fill value everywhere (nothing to encode), as one
    /// step with dropping any part of it written before (see [`submit_locked`](Self::submit_locked)).
    fn set_empty(&self, slot: usize) -> Result<()> {
        let mut partials = self.partials();
        partials.remove(&slot);
        self.slots.set_empty(slot);
        self.observe_slot(slot, Some(self.layout.fill_value_bytes()))
    }

    /// Write one inner chunk: `data` holds its elements in C order, native endian, with
    /// the shape of `chunk` (clipped at the array edge). The data is copied; encoding
    /// runs in the background.
    ///
    /// # Errors
    /// [`Error::Domain`] if `chunk` is outside the shard, [`Error::NotAnInnerChunk`] if it
    /// is not one of [`inner_chunks`](Self::inner_chunks), [`Error::DataLength`] if `data`
    /// has the wrong size, [`Error::Format`] if an earlier encode failed.
    pub fn write_chunk(&self, chunk: &Domain, data: &[u8]) -> Result<()> {
        let slot = self.slot_of(chunk)?;
        self.check_len(chunk, data.len())?;
        let raw = if chunk.shape() == self.layout.chunk_shape() {
            self.slots.buffer_from(data)?
        } else {
            self.padded(chunk, data)?
        };
        self.submit(slot, raw)
    }

    /// As [`write_chunk`](Self::write_chunk), taking ownership of the buffer, which avoids
    /// a copy when `chunk` is not clipped.
    ///
    /// # Errors
    /// As [`write_chunk`](Self::write_chunk).
    pub fn write_chunk_owned(&self, chunk: &Domain, data: Vec<u8>) -> Result<()> {
        let slot = self.slot_of(chunk)?;
        self.write_slot_owned(slot, chunk, data)
    }

    /// [`write_chunk_owned`](Self::write_chunk_owned) once the slot is known.
    pub(super) fn write_slot_owned(
        &self,
        slot: usize,
        chunk: &Domain,
        data: Vec<u8>,
    ) -> Result<()> {
        self.check_len(chunk, data.len())?;
        let raw = if chunk.shape() == self.layout.chunk_shape() {
            data
        } else {
            self.padded(chunk, &data)?
        };
        self.submit(slot, raw)
    }

    /// Wait for the encodes and store the shard (see the [module docs](self)).
    ///
    /// # Errors
    /// [`Error::Format`] if an encode failed or the stored shard to merge with is corrupt,
    /// [`Error::Store`] if storage fails. Nothing is stored then.
    pub fn commit(self) -> Result<CommitStats> {
        let slots = self.slots.finish()?;
        if let Some(observer) = &self.options.observer {
            observer.committing(self.id, &self.shard)?;
        }
        let partials = std::mem::take(&mut *self.partials());
        let target = commit::Target {
            layout: &self.layout,
            store: self.store.as_ref(),
            key: &self.key,
            shard: &self.shard,
            options: &self.options,
        };
        let stats = commit::commit(&target, slots, partials)?;
        if let Some(observer) = &self.options.observer {
            observer.committed(self.id, &self.shard)?;
        }
        Ok(stats)
    }

    /// Wait until every chunk written so far is encoded and placed.
    #[cfg(test)]
    pub(crate) fn wait_placed(&self) {
        self.slots.wait_placed();
    }

    /// Drop the writer without storing anything (the same as dropping it).
    pub fn abort(self) {}
}

/// Tests: what another thread does between dropping a chunk's partial data and marking
/// its slot pending (the moment a race between whole and partial writes would hit).
#[cfg(test)]
pub(crate) static RACE: Mutex<Option<Box<dyn FnMut() + Send>>> = Mutex::new(None);

#[cfg(test)]
fn race_point() {
    let hook = RACE.lock().unwrap_or_else(PoisonError::into_inner).take();
    if let Some(mut hook) = hook {
        hook();
    }
}

/// The grid index of `shard`, which must be a cell of the layout's shard grid.
pub(crate) fn shard_index_of(layout: &Layout, shard: &Domain) -> Result<Vec<u64>> {
    let grid = layout.shard_grid();
    shard.check_inside(&grid.bounds())?;
    let index = grid.cell_index_at(shard.origin());
    let cell = grid.cell(&index)?;
    if &cell != shard {
        return Err(Error::NotAnInnerChunk {
            region: Box::new(shard.clone()),
            shard: Box::new(grid.bounds()),
            example: Box::new(cell),
        });
    }
    Ok(index)
}

#[cfg(test)]
mod rewrite_tests;
#[cfg(test)]
mod spill_tests;
#[cfg(test)]
mod tests;
