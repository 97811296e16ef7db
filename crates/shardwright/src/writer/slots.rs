//! The slot table of a shard writer: one slot per inner chunk, filled by encode tasks
//! running on a thread pool, with a bound on raw buffers in flight (backpressure).

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use rayon::ThreadPool;

use crate::format::{chunk, FormatError};
use crate::layout::Layout;

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
}

impl Table {
    /// Put `state` in `slot`, keeping the byte count right.
    fn set(&mut self, slot: usize, state: Slot) {
        let was_written = !matches!(self.slots[slot], Slot::Unwritten);
        let is_written = !matches!(state, Slot::Unwritten);
        self.written = self.written + usize::from(is_written) - usize::from(was_written);
        if let Slot::Encoded(old) = &self.slots[slot] {
            self.encoded_bytes -= old.len();
        }
        if let Slot::Encoded(new) = &state {
            self.encoded_bytes += new.len();
        }
        self.slots[slot] = state;
    }
}

/// Slots shared between the writer and its encode tasks.
#[derive(Debug)]
pub(crate) struct SlotTable {
    table: Mutex<Table>,
    changed: Condvar,
    max_in_flight: usize,
    /// Raw buffers whose encode finished, kept for the next chunks: a fresh 64 KiB buffer
    /// per chunk made glibc grow and trim its heap, a page fault per 4 KiB each time.
    spare: Mutex<Vec<Vec<u8>>>,
}

impl SlotTable {
    pub(crate) fn new(slots: usize, max_in_flight: usize) -> Arc<Self> {
        Arc::new(Self {
            table: Mutex::new(Table {
                slots: (0..slots).map(|_| Slot::Unwritten).collect(),
                in_flight: 0,
                generation: 0,
                error: None,
                encoded_bytes: 0,
                raw_in_flight: 0,
                written: 0,
            }),
            changed: Condvar::new(),
            max_in_flight: max_in_flight.max(1),
            spare: Mutex::new(Vec::new()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A zeroed buffer of `len` bytes, reusing the buffer of a finished encode when one
    /// is large enough.
    pub(crate) fn buffer(&self, len: usize) -> Vec<u8> {
        let reused = {
            let mut spare = self.spare.lock().unwrap_or_else(PoisonError::into_inner);
            let fits = spare.iter().rposition(|b| b.capacity() >= len);
            fits.map(|i| spare.swap_remove(i))
        };
        match reused {
            Some(mut buffer) => {
                buffer.clear();
                buffer.resize(len, 0);
                buffer
            }
            None => vec![0; len],
        }
    }

    /// Keep `buffer` for [`buffer`](Self::buffer), at most `max_in_flight` of them.
    fn recycle(&self, buffer: Vec<u8>) {
        let mut spare = self.spare.lock().unwrap_or_else(PoisonError::into_inner);
        if spare.len() < self.max_in_flight {
            spare.push(buffer);
        }
    }

    /// Hand `raw` (one full inner chunk) to the pool for encoding into `slot`. Waits first
    /// while `max_in_flight` raw chunks are already waiting or being encoded.
    pub(crate) fn submit(
        self: &Arc<Self>,
        slot: usize,
        raw: Vec<u8>,
        layout: &Arc<Layout>,
        pool: Option<&ThreadPool>,
    ) -> Result<(), FormatError> {
        let generation = {
            let mut table = self.lock();
            while table.in_flight >= self.max_in_flight {
                table = self
                    .changed
                    .wait(table)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            if let Some(err) = &table.error {
                return Err(err.clone());
            }
            table.generation += 1;
            table.in_flight += 1;
            table.raw_in_flight += raw.len();
            let generation = table.generation;
            table.set(slot, Slot::Pending(generation));
            generation
        };
        let this = Arc::clone(self);
        let layout = Arc::clone(layout);
        let raw_len = raw.len();
        let task = move || {
            // A panic in a codec must not take the process down: it becomes an error.
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                chunk::encode_slice(&layout, &raw)
            }))
            .unwrap_or_else(|panic| Err(FormatError::Codec(panic_message(&panic))));
            this.recycle(raw);
            let mut table = this.lock();
            table.in_flight -= 1;
            table.raw_in_flight -= raw_len;
            match result {
                Ok(encoded) => {
                    if matches!(table.slots[slot], Slot::Pending(g) if g == generation) {
                        table.set(slot, encoded.map_or(Slot::Empty, Slot::Encoded));
                    }
                }
                Err(err) => {
                    // The slot must not stay pending: waiters for it would never wake.
                    if matches!(table.slots[slot], Slot::Pending(g) if g == generation) {
                        table.set(slot, Slot::Unwritten);
                    }
                    table.error.get_or_insert(err);
                }
            }
            drop(table);
            this.changed.notify_all();
        };
        match pool {
            Some(pool) => pool.spawn(task),
            None => rayon::spawn(task),
        }
        Ok(())
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
    pub(crate) fn written_raw(
        &self,
        slot: usize,
        layout: &Layout,
    ) -> Result<Option<Vec<u8>>, FormatError> {
        let encoded = {
            let mut table = self.lock();
            while table.error.is_none() && matches!(table.slots[slot], Slot::Pending(_)) {
                table = self
                    .changed
                    .wait(table)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            if let Some(err) = &table.error {
                return Err(err.clone());
            }
            match &table.slots[slot] {
                Slot::Unwritten => return Ok(None),
                Slot::Empty => None,
                Slot::Encoded(bytes) => Some(bytes.clone()),
                Slot::Pending(_) => unreachable!("waited above"),
            }
        };
        match encoded {
            Some(bytes) => chunk::decode(layout, &bytes).map(Some),
            None => {
                let mut raw = vec![0u8; layout.raw_chunk_bytes()];
                crate::domain::copy::fill(&mut raw, layout.fill_value_bytes());
                Ok(Some(raw))
            }
        }
    }

    /// Bytes held: encoded chunks plus raw chunks in flight.
    pub(crate) fn memory(&self) -> usize {
        let table = self.lock();
        table.encoded_bytes + table.raw_in_flight
    }

    /// Wait for every encode task, then take the slots (or the first encode error).
    pub(crate) fn finish(&self) -> Result<Vec<Slot>, FormatError> {
        let mut table = self.lock();
        while table.in_flight > 0 {
            table = self
                .changed
                .wait(table)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if let Some(err) = table.error.take() {
            return Err(err);
        }
        Ok(std::mem::take(&mut table.slots))
    }

    /// How many slots have been written so far.
    pub(crate) fn written(&self) -> usize {
        self.lock().written
    }
}

/// The message of a caught panic.
pub(crate) fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    format!("internal error (panic): {text}")
}
