//! [`Feed`]: the observer of an image's level 0. It turns each inner chunk a level-0
//! writer is handed into what the level above needs (the chunk downsampled, when inner
//! chunks are multiples of the factors; else the chunk itself), keeps that per writer
//! until the writer's shard is stored, and then hands it to the one-pass driver, which
//! assembles, writes and downsamples the coarser levels as their blocks complete. A
//! writer that goes without storing its shard leaves nothing behind.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use crate::domain::copy::copy_block;
use crate::domain::{Domain, Grid};
use crate::error::{Error, Result};
use crate::pyramid::downsample;
use crate::pyramid::driver::Driver;
use crate::pyramid::PyramidError;
use crate::writer::ShardObserver;
use crate::Array;

/// What a writer was last handed for one inner chunk, by sequence number.
#[derive(Debug)]
enum Seen {
    /// The chunk's payload (see [`Feed::payload`]).
    Data(u64, Vec<u8>),
    /// Every element one value.
    Constant(u64, Vec<u8>),
    /// Changed in a way not reported: read it back once the shard is stored.
    Stale(u64),
}

impl Seen {
    fn seq(&self) -> u64 {
        match self {
            Self::Data(s, _) | Self::Constant(s, _) | Self::Stale(s) => *s,
        }
    }
}

/// The driver and what it has been given, behind one lock.
pub(crate) struct FeedState {
    pub(crate) driver: Driver,
    /// Level-0 inner chunks (linear index) already handed to the driver.
    pub(crate) fed: HashSet<u64>,
    /// Regions of level 0 written again after the levels above were made from them:
    /// their coarser shards are recomputed when the image is finished.
    pub(crate) dirty: Vec<Domain>,
    /// The first error feeding the levels met (the image then cannot finish).
    pub(crate) error: Option<Error>,
    /// Level-0 shards stored through the image.
    pub(crate) shards_done: u64,
}

/// The stored shards' payloads on their way to the feeding thread.
type Job = Vec<(Domain, Vec<u8>)>;

/// The level-0 writers between [`ShardObserver::committing`] and the end of their commit,
/// and whether the image still takes commits.
#[derive(Default)]
struct Gate {
    closed: bool,
    /// Writers past `committing`, with the linear index of their shard.
    passing: HashMap<u64, u64>,
}

/// Where the level-0 shards written again are recorded, durably, before they are stored.
pub(crate) struct Journal {
    pub(crate) store: Arc<dyn crate::store::Store>,
    pub(crate) key: String,
    pub(crate) plan: crate::pyramid::plan::Plan,
    pub(crate) options: crate::pyramid::options::BuildOptions,
    pub(crate) rewritten: BTreeSet<Vec<u64>>,
    /// All of level 0 is recorded as changed (too many shards to list).
    pub(crate) everything: bool,
    /// The record's other members found in the group (level 0's shape and absent shards
    /// when the levels were last made), kept in the pending document for `add_levels`.
    pub(crate) kept: serde_json::Map<String, serde_json::Value>,
}

impl Journal {
    /// Record level-0 shard `index` as written again: the group's `zarr.json` becomes the
    /// pending document (no OME metadata: the levels are not in step until the image is
    /// finished) listing it.
    fn note(&mut self, index: &[u64]) -> Result<()> {
        if self.everything || self.rewritten.contains(index) {
            return Ok(());
        }
        let mut rewritten = self.rewritten.clone();
        rewritten.insert(index.to_vec());
        // Past a thousand shards the list would cost more to rewrite each time than the
        // levels cost to make again: record that all of level 0 changed, once.
        let everything = rewritten.len() > super::record::MAX_REWRITTEN;
        let text = super::record::pending_group(
            &self.plan,
            &self.options,
            &self.kept,
            (!everything).then_some(&rewritten),
        )?;
        self.store.put(&self.key, &[&text])?;
        // only once the put went through: a failed one is tried again by the next commit
        self.rewritten = rewritten;
        self.everything = everything;
        Ok(())
    }
}

/// The observer of an image's level 0 (see the [module docs](self)).
pub(crate) struct Feed {
    /// Level 0, read back for chunks the writers did not report whole.
    level0: Array,
    chunk_grid: Grid,
    factors: Vec<u64>,
    method: downsample::Method,
    data_type: String,
    element: usize,
    /// Inner chunks are multiples of the factors: each downsamples on its own.
    aligned: bool,
    open: Mutex<HashMap<u64, HashMap<u64, Seen>>>,
    pub(crate) state: Mutex<FeedState>,
    /// To the thread that feeds the driver (so a level-0 commit returns without waiting
    /// for the levels above); `None` once the image is closed.
    queue: Mutex<Option<SyncSender<Job>>>,
    worker: Mutex<Option<JoinHandle<()>>>,
    /// The first error of the feeding thread, for the commits that follow it.
    failed: Mutex<Option<Error>>,
    gate: Mutex<Gate>,
    /// Signalled when a writer leaves the gate.
    left: Condvar,
    /// Level-0 shards (linear indices) stored through the image or found stored.
    shards_fed: Mutex<HashSet<u64>>,
    pub(crate) journal: Mutex<Journal>,
    /// The image was finished before (opened again): every level-0 shard stored now
    /// changes levels stored already.
    finished: bool,
}

impl std::fmt::Debug for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Feed({})", self.level0.path())
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Feed {
    /// The feed of `driver`'s levels from `level0` (an array without observer).
    pub(crate) fn new(
        level0: Array,
        driver: Driver,
        fed: HashSet<u64>,
        shards_fed: HashSet<u64>,
        journal: Journal,
        finished: bool,
    ) -> Self {
        let plan = &driver.walk.plan;
        let shape = level0.layout().shape().to_vec();
        let chunks = level0.layout().chunk_shape().to_vec();
        let aligned = chunks
            .iter()
            .zip(&plan.factors)
            .zip(&shape)
            .all(|((c, f), s)| c % f == 0 || c >= s);
        Self {
            chunk_grid: level0.chunk_grid().clone(),
            factors: plan.factors.clone(),
            method: plan.method,
            data_type: driver.data_type.clone(),
            element: driver.element,
            aligned,
            level0,
            open: Mutex::new(HashMap::new()),
            state: Mutex::new(FeedState {
                driver,
                fed,
                dirty: Vec::new(),
                error: None,
                shards_done: 0,
            }),
            queue: Mutex::new(None),
            worker: Mutex::new(None),
            failed: Mutex::new(None),
            gate: Mutex::new(Gate::default()),
            left: Condvar::new(),
            shards_fed: Mutex::new(shards_fed),
            journal: Mutex::new(journal),
            finished,
        }
    }

    /// The first error feeding the levels met, if any.
    pub(crate) fn failure(&self) -> Option<Error> {
        lock(&self.failed).clone()
    }

    /// The level-0 shards (linear indices) stored through the image or found stored.
    pub(crate) fn shards_fed(&self) -> HashSet<u64> {
        lock(&self.shards_fed).clone()
    }

    /// Record an error of a commit whose shard is stored but whose chunks did not reach
    /// the levels: the image cannot finish, and the shard is journaled so that the image
    /// opened again recomputes its levels.
    fn lost(&self, shard: &Domain, error: &Error) {
        lock(&self.failed).get_or_insert_with(|| error.clone());
        if let Some(index) = shard.index() {
            let _ = lock(&self.journal).note(index);
        }
    }

    /// `writer` left the gate (its commit ended, stored or not).
    fn leave(&self, writer: u64) {
        let mut gate = lock(&self.gate);
        if gate.passing.remove(&writer).is_some() {
            self.left.notify_all();
        }
    }

    /// Start the thread that hands stored shards to the driver, one at a time, with at
    /// most two waiting (a commit that would queue a third waits).
    pub(crate) fn start(self: &Arc<Self>) -> Result<()> {
        let (send, receive) = sync_channel::<Job>(2);
        let feed = Arc::clone(self);
        let worker = std::thread::Builder::new()
            .name("shardwright-image-feed".into())
            .spawn(move || {
                for job in receive {
                    let mut state = feed.lock();
                    if state.error.is_some() {
                        continue;
                    }
                    let fed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        job.iter().try_for_each(|(chunk, payload)| {
                            feed.absorb(&mut state, chunk, payload)
                        })
                    }))
                    .unwrap_or_else(|panic| {
                        Err(Error::Internal(crate::error::panic_message(&*panic)))
                    });
                    state.shards_done += 1;
                    if let Err(error) = fed {
                        lock(&feed.failed).get_or_insert_with(|| error.clone());
                        state.error = Some(error);
                    }
                }
            })
            .map_err(|e| Error::Store(crate::store::StoreError::io("(image feed thread)", e)))?;
        *lock(&self.queue) = Some(send);
        *lock(&self.worker) = Some(worker);
        Ok(())
    }

    /// Take no more commits, wait for those started (each ends stored and queued, or not
    /// stored), then until the queued shards are handed to the driver.
    pub(crate) fn stop(&self) {
        let mut gate = lock(&self.gate);
        gate.closed = true;
        while !gate.passing.is_empty() {
            gate = self.left.wait(gate).unwrap_or_else(PoisonError::into_inner);
        }
        drop(gate);
        drop(lock(&self.queue).take());
        let worker = lock(&self.worker).take();
        if let Some(worker) = worker {
            let _ = worker.join();
        }
    }

    /// The state, locked.
    pub(crate) fn lock(&self) -> MutexGuard<'_, FeedState> {
        lock(&self.state)
    }

    /// What the driver takes of `chunk` (clipped to level 0), from `raw` (C order; the full
    /// inner chunk when `padded`, else the clipped chunk): its downsampled values when
    /// chunks are aligned to the factors, else the clipped chunk's elements.
    pub(crate) fn payload(&self, chunk: &Domain, raw: &[u8], padded: bool) -> Result<Vec<u8>> {
        let full = self.level0.layout().chunk_shape();
        let clipped;
        let data: &[u8] = if padded && chunk.shape() != full {
            let mut out = vec![0; chunk.size() as usize * self.element];
            let zero = vec![0; full.len()];
            copy_block(
                raw,
                full,
                &zero,
                &mut out,
                chunk.shape(),
                &zero,
                chunk.shape(),
                self.element,
            );
            clipped = out;
            &clipped
        } else {
            raw
        };
        if !self.aligned {
            return Ok(data.to_vec());
        }
        Ok(downsample::downsample_part(
            data,
            chunk.origin(),
            chunk.shape(),
            self.level0.layout().shape(),
            &self.factors,
            &self.data_type,
            self.method,
        )
        .map_err(PyramidError::from)?)
    }

    /// The payload of `chunk` holding `value` everywhere.
    fn constant_payload(&self, chunk: &Domain, value: &[u8]) -> Result<Vec<u8>> {
        let count = if self.aligned {
            downsample::output_shape(chunk.shape(), &self.factors)
                .iter()
                .product()
        } else {
            chunk.size()
        };
        Ok(crate::buffer::filled(count, value)?)
    }

    fn note(&self, writer: u64, chunk: &Domain, seen: Seen) {
        let Some(index) = chunk.index() else { return };
        let linear = self.chunk_grid.linear_index(index);
        let mut open = lock(&self.open);
        let slots = open.entry(writer).or_default();
        match slots.get(&linear) {
            Some(old) if old.seq() > seen.seq() => {}
            _ => {
                slots.insert(linear, seen);
            }
        }
    }

    /// Hand level-0 chunk `chunk`'s payload to the driver; `state` locked.
    pub(crate) fn absorb(
        &self,
        state: &mut FeedState,
        chunk: &Domain,
        payload: &[u8],
    ) -> Result<()> {
        let index = chunk
            .index()
            .ok_or_else(|| Error::Internal(format!("chunk {chunk} has no grid index")))?;
        let again = !state.fed.insert(self.chunk_grid.linear_index(index));
        if again {
            state.dirty.push(chunk.clone());
        }
        let driver = &mut state.driver;
        // the walk is shared: no copy of the plan per chunk
        let walk = Arc::clone(&driver.walk);
        let plan = &walk.plan;
        let (k, region) = if self.aligned {
            (1, plan.downsampled(chunk))
        } else {
            (0, chunk.clone())
        };
        let Some(level) = plan.levels.get(k) else {
            return Ok(());
        };
        for parent in level.block_grid()?.cells_meeting(&region) {
            if !driver.walk.needed(k, &parent)? {
                // Every shard above it is stored already (a reopened image): they are
                // recomputed when the image is finished.
                if !again {
                    state.dirty.push(chunk.clone());
                }
                continue;
            }
            if again && !driver.assembling(k, &parent)? {
                continue;
            }
            driver.add_piece(k, parent, &region, payload, !again, &mut |_| true)?;
        }
        Ok(())
    }
}

impl Feed {
    /// Queue the payloads of the chunks of `shard`, just stored by `writer`, for the
    /// feeding thread: those `writer` reported whole, the others read back.
    fn feed_stored_shard(&self, writer: u64, shard: &Domain) -> Result<()> {
        let mut seen = lock(&self.open).remove(&writer).unwrap_or_default();
        let mut payloads = Vec::new();
        for chunk in self.chunk_grid.cells_meeting(shard) {
            let index = chunk
                .index()
                .ok_or_else(|| Error::Internal(format!("chunk {chunk} has no grid index")))?;
            let payload = match seen.remove(&self.chunk_grid.linear_index(index)) {
                Some(Seen::Data(_, payload)) => payload,
                Some(Seen::Constant(_, value)) => self.constant_payload(&chunk, &value)?,
                // Not reported whole (written in part, merged with what was stored, or
                // taken over from another writer): the stored chunk is the truth.
                Some(Seen::Stale(_)) | None => {
                    let raw = self.level0.read(&chunk)?;
                    self.payload(&chunk, &raw, false)?
                }
            };
            payloads.push((chunk, payload));
        }
        if let Some(error) = self.failure() {
            return Err(error);
        }
        let queue = lock(&self.queue).clone();
        if queue.is_none_or(|queue| queue.send(payloads).is_err()) {
            return Err(PyramidError::ImageClosed {
                shard: shard.to_string(),
            }
            .into());
        }
        Ok(())
    }
}

impl ShardObserver for Feed {
    fn chunk(&self, writer: u64, chunk: &Domain, seq: u64, raw: &[u8]) {
        let seen = match self.payload(chunk, raw, true) {
            Ok(payload) => Seen::Data(seq, payload),
            Err(_) => Seen::Stale(seq),
        };
        self.note(writer, chunk, seen);
    }

    fn constant(&self, writer: u64, chunk: &Domain, seq: u64, value: &[u8]) {
        self.note(writer, chunk, Seen::Constant(seq, value.to_vec()));
    }

    fn forget(&self, writer: u64, chunk: &Domain, seq: u64) {
        self.note(writer, chunk, Seen::Stale(seq));
    }

    fn committing(&self, writer: u64, shard: &Domain) -> Result<()> {
        let index = shard
            .index()
            .ok_or_else(|| Error::Internal(format!("shard {shard} has no grid index")))?;
        let linear = self.level0.shard_grid().linear_index(index);
        let again = {
            let mut gate = lock(&self.gate);
            if gate.closed {
                return Err(PyramidError::ImageClosed {
                    shard: shard.to_string(),
                }
                .into());
            }
            // stored before, or being stored by another writer now
            let again = gate.passing.values().any(|s| *s == linear)
                || lock(&self.shards_fed).contains(&linear);
            gate.passing.insert(writer, linear);
            again
        };
        // Past the gate (finish waits for this writer) and without holding it: the
        // journal's put may go through a zarr-python store, which takes the GIL, while a
        // thread holding the GIL drops a writer (`aborted` takes the gate).
        if again || self.finished {
            // Written before: the levels made from it must be made again, even if this
            // session stops before the image is finished.
            if let Err(error) = lock(&self.journal).note(index) {
                self.leave(writer);
                return Err(error);
            }
        }
        Ok(())
    }

    fn committed(&self, writer: u64, shard: &Domain) -> Result<()> {
        if let Some(index) = shard.index() {
            lock(&self.shards_fed).insert(self.level0.shard_grid().linear_index(index));
        }
        let fed = self.feed_stored_shard(writer, shard);
        if let Err(error) = &fed {
            self.lost(shard, error);
        }
        self.leave(writer);
        fed
    }

    fn aborted(&self, writer: u64) {
        lock(&self.open).remove(&writer);
        self.leave(writer);
    }
}
