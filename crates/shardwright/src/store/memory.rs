//! An in-memory store.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Mutex;

use super::{check_key, check_range, Store, StoreError, Version};

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
    values: Mutex<BTreeMap<String, (Vec<u8>, u64)>>,
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

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, (Vec<u8>, u64)>> {
        self.values
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Store for MemoryStore {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        check_key(key)?;
        Ok(self.lock().get(key).map(|(v, _)| v.clone()))
    }

    fn get_versioned(&self, key: &str) -> Result<Option<(Vec<u8>, Version)>, StoreError> {
        check_key(key)?;
        Ok(self
            .lock()
            .get(key)
            .map(|(v, n)| (v.clone(), Version(n.to_string()))))
    }

    fn put_if(
        &self,
        key: &str,
        parts: &[&[u8]],
        expected: Option<&Version>,
    ) -> Result<(), StoreError> {
        check_key(key)?;
        let mut values = self.lock();
        let current = values.get(key).map(|(_, n)| Version(n.to_string()));
        if current.as_ref() != expected {
            return Err(StoreError::Conflict {
                key: key.to_string(),
            });
        }
        values.insert(key.to_string(), (parts.concat(), next_version()));
        Ok(())
    }

    fn get_range(&self, key: &str, range: Range<u64>) -> Result<Option<Vec<u8>>, StoreError> {
        check_key(key)?;
        let values = self.lock();
        let Some((value, _)) = values.get(key) else {
            return Ok(None);
        };
        check_range(key, &range, value.len() as u64)?;
        Ok(Some(
            value[range.start as usize..range.end as usize].to_vec(),
        ))
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
        let current = values.get(key).map(|(_, n)| Version(n.to_string()));
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
