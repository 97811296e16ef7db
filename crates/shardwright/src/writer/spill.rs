//! Streaming a shard's encoded chunks to storage while the shard is being written.
//!
//! With a store that streams ([`Store::streams`]) and the index at the end of the shard,
//! the slot table hands each encoded chunk to a [`SpillQueue`] instead of keeping it. The
//! queue places chunks in the order they were submitted (so they lie in the shard in the
//! order they were written: C order for the usual loop, and the same bytes run after run),
//! collects them in a staging buffer, and appends the buffer to an [`Upload`] (begun at the
//! first append) whenever it holds [`STAGE_BYTES`]. Memory then holds the staging buffer,
//! the chunks that finished before an earlier one, and the raw chunks in flight — not the
//! encoded shard. The commit appends the index and completes the upload.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use crate::store::{Store, StoreError, Upload};

/// The staging buffer is appended to the upload when it holds this many bytes.
pub(crate) const STAGE_BYTES: usize = 1 << 20;

/// The outcome of one encode task.
#[derive(Debug)]
pub(crate) enum Encoded {
    /// Encoded bytes to store.
    Bytes(Vec<u8>),
    /// The fill value everywhere: nothing to store.
    Empty,
    /// The encode failed (its error is recorded elsewhere).
    Failed,
}

/// Encoded chunks on their way to the upload, in submission order. Kept under the slot
/// table's lock.
#[derive(Debug)]
pub(crate) struct SpillQueue {
    /// The submission number (the slot table's generation) to place next.
    next: u64,
    /// Encodes that finished before an earlier one: generation → (slot, outcome).
    ready: BTreeMap<u64, (usize, Encoded)>,
    ready_bytes: usize,
    /// Placed bytes not yet appended to the upload.
    staging: Vec<u8>,
    /// Bytes placed in all (appended or staged): the offset of the next chunk.
    placed: u64,
}

impl SpillQueue {
    /// A queue whose first submission has generation `first`.
    pub(crate) fn new(first: u64) -> Self {
        Self {
            next: first,
            ready: BTreeMap::new(),
            ready_bytes: 0,
            staging: Vec::new(),
            placed: 0,
        }
    }

    /// Record the outcome of submission `generation` for `slot`; returns, in submission
    /// order, the outcomes that can be placed now.
    pub(crate) fn finished(
        &mut self,
        generation: u64,
        slot: usize,
        outcome: Encoded,
    ) -> Vec<(u64, usize, Encoded)> {
        if let Encoded::Bytes(bytes) = &outcome {
            self.ready_bytes += bytes.len();
        }
        self.ready.insert(generation, (slot, outcome));
        let mut placeable = Vec::new();
        while let Some((slot, outcome)) = self.ready.remove(&self.next) {
            if let Encoded::Bytes(bytes) = &outcome {
                self.ready_bytes -= bytes.len();
            }
            placeable.push((self.next, slot, outcome));
            self.next += 1;
        }
        placeable
    }

    /// Stage `bytes`; returns their offset in the upload.
    pub(crate) fn stage(&mut self, bytes: &[u8]) -> u64 {
        let offset = self.placed;
        self.staging.extend_from_slice(bytes);
        self.placed += bytes.len() as u64;
        offset
    }

    /// Whether the staging buffer should be appended now.
    pub(crate) fn full(&self) -> bool {
        self.staging.len() >= STAGE_BYTES
    }

    /// Bytes held in memory: staged, and finished out of order.
    pub(crate) fn memory(&self) -> usize {
        self.staging.len() + self.ready_bytes
    }

    /// Bytes `offset..offset + len` if they are still staged.
    pub(crate) fn staged(&self, offset: u64, len: u64) -> Option<&[u8]> {
        let start = self.placed - self.staging.len() as u64;
        let from = usize::try_from(offset.checked_sub(start)?).ok()?;
        self.staging
            .get(from..from.checked_add(usize::try_from(len).ok()?)?)
    }

    /// Take the staging buffer, leaving `spare` (an empty buffer to reuse) in its place.
    pub(crate) fn take_staging(&mut self, spare: Vec<u8>) -> Vec<u8> {
        std::mem::replace(&mut self.staging, spare)
    }
}

/// Where staged bytes go: the upload of one shard, begun at the first append.
#[derive(Debug)]
pub(crate) struct Sink {
    store: Arc<dyn Store>,
    key: String,
    state: Mutex<SinkState>,
    /// The first storage failure, readable without the lock (writes check it).
    failure: OnceLock<StoreError>,
}

#[derive(Debug, Default)]
pub(crate) struct SinkState {
    upload: Option<Box<dyn Upload>>,
    failed: Option<StoreError>,
    aborted: bool,
    /// An emptied staging buffer, kept for reuse.
    spare: Vec<u8>,
}

impl Sink {
    pub(crate) fn new(store: Arc<dyn Store>, key: String) -> Self {
        Self {
            store,
            key,
            state: Mutex::new(SinkState::default()),
            failure: OnceLock::new(),
        }
    }

    /// The first storage failure of the upload, if any.
    pub(crate) fn failure(&self) -> Option<StoreError> {
        self.failure.get().cloned()
    }

    /// The key the upload is for.
    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    /// Lock the sink. Lock order: the slot table first, then the sink.
    pub(crate) fn lock(&self) -> MutexGuard<'_, SinkState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Append `data` (under `state`, the sink's lock), beginning the upload first if
    /// needed; a failure (or a panic in the store) is kept for [`SinkState::take`] and
    /// [`failure`](Self::failure). The emptied buffer is kept for reuse.
    pub(crate) fn append(&self, state: &mut SinkState, mut data: Vec<u8>) {
        if !(state.aborted || state.failed.is_some() || data.is_empty()) {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let upload = match &mut state.upload {
                    Some(upload) => upload,
                    None => {
                        state
                            .upload
                            .insert(self.store.begin_upload(&self.key)?.ok_or_else(|| {
                                StoreError::io(&self.key, "the store does not stream")
                            })?)
                    }
                };
                upload.append(&[&data])
            }));
            let failed = match outcome {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e),
                Err(panic) => Some(StoreError::io(
                    &self.key,
                    crate::error::panic_message(&*panic),
                )),
            };
            if let Some(e) = failed {
                let _ = self.failure.set(e.clone());
                state.failed = Some(e);
                state.upload = None; // removes what was written
            }
        }
        data.clear();
        state.spare = data;
    }
}

impl SinkState {
    /// Take the spare buffer.
    pub(crate) fn spare(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.spare)
    }

    /// Read back appended bytes.
    pub(crate) fn read(&mut self, key: &str, offset: u64, len: u64) -> Result<Vec<u8>, StoreError> {
        match self.upload.as_mut() {
            Some(upload) => upload.read(offset..offset + len),
            None => Err(self
                .failed
                .clone()
                .unwrap_or_else(|| StoreError::io(key, "no upload to read from"))),
        }
    }

    /// Take the upload (or the first failure); the sink is closed after.
    pub(crate) fn take(&mut self) -> Result<Option<Box<dyn Upload>>, StoreError> {
        self.aborted = true;
        if let Some(e) = self.failed.take() {
            self.upload = None;
            return Err(e);
        }
        Ok(self.upload.take())
    }

    /// Drop the upload (removing what it wrote) and ignore later appends.
    pub(crate) fn abort(&mut self) {
        self.aborted = true;
        self.upload = None;
    }
}
