//! [`WriterOptions`]: how a shard writer encodes, merges and stores.

use std::sync::Arc;

use rayon::ThreadPool;

/// The default number of times a conflicting merge is retried.
pub const DEFAULT_RETRIES: u32 = 10;

/// Options of a [`ShardWriter`].
///
/// ```
/// let options = shardwright::WriterOptions::default().max_in_flight(8);
/// assert_eq!(options.max_in_flight_or_default(), 8);
/// ```
#[derive(Debug, Clone)]
pub struct WriterOptions {
    pub(super) max_in_flight: Option<usize>,
    pub(super) pool: Option<Arc<ThreadPool>>,
    pub(super) retries: u32,
    pub(super) overwrite_corrupt: bool,
    pub(super) stream: bool,
    /// Set by [`Array::observed_by`](crate::Array::observed_by), not by callers.
    pub(crate) observer: Option<Arc<dyn super::ShardObserver>>,
}

impl Default for WriterOptions {
    fn default() -> Self {
        Self {
            max_in_flight: None,
            pool: None,
            retries: DEFAULT_RETRIES,
            overwrite_corrupt: false,
            stream: true,
            observer: None,
        }
    }
}

impl WriterOptions {
    /// Stream encoded chunks to storage as they finish (default `true`), when the store
    /// streams ([`Store::streams`](crate::store::Store::streams)) and the shard index lies
    /// at the end: memory then holds a 1 MiB staging buffer per writer and at most
    /// `max_in_flight` chunks instead of the encoded shard, and most of the writing
    /// overlaps encoding. Nothing is visible under the shard's key before the commit; a
    /// filesystem store writes a hidden temporary file meanwhile (one open file per writer
    /// that has staged a megabyte), removed on abort. A chunk written twice leaves dead
    /// bytes that the commit compacts away by copying the live chunks to a new upload.
    /// With `false`, encoded chunks stay in memory until the commit's single put.
    #[must_use]
    pub fn stream(mut self, yes: bool) -> Self {
        self.stream = yes;
        self
    }

    /// How many times a commit that merged with stored data re-reads, re-merges and
    /// retries when another writer changed the shard meanwhile (default 10).
    #[must_use]
    pub fn retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// Rewrite a stored shard that is corrupt (bad index checksum, entries outside the
    /// shard, a partly rewritten inner chunk that does not decode) from the staged data and
    /// the fill value, instead of failing. Untouched inner chunks are copied as bytes, not
    /// decoded: corruption inside them is detected only where the inner codec chain ends
    /// with `crc32c` (such a chunk is then dropped, i.e. becomes the fill value).
    #[must_use]
    pub fn overwrite_corrupt(mut self, yes: bool) -> Self {
        self.overwrite_corrupt = yes;
        self
    }

    /// At most this many raw chunks wait for or undergo encoding at once (default: twice
    /// the pool's threads). A write beyond it waits.
    #[must_use]
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = Some(n.max(1));
        self
    }

    /// Encode on this pool instead of rayon's global pool (sized to the machine).
    #[must_use]
    pub fn pool(mut self, pool: Arc<ThreadPool>) -> Self {
        self.pool = Some(pool);
        self
    }

    /// The bound on raw chunks in flight that a writer with these options uses.
    #[must_use]
    pub fn max_in_flight_or_default(&self) -> usize {
        self.max_in_flight.unwrap_or_else(|| {
            2 * self
                .pool
                .as_ref()
                .map_or_else(rayon::current_num_threads, |p| p.current_num_threads())
        })
    }
}
