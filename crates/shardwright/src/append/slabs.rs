//! Storing complete slabs in the background and showing them in `zarr.json`.

use super::{set, Appender};
use crate::error::Result;
use crate::writer::{PendingCommit, ShardWriter};

impl Appender {
    /// Commit the open slab in the background, once the one before is stored and shown.
    pub(super) fn store_slab(&mut self) -> Result<()> {
        self.settle(true)?;
        if let Some((index, writers)) = self.slab.take() {
            let end = ((index + 1) * self.shard_len).min(self.length);
            let pending = writers
                .into_iter()
                .map(ShardWriter::commit_background)
                .collect();
            self.storing = Some((pending, end));
        }
        Ok(())
    }

    /// Write the open row's frames and the fill value over the rest of the open slab
    /// (if one is open or frames wait), then commit it.
    pub(super) fn finish_slab(&mut self) -> Result<()> {
        let start = self.row_start();
        let pending_row = self.length > self.from.max(start);
        if !pending_row && self.slab.is_none() {
            return Ok(());
        }
        if pending_row {
            self.put_row(start)?;
        }
        let tail = self.length.div_ceil(self.chunk_len) * self.chunk_len;
        let index = self
            .slab
            .as_ref()
            .map_or(start / self.shard_len, |(i, _)| *i);
        let end = (index + 1) * self.shard_len;
        self.fill(&self.between(tail.max(index * self.shard_len), end))?;
        self.store_slab()
    }

    /// Once the slab being stored is (`wait`: wait for it), show it in `zarr.json`.
    pub(super) fn settle(&mut self, wait: bool) -> Result<()> {
        let ready = self
            .storing
            .as_ref()
            .is_some_and(|(pending, _)| wait || pending.iter().all(PendingCommit::is_finished));
        if !ready {
            return Ok(());
        }
        let Some((pending, end)) = self.storing.take() else {
            return Ok(());
        };
        let mut first = None;
        for commit in pending {
            if let Err(e) = commit.wait() {
                first.get_or_insert(e);
            }
        }
        let stored = match first {
            Some(e) => Err(e),
            None => self.grow(end),
        };
        self.keep(stored)
    }

    /// Show `end` frames along the axis in `zarr.json`, if it shows fewer.
    pub(super) fn grow(&mut self, end: u64) -> Result<()> {
        if end > self.shown {
            let mut shape = self.array.layout().shape().to_vec();
            set(&mut shape, self.axis, end);
            self.array = self.array.resize(shape)?;
            self.shown = end;
        }
        Ok(())
    }
}
