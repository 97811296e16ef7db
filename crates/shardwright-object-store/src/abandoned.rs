//! Abandoned multipart uploads: a writer killed while streaming a shard leaves an upload
//! that is neither completed nor aborted, and its parts are billed until someone aborts it.
//!
//! object_store has no call that lists a bucket's multipart uploads, so each upload of a
//! backend that can abort uploads by id (made with [`ObjectStoreBackend::from_url`] or
//! [`ObjectStoreBackend::with_multipart`]) records itself: right after
//! `CreateMultipartUpload`, before its first part, it stores a small *marker* object next
//! to the shard, `.NAME.RANDOM.shardwright-upload` (hidden; no Zarr reader takes it for a
//! chunk), holding the upload id; the marker is removed once the upload completes or is
//! aborted. An upload holds no bytes before its first part, so every upload that costs
//! anything has a marker (only a kill between the create's answer and the marker's put
//! leaves an empty upload without one).
//!
//! [`ObjectStoreBackend::remove_abandoned_uploads`] aborts the uploads whose markers
//! are older than a threshold and removes the markers. A live writer on another machine
//! cannot be told from a dead one, so age is the only test: the default,
//! [`ABANDONED_AFTER`], is a day — a shard upload takes minutes, and a bucket lifecycle
//! rule (AbortIncompleteMultipartUpload) works on the same principle. The marker's age is
//! the store's `LastModified` against this machine's clock.
//!
//! Azure has no multipart uploads to abort (uncommitted blocks expire by themselves after
//! a week): there the sweep only removes markers. A backend made with
//! [`ObjectStoreBackend::new`] over an arbitrary store streams without markers, and its
//! sweep is an error saying so.

use std::time::{Duration, SystemTime};

use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};
use shardwright::store::StoreError;

use crate::{block_on, describe, ObjectStoreBackend};

/// The suffix of upload markers.
pub(crate) const MARKER_SUFFIX: &str = ".shardwright-upload";

/// How old an upload's marker must be for
/// [`remove_abandoned_uploads`](ObjectStoreBackend::remove_abandoned_uploads) with the
/// default threshold to abort it: one day.
pub const ABANDONED_AFTER: Duration = Duration::from_secs(24 * 60 * 60);

/// An upload found by [`ObjectStoreBackend::abandoned_uploads`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AbandonedUpload {
    /// The key of the shard it was uploading.
    pub key: String,
    /// The multipart upload's id.
    pub upload_id: String,
    /// The key of its marker object.
    pub marker: String,
    /// When the marker was stored (about when the upload began), by the store's clock.
    pub started: SystemTime,
}

/// The marker key for an upload to `location`: beside it, hidden, with a random part.
pub(crate) fn marker_for(location: &Path) -> Path {
    use std::hash::BuildHasher;
    let random = std::hash::RandomState::new().hash_one((
        std::process::id(),
        SystemTime::now(),
        location.as_ref(),
    ));
    let name = location.filename().unwrap_or("");
    let marker = format!(".{name}.{random:016x}{MARKER_SUFFIX}");
    match location.as_ref().rsplit_once('/') {
        Some((folder, _)) => Path::from(format!("{folder}/{marker}")),
        None => Path::from(marker),
    }
}

/// The key of the shard a marker at `marker` is for, if it is a marker's key.
fn shard_of(marker: &str) -> Option<String> {
    let (folder, name) = match marker.rsplit_once('/') {
        Some((folder, name)) => (Some(folder), name),
        None => (None, marker),
    };
    let stem = name.strip_prefix('.')?.strip_suffix(MARKER_SUFFIX)?;
    let (shard, random) = stem.rsplit_once('.')?;
    let ok =
        !shard.is_empty() && random.len() == 16 && random.bytes().all(|b| b.is_ascii_hexdigit());
    ok.then(|| match folder {
        Some(folder) => format!("{folder}/{shard}"),
        None => shard.to_string(),
    })
}

/// The payload of a marker for upload `id`.
pub(crate) fn marker_payload(id: &str) -> PutPayload {
    PutPayload::from(id.as_bytes().to_vec())
}

impl ObjectStoreBackend {
    /// The uploads under `prefix` (`""`: the whole store) whose markers are older than
    /// `older_than`: streamed shards whose writer never completed or aborted them (see
    /// [`remove_abandoned_uploads`](ObjectStoreBackend::remove_abandoned_uploads)).
    /// Nothing is changed.
    ///
    /// ```
    /// use std::time::Duration;
    /// use shardwright_object_store::ObjectStoreBackend;
    /// let (store, _) = ObjectStoreBackend::from_url("memory:///doc-abandoned", &[]).unwrap();
    /// assert!(store.abandoned_uploads("doc-abandoned", Duration::ZERO).unwrap().is_empty());
    /// ```
    ///
    /// # Errors
    /// [`StoreError::Config`] for a backend that cannot abort uploads by id (made with
    /// [`ObjectStoreBackend::new`]); [`StoreError::Io`] if listing or reading a marker
    /// fails.
    pub fn abandoned_uploads(
        &self,
        prefix: &str,
        older_than: Duration,
    ) -> Result<Vec<AbandonedUpload>, StoreError> {
        if self.multipart.is_none() {
            return Err(StoreError::Config {
                url: self.url.to_string(),
                message: "this store was made without abort-by-id (ObjectStoreBackend::new): \
                          its uploads are not recorded; use from_url or with_multipart, or a \
                          bucket lifecycle rule (AbortIncompleteMultipartUpload)"
                    .into(),
            });
        }
        let (prefix, location) = self.list_location(prefix)?;
        let (inner, url) = (self.inner.clone(), self.url.clone());
        let now = SystemTime::now();
        block_on(async move {
            let listed: Vec<object_store::ObjectMeta> = inner
                .list(location.as_ref())
                .try_filter(|meta| {
                    let name = meta.location.filename().unwrap_or("");
                    futures::future::ready(name.ends_with(MARKER_SUFFIX))
                })
                .try_collect()
                .await
                .map_err(|e| describe(&url, &prefix, &e))?;
            let mut found = Vec::new();
            for meta in listed {
                let marker = meta.location.to_string();
                let Some(key) = shard_of(&marker) else {
                    continue;
                };
                let started: SystemTime = meta.last_modified.into();
                let age = now.duration_since(started).unwrap_or(Duration::ZERO);
                if age < older_than {
                    continue;
                }
                let id = match inner.get(&meta.location).await {
                    Ok(result) => result
                        .bytes()
                        .await
                        .map_err(|e| describe(&url, &marker, &e))?,
                    // Removed meanwhile: its upload ended.
                    Err(object_store::Error::NotFound { .. }) => continue,
                    Err(e) => return Err(describe(&url, &marker, &e)),
                };
                let upload_id = String::from_utf8_lossy(&id).trim().to_string();
                found.push(AbandonedUpload {
                    key,
                    upload_id,
                    marker,
                    started,
                });
            }
            found.sort_by(|a, b| a.marker.cmp(&b.marker));
            Ok(found)
        })
    }

    /// Abort the multipart uploads under `prefix` (`""`: the whole store) whose markers
    /// are older than `older_than` ([`ABANDONED_AFTER`] is a safe default: no live writer
    /// takes a day over one shard), remove their markers, and return them. An upload that
    /// already ended (its marker outlived it) only loses its marker. Shards are never
    /// touched. A live upload younger than `older_than` is left alone; one older is
    /// aborted, and its writer's commit then fails with an error (nothing is lost but that
    /// commit: the shard keeps its previous value).
    ///
    /// ```
    /// use std::time::Duration;
    /// use shardwright::store::{Store, Upload};
    /// use shardwright_object_store::{ObjectStoreBackend, PART_BYTES};
    /// let (store, _) = ObjectStoreBackend::from_url("memory:///doc-abort", &[]).unwrap();
    /// let mut upload = store.begin_upload("doc-abort/a.zarr/c/0").unwrap().unwrap();
    /// upload.append(&[&vec![7u8; PART_BYTES + 1]]).unwrap(); // a part is on its way
    /// std::mem::forget(upload); // what a killed writer leaves: neither completed nor aborted
    /// assert!(store.remove_abandoned_uploads("doc-abort", Duration::from_secs(3600)).unwrap().is_empty());
    /// let aborted = store.remove_abandoned_uploads("doc-abort", Duration::ZERO).unwrap();
    /// assert_eq!(aborted.len(), 1);
    /// assert_eq!(aborted[0].key, "doc-abort/a.zarr/c/0");
    /// assert!(store.abandoned_uploads("doc-abort", Duration::ZERO).unwrap().is_empty());
    /// assert!(store.get("doc-abort/a.zarr/c/0").unwrap().is_none());
    /// ```
    ///
    /// # Errors
    /// As [`abandoned_uploads`](ObjectStoreBackend::abandoned_uploads); and
    /// [`StoreError::Io`] (naming the shard) if an abort or a marker's removal fails; what
    /// was aborted before stays aborted.
    pub fn remove_abandoned_uploads(
        &self,
        prefix: &str,
        older_than: Duration,
    ) -> Result<Vec<AbandonedUpload>, StoreError> {
        let found = self.abandoned_uploads(prefix, older_than)?;
        let Some(multipart) = self.multipart.clone() else {
            return Ok(Vec::new());
        };
        let (inner, url) = (self.inner.clone(), self.url.clone());
        let mut aborted = Vec::new();
        for upload in found {
            let shard = self.path(&upload.key)?;
            let marker = self.path(&upload.marker)?;
            let (inner, multipart, url) = (inner.clone(), multipart.clone(), url.clone());
            let (key, id) = (upload.key.clone(), upload.upload_id.clone());
            block_on(async move {
                match multipart.abort_multipart(&shard, &id).await {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                    Err(e) => return Err(describe(&url, &key, &e)),
                }
                match inner.delete(&marker).await {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                    Err(e) => Err(describe(&url, &key, &e)),
                }
            })?;
            aborted.push(upload);
        }
        Ok(aborted)
    }
}

#[cfg(test)]
mod tests {
    use super::{marker_for, shard_of};
    use object_store::path::Path;

    #[test]
    fn markers_name_their_shard_and_nothing_else_is_a_marker() {
        for key in ["a.zarr/c/0/1", "c/0", "k"] {
            let marker = marker_for(&Path::from(key)).to_string();
            assert!(marker.ends_with(".shardwright-upload"), "{marker}");
            assert_eq!(shard_of(&marker).as_deref(), Some(key), "{marker}");
        }
        for not in [
            "a/c/0",
            "a/.0.shardwright-upload",
            "a/.0.0123456789abcdeg.shardwright-upload",
            "a/..0123456789abcdef.shardwright-upload",
            "a/0.0123456789abcdef.shardwright-upload",
        ] {
            assert_eq!(shard_of(not), None, "{not}");
        }
    }
}
