//! The engine's [`Store`] over any zarr-python store, through
//! `shardwright._adapter.StoreAdapter` (whose methods run the store's coroutines on
//! zarr-python's event loop). The GIL is taken for each call only; engine entry points
//! release it before they reach storage, so encode and commit threads can call in.
//!
//! zarr-python stores have no versions and no conditional writes (and some, such as
//! fsspec's local files, are not even atomic: a reader can see a value half written).
//! Here every access to a key holds a lock chosen by the key alone (one of
//! [`STRIPES`], shared by every adapter of the process whatever its store: the same
//! store reached through two objects — `session.store` twice, a `WrapperStore` and what it
//! wraps — shares the locks), and a version is that lock's counter of writes. So
//! conditional puts and deletes are atomic, and reads never see a half-written value,
//! *among shardwright's writers in this process*; a write by another key of the same
//! stripe only makes a conditional put conflict and retry. Writers in other processes,
//! and zarr-python writing the same store directly, are not seen (the docs say so);
//! Icechunk sessions detect other sessions at their own commit.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::ops::Range;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use shardwright::store::{check_key, check_range, Store, StoreError, Version};

/// A zarr-python store, as the engine's [`Store`].
pub(crate) struct PyZarrStore {
    adapter: Py<PyAny>,
    name: String,
}

impl std::fmt::Debug for PyZarrStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PyZarrStore")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The lock stripes of the adapter.
const STRIPES: usize = 1024;

/// The lock of `key`'s stripe; what it guards is the stripe's count of writes, the
/// version of every key in it.
fn key_lock(key: &str) -> MutexGuard<'static, u64> {
    static LOCKS: OnceLock<Vec<Mutex<u64>>> = OnceLock::new();
    let locks = LOCKS.get_or_init(|| (0..STRIPES).map(|_| Mutex::new(0)).collect());
    let mut hasher = DefaultHasher::new();
    key.hash(&mut hasher);
    let stripe = usize::try_from(hasher.finish() % STRIPES as u64).unwrap_or(0);
    locks[stripe].lock().unwrap_or_else(PoisonError::into_inner)
}

impl PyZarrStore {
    /// Wrap a `shardwright._adapter.StoreAdapter`.
    pub(crate) fn new(py: Python<'_>, adapter: Py<PyAny>) -> PyResult<Self> {
        let name: String = adapter.getattr(py, "name")?.extract(py)?;
        Ok(Self { adapter, name })
    }

    /// Whether the key is as `expected` says: absent (`None`), or at that version
    /// (`writes`: its stripe's count).
    fn is_at(
        &self,
        key: &str,
        expected: Option<&Version>,
        writes: u64,
    ) -> Result<bool, StoreError> {
        let exists = self.call_on_key(key, "exists", |value| value.extract::<bool>())?;
        Ok(match expected {
            None => !exists,
            Some(version) => exists && version.tag() == writes.to_string(),
        })
    }

    fn size_unlocked(&self, key: &str) -> Result<Option<u64>, StoreError> {
        self.call_on_key(key, "size", |value| value.extract::<Option<u64>>())
    }

    fn get_unlocked(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.call_on_key(key, "get", Self::bytes_or_none)
    }

    fn delete_unlocked(&self, key: &str) -> Result<(), StoreError> {
        self.call_on_key(key, "delete", |_| Ok(()))
    }

    fn fail(&self, key: &str, err: &PyErr) -> StoreError {
        StoreError::io(key, format!("{}: {err}", self.name))
    }

    /// Call `method(key)` on the adapter and convert the result with `convert`.
    fn call_on_key<T>(
        &self,
        key: &str,
        method: &str,
        convert: impl for<'py> FnOnce(Bound<'py, PyAny>) -> PyResult<T>,
    ) -> Result<T, StoreError> {
        self.call(
            key,
            method,
            |py| pyo3::types::PyTuple::new(py, [key]),
            convert,
        )
    }

    /// Call `method(*args)` on the adapter and convert the result with `convert`.
    fn call<T>(
        &self,
        key: &str,
        method: &str,
        args: impl for<'py> FnOnce(Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyTuple>>,
        convert: impl for<'py> FnOnce(Bound<'py, PyAny>) -> PyResult<T>,
    ) -> Result<T, StoreError> {
        check_key(key)?;
        Python::attach(|py| {
            let result = args(py).and_then(|args| self.adapter.bind(py).call_method1(method, args));
            result.and_then(convert).map_err(|e| self.fail(key, &e))
        })
    }

    fn bytes_or_none(value: Bound<'_, PyAny>) -> PyResult<Option<Vec<u8>>> {
        if value.is_none() {
            Ok(None)
        } else {
            Ok(Some(value.cast::<PyBytes>()?.as_bytes().to_vec()))
        }
    }

    fn set(&self, key: &str, parts: &[&[u8]]) -> Result<(), StoreError> {
        self.store_bytes(key, "set", parts, |_| Ok(()))
    }

    fn set_if_absent(&self, key: &str, parts: &[&[u8]]) -> Result<bool, StoreError> {
        self.store_bytes(key, "set_if_absent", parts, |value| value.extract::<bool>())
    }

    /// Call `method(key, bytes)` with the concatenation of `parts`.
    fn store_bytes<T>(
        &self,
        key: &str,
        method: &str,
        parts: &[&[u8]],
        convert: impl for<'py> FnOnce(Bound<'py, PyAny>) -> PyResult<T>,
    ) -> Result<T, StoreError> {
        let total: usize = parts.iter().map(|p| p.len()).sum();
        self.call(
            key,
            method,
            |py| {
                let data = PyBytes::new_with(py, total, |buf| {
                    let mut at = 0;
                    for part in parts {
                        buf[at..at + part.len()].copy_from_slice(part);
                        at += part.len();
                    }
                    Ok(())
                })?;
                pyo3::types::PyTuple::new(py, [key.into_pyobject(py)?.into_any(), data.into_any()])
            },
            convert,
        )
    }
}

impl Store for PyZarrStore {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let _locked = key_lock(key);
        self.get_unlocked(key)
    }

    fn get_range(&self, key: &str, range: Range<u64>) -> Result<Option<Vec<u8>>, StoreError> {
        let _locked = key_lock(key);
        let Some(size) = self.size_unlocked(key)? else {
            return Ok(None);
        };
        check_range(key, &range, size)?;
        if range.is_empty() {
            return Ok(Some(Vec::new()));
        }
        self.call(
            key,
            "get_range",
            |py| {
                pyo3::types::PyTuple::new(
                    py,
                    [
                        key.into_pyobject(py)?.into_any(),
                        range.start.into_pyobject(py)?.into_any(),
                        range.end.into_pyobject(py)?.into_any(),
                    ],
                )
            },
            Self::bytes_or_none,
        )
    }

    /// The zarr store's own listing (`supports_listing`), or `None` without one.
    fn list_prefix(&self, prefix: &str) -> Result<Option<Vec<String>>, StoreError> {
        Python::attach(|py| {
            self.adapter
                .bind(py)
                .call_method1("list_prefix", (prefix,))
                .and_then(|keys| keys.extract::<Option<Vec<String>>>())
                .map_err(|e| self.fail(prefix, &e))
        })
    }

    fn size(&self, key: &str) -> Result<Option<u64>, StoreError> {
        let _locked = key_lock(key);
        self.size_unlocked(key)
    }

    fn put(&self, key: &str, parts: &[&[u8]]) -> Result<(), StoreError> {
        let mut writes = key_lock(key);
        self.set(key, parts)?;
        *writes += 1;
        Ok(())
    }

    fn get_versioned(&self, key: &str) -> Result<Option<(Vec<u8>, Version)>, StoreError> {
        let writes = key_lock(key);
        let bytes = self.get_unlocked(key)?;
        Ok(bytes.map(|b| (b, Version::new(writes.to_string()))))
    }

    fn put_if(
        &self,
        key: &str,
        parts: &[&[u8]],
        expected: Option<&Version>,
    ) -> Result<(), StoreError> {
        let mut writes = key_lock(key);
        if !self.is_at(key, expected, *writes)? {
            return Err(StoreError::Conflict {
                key: key.to_string(),
            });
        }
        if expected.is_none() {
            // A new value: through the store's set_if_not_exists, which also stops a
            // writer in another process where the store makes it atomic.
            if !self.set_if_absent(key, parts)? {
                return Err(StoreError::Conflict {
                    key: key.to_string(),
                });
            }
        } else {
            self.set(key, parts)?;
        }
        *writes += 1;
        Ok(())
    }

    fn delete(&self, key: &str) -> Result<(), StoreError> {
        let mut writes = key_lock(key);
        self.delete_unlocked(key)?;
        *writes += 1;
        Ok(())
    }

    fn delete_if(&self, key: &str, expected: Option<&Version>) -> Result<(), StoreError> {
        let mut writes = key_lock(key);
        if !self.is_at(key, expected, *writes)? {
            return Err(StoreError::Conflict {
                key: key.to_string(),
            });
        }
        if expected.is_some() {
            self.delete_unlocked(key)?;
            *writes += 1;
        }
        Ok(())
    }
}
