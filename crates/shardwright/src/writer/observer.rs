//! [`ShardObserver`]: what a layer above learns of the data a shard writer stores, to
//! derive other data from it as it is written (an image's coarser levels from its level-0
//! shards) without reading it back.

use crate::domain::Domain;
use crate::error::Result;

/// Sees the inner chunks written to shard writers and whether each writer's shard was
/// stored. Set on an array with [`Array::observed_by`](crate::Array::observed_by); every
/// writer of that array reports to it under an id of its own ([`ShardWriter::id`](super::ShardWriter::id)).
///
/// Calls for one writer carry a sequence number that orders the writes of one chunk: a
/// chunk written twice is reported twice, the later write with the larger number, and
/// the reports may arrive in either order (whole chunks are reported from the encode
/// threads). Parts of chunks written in part, and chunks a transaction's writers handed
/// over, are not reported: they are [`forgotten`](Self::forget), and the observer reads
/// them back once the shard is stored if it needs them.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use shardwright::{Array, ArraySpec, Domain, MemoryStore, ShardObserver};
///
/// #[derive(Debug, Default)]
/// struct Sums(Mutex<Vec<(u64, u64)>>);
/// impl ShardObserver for Sums {
///     fn chunk(&self, _writer: u64, _chunk: &Domain, _seq: u64, raw: &[u8]) {
///         let sum = raw.iter().map(|b| u64::from(*b)).sum();
///         self.0.lock().unwrap().push((0, sum));
///     }
///     fn constant(&self, _writer: u64, _chunk: &Domain, _seq: u64, _value: &[u8]) {}
///     fn forget(&self, _writer: u64, _chunk: &Domain, _seq: u64) {}
///     fn committed(&self, _writer: u64, _shard: &Domain) -> shardwright::Result<()> {
///         self.0.lock().unwrap().push((1, 0));
///         Ok(())
///     }
///     fn aborted(&self, _writer: u64) {}
/// }
///
/// let sums = Arc::new(Sums::default());
/// let spec = ArraySpec::new(vec![4], "uint8", vec![2]).shards(vec![4]);
/// let array = Array::create(Arc::new(MemoryStore::new()), "", &spec).unwrap()
///     .observed_by(sums.clone());
/// let writer = array.shard_writer(&array.shard(&[0]).unwrap()).unwrap();
/// writer.write_chunk(&Domain::new(vec![0], vec![2]), &[1, 2]).unwrap();
/// writer.write_chunk(&Domain::new(vec![2], vec![2]), &[3, 4]).unwrap();
/// writer.commit().unwrap();
/// let mut seen = sums.0.lock().unwrap().clone();
/// seen.sort();
/// assert_eq!(seen, vec![(0, 3), (0, 7), (1, 0)]);
/// ```
pub trait ShardObserver: Send + Sync + std::fmt::Debug {
    /// Writer `writer` was handed the whole inner chunk `chunk` (clipped to the array):
    /// `raw` is the full inner chunk, C order, padded with the fill value past the array's
    /// edge. Called on an encode thread, before the chunk is encoded.
    fn chunk(&self, writer: u64, chunk: &Domain, seq: u64, raw: &[u8]);

    /// Writer `writer` set every element of `chunk` to `value` (one element's bytes).
    fn constant(&self, writer: u64, chunk: &Domain, seq: u64, value: &[u8]);

    /// What writer `writer` holds for `chunk` changed in a way not reported (a part of it
    /// written, or another writer's data taken over): what was reported before is stale.
    fn forget(&self, writer: u64, chunk: &Domain, seq: u64);

    /// Writer `writer` is about to store its shard `shard` (its chunks are encoded; the
    /// put comes next). An error here stops the commit: nothing is stored. The default
    /// does nothing.
    ///
    /// # Errors
    /// Whatever the observer refuses the commit with.
    fn committing(&self, writer: u64, shard: &Domain) -> Result<()> {
        let _ = (writer, shard);
        Ok(())
    }

    /// Writer `writer`'s shard `shard` was stored (or deleted, every chunk empty). Runs on
    /// the committing thread after the store's put; an error here is the commit's error,
    /// although the shard is stored.
    ///
    /// # Errors
    /// Whatever the observer fails with.
    fn committed(&self, writer: u64, shard: &Domain) -> Result<()>;

    /// Writer `writer` went without storing anything (dropped, aborted, or its commit
    /// failed): what it reported is void.
    fn aborted(&self, writer: u64);
}

impl super::ShardWriter {
    /// The next sequence number of a report to the observer.
    pub(super) fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// What the encode task of `slot`'s chunk reports to the observer, if there is one.
    pub(super) fn report_for(&self, slot: usize) -> crate::error::Result<Option<Report>> {
        match &self.options.observer {
            Some(observer) => Ok(Some(Report {
                observer: std::sync::Arc::clone(observer),
                writer: self.id,
                chunk: self.chunk_of_slot(slot)?,
                seq: self.next_seq(),
            })),
            None => Ok(None),
        }
    }

    /// Tell the observer, if any, that `slot` holds `value` everywhere (`None`: what it
    /// was told of the slot is stale). Call with the partial chunks locked, so that the
    /// sequence numbers follow the order of the writes.
    pub(super) fn observe_slot(
        &self,
        slot: usize,
        value: Option<&[u8]>,
    ) -> crate::error::Result<()> {
        if let Some(observer) = &self.options.observer {
            let chunk = self.chunk_of_slot(slot)?;
            match value {
                Some(value) => observer.constant(self.id, &chunk, self.next_seq(), value),
                None => observer.forget(self.id, &chunk, self.next_seq()),
            }
        }
        Ok(())
    }

    /// The inner chunk in `slot` of the shard, clipped to the array, with its grid index.
    fn chunk_of_slot(&self, slot: usize) -> crate::error::Result<Domain> {
        let shard_index = self.shard.index().ok_or_else(|| {
            crate::Error::Internal(format!("shard {} has no grid index", self.shard))
        })?;
        let per = self.layout.chunks_per_shard();
        let mut rest = slot as u64;
        let mut index = vec![0; per.len()];
        for ((i, p), s) in index.iter_mut().zip(per).zip(shard_index).rev() {
            *i = s * p + rest % p;
            rest /= p;
        }
        Ok(self.chunk_grid.cell(&index)?)
    }
}

/// What a writer needs to report a whole chunk from its encode task.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    pub(crate) observer: std::sync::Arc<dyn ShardObserver>,
    pub(crate) writer: u64,
    pub(crate) chunk: Domain,
    pub(crate) seq: u64,
}

impl Report {
    /// Report `raw` (the chunk's full raw bytes).
    pub(crate) fn send(&self, raw: &[u8]) {
        self.observer.chunk(self.writer, &self.chunk, self.seq, raw);
    }
}
