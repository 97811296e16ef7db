//! [`PendingCommit`]: a shard's commit running on a background thread.

use super::{CommitStats, ShardWriter};
use crate::domain::Domain;
use crate::error::{Error, Result};

/// A commit running in the background; see [`ShardWriter::commit_background`].
#[derive(Debug)]
pub struct PendingCommit {
    shard: Domain,
    handle: std::io::Result<std::thread::JoinHandle<Result<CommitStats>>>,
}

impl PendingCommit {
    /// The shard being committed.
    #[must_use]
    pub fn shard(&self) -> &Domain {
        &self.shard
    }

    /// Whether the commit has ended (so [`wait`](Self::wait) returns at once).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use shardwright::{Array, ArraySpec, MemoryStore};
    /// # let array = Array::create(Arc::new(MemoryStore::new()), "", &ArraySpec::new(vec![2], "uint8", vec![2])).unwrap();
    /// let pending = array.shard_writer(&array.shard(&[0]).unwrap()).unwrap().commit_background();
    /// while !pending.is_finished() {
    ///     std::thread::yield_now();
    /// }
    /// assert_eq!(pending.wait().unwrap().puts, 0); // nothing was written
    /// ```
    #[must_use]
    pub fn is_finished(&self) -> bool {
        self.handle
            .as_ref()
            .map_or(true, std::thread::JoinHandle::is_finished)
    }

    /// Wait for the commit and return its outcome.
    ///
    /// # Errors
    /// As [`ShardWriter::commit`]; also a [`crate::store::StoreError`] if no thread could
    /// be started for the commit (nothing was stored then).
    pub fn wait(self) -> Result<CommitStats> {
        let handle = self
            .handle
            .map_err(|e| Error::Store(crate::store::StoreError::io("(commit thread)", e)))?;
        handle.join().unwrap_or_else(|panic| {
            Err(Error::Format(crate::format::FormatError::Codec(
                crate::error::panic_message(&*panic),
            )))
        })
    }
}

impl ShardWriter {
    /// Commit on a background thread and return at once, so the caller can start on the
    /// next shard while this one's last chunks encode and its put runs. Call
    /// [`PendingCommit::wait`] to learn the outcome; the shard is stored only when `wait`
    /// returns `Ok`. Memory then holds two writers' staging buffers (or, for writers that
    /// do not stream, two shards' encoded bytes).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use shardwright::{Array, ArraySpec, MemoryStore};
    /// # let array = Array::create(Arc::new(MemoryStore::new()), "", &ArraySpec::new(vec![4], "uint8", vec![2]).shards(vec![2])).unwrap();
    /// let mut pending = Vec::new();
    /// for shard in array.shards() {
    ///     let writer = array.shard_writer(&shard).unwrap();
    ///     for chunk in writer.inner_chunks() {
    ///         writer.write_chunk(&chunk, &[1, 2]).unwrap();
    ///     }
    ///     pending.push(writer.commit_background());
    /// }
    /// let puts: u64 = pending.into_iter().map(|p| p.wait().unwrap().puts).sum();
    /// assert_eq!(puts, 2);
    /// ```
    #[must_use = "the commit's outcome is only known through wait()"]
    pub fn commit_background(self) -> PendingCommit {
        let shard = self.shard.clone();
        let handle = std::thread::Builder::new()
            .name("shardwright-commit".into())
            .spawn(move || self.commit());
        PendingCommit { shard, handle }
    }
}
