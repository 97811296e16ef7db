//! Counting the bytes shard writers hold, as they change, into a total shared by many
//! writers (a transaction's memory limit reads it in O(1) instead of summing its writers).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// The bytes held by the writers attached to it, kept up to date by each change.
#[derive(Debug, Default)]
pub(crate) struct Meter(AtomicU64);

impl Meter {
    /// The bytes held now.
    pub(crate) fn total(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}

/// One writer's bytes (encoded chunks, raw chunks in flight, partly written chunks), and
/// the meter they are counted into, if any. Changes and attaching happen under one lock,
/// so a change is counted into the meter exactly once, whether it comes before or after
/// the writer is attached.
#[derive(Debug, Default)]
pub(crate) struct Share(Mutex<(u64, Option<Arc<Meter>>)>);

impl Share {
    fn lock(&self) -> MutexGuard<'_, (u64, Option<Arc<Meter>>)> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Count `n` more bytes held.
    pub(crate) fn add(&self, n: usize) {
        let n = n as u64;
        let mut share = self.lock();
        share.0 += n;
        if let Some(meter) = &share.1 {
            meter.0.fetch_add(n, Ordering::AcqRel);
        }
    }

    /// Count `n` bytes fewer held.
    pub(crate) fn sub(&self, n: usize) {
        let mut share = self.lock();
        // Never more than this writer counted: an accounting slip must not wrap the
        // transaction's total (every later write would then be refused as too large).
        let n = (n as u64).min(share.0);
        share.0 -= n;
        if let Some(meter) = &share.1 {
            meter.0.fetch_sub(n, Ordering::AcqRel);
        }
    }

    /// Count the change from `before` bytes held to `after`.
    pub(crate) fn change(&self, before: usize, after: usize) {
        match after.cmp(&before) {
            std::cmp::Ordering::Greater => self.add(after - before),
            std::cmp::Ordering::Less => self.sub(before - after),
            std::cmp::Ordering::Equal => {}
        }
    }

    /// Count this writer's bytes into `meter` from now on (and those it holds now),
    /// leaving a meter it was counted into before.
    pub(crate) fn attach(&self, meter: &Arc<Meter>) {
        let mut share = self.lock();
        if let Some(old) = share.1.take() {
            old.0.fetch_sub(share.0, Ordering::AcqRel);
        }
        meter.0.fetch_add(share.0, Ordering::AcqRel);
        share.1 = Some(Arc::clone(meter));
    }

    /// Take this writer's bytes out of its meter (it was committed or dropped); later
    /// changes (encodes still finishing) are not counted there.
    pub(crate) fn detach(&self) {
        let mut share = self.lock();
        if let Some(meter) = share.1.take() {
            meter.0.fetch_sub(share.0, Ordering::AcqRel);
        }
    }
}
