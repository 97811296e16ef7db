//! An in-memory store.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::{check_key, check_range, Store, StoreError, Upload, Version};

/// A store that keeps values in memory, for tests and scratch arrays.
///
/// ```
/// use shardwright::store::{MemoryStore, Store};
/// let store = MemoryStore::new();
/// store.put("k", &[b"v"]).unwrap();
/// assert_eq!(store.keys(), vec!["k".to_string()]);
/// ```
#[derive(Debug, Default)]
pub struct MemoryStore {
    values: Arc<Mutex<Values>>,
}

type Values = BTreeMap<String, (Vec<u8>, u64)>;

fn lock(values: &Mutex<Values>) -> MutexGuard<'_, Values> {
    values.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Put `value` at `key` if the version there is `expected` (or in any case, with `None`).
fn store_if(
    values: &Mutex<Values>,
    key: &str,
    value: Vec<u8>,
    condition: Option<Option<&Version>>,
) -> Result<(), StoreError> {
    let mut values = lock(values);
    if let Some(expected) = condition {
        let current = values.get(key).map(|(_, n)| Version::new(n.to_string()));
        if current.as_ref() != expected {
            return Err(StoreError::Conflict {
                key: key.to_string(),
            });
        }
    }
    values.insert(key.to_string(), (value, next_version()));
    Ok(())
}

/// Bytes `range` of `value` (at `key`), copied; a [`StoreError::Range`] outside it.
fn slice(key: &str, value: &[u8], range: &Range<u64>) -> Result<Vec<u8>, StoreError> {
    let (start, end) = (
        usize::try_from(range.start).ok(),
        usize::try_from(range.end).ok(),
    );
    start
        .zip(end)
        .and_then(|(s, e)| value.get(s..e))
        .map(<[u8]>::to_vec)
        .ok_or_else(|| StoreError::Range {
            key: key.to_string(),
            start: range.start,
            end: range.end,
            size: value.len() as u64,
        })
}

/// A streaming upload into a [`MemoryStore`]: a buffer moved in at completion.
#[derive(Debug)]
struct MemoryUpload {
    values: Arc<Mutex<Values>>,
    key: String,
    buffer: Vec<u8>,
    done: bool,
}

impl Upload for MemoryUpload {
    fn append(&mut self, parts: &[&[u8]]) -> Result<(), StoreError> {
        self.check_open()?;
        for part in parts {
            self.buffer.extend_from_slice(part);
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        self.buffer.len() as u64
    }

    fn read(&mut self, range: Range<u64>) -> Result<Vec<u8>, StoreError> {
        check_range(&self.key, &range, self.len())?;
        slice(&self.key, &self.buffer, &range)
    }

    fn truncate(&mut self, len: u64) -> Result<(), StoreError> {
        self.check_open()?;
        self.buffer.truncate(len as usize);
        Ok(())
    }

    fn complete(&mut self, condition: Option<Option<&Version>>) -> Result<(), StoreError> {
        self.check_open()?;
        store_if(&self.values, &self.key, self.buffer.clone(), condition)?;
        self.done = true;
        self.buffer = Vec::new();
        Ok(())
    }
}

impl MemoryUpload {
    fn check_open(&self) -> Result<(), StoreError> {
        if self.done {
            return Err(StoreError::io(&self.key, "the upload is already complete"));
        }
        Ok(())
    }
}

static NEXT_VERSION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn next_version() -> u64 {
    NEXT_VERSION.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl MemoryStore {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Every key, sorted.
    #[must_use]
    pub fn keys(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    fn lock(&self) -> MutexGuard<'_, Values> {
        lock(&self.values)
    }
}

impl Store for MemoryStore {
    fn list_prefix(&self, prefix: &str) -> Result<Option<Vec<String>>, StoreError> {
        let values = self.lock();
        Ok(Some(
            values
                .keys()
                .filter(|k| super::is_under(prefix, k))
                .cloned()
                .collect(),
        ))
    }

    fn begin_upload(&self, key: &str) -> Result<Option<Box<dyn Upload>>, StoreError> {
        check_key(key)?;
        Ok(Some(Box::new(MemoryUpload {
            values: Arc::clone(&self.values),
            key: key.to_string(),
            buffer: Vec::new(),
            done: false,
        })))
    }

    fn streams(&self) -> bool {
        true
    }

    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        check_key(key)?;
        Ok(self.lock().get(key).map(|(v, _)| v.clone()))
    }

    fn get_versioned(&self, key: &str) -> Result<Option<(Vec<u8>, Version)>, StoreError> {
        check_key(key)?;
        Ok(self
            .lock()
            .get(key)
            .map(|(v, n)| (v.clone(), Version::new(n.to_string()))))
    }

    fn put_if(
        &self,
        key: &str,
        parts: &[&[u8]],
        expected: Option<&Version>,
    ) -> Result<(), StoreError> {
        check_key(key)?;
        store_if(&self.values, key, parts.concat(), Some(expected))
    }

    fn get_range(&self, key: &str, range: Range<u64>) -> Result<Option<Vec<u8>>, StoreError> {
        check_key(key)?;
        let values = self.lock();
        let Some((value, _)) = values.get(key) else {
            return Ok(None);
        };
        check_range(key, &range, value.len() as u64)?;
        slice(key, value, &range).map(Some)
    }

    fn size(&self, key: &str) -> Result<Option<u64>, StoreError> {
        check_key(key)?;
        Ok(self.lock().get(key).map(|(v, _)| v.len() as u64))
    }

    fn put(&self, key: &str, parts: &[&[u8]]) -> Result<(), StoreError> {
        check_key(key)?;
        let value = parts.concat();
        self.lock().insert(key.to_string(), (value, next_version()));
        Ok(())
    }

    fn delete_if(&self, key: &str, expected: Option<&Version>) -> Result<(), StoreError> {
        check_key(key)?;
        let mut values = self.lock();
        let current = values.get(key).map(|(_, n)| Version::new(n.to_string()));
        if current.as_ref() != expected {
            return Err(StoreError::Conflict {
                key: key.to_string(),
            });
        }
        values.remove(key);
        Ok(())
    }

    fn delete(&self, key: &str) -> Result<(), StoreError> {
        check_key(key)?;
        self.lock().remove(key);
        Ok(())
    }
}
