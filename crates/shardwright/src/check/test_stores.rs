//! Store wrappers for the check's tests: a live writer racing the repair, a store without
//! a conditional delete, a stale size.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::store::{MemoryStore, Store, StoreError, Version};

/// A store whose conditional puts and deletes first let "another writer" replace the
/// value (as a live writer would between the check and the repair).
#[derive(Debug)]
pub(super) struct Racing {
    pub(super) inner: MemoryStore,
    pub(super) raced: Mutex<Vec<String>>,
    pub(super) armed: AtomicBool,
    pub(super) conditional_deletes: bool,
}

impl Racing {
    fn race(&self, key: &str) {
        if !self.armed.load(Ordering::SeqCst) {
            return;
        }
        self.inner.put(key, &[b"the live writer's value"]).unwrap();
        self.raced.lock().unwrap().push(key.to_string());
    }
}

impl Store for Racing {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.get(key)
    }
    fn get_range(&self, key: &str, range: Range<u64>) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.get_range(key, range)
    }
    fn size(&self, key: &str) -> Result<Option<u64>, StoreError> {
        self.inner.size(key)
    }
    fn put(&self, key: &str, parts: &[&[u8]]) -> Result<(), StoreError> {
        self.inner.put(key, parts)
    }
    fn get_versioned(&self, key: &str) -> Result<Option<(Vec<u8>, Version)>, StoreError> {
        self.inner.get_versioned(key)
    }
    fn put_if(
        &self,
        key: &str,
        parts: &[&[u8]],
        expected: Option<&Version>,
    ) -> Result<(), StoreError> {
        self.race(key);
        self.inner.put_if(key, parts, expected)
    }
    fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.inner.delete(key)
    }
    fn delete_if(&self, key: &str, expected: Option<&Version>) -> Result<(), StoreError> {
        self.race(key);
        self.inner.delete_if(key, expected)
    }
    fn deletes_conditionally(&self) -> bool {
        self.conditional_deletes
    }
}

/// A memory store without a conditional delete (as object stores).
#[derive(Debug, Default)]
pub(super) struct NoConditionalDelete(pub(super) MemoryStore);

impl Store for NoConditionalDelete {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.0.get(key)
    }
    fn get_range(&self, key: &str, range: Range<u64>) -> Result<Option<Vec<u8>>, StoreError> {
        self.0.get_range(key, range)
    }
    fn size(&self, key: &str) -> Result<Option<u64>, StoreError> {
        self.0.size(key)
    }
    fn put(&self, key: &str, parts: &[&[u8]]) -> Result<(), StoreError> {
        self.0.put(key, parts)
    }
    fn get_versioned(&self, key: &str) -> Result<Option<(Vec<u8>, Version)>, StoreError> {
        self.0.get_versioned(key)
    }
    fn put_if(
        &self,
        key: &str,
        parts: &[&[u8]],
        expected: Option<&Version>,
    ) -> Result<(), StoreError> {
        self.0.put_if(key, parts, expected)
    }
    fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.0.delete(key)
    }
    fn delete_if(&self, _: &str, _: Option<&Version>) -> Result<(), StoreError> {
        panic!("no conditional delete here")
    }
    fn deletes_conditionally(&self) -> bool {
        false
    }
}

/// A memory store whose `size` of one key is off by `delta` (as if a writer replaced the
/// value between a quick check's size and its ranged get).
#[derive(Debug)]
pub(super) struct StaleSize(pub(super) MemoryStore, pub(super) i64);

impl Store for StaleSize {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.0.get(key)
    }
    fn get_range(&self, key: &str, range: Range<u64>) -> Result<Option<Vec<u8>>, StoreError> {
        self.0.get_range(key, range)
    }
    fn size(&self, key: &str) -> Result<Option<u64>, StoreError> {
        let size = self.0.size(key)?;
        Ok(size.map(|s| {
            if key == "a/c/0/0" {
                s.saturating_add_signed(self.1)
            } else {
                s
            }
        }))
    }
    fn put(&self, key: &str, parts: &[&[u8]]) -> Result<(), StoreError> {
        self.0.put(key, parts)
    }
    fn get_versioned(&self, key: &str) -> Result<Option<(Vec<u8>, Version)>, StoreError> {
        self.0.get_versioned(key)
    }
    fn put_if(
        &self,
        key: &str,
        parts: &[&[u8]],
        expected: Option<&Version>,
    ) -> Result<(), StoreError> {
        self.0.put_if(key, parts, expected)
    }
    fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.0.delete(key)
    }
    fn delete_if(&self, key: &str, expected: Option<&Version>) -> Result<(), StoreError> {
        self.0.delete_if(key, expected)
    }
}
