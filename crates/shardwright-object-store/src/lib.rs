//! Object stores for shardwright — S3, Google Cloud Storage, Azure Blob Storage and
//! memory — through the [`object_store`] crate. (Local folders are better served by
//! shardwright's own `FilesystemStore`: object_store's local store has no conditional
//! update, which merges need.)
//!
//! [`ObjectStoreBackend`] implements [`shardwright::store::Store`] over any
//! [`object_store::ObjectStore`]:
//!
//! - a put is one `PutObject` (atomic: readers see the old object or the new one);
//! - a conditional put is `PutMode::Create` (`If-None-Match: *`) when no value was read and
//!   `PutMode::Update` (`If-Match: <ETag>`) otherwise, so two machines merging into one shard
//!   never lose an update; a failed condition is [`StoreError::Conflict`];
//! - a shard whose index is at the end streams out as a multipart upload while it is
//!   written (parts of [`PART_BYTES`]; one `PutObject` for a shard smaller than a part),
//!   and appears when the upload completes at commit; a dropped writer aborts it. A merge
//!   is stored with one conditional `PutObject` instead (multipart uploads cannot complete
//!   on a condition), its chunks read back from the upload's local spool file;
//! - object stores have no conditional delete, so [`Store::deletes_conditionally`] is
//!   `false`: a merge that leaves a shard empty stores an empty shard conditionally instead;
//! - requests retry with exponential backoff on 5xx, 429 and 408 answers, and on timeouts
//!   of idempotent requests, not on other 4xx (object_store's retry policy: at most 10
//!   retries within 3 minutes); errors name the store URL, the key and the HTTP status,
//!   never credentials: URLs in messages lose their userinfo, query and fragment, and the
//!   values of secret options are replaced by `***` ([`Redactor`]).
//!
//! Every request runs on one process-wide async runtime ([`block_on`]); the calling thread
//! only waits. This crate is apart from `shardwright` so that the core's dependency tree
//! holds no HTTP client or async runtime.
//!
//! ```
//! use shardwright::store::Store;
//! use shardwright_object_store::ObjectStoreBackend;
//!
//! let (store, path) = ObjectStoreBackend::from_url("memory:///doc-example/a.zarr", &[]).unwrap();
//! assert_eq!(path, "doc-example/a.zarr");
//! store.put("doc-example/a.zarr/zarr.json", &[b"{}"]).unwrap();
//! assert_eq!(store.get("doc-example/a.zarr/zarr.json").unwrap().unwrap(), b"{}");
//! ```

mod abandoned;
mod credentials;
mod from_url;
mod list;
mod redact;
mod runtime;
mod upload;

pub use abandoned::{AbandonedUpload, ABANDONED_AFTER};
pub use redact::{redact, Redactor};
pub use runtime::block_on;
pub use upload::{MAX_PARTS, PARTS_IN_FLIGHT, PART_BYTES};

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::multipart::MultipartStore;
use object_store::path::Path;
use object_store::{
    GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload,
    UpdateVersion,
};
use shardwright::store::{check_key, Debris, Store, StoreError, Upload, Version};

use redact::Named;

/// A [`Store`] over an [`object_store::ObjectStore`]. Keys are object paths from the
/// store's root (the bucket or container), e.g. `path/fish.zarr/c/0/0/0`.
///
/// ```
/// use std::sync::Arc;
/// use shardwright::store::Store;
/// use shardwright_object_store::ObjectStoreBackend;
///
/// let store = ObjectStoreBackend::new(Arc::new(object_store::memory::InMemory::new()), "memory:///");
/// store.put_if("k", &[b"one"], None).unwrap();           // create: the key was absent
/// assert!(store.put_if("k", &[b"two"], None).is_err());  // it exists now: a conflict
/// let (_, version) = store.get_versioned("k").unwrap().unwrap();
/// store.put_if("k", &[b"two"], Some(&version)).unwrap();  // update: unchanged since read
/// assert!(store.put_if("k", &[b"three"], Some(&version)).is_err());
/// ```
#[derive(Clone)]
pub struct ObjectStoreBackend {
    inner: Arc<dyn ObjectStore>,
    /// The same store's multipart calls by upload id, where it has them: uploads then
    /// record themselves (markers) so abandoned ones can be aborted (see `abandoned`).
    multipart: Option<Arc<dyn MultipartStore>>,
    /// The store's root URL (without credentials) and the cleaner of its messages.
    url: Named,
}

impl fmt::Debug for ObjectStoreBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectStoreBackend")
            .field("url", &self.url.as_str())
            .finish_non_exhaustive()
    }
}

impl ObjectStoreBackend {
    /// Wrap `inner`; `url` is the store's root as users name it (`s3://bucket`), used in
    /// error messages (without its userinfo, query and fragment). Its streamed uploads are not recorded, so
    /// [`remove_abandoned_uploads`](ObjectStoreBackend::remove_abandoned_uploads) cannot
    /// find them: prefer [`with_multipart`](ObjectStoreBackend::with_multipart) for a store
    /// that has multipart calls by id (S3, GCS, Azure, memory).
    pub fn new(inner: Arc<dyn ObjectStore>, url: impl Into<String>) -> Self {
        Self {
            inner,
            multipart: None,
            url: Named::new(&url.into(), Redactor::default()),
        }
    }

    /// Wrap `store`, whose multipart uploads can be aborted by id (object_store's S3, GCS,
    /// Azure and memory stores): each streamed upload records itself in a marker object
    /// next to its shard while it lasts, so
    /// [`remove_abandoned_uploads`](ObjectStoreBackend::remove_abandoned_uploads) can
    /// abort those a killed writer left. [`from_url`](ObjectStoreBackend::from_url) makes
    /// its stores this way.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use shardwright_object_store::ObjectStoreBackend;
    /// let store = ObjectStoreBackend::with_multipart(
    ///     Arc::new(object_store::memory::InMemory::new()), "memory:///");
    /// assert!(store.abandoned_uploads("", Duration::ZERO).unwrap().is_empty());
    /// ```
    pub fn with_multipart<S: ObjectStore + MultipartStore>(
        store: Arc<S>,
        url: impl Into<String>,
    ) -> Self {
        Self {
            inner: store.clone(),
            multipart: Some(store),
            url: Named::new(&url.into(), Redactor::default()),
        }
    }

    /// The store's root URL, as given (without its userinfo, query and fragment).
    #[must_use]
    pub fn url(&self) -> &str {
        self.url.as_str()
    }

    /// Delete every object under `prefix` (a folder: `prefix/…`), e.g. to overwrite an array.
    /// Returns how many were deleted.
    ///
    /// ```
    /// use shardwright::store::Store;
    /// use shardwright_object_store::ObjectStoreBackend;
    /// let (store, _) = ObjectStoreBackend::from_url("memory:///doc-prefix", &[]).unwrap();
    /// store.put("doc-prefix/a.zarr/zarr.json", &[b"{}"]).unwrap();
    /// store.put("doc-prefix/a.zarr/c/0", &[b"x"]).unwrap();
    /// assert_eq!(store.delete_prefix("doc-prefix/a.zarr").unwrap(), 2);
    /// ```
    ///
    /// # Errors
    /// [`StoreError::Config`] for an empty prefix (the whole store); [`StoreError::Io`] if
    /// listing or a delete fails.
    pub fn delete_prefix(&self, prefix: &str) -> Result<usize, StoreError> {
        if prefix.trim_matches('/').is_empty() {
            return Err(StoreError::Config {
                url: self.url.to_string(),
                message: "deleting everything at the root of a bucket (or store) is \
                          refused; delete it yourself, or give a prefix inside it"
                    .into(),
            });
        }
        let inner = self.inner.clone();
        let location = self.path(prefix)?;
        let url = self.url.clone();
        let key = prefix.to_string();
        block_on(async move {
            let listed: Vec<Path> = inner
                .list(Some(&location))
                .map_ok(|meta| meta.location)
                .try_collect()
                .await
                .map_err(|e| describe(&url, &key, &e))?;
            let n = listed.len();
            let stream = futures::stream::iter(listed.into_iter().map(Ok)).boxed();
            inner
                .delete_stream(stream)
                .try_collect::<Vec<Path>>()
                .await
                .map_err(|e| describe(&url, &key, &e))?;
            Ok(n)
        })
    }

    fn path(&self, key: &str) -> Result<Path, StoreError> {
        Path::parse(key).map_err(|_| StoreError::InvalidKey(key.to_string()))
    }

    /// Run `op` on the runtime with a clone of the inner store and the key's path.
    fn run<T, F, Fut>(&self, key: &str, op: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(Arc<dyn ObjectStore>, Path) -> Fut,
        Fut: std::future::Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        check_key(key)?;
        let location = self.path(key)?;
        block_on(op(self.inner.clone(), location))
    }
}

/// A [`StoreError::Io`] naming the store, the key and what the service said (object_store's
/// message carries the HTTP method, URL and status), without credentials; the failure of
/// the credential provider of last resort (the machine's metadata service) first says that
/// no credentials were found, and where they are looked for.
fn describe(url: &Named, key: &str, err: &object_store::Error) -> StoreError {
    let message = match credentials::explain(url.as_str(), err) {
        Some(missing) => url.says(format_args!("{missing}: {err}")),
        None => url.says(err),
    };
    StoreError::Io {
        key: key.to_string(),
        message,
    }
}

fn payload(parts: &[&[u8]]) -> PutPayload {
    parts
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| Bytes::copy_from_slice(p))
        .collect()
}

/// The tag and pin of a version from an object's ETag and version id.
fn version_of(e_tag: Option<String>, version: Option<String>) -> Version {
    let tag = format!(
        "{}\u{0}{}",
        e_tag.as_deref().unwrap_or(""),
        version.as_deref().unwrap_or("")
    );
    Version::pinned(tag, UpdateVersion { e_tag, version })
}

impl Store for ObjectStoreBackend {
    /// A multipart upload that streams the shard in parts of [`PART_BYTES`] (see
    /// [`upload`](crate::PART_BYTES)'s notes): begun lazily, aborted when dropped.
    fn begin_upload(&self, key: &str) -> Result<Option<Box<dyn Upload>>, StoreError> {
        check_key(key)?;
        let upload = upload::MultipartShardUpload::new(
            self.inner.clone(),
            self.multipart.clone(),
            &self.url,
            key,
            self.path(key)?,
        );
        Ok(Some(Box::new(upload)))
    }

    fn streams(&self) -> bool {
        true
    }

    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.get_versioned(key)?.map(|(bytes, _)| bytes))
    }

    fn get_range(&self, key: &str, range: Range<u64>) -> Result<Option<Vec<u8>>, StoreError> {
        if range.start > range.end {
            return Err(StoreError::Range {
                key: key.to_string(),
                start: range.start,
                end: range.end,
                size: 0,
            });
        }
        if range.is_empty() {
            return Ok(self.size(key)?.map(|_| Vec::new()));
        }
        // One ranged GET; a range past the end is recognised from what comes back (S3
        // answers 416 when it starts past the end, and sends less when it ends past it).
        let (url, owned_key, asked) = (self.url.clone(), key.to_string(), range.clone());
        let fetched = self.run(key, move |inner, location| async move {
            let options = GetOptions::default().with_range(Some(GetRange::Bounded(asked)));
            Ok(match inner.get_opts(&location, options).await {
                Ok(result) => match result.bytes().await {
                    Ok(bytes) => Ok(Some(bytes.to_vec())),
                    Err(e) => Err(describe(&url, &owned_key, &e)),
                },
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(describe(&url, &owned_key, &e)),
            })
        })?;
        match fetched {
            Ok(Some(bytes)) if bytes.len() as u64 == range.end - range.start => Ok(Some(bytes)),
            Ok(None) => Ok(None),
            other => match self.size(key)? {
                None => Ok(None),
                Some(size) if range.end > size => Err(StoreError::Range {
                    key: key.to_string(),
                    start: range.start,
                    end: range.end,
                    size,
                }),
                Some(_) => other.and_then(|_| {
                    Err(StoreError::io(
                        key,
                        format!("{}: a ranged read came back short", self.url),
                    ))
                }),
            },
        }
    }

    fn size(&self, key: &str) -> Result<Option<u64>, StoreError> {
        let (url, owned_key) = (self.url.clone(), key.to_string());
        self.run(key, move |inner, location| async move {
            match inner.head(&location).await {
                Ok(meta) => Ok(Some(meta.size)),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(describe(&url, &owned_key, &e)),
            }
        })
    }

    fn put(&self, key: &str, parts: &[&[u8]]) -> Result<(), StoreError> {
        let data = payload(parts);
        let (url, owned_key) = (self.url.clone(), key.to_string());
        self.run(key, move |inner, location| async move {
            inner
                .put_opts(&location, data, PutOptions::default())
                .await
                .map(|_| ())
                .map_err(|e| describe(&url, &owned_key, &e))
        })
    }

    fn get_versioned(&self, key: &str) -> Result<Option<(Vec<u8>, Version)>, StoreError> {
        let (url, owned_key) = (self.url.clone(), key.to_string());
        self.run(key, move |inner, location| async move {
            match inner.get_opts(&location, GetOptions::default()).await {
                Ok(result) => {
                    let meta = result.meta.clone();
                    let bytes = result
                        .bytes()
                        .await
                        .map_err(|e| describe(&url, &owned_key, &e))?;
                    Ok(Some((bytes.to_vec(), version_of(meta.e_tag, meta.version))))
                }
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(describe(&url, &owned_key, &e)),
            }
        })
    }

    fn put_if(
        &self,
        key: &str,
        parts: &[&[u8]],
        expected: Option<&Version>,
    ) -> Result<(), StoreError> {
        let mode = match expected {
            None => PutMode::Create,
            Some(version) => match version.pin::<UpdateVersion>() {
                Some(update) => PutMode::Update(update.clone()),
                None => {
                    return Err(StoreError::io(
                        key,
                        format!("{}: a version from another store: {version:?}", self.url),
                    ))
                }
            },
        };
        let update = matches!(mode, PutMode::Update(_));
        let data = payload(parts);
        let (url, owned_key) = (self.url.clone(), key.to_string());
        self.run(key, move |inner, location| async move {
            match inner
                .put_opts(&location, data, PutOptions::from(mode))
                .await
            {
                Ok(_) => Ok(()),
                Err(
                    object_store::Error::AlreadyExists { .. }
                    | object_store::Error::Precondition { .. },
                ) => Err(StoreError::Conflict { key: owned_key }),
                // An update of an object deleted since it was read is a conflict; on a
                // create, "not found" can only mean a missing bucket: an error.
                Err(object_store::Error::NotFound { .. }) if update => {
                    Err(StoreError::Conflict { key: owned_key })
                }
                Err(e) => Err(describe(&url, &owned_key, &e)),
            }
        })
    }

    fn delete(&self, key: &str) -> Result<(), StoreError> {
        let (url, owned_key) = (self.url.clone(), key.to_string());
        self.run(key, move |inner, location| async move {
            match inner.delete(&location).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(e) => Err(describe(&url, &owned_key, &e)),
            }
        })
    }

    /// `expected == None`: a check that nothing is there (a conflict if something is;
    /// nothing is written, so the check is the whole operation). `Some(version)`: an
    /// error — object stores have no conditional delete, and a check followed by a delete
    /// could remove another writer's newer value; writers store an empty value with
    /// [`Store::put_if`] instead ([`Store::deletes_conditionally`] is `false`).
    fn delete_if(&self, key: &str, expected: Option<&Version>) -> Result<(), StoreError> {
        if expected.is_some() {
            return Err(StoreError::io(
                key,
                format!(
                    "{}: object stores have no conditional delete (store an empty value \
                     with put_if instead)",
                    self.url
                ),
            ));
        }
        let current = self.run(key, {
            let (url, owned_key) = (self.url.clone(), key.to_string());
            move |inner, location| async move {
                match inner.head(&location).await {
                    Ok(meta) => Ok(Some(version_of(meta.e_tag, meta.version))),
                    Err(object_store::Error::NotFound { .. }) => Ok(None),
                    Err(e) => Err(describe(&url, &owned_key, &e)),
                }
            }
        })?;
        match current {
            None => Ok(()),
            Some(_) => Err(StoreError::Conflict {
                key: key.to_string(),
            }),
        }
    }

    fn deletes_conditionally(&self) -> bool {
        false
    }

    /// One listing request per page of keys (hidden upload markers left out).
    fn list_prefix(&self, prefix: &str) -> Result<Option<Vec<String>>, StoreError> {
        self.list_keys(prefix).map(Some)
    }

    /// The multipart uploads under `prefix` recorded more than [`ABANDONED_AFTER`] ago
    /// (aborted, with their markers removed, when `remove`); none for a store made without
    /// abort-by-id ([`ObjectStoreBackend::new`]), whose uploads are not recorded.
    fn debris(&self, prefix: &str, remove: bool) -> Result<Vec<Debris>, StoreError> {
        if self.multipart.is_none() {
            return Ok(Vec::new());
        }
        let found = if remove {
            self.remove_abandoned_uploads(prefix, ABANDONED_AFTER)?
        } else {
            self.abandoned_uploads(prefix, ABANDONED_AFTER)?
        };
        Ok(found
            .into_iter()
            .map(|upload| {
                let age = upload.started.elapsed().map_or(0, |d| d.as_secs() / 3600);
                Debris {
                    what: format!(
                        "abandoned multipart upload {} of '{}' (begun {age} h ago)",
                        upload.upload_id, upload.key
                    ),
                    key: upload.marker,
                }
            })
            .collect())
    }
}

#[cfg(test)]
mod abandoned_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod upload_tests;
