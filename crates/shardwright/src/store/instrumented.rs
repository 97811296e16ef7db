//! A store wrapper that counts calls and bytes.

use std::ops::Range;
use std::sync::{Arc, Mutex};

use super::{Debris, Store, StoreError, Upload, Version};

/// One call seen by an [`InstrumentedStore`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IoEvent {
    /// A whole-value get.
    Get(String),
    /// A ranged get.
    GetRange(String, Range<u64>),
    /// A size query.
    Size(String),
    /// A put of this many bytes.
    Put(String, u64),
    /// A delete.
    Delete(String),
    /// A conditional put of this many bytes (whether it succeeded or conflicted).
    PutIf(String, u64),
    /// A listing of the keys under this prefix (recorded only when the store can list).
    List(String),
}

/// Counts of the calls an [`InstrumentedStore`] has seen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoCounts {
    /// Whole-value gets.
    pub gets: u64,
    /// Ranged gets.
    pub range_gets: u64,
    /// Size queries.
    pub sizes: u64,
    /// Puts.
    pub puts: u64,
    /// Deletes.
    pub deletes: u64,
    /// Bytes returned by gets.
    pub bytes_read: u64,
    /// Bytes stored by puts.
    pub bytes_written: u64,
    /// Conditional puts refused with a conflict (also counted in `puts`).
    pub conflicts: u64,
    /// Listings of a prefix (by a store that can list).
    pub lists: u64,
}

impl IoCounts {
    /// Every call of any kind.
    #[must_use]
    pub fn calls(&self) -> u64 {
        self.gets + self.range_gets + self.sizes + self.puts + self.deletes + self.lists
    }
}

/// Wraps a store and records every call, to check I/O invariants.
///
/// ```
/// use std::sync::Arc;
/// use shardwright::store::{InstrumentedStore, MemoryStore, Store};
/// let store = InstrumentedStore::new(Arc::new(MemoryStore::new()));
/// store.put("k", &[b"abc"]).unwrap();
/// store.get("k").unwrap();
/// let counts = store.counts();
/// assert_eq!((counts.puts, counts.gets, counts.bytes_written), (1, 1, 3));
/// ```
#[derive(Debug)]
pub struct InstrumentedStore {
    inner: Arc<dyn Store>,
    state: Arc<Mutex<State>>,
}

type State = (IoCounts, Vec<IoEvent>);

fn record(state: &Mutex<State>, event: IoEvent, count: impl FnOnce(&mut IoCounts)) {
    let mut state = state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    count(&mut state.0);
    state.1.push(event);
}

/// Count one put of `n` bytes, or one refused with a conflict.
fn count_put(counts: &mut IoCounts, conflict: bool, n: u64) {
    counts.puts += 1;
    if conflict {
        counts.conflicts += 1;
    } else {
        counts.bytes_written += n;
    }
}

/// An upload through an [`InstrumentedStore`]: its completion is counted as one put (or
/// one conditional put) of the whole value, like a `put` of the same bytes.
#[derive(Debug)]
struct InstrumentedUpload {
    inner: Box<dyn Upload>,
    key: String,
    state: Arc<Mutex<State>>,
}

impl Upload for InstrumentedUpload {
    fn append(&mut self, parts: &[&[u8]]) -> Result<(), StoreError> {
        self.inner.append(parts)
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn read(&mut self, range: Range<u64>) -> Result<Vec<u8>, StoreError> {
        self.inner.read(range)
    }

    fn truncate(&mut self, len: u64) -> Result<(), StoreError> {
        self.inner.truncate(len)
    }

    fn completes_conditionally(&self) -> bool {
        self.inner.completes_conditionally()
    }

    fn complete(&mut self, condition: Option<Option<&Version>>) -> Result<(), StoreError> {
        let n = self.inner.len();
        let result = self.inner.complete(condition);
        let conflict = matches!(result, Err(StoreError::Conflict { .. }));
        let key = self.key.clone();
        let event = match condition {
            None => IoEvent::Put(key, n),
            Some(_) => IoEvent::PutIf(key, n),
        };
        if result.is_ok() || conflict {
            record(&self.state, event, |c| count_put(c, conflict, n));
        }
        result
    }
}

impl InstrumentedStore {
    /// Wrap `inner`.
    pub fn new(inner: Arc<dyn Store>) -> Self {
        Self {
            inner,
            state: Arc::new(Mutex::new((IoCounts::default(), Vec::new()))),
        }
    }

    /// The counts so far.
    #[must_use]
    pub fn counts(&self) -> IoCounts {
        self.lock().0
    }

    /// Every call so far, in order.
    #[must_use]
    pub fn events(&self) -> Vec<IoEvent> {
        self.lock().1.clone()
    }

    /// Forget the calls so far.
    pub fn reset(&self) {
        *self.lock() = (IoCounts::default(), Vec::new());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (IoCounts, Vec<IoEvent>)> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn record(&self, event: IoEvent, count: impl FnOnce(&mut IoCounts)) {
        record(&self.state, event, count);
    }
}

impl Store for InstrumentedStore {
    fn begin_upload(&self, key: &str) -> Result<Option<Box<dyn Upload>>, StoreError> {
        Ok(self.inner.begin_upload(key)?.map(|inner| {
            Box::new(InstrumentedUpload {
                inner,
                key: key.to_string(),
                state: Arc::clone(&self.state),
            }) as Box<dyn Upload>
        }))
    }

    fn streams(&self) -> bool {
        self.inner.streams()
    }

    fn deletes_conditionally(&self) -> bool {
        self.inner.deletes_conditionally()
    }

    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let value = self.inner.get(key)?;
        let n = value.as_ref().map_or(0, |v| v.len() as u64);
        self.record(IoEvent::Get(key.into()), |c| {
            c.gets += 1;
            c.bytes_read += n;
        });
        Ok(value)
    }

    fn get_range(&self, key: &str, range: Range<u64>) -> Result<Option<Vec<u8>>, StoreError> {
        let value = self.inner.get_range(key, range.clone())?;
        let n = value.as_ref().map_or(0, |v| v.len() as u64);
        self.record(IoEvent::GetRange(key.into(), range), |c| {
            c.range_gets += 1;
            c.bytes_read += n;
        });
        Ok(value)
    }

    fn size(&self, key: &str) -> Result<Option<u64>, StoreError> {
        self.record(IoEvent::Size(key.into()), |c| c.sizes += 1);
        self.inner.size(key)
    }

    fn put(&self, key: &str, parts: &[&[u8]]) -> Result<(), StoreError> {
        let n: u64 = parts.iter().map(|p| p.len() as u64).sum();
        self.inner.put(key, parts)?;
        self.record(IoEvent::Put(key.into(), n), |c| {
            c.puts += 1;
            c.bytes_written += n;
        });
        Ok(())
    }

    fn get_versioned(&self, key: &str) -> Result<Option<(Vec<u8>, Version)>, StoreError> {
        let value = self.inner.get_versioned(key)?;
        let n = value.as_ref().map_or(0, |(v, _)| v.len() as u64);
        self.record(IoEvent::Get(key.into()), |c| {
            c.gets += 1;
            c.bytes_read += n;
        });
        Ok(value)
    }

    fn put_if(
        &self,
        key: &str,
        parts: &[&[u8]],
        expected: Option<&Version>,
    ) -> Result<(), StoreError> {
        let n: u64 = parts.iter().map(|p| p.len() as u64).sum();
        let result = self.inner.put_if(key, parts, expected);
        let conflict = matches!(result, Err(StoreError::Conflict { .. }));
        self.record(IoEvent::PutIf(key.into(), n), |c| count_put(c, conflict, n));
        result
    }

    fn delete_if(&self, key: &str, expected: Option<&Version>) -> Result<(), StoreError> {
        let result = self.inner.delete_if(key, expected);
        let conflict = matches!(result, Err(StoreError::Conflict { .. }));
        self.record(IoEvent::Delete(key.into()), |c| {
            c.deletes += 1;
            c.conflicts += u64::from(conflict);
        });
        result
    }

    fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.record(IoEvent::Delete(key.into()), |c| c.deletes += 1);
        self.inner.delete(key)
    }

    fn list_prefix(&self, prefix: &str) -> Result<Option<Vec<String>>, StoreError> {
        let keys = self.inner.list_prefix(prefix)?;
        if keys.is_some() {
            self.record(IoEvent::List(prefix.into()), |c| c.lists += 1);
        }
        Ok(keys)
    }

    fn debris(&self, prefix: &str, remove: bool) -> Result<Vec<Debris>, StoreError> {
        self.inner.debris(prefix, remove)
    }
}
