//! The slot table of a shard writer: one slot per inner chunk, filled by encode tasks
//! running on a thread pool, with a bound on raw buffers in flight (backpressure). With a
//! [`Sink`], encoded chunks go to storage as they finish (see [`super::spill`]).

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use rayon::ThreadPool;

use super::meter::Share;
use super::spill::{Encoded, Sink, SpillQueue};
use crate::buffer;
use crate::error::{panic_message, Result};
use crate::format::{chunk, FormatError};
use crate::layout::Layout;
use crate::store::Upload;

/// The state of one inner chunk slot.
#[derive(Debug)]
pub(crate) enum Slot {
    /// Not written: at commit, the stored chunk is kept (or the slot stays empty).
    Unwritten,
    /// Written; its encode task (of this generation) has not finished.
    Pending(u64),
    /// Written with data equal to the fill value everywhere: stored as an empty slot.
    Empty,
    /// Written and encoded.
    Encoded(Vec<u8>),
    /// Written, encoded and appended to the writer's upload at `offset`.
    Spilled {
        /// Where the chunk starts in the upload.
        offset: u64,
        /// Its encoded size.
        len: u64,
    },
}

/// What [`SlotTable::finish`] hands to the commit.
#[derive(Debug)]
pub(crate) struct Finished {
    pub(crate) slots: Vec<Slot>,
    /// The upload holding the `Spilled` chunks (none if nothing was spilled).
    pub(crate) upload: Option<Box<dyn Upload>>,
    /// Bytes in the upload that no slot points to (chunks written twice).
    pub(crate) dead: u64,
}

impl Finished {
    /// Read every spilled chunk back into memory and drop the upload (for a commit that
    /// cannot use the upload as it is, or a writer absorbed into another).
    pub(crate) fn into_memory(mut self) -> Result<Vec<Slot>> {
        if let Some(mut upload) = self.upload.take() {
            for slot in &mut self.slots {
                if let Slot::Spilled { offset, len } = *slot {
                    *slot = Slot::Encoded(upload.read(offset..offset + len)?);
                }
            }
        }
        Ok(self.slots)
    }
}

#[derive(Debug)]
struct Table {
    slots: Vec<Slot>,
    in_flight: usize,
    generation: u64,
    error: Option<FormatError>,
    /// Bytes of encoded chunks held in slots.
    encoded_bytes: usize,
    /// Bytes of raw chunks waiting for or undergoing encoding.
    raw_in_flight: usize,
    /// Slots not `Unwritten`.
    written: usize,
    /// Encoded chunks on their way to the sink (streaming writers only).
    spill: Option<SpillQueue>,
    /// Spilled bytes no slot points to any more.
    dead: u64,
    /// Where changes of `encoded_bytes` and `raw_in_flight` are counted too.
    share: Arc<Share>,
}

impl Table {
    /// Put `state` in `slot`, keeping the byte count right.
    fn set(&mut self, slot: usize, state: Slot) {
        // Slots come from `ShardWriter::slot_of`, inside the shard: always in the table.
        let Some(current) = self.slots.get(slot) else {
            debug_assert!(false, "slot {slot} outside a table of {}", self.slots.len());
            return;
        };
        let was_written = !matches!(current, Slot::Unwritten);
        let is_written = !matches!(state, Slot::Unwritten);
        self.written = self.written + usize::from(is_written) - usize::from(was_written);
        match current {
            Slot::Encoded(old) => {
                self.encoded_bytes -= old.len();
                self.share.sub(old.len());
            }
            Slot::Spilled { len, .. } => self.dead += len,
            _ => {}
        }
        if let Slot::Encoded(new) = &state {
            self.encoded_bytes += new.len();
            self.share.add(new.len());
        }
        if let Some(current) = self.slots.get_mut(slot) {
            *current = state;
        }
    }

    /// Whether `slot` waits for its encode.
    fn pending(&self, slot: usize) -> bool {
        matches!(self.slots.get(slot), Some(Slot::Pending(_)))
    }
}

/// Slots shared between the writer and its encode tasks.
#[derive(Debug)]
pub(crate) struct SlotTable {
    table: Mutex<Table>,
    changed: Condvar,
    max_in_flight: usize,
    /// Where encoded chunks are streamed to, if anywhere.
    sink: Option<Sink>,
}

impl SlotTable {
    /// A table of `slots` empty slots; with `sink`, encoded chunks are streamed to it.
    /// The bytes of encoded chunks held and raw chunks in flight are counted in `share`.
    pub(crate) fn new(
        slots: usize,
        max_in_flight: usize,
        sink: Option<Sink>,
        share: Arc<Share>,
    ) -> Arc<Self> {
        Arc::new(Self {
            table: Mutex::new(Table {
                slots: (0..slots).map(|_| Slot::Unwritten).collect(),
                in_flight: 0,
                generation: 0,
                error: None,
                encoded_bytes: 0,
                raw_in_flight: 0,
                written: 0,
                spill: sink.as_ref().map(|_| SpillQueue::new(1)),
                dead: 0,
                share,
            }),
            changed: Condvar::new(),
            max_in_flight: max_in_flight.max(1),
            sink,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Lock the table and wait (woken by every encode that ends) while `blocked` holds.
    fn wait_while(&self, blocked: impl FnMut(&mut Table) -> bool) -> MutexGuard<'_, Table> {
        self.changed
            .wait_while(self.lock(), blocked)
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// A zeroed buffer of `len` bytes, reusing the buffer of a finished encode when one
    /// is large enough.
    pub(crate) fn buffer(&self, len: usize) -> Result<Vec<u8>> {
        match self.spare_buffer(len) {
            Some(mut buffer) => {
                buffer.resize(len, 0);
                Ok(buffer)
            }
            None => Ok(buffer::zeroed(len)?),
        }
    }

    /// A copy of `data`, in the buffer of a finished encode when one is large enough.
    pub(crate) fn buffer_from(&self, data: &[u8]) -> Result<Vec<u8>> {
        match self.spare_buffer(data.len()) {
            Some(mut buffer) => {
                buffer.extend_from_slice(data);
                Ok(buffer)
            }
            None => Ok(buffer::copied(data)?),
        }
    }

    /// An emptied spare buffer with room for `len` bytes, if there is one.
    fn spare_buffer(&self, len: usize) -> Option<Vec<u8>> {
        super::buffers::take(len)
    }

    /// Keep `buffer` for [`buffer`](Self::buffer).
    fn recycle(&self, buffer: Vec<u8>) {
        super::buffers::give(buffer);
    }

    /// Wait while `max_in_flight` submissions are not placed yet, then fail with an
    /// earlier encode's or the upload's error, if any; otherwise count a new submission
    /// for `slot` (its generation is returned) with `raw_len` raw bytes in flight.
    fn reserve(&self, slot: usize, raw_len: usize) -> Result<u64> {
        let mut table = self.wait_while(|t| t.in_flight >= self.max_in_flight);
        if let Some(err) = &table.error {
            return Err(err.clone().into());
        }
        // A failed append will fail the commit: fail the writes now rather than after
        // the rest of the shard was computed.
        if let Some(err) = self.sink.as_ref().and_then(Sink::failure) {
            return Err(err.into());
        }
        table.generation += 1;
        table.in_flight += 1;
        table.raw_in_flight += raw_len;
        table.share.add(raw_len);
        let generation = table.generation;
        table.set(slot, Slot::Pending(generation));
        Ok(generation)
    }

    /// Hand `raw` (one full inner chunk) to the pool for encoding into `slot`. Waits first
    /// while `max_in_flight` raw chunks are already waiting or being encoded.
    pub(crate) fn submit(
        self: &Arc<Self>,
        slot: usize,
        raw: Vec<u8>,
        layout: &Arc<Layout>,
        pool: Option<&ThreadPool>,
        report: Option<super::observer::Report>,
    ) -> Result<()> {
        let raw_len = raw.len();
        let generation = self.reserve(slot, raw_len)?;
        let this = Arc::clone(self);
        let layout = Arc::clone(layout);
        let task = move || {
            // Waiters are woken however this task ends.
            let _notify = NotifyOnDrop(&this.changed);
            // A panic in a codec must not take the process down: it becomes an error.
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                if let Some(report) = &report {
                    report.send(&raw);
                }
                chunk::encode_slice(&layout, &raw)
            }))
            .unwrap_or_else(|panic| Err(FormatError::Codec(panic_message(&*panic))));
            this.recycle(raw);
            let mut table = this.lock();
            table.raw_in_flight -= raw_len;
            table.share.sub(raw_len);
            let outcome = match result {
                Ok(Some(bytes)) => Encoded::Bytes(bytes),
                Ok(None) => Encoded::Empty,
                Err(err) => {
                    table.error.get_or_insert(err);
                    Encoded::Failed
                }
            };
            this.place(table, generation, slot, outcome);
        };
        match pool {
            Some(pool) => pool.spawn(task),
            None => rayon::spawn(task),
        }
        Ok(())
    }

    /// Put `bytes`, an inner chunk already encoded (`None`: the fill value everywhere), in
    /// `slot`, in the order of submissions (as [`submit`](Self::submit) with its encode
    /// done): a constant region encodes one chunk and places it in every slot it covers.
    /// Waits first while `max_in_flight` submissions are not placed yet.
    pub(crate) fn submit_encoded(&self, slot: usize, bytes: Option<Vec<u8>>) -> Result<()> {
        let generation = self.reserve(slot, 0)?;
        let outcome = bytes.map_or(Encoded::Empty, Encoded::Bytes);
        self.place(self.lock(), generation, slot, outcome);
        self.changed.notify_all();
        Ok(())
    }

    /// Record the outcome of submission `generation` for `slot` and place every outcome
    /// that can be placed now (streaming writers place in submission order); appends the
    /// staging buffer when it is full.
    fn place(
        &self,
        mut table: MutexGuard<'_, Table>,
        generation: u64,
        slot: usize,
        outcome: Encoded,
    ) {
        let placeable = match table.spill.as_mut() {
            Some(queue) => queue.finished(generation, slot, outcome),
            None => vec![(generation, slot, outcome)],
        };
        // A submission counts as in flight until it is placed, so the chunks that
        // finished before an earlier one are bounded by `max_in_flight` too.
        table.in_flight -= placeable.len();
        for (generation, slot, outcome) in placeable {
            // A slot written again since keeps the later write.
            if !matches!(table.slots.get(slot), Some(Slot::Pending(g)) if *g == generation) {
                continue;
            }
            // A failed encode must not leave its slot pending: waiters would never wake.
            let state = match outcome {
                Encoded::Bytes(bytes) => match table.spill.as_mut() {
                    Some(queue) => Slot::Spilled {
                        offset: queue.stage(&bytes),
                        len: bytes.len() as u64,
                    },
                    None => Slot::Encoded(bytes),
                },
                Encoded::Empty => Slot::Empty,
                Encoded::Failed => Slot::Unwritten,
            };
            table.set(slot, state);
        }
        if table.spill.as_ref().is_some_and(SpillQueue::full) {
            self.append_staged(table);
        }
    }

    /// Append the staged bytes to the sink. Takes the table's lock and releases it before
    /// the write, holding the sink's lock from before the release, so appends keep the
    /// order in which bytes were staged.
    fn append_staged(&self, mut table: MutexGuard<'_, Table>) {
        let (Some(sink), Some(queue)) = (self.sink.as_ref(), table.spill.as_mut()) else {
            return;
        };
        let mut state = sink.lock();
        let data = queue.take_staging(state.spare());
        drop(table);
        sink.append(&mut state, data);
    }

    /// Record a slot as written with the fill value everywhere, without encoding.
    pub(crate) fn set_empty(&self, slot: usize) {
        self.set(slot, Slot::Empty);
    }

    /// Put a finished state (encoded or empty) in a slot, replacing any pending encode.
    pub(crate) fn set(&self, slot: usize, state: Slot) {
        self.lock().set(slot, state);
    }

    /// The raw data written to `slot` so far (waiting for its encode, then decoding it),
    /// or `None` if the slot was not written.
    pub(crate) fn written_raw(&self, slot: usize, layout: &Layout) -> Result<Option<Vec<u8>>> {
        let encoded = {
            let table = self.wait_while(|t| t.error.is_none() && t.pending(slot));
            if let Some(err) = &table.error {
                return Err(err.clone().into());
            }
            match table.slots.get(slot) {
                None | Some(Slot::Unwritten) => return Ok(None),
                Some(Slot::Empty) => None,
                Some(Slot::Encoded(bytes)) => Some(bytes.clone()),
                Some(&Slot::Spilled { offset, len }) => {
                    match table.spill.as_ref().and_then(|q| q.staged(offset, len)) {
                        Some(bytes) => Some(bytes.to_vec()),
                        None => {
                            // Appended, or being appended by a task that holds the sink's
                            // lock: read it back without blocking the table meanwhile.
                            drop(table);
                            let sink = self.sink.as_ref().ok_or_else(|| {
                                crate::error::Error::Internal(
                                    "a spilled chunk without a sink".into(),
                                )
                            })?;
                            Some(sink.lock().read(sink.key(), offset, len)?)
                        }
                    }
                }
                Some(Slot::Pending(_)) => {
                    return Err(crate::error::Error::Internal(format!(
                        "slot {slot} still pending after waiting for it"
                    )))
                }
            }
        };
        match encoded {
            Some(bytes) => Ok(Some(chunk::decode(layout, &bytes)?)),
            None => Ok(Some(layout.fill_chunk()?)),
        }
    }

    /// Bytes held: encoded chunks, raw chunks in flight, and chunks on their way to the
    /// sink.
    pub(crate) fn memory(&self) -> usize {
        let table = self.lock();
        let spill = table.spill.as_ref().map_or(0, SpillQueue::memory);
        table.encoded_bytes + table.raw_in_flight + spill
    }

    /// Wait for every encode task, append what is staged, then take the slots and the
    /// upload (or the first encode or storage error).
    pub(crate) fn finish(&self) -> Result<Finished> {
        let mut table = self.wait_while(|t| t.in_flight > 0);
        if let Some(err) = table.error.take() {
            if let Some(sink) = &self.sink {
                sink.lock().abort();
            }
            return Err(err.into());
        }
        let slots = std::mem::take(&mut table.slots);
        let dead = table.dead;
        let upload = match (&self.sink, table.spill.as_mut()) {
            (Some(sink), Some(queue)) => {
                let mut state = sink.lock();
                let data = queue.take_staging(Vec::new());
                drop(table);
                sink.append(&mut state, data);
                state.take()?
            }
            _ => None,
        };
        Ok(Finished {
            slots,
            upload,
            dead,
        })
    }

    /// Drop the upload, if any (removing what it wrote); encodes still running then
    /// append nothing. For a writer dropped without committing.
    pub(crate) fn abort(&self) {
        if let Some(sink) = &self.sink {
            sink.lock().abort();
        }
    }

    /// Wait until every submission so far is placed (tests: make chunks spilled before
    /// writing them again).
    #[cfg(test)]
    pub(crate) fn wait_placed(&self) {
        drop(self.wait_while(|t| t.in_flight > 0));
    }

    /// How many slots have been written so far.
    pub(crate) fn written(&self) -> usize {
        self.lock().written
    }
}

/// Wakes the waiters of a condition variable when dropped (also when a task panics).
struct NotifyOnDrop<'a>(&'a Condvar);

impl Drop for NotifyOnDrop<'_> {
    fn drop(&mut self) {
        self.0.notify_all();
    }
}
