//! A small trait over storage, and its backends.
//!
//! [`Store`] has what shard writing needs: get, ranged get, size, an atomic put, delete,
//! conditional put and delete, and streaming uploads ([`Upload`]).
//! Backends: [`FilesystemStore`] (atomic put: temp file in the same folder, fsync, rename),
//! [`MemoryStore`], [`InstrumentedStore`], which wraps another and counts calls and
//! bytes (tests use it to prove the I/O invariants), and [`FaultyStore`], which wraps
//! another and makes planned calls fail, return damaged bytes or stall (fault injection).
//!
//! Keys are `/`-separated paths relative to the store root, e.g. `fish.zarr/c/0/0/0`.
//!
//! ```
//! use shardwright::store::{MemoryStore, Store};
//!
//! let store = MemoryStore::new();
//! store.put("a/b", &[b"hello ", b"world"]).unwrap();
//! assert_eq!(store.get("a/b").unwrap().unwrap(), b"hello world");
//! assert_eq!(store.get_range("a/b", 6..11).unwrap().unwrap(), b"world");
//! store.delete("a/b").unwrap();
//! assert!(store.get("a/b").unwrap().is_none());
//! ```

mod faulty;
mod filesystem;
mod instrumented;
mod memory;

pub use faulty::{Fault, FaultOp, FaultyStore};
pub use filesystem::{remove_folder_to_overwrite, FilesystemStore};
pub use instrumented::{InstrumentedStore, IoCounts, IoEvent};
pub use memory::MemoryStore;

use std::fmt;
use std::ops::Range;

/// Errors of the `store` layer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The storage backend failed.
    #[error("I/O error on '{key}': {message}")]
    Io {
        /// The key being accessed.
        key: String,
        /// What the backend said.
        message: String,
    },
    /// A store that cannot be made as asked: a URL or an option the backend refuses.
    #[error("cannot use the store '{url}': {message}")]
    Config {
        /// The store's URL.
        url: String,
        /// What is wrong.
        message: String,
    },
    /// A key that is not a relative `/`-separated path without `.` or `..` parts.
    #[error("invalid store key '{0}'")]
    InvalidKey(String),
    /// A conditional put found the value changed since it was read (or created, when it
    /// was to be new).
    #[error("conflict on '{key}': the stored value changed since it was read")]
    Conflict {
        /// The key.
        key: String,
    },
    /// The change was made (the value stored or removed, and visible to readers), but
    /// flushing it to disk failed: it may not survive a power loss or an OS crash.
    #[error("'{key}' was changed (stored or removed, and visible), but flushing the change to disk failed: {message}; it may be lost if the machine loses power before the filesystem writes it")]
    NotDurable {
        /// The key.
        key: String,
        /// What the backend said.
        message: String,
    },
    /// A requested byte range reaches past the end of the value.
    #[error("range {start}..{end} is outside '{key}' ({size} bytes)")]
    Range {
        /// The key.
        key: String,
        /// Range start.
        start: u64,
        /// Range end.
        end: u64,
        /// The value's size.
        size: u64,
    },
}

impl StoreError {
    /// An [`StoreError::Io`] on `key` saying `err` (for backends outside this crate).
    ///
    /// ```
    /// let err = shardwright::store::StoreError::io("a/b", "disk on fire");
    /// assert_eq!(err.to_string(), "I/O error on 'a/b': disk on fire");
    /// ```
    pub fn io(key: &str, err: impl fmt::Display) -> Self {
        Self::Io {
            key: key.to_string(),
            message: err.to_string(),
        }
    }
}

/// An opaque version of a stored value (object stores: the ETag; memory: a counter;
/// filesystem: the file's identity and times, together with the file itself held open),
/// to make a put conditional on the value being unchanged. Two versions are equal when
/// their tags are; a backend may also keep a *pin* with the version — the filesystem keeps
/// the file it read open, so its inode cannot be handed to another file while the version
/// lives, and a replacement is recognised however coarse the filesystem's timestamps are.
///
/// ```
/// use shardwright::store::Version;
/// let v = Version::new("\"etag-1\"");
/// assert_eq!(v, Version::new("\"etag-1\""));
/// assert_eq!(v.tag(), "\"etag-1\"");
/// ```
#[derive(Clone)]
pub struct Version {
    tag: String,
    pin: Option<std::sync::Arc<dyn std::any::Any + Send + Sync>>,
}

impl Version {
    /// A version identified by `tag` alone.
    pub fn new(tag: impl Into<String>) -> Self {
        Self {
            tag: tag.into(),
            pin: None,
        }
    }

    /// A version identified by `tag` that keeps `pin` alive as long as it lives.
    pub fn pinned(tag: impl Into<String>, pin: impl std::any::Any + Send + Sync) -> Self {
        Self {
            tag: tag.into(),
            pin: Some(std::sync::Arc::new(pin)),
        }
    }

    /// The tag: what identifies the version (an ETag, a counter, file metadata).
    #[must_use]
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// The pin, if it is a `T`.
    #[must_use]
    pub fn pin<T: 'static>(&self) -> Option<&T> {
        self.pin.as_deref().and_then(|p| p.downcast_ref::<T>())
    }
}

impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.tag == other.tag
    }
}

impl Eq for Version {}

impl std::hash::Hash for Version {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.tag.hash(state);
    }
}

impl fmt::Debug for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Version").field(&self.tag).finish()
    }
}

/// A value written piece by piece (a streaming upload): nothing is visible under its key
/// until [`complete`](Upload::complete) succeeds, and dropping an upload that did not
/// complete removes what was written. Shard writers append encoded chunks as they finish,
/// so memory holds a few chunks rather than the encoded shard.
///
/// ```
/// use shardwright::store::{MemoryStore, Store};
/// let store = MemoryStore::new();
/// let mut upload = store.begin_upload("a/b").unwrap().expect("the memory store streams");
/// upload.append(&[b"hello ", b"world"]).unwrap();
/// assert_eq!(upload.read(6..11).unwrap(), b"world");
/// assert!(store.get("a/b").unwrap().is_none()); // not visible yet
/// upload.complete(None).unwrap();
/// assert_eq!(store.get("a/b").unwrap().unwrap(), b"hello world");
/// ```
pub trait Upload: Send + fmt::Debug {
    /// Append the concatenation of `parts`.
    ///
    /// # Errors
    /// [`StoreError`] if the backend fails.
    fn append(&mut self, parts: &[&[u8]]) -> Result<(), StoreError>;

    /// The number of bytes appended (and not truncated) so far.
    fn len(&self) -> u64;

    /// Whether nothing was appended.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes `range` of what was appended.
    ///
    /// # Errors
    /// [`StoreError::Range`] past the end; [`StoreError`] if the backend fails.
    fn read(&mut self, range: Range<u64>) -> Result<Vec<u8>, StoreError>;

    /// Keep only the first `len` bytes (to redo what followed, e.g. a merge retried
    /// after a conflict). Only uploads that
    /// [`complete_conditionally`](Upload::completes_conditionally) can cut back what they
    /// sent; the others accept only the length they have.
    ///
    /// # Errors
    /// [`StoreError`] if the backend fails or cannot truncate.
    fn truncate(&mut self, len: u64) -> Result<(), StoreError>;

    /// Whether [`complete`](Upload::complete) takes a condition (and
    /// [`truncate`](Upload::truncate) can cut back). Object-store multipart uploads cannot:
    /// S3's `CompleteMultipartUpload` has no `If-Match` that object_store exposes (and the
    /// moto server ignores it), and sent parts cannot be taken back. A writer whose commit
    /// must be conditional (a merge) then reads its chunks back, drops the upload (which
    /// aborts it) and stores the merged shard with one [`Store::put_if`]. The default: `true`.
    fn completes_conditionally(&self) -> bool {
        true
    }

    /// Make what was appended the value at the key, atomically. `condition`: `None` to
    /// replace whatever is there; `Some(expected)` to store only if the value is still
    /// `expected` (as [`Store::put_if`]; only where
    /// [`completes_conditionally`](Upload::completes_conditionally)). After a
    /// [`StoreError::Conflict`] the upload is still usable (truncate and complete again);
    /// after success it is finished.
    ///
    /// # Errors
    /// [`StoreError::Conflict`] if the condition fails; [`StoreError`] if the backend fails.
    fn complete(&mut self, condition: Option<Option<&Version>>) -> Result<(), StoreError>;
}

/// Storage for shards and metadata. Every method is safe to call from many threads.
pub trait Store: Send + Sync + fmt::Debug {
    /// Start a streaming upload to `key`, or `None` if this store has none (callers then
    /// assemble the value in memory and [`put`](Store::put) it). The default: none.
    ///
    /// # Errors
    /// [`StoreError`] if the backend fails.
    fn begin_upload(&self, key: &str) -> Result<Option<Box<dyn Upload>>, StoreError> {
        check_key(key)?;
        Ok(None)
    }

    /// Whether [`begin_upload`](Store::begin_upload) returns uploads; a store that
    /// implements one must implement the other (writers decide whether to stream from this,
    /// before any upload is begun).
    fn streams(&self) -> bool {
        false
    }

    /// The whole value at `key`, or `None` if there is none.
    ///
    /// # Errors
    /// [`StoreError`] if the backend fails.
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// Bytes `range` of the value at `key`, or `None` if there is none.
    ///
    /// # Errors
    /// [`StoreError::Range`] if the range passes the end of the value.
    fn get_range(&self, key: &str, range: Range<u64>) -> Result<Option<Vec<u8>>, StoreError>;

    /// The size of the value at `key`, or `None` if there is none.
    ///
    /// # Errors
    /// [`StoreError`] if the backend fails.
    fn size(&self, key: &str) -> Result<Option<u64>, StoreError>;

    /// Store the concatenation of `parts` at `key`, atomically: a reader sees the old value
    /// or the new one, never a mix, and a failed put leaves the old value.
    ///
    /// # Errors
    /// [`StoreError`] if the backend fails; the old value is then still in place.
    fn put(&self, key: &str, parts: &[&[u8]]) -> Result<(), StoreError>;

    /// The whole value at `key` and its version, or `None` if there is none.
    ///
    /// # Errors
    /// [`StoreError`] if the backend fails.
    fn get_versioned(&self, key: &str) -> Result<Option<(Vec<u8>, Version)>, StoreError>;

    /// Store the concatenation of `parts` at `key`, atomically, only if the value there is
    /// still `expected` (`None`: only if there is no value). Puts by other writers, in this
    /// process or others, cannot slip between the check and the replacement.
    ///
    /// # Errors
    /// [`StoreError::Conflict`] if the value changed; nothing is stored then.
    fn put_if(
        &self,
        key: &str,
        parts: &[&[u8]],
        expected: Option<&Version>,
    ) -> Result<(), StoreError>;

    /// Remove the value at `key`; removing a missing key is not an error.
    ///
    /// # Errors
    /// [`StoreError`] if the backend fails.
    fn delete(&self, key: &str) -> Result<(), StoreError>;

    /// Remove the value at `key` only if it is still `expected` (`None`: only if there is
    /// none, which removes nothing), atomically with respect to `put_if` where
    /// [`deletes_conditionally`](Store::deletes_conditionally) says so.
    ///
    /// # Errors
    /// [`StoreError::Conflict`] if the value changed; nothing is removed then.
    fn delete_if(&self, key: &str, expected: Option<&Version>) -> Result<(), StoreError>;

    /// Whether [`delete_if`](Store::delete_if) with `Some(version)` is atomic. Object
    /// stores have no conditional delete: writers then store an empty value (a shard
    /// whose chunks are all absent) with [`put_if`](Store::put_if) instead of deleting,
    /// so a newer value written by another machine is never lost. The default: `true`.
    fn deletes_conditionally(&self) -> bool {
        true
    }

    /// Every key under `prefix` (a folder key: keys starting with `prefix/`; `""` for the
    /// whole store), in no set order, or `None` if this store cannot list (callers then ask
    /// for each key they need). A filesystem leaves out its hidden files (a writer's
    /// temporaries). Costs what is stored, not what could be: one request per page on an
    /// object store. The default: `None`.
    ///
    /// ```
    /// use shardwright::store::{MemoryStore, Store};
    /// let store = MemoryStore::new();
    /// store.put("a/c/0", &[b"x"]).unwrap();
    /// store.put("ab", &[b"y"]).unwrap();
    /// assert_eq!(store.list_prefix("a").unwrap(), Some(vec!["a/c/0".to_string()]));
    /// ```
    ///
    /// # Errors
    /// [`StoreError`] if the backend fails to list.
    fn list_prefix(&self, prefix: &str) -> Result<Option<Vec<String>>, StoreError> {
        let _ = prefix;
        Ok(None)
    }

    /// Crash debris under `prefix`: what killed writers left behind — a filesystem's stale
    /// temporary files (whose writer's lock is gone), an object store's abandoned multipart
    /// uploads (recorded older than a day) — removed too when `remove` is true. Never a
    /// live writer's. The default (stores whose writes leave nothing behind): none.
    ///
    /// ```
    /// use shardwright::store::{MemoryStore, Store};
    /// assert!(MemoryStore::new().debris("a.zarr", true).unwrap().is_empty());
    /// ```
    ///
    /// # Errors
    /// [`StoreError`] if listing or removing fails (what was removed before stays removed).
    fn debris(&self, prefix: &str, remove: bool) -> Result<Vec<Debris>, StoreError> {
        let _ = (prefix, remove);
        Ok(Vec::new())
    }
}

/// Whether `key` lies under the folder key `prefix` (`""`: every key), as
/// [`Store::list_prefix`] means it.
///
/// ```
/// use shardwright::store::is_under;
/// assert!(is_under("a", "a/c/0") && is_under("", "b") && !is_under("a", "ab/c"));
/// ```
#[must_use]
pub fn is_under(prefix: &str, key: &str) -> bool {
    let prefix = prefix.trim_matches('/');
    prefix.is_empty()
        || key
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// One piece of crash debris found by [`Store::debris`]: its key and what it is.
///
/// ```
/// let d = shardwright::store::Debris { key: "a/c/.0.1f.shardwright-tmp".into(),
///     what: "stale temporary file of a dead writer".into() };
/// assert_eq!(d.to_string(), "a/c/.0.1f.shardwright-tmp: stale temporary file of a dead writer");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Debris {
    /// The key (of the temporary file, or of the marker recording the upload).
    pub key: String,
    /// What it is.
    pub what: String,
}

impl fmt::Display for Debris {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.what)
    }
}

/// Check that `key` is a relative path of non-empty parts other than `.` and `..`.
///
/// ```
/// use shardwright::store::check_key;
/// assert!(check_key("a/c/0/1").is_ok());
/// assert!(check_key("../x").is_err());
/// assert!(check_key("/abs").is_err());
/// ```
///
/// # Errors
/// [`StoreError::InvalidKey`].
pub fn check_key(key: &str) -> Result<(), StoreError> {
    let bad = key.is_empty()
        || key
            .split('/')
            .any(|p| p.is_empty() || p == "." || p == "..")
        || key.contains('\\')
        || key.contains('\0');
    if bad {
        Err(StoreError::InvalidKey(key.to_string()))
    } else {
        Ok(())
    }
}

/// Join an array's folder and a key inside it (an empty folder is the store root).
///
/// ```
/// assert_eq!(shardwright::store::join("fish.zarr", "c/0"), "fish.zarr/c/0");
/// assert_eq!(shardwright::store::join("", "zarr.json"), "zarr.json");
/// ```
#[must_use]
pub fn join(prefix: &str, key: &str) -> String {
    let prefix = prefix.trim_matches('/');
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}/{key}")
    }
}

/// Check that `range` lies inside a value of `size` bytes at `key` (for backends).
///
/// ```
/// use shardwright::store::check_range;
/// assert!(check_range("k", &(2..4), 4).is_ok());
/// assert!(check_range("k", &(2..5), 4).is_err());
/// ```
///
/// # Errors
/// [`StoreError::Range`] when it does not.
pub fn check_range(key: &str, range: &Range<u64>, size: u64) -> Result<(), StoreError> {
    if range.start > range.end || range.end > size {
        return Err(StoreError::Range {
            key: key.to_string(),
            start: range.start,
            end: range.end,
            size,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
