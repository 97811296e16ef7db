//! [`Transaction`]: writes of arbitrary regions across many shards, staged as encoded
//! chunks, read back with the staged data on top, and committed shard by shard in
//! parallel — each shard stored once.
//!
//! The commit is atomic per shard, not across shards: a reader may see some shards new and
//! others old while it runs. With `early_commit`, a shard is committed as soon as every
//! inner chunk of it has been written whole, so a transaction that streams through an array
//! runs in bounded memory; those shards stay stored even if the transaction later aborts.
//!
//! ```
//! use std::sync::Arc;
//! use shardwright::{Array, ArraySpec, Domain, MemoryStore, Transaction, TransactionOptions};
//!
//! let spec = ArraySpec::new(vec![8, 8], "uint8", vec![2, 2]).shards(vec![4, 4]);
//! let array = Array::create(Arc::new(MemoryStore::new()), "", &spec).unwrap();
//! let tx = Transaction::new(array.clone(), TransactionOptions::default());
//! let region = Domain::new(vec![3, 3], vec![2, 2]); // touches four shards
//! tx.write(&region, &[1, 2, 3, 4]).unwrap();
//! assert_eq!(tx.read(&region).unwrap(), vec![1, 2, 3, 4]); // read-your-writes
//! assert_eq!(array.read(&region).unwrap(), vec![0; 4]);    // nothing stored yet
//! let stats = tx.commit().unwrap();
//! assert_eq!((stats.shards_written, stats.commit.puts), (4, 4));
//! assert_eq!(array.read(&region).unwrap(), vec![1, 2, 3, 4]);
//! ```

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::array::Array;
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::writer::{CommitStats, Meter, ShardWriter, WriterOptions};

/// An error for a broken internal invariant (a bug), never a panic.
fn internal(what: &str) -> Error {
    Error::Internal(format!("transaction: {what}"))
}

/// The grid index of `shard`, a cell of the shard grid (which carries its index).
fn cell_index(shard: &Domain) -> Result<Vec<u64>> {
    shard
        .index()
        .map(<[u64]>::to_vec)
        .ok_or_else(|| internal("a shard without its grid index"))
}

/// Options of a [`Transaction`].
///
/// ```
/// let options = shardwright::TransactionOptions::default().memory_limit(64 << 20).early_commit(true);
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Default)]
pub struct TransactionOptions {
    memory_limit: Option<u64>,
    early_commit: bool,
    writer: WriterOptions,
}

impl TransactionOptions {
    /// Fail a write (with [`Error::TooLarge`]) when the staged bytes — encoded chunks, raw
    /// chunks in flight and partly written chunks — would pass `bytes`.
    #[must_use]
    pub fn memory_limit(mut self, bytes: u64) -> Self {
        self.memory_limit = Some(bytes);
        self
    }

    /// Commit each shard as soon as all its inner chunks are written whole.
    #[must_use]
    pub fn early_commit(mut self, yes: bool) -> Self {
        self.early_commit = yes;
        self
    }

    /// Options of the shard writers (retries, corrupt shards, encode pool).
    #[must_use]
    pub fn writer(mut self, options: WriterOptions) -> Self {
        self.writer = options;
        self
    }
}

/// What a transaction's commit did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TransactionStats {
    /// Shards stored (or deleted), early commits included.
    pub shards_written: u64,
    /// Of those, shards committed early.
    pub shards_committed_early: u64,
    /// The shards' commit statistics, summed.
    pub commit: CommitStats,
}

#[derive(Debug, Default)]
struct State {
    writers: BTreeMap<Vec<u64>, ShardWriter>,
    stats: TransactionStats,
    failed: Option<Error>,
}

/// Many shard writers behind one region-writing interface. See the [module docs](self).
#[derive(Debug)]
pub struct Transaction {
    array: Array,
    options: TransactionOptions,
    state: Mutex<State>,
    /// The bytes the writers in `state` hold, kept up to date by the writers themselves
    /// as they change (writes, encodes finishing, commits, drops), so the memory limit is
    /// checked in O(1) per write however many shards are touched.
    meter: Arc<Meter>,
}

impl Transaction {
    /// A transaction over `array`; nothing is read or stored until a write needs it.
    #[must_use]
    pub fn new(array: Array, options: TransactionOptions) -> Self {
        // Writers keep their encoded chunks in memory (counted by the memory limit) rather
        // than streaming them: a transaction holds many shards open at once, and a stream
        // per shard would hold a file (or multipart upload) per shard.
        let array = array.with_options(options.writer.clone().stream(false));
        Self {
            array,
            options,
            state: Mutex::new(State::default()),
            meter: Arc::new(Meter::default()),
        }
    }

    /// The array written.
    #[must_use]
    pub fn array(&self) -> &Array {
        &self.array
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stage `data` (raw elements of `region`, C order, native endian) for every shard
    /// `region` meets.
    ///
    /// # Errors
    /// [`Error::Domain`] for a region outside the array, [`Error::DataLength`] for data of
    /// the wrong size, [`Error::TooLarge`] past the memory limit (the transaction is then
    /// failed: it can only be dropped), errors of early commits.
    pub fn write(&self, region: &Domain, data: &[u8]) -> Result<()> {
        self.write_with(region, data.len(), |writer, piece| {
            writer.write_region_of(piece, data, region)
        })
    }

    /// Stage `value` (one element's bytes) over every element of `region`.
    ///
    /// # Errors
    /// As [`write`](Self::write).
    pub fn write_value(&self, region: &Domain, value: &[u8]) -> Result<()> {
        let expected = region.size() as usize * self.array.layout().element_size();
        if value.len() != self.array.layout().element_size() {
            return Err(Error::DataLength {
                region: Box::new(region.clone()),
                shape: vec![],
                expected: self.array.layout().element_size(),
                got: value.len(),
            });
        }
        self.write_with(region, expected, |writer, piece| {
            writer.write_region_value(piece, value)
        })
    }

    fn write_with(
        &self,
        region: &Domain,
        data_len: usize,
        mut write: impl FnMut(&ShardWriter, &Domain) -> Result<()>,
    ) -> Result<()> {
        region.check_inside(&self.array.bounds())?;
        let expected = region.size() as usize * self.array.layout().element_size();
        if data_len != expected {
            return Err(Error::DataLength {
                region: Box::new(region.clone()),
                shape: region.shape().to_vec(),
                expected,
                got: data_len,
            });
        }
        let mut state = self.lock();
        if let Some(err) = &state.failed {
            return Err(err.clone());
        }
        let mut complete = Vec::new();
        for shard in self.array.shards_meeting(region) {
            let piece = shard
                .intersect(region)
                .ok_or_else(|| internal("a shard meeting the region does not meet it"))?;
            let index = cell_index(&shard)?;
            let writer = match state.writers.entry(index.clone()) {
                std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::btree_map::Entry::Vacant(e) => {
                    let writer = self.array.shard_writer(&shard)?;
                    writer.attach(&self.meter);
                    e.insert(writer)
                }
            };
            write(writer, &piece)?;
            if self.options.early_commit && writer.is_complete() {
                complete.push(index);
            }
        }
        for index in complete {
            if let Some(writer) = state.writers.remove(&index) {
                Self::commit_early(&mut state, writer)?;
            }
        }
        self.check_memory_limit(&mut state)
    }

    /// Fail the transaction (for good) if what it stages is past its memory limit.
    fn check_memory_limit(&self, state: &mut State) -> Result<()> {
        self.check_memory_limit_with(state, 0)
    }

    /// Fail the transaction (for good) if what it stages plus `extra` bytes is past its
    /// memory limit.
    fn check_memory_limit_with(&self, state: &mut State, extra: u64) -> Result<()> {
        let Some(limit) = self.options.memory_limit else {
            return Ok(());
        };
        let staged = extra + self.meter.total();
        if staged > limit {
            let err = Error::TooLarge {
                needed: staged,
                limit,
            };
            state.failed = Some(err.clone());
            return Err(err);
        }
        Ok(())
    }

    /// The bytes staged now: encoded chunks, raw chunks in flight, partly written chunks.
    #[must_use]
    pub fn staged_memory(&self) -> u64 {
        self.meter.total()
    }

    /// Read `region`: the stored data with the staged data on top.
    ///
    /// # Errors
    /// As [`Array::read`].
    pub fn read(&self, region: &Domain) -> Result<Vec<u8>> {
        let mut out = self.array.read(region)?;
        let state = self.lock();
        for shard in self.array.shards_meeting(region) {
            if let Some(writer) = state.writers.get(cell_index(&shard)?.as_slice()) {
                writer.overlay_staged(region, &mut out)?;
            }
        }
        Ok(out)
    }

    /// A separate writer of one shard whose staged data can be merged into this
    /// transaction with [`absorb`](Self::absorb) (or dropped).
    ///
    /// # Errors
    /// As [`Array::shard_writer`].
    pub fn shard_writer(&self, shard: &Domain) -> Result<ShardWriter> {
        self.array.shard_writer(shard)
    }

    /// Check the memory limit with what `writer` (from [`shard_writer`](Self::shard_writer),
    /// not absorbed yet) holds counted in: past the limit, the transaction fails for good,
    /// as if the writer's data had been written to it. Call it after writes to the writer.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use shardwright::{Array, ArraySpec, MemoryStore, Transaction, TransactionOptions};
    /// let spec = ArraySpec::new(vec![64], "uint8", vec![8]).shards(vec![64]);
    /// let array = Array::create(Arc::new(MemoryStore::new()), "", &spec).unwrap();
    /// let tx = Transaction::new(array.clone(), TransactionOptions::default().memory_limit(4));
    /// let writer = tx.shard_writer(&array.shard(&[0]).unwrap()).unwrap();
    /// let chunk = writer.inner_chunks().next().unwrap();
    /// writer.write_chunk(&chunk, &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
    /// assert!(tx.check_writer(&writer).is_err());
    /// assert!(tx.commit().is_err()); // the transaction failed for good
    /// ```
    ///
    /// # Errors
    /// [`Error::TooLarge`] past the memory limit (or the error the transaction failed with).
    pub fn check_writer(&self, writer: &ShardWriter) -> Result<()> {
        let mut state = self.lock();
        if let Some(err) = &state.failed {
            return Err(err.clone());
        }
        self.check_memory_limit_with(&mut state, writer.staged_memory() as u64)
    }

    /// Merge what `writer` (from [`shard_writer`](Self::shard_writer)) staged into the
    /// transaction. No I/O. The memory limit counts it as any other write: past the limit,
    /// the transaction fails for good.
    ///
    /// # Errors
    /// As [`ShardWriter::absorb`]; [`Error::TooLarge`] past the memory limit.
    pub fn absorb(&self, writer: ShardWriter) -> Result<()> {
        let index = cell_index(writer.shard())?;
        let mut state = self.lock();
        if let Some(err) = &state.failed {
            return Err(err.clone());
        }
        let complete = match state.writers.entry(index.clone()) {
            std::collections::btree_map::Entry::Occupied(e) => {
                let existing = e.into_mut();
                existing.absorb(writer)?;
                existing.is_complete()
            }
            std::collections::btree_map::Entry::Vacant(e) => {
                writer.attach(&self.meter);
                e.insert(writer).is_complete()
            }
        };
        if self.options.early_commit && complete {
            if let Some(writer) = state.writers.remove(&index) {
                Self::commit_early(&mut state, writer)?;
            }
        }
        self.check_memory_limit(&mut state)
    }

    /// Commit one complete shard now. If that fails, its staged data is gone, so the
    /// transaction fails for good: a later commit must not report success without it.
    fn commit_early(state: &mut State, writer: ShardWriter) -> Result<()> {
        match writer.commit() {
            Ok(stats) => {
                state.stats.shards_written += 1;
                state.stats.shards_committed_early += 1;
                state.stats.commit += stats;
                Ok(())
            }
            Err(err) => {
                state.failed = Some(err.clone());
                Err(err)
            }
        }
    }

    /// Store every touched shard, several at once (each once, atomically).
    ///
    /// # Errors
    /// The first error of a shard's commit; other shards may have been stored.
    pub fn commit(self) -> Result<TransactionStats> {
        let state = self
            .state
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(err) = state.failed {
            return Err(err);
        }
        let mut stats = state.stats;
        let queue = Mutex::new(state.writers.into_values().collect::<Vec<_>>());
        let results = Mutex::new(Vec::new());
        // Commits wait for encode tasks on the rayon pool, so they run on their own threads.
        let threads = rayon::current_num_threads().clamp(1, 8);
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| loop {
                    let next = queue.lock().unwrap_or_else(PoisonError::into_inner).pop();
                    let Some(writer) = next else { break };
                    let result = writer.commit();
                    results
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(result);
                });
            }
        });
        for result in results.into_inner().unwrap_or_else(PoisonError::into_inner) {
            stats.commit += result?;
            stats.shards_written += 1;
        }
        Ok(stats)
    }

    /// Drop every staged write; nothing more is stored.
    pub fn abort(self) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ArraySpec, MemoryStore};

    /// The meter against the sum it replaces, once every encode is placed.
    fn recomputed(tx: &Transaction) -> (u64, u64) {
        let state = tx.lock();
        for writer in state.writers.values() {
            writer.wait_placed();
        }
        let sum = state
            .writers
            .values()
            .map(|w| w.staged_memory() as u64)
            .sum();
        (tx.meter.total(), sum)
    }

    /// A small deterministic generator (xorshift).
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
        fn region(&mut self, size: u64) -> Domain {
            let (y, x) = (self.below(size), self.below(size));
            let (h, w) = (1 + self.below(size - y), 1 + self.below(size - x));
            Domain::new(vec![y, x], vec![h.min(24), w.min(24)])
        }
    }

    #[test]
    fn the_staged_total_stays_exact_across_writes_commits_and_aborts() {
        let spec = ArraySpec::new(vec![64, 64], "uint16", vec![8, 8]).shards(vec![16, 16]);
        let array = Array::create(Arc::new(MemoryStore::new()), "", &spec).unwrap();
        for early in [false, true] {
            let mut rng = Rng(0x2545_F491_4F6C_DD1D ^ u64::from(early));
            let options = TransactionOptions::default()
                .memory_limit(u64::MAX)
                .early_commit(early);
            let tx = Transaction::new(array.clone(), options);
            for step in 0..200 {
                let region = rng.region(64);
                let data: Vec<u8> = (0..region.size() * 2)
                    .map(|i| (i * 7 + step) as u8)
                    .collect();
                match rng.below(4) {
                    0 => tx.write_value(&region, &[step as u8, 1]).unwrap(),
                    1 => {
                        // A separate writer absorbed (into a touched shard or a new one).
                        let shard = array.shards_meeting(&region).next().unwrap();
                        let piece = shard.intersect(&region).unwrap();
                        let w = tx.shard_writer(&shard).unwrap();
                        let bytes: Vec<u8> = vec![step as u8; piece.size() as usize * 2];
                        w.write_region(&piece, &bytes).unwrap();
                        tx.absorb(w).unwrap();
                    }
                    2 => {
                        // A separate writer dropped (aborted) without being absorbed.
                        let w = tx
                            .shard_writer(&array.shards_meeting(&region).next().unwrap())
                            .unwrap();
                        let chunk = w.inner_chunks().next().unwrap();
                        w.write_chunk(&chunk, &vec![3; chunk.size() as usize * 2])
                            .unwrap();
                        drop(w);
                    }
                    _ => tx.write(&region, &data).unwrap(),
                }
                let (meter, sum) = recomputed(&tx);
                assert_eq!(meter, sum, "step {step} (early commit {early})");
            }
            // Whole shards written at once: committed early when asked, leaving the total.
            tx.write(&array.bounds(), &vec![5; 64 * 64 * 2]).unwrap();
            let (meter, sum) = recomputed(&tx);
            assert_eq!(meter, sum);
            if early {
                assert_eq!(meter, 0);
            }
            // Concurrent writers of one transaction.
            std::thread::scope(|scope| {
                for t in 0..4u64 {
                    let tx = &tx;
                    scope.spawn(move || {
                        let mut rng = Rng(0x9E37_79B9 + t);
                        for _ in 0..50 {
                            let region = rng.region(64);
                            tx.write(&region, &vec![t as u8; region.size() as usize * 2])
                                .unwrap();
                        }
                    });
                }
            });
            let (meter, sum) = recomputed(&tx);
            assert_eq!(meter, sum);
            tx.commit().unwrap();
        }
    }
}
