//! Streaming a shard to an object store: a multipart upload whose parts go out while the
//! shard is still being written; the object appears only when the upload completes.
//!
//! - Nothing is sent until a whole part ([`PART_BYTES`]) is ready; a shard that ends before
//!   that is stored with one plain `PutObject` at completion.
//! - Then parts of [`PART_BYTES`] go out, at most [`PARTS_IN_FLIGHT`] at a time (a writer
//!   that outruns the network waits); the last part may be shorter. S3 wants parts of
//!   5 MiB or more except the last, and at most 10,000 of them: a shard may reach
//!   10,000 × 8 MiB = 78 GiB encoded.
//! - Dropping an upload that did not complete aborts it (`AbortMultipartUpload`), so no
//!   incomplete upload is left behind.
//! - Every byte sent is also kept in an unlinked local temporary file (the spool; disk,
//!   not memory) so the writer can read chunks back: to compact a shard whose chunks were
//!   written twice, or to store a merge, which must be conditional, with one conditional
//!   `PutObject` — a multipart upload cannot complete on a condition here
//!   ([`Upload::completes_conditionally`] is `false`) and cannot take parts back.

use std::fs::File;
use std::io::Write as _;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path;
use object_store::{
    MultipartId, MultipartUpload, ObjectStore, ObjectStoreExt, PutMultipartOptions, PutOptions,
    PutPayload, PutResult, UploadPart, WriteMultipart,
};
use shardwright::store::{StoreError, Upload, Version};

use crate::abandoned::{marker_for, marker_payload};
use crate::redact::Named;
use crate::{block_on, describe};

/// The size of each part but the last.
pub const PART_BYTES: usize = 8 << 20;
/// Parts being sent at once, per upload.
pub const PARTS_IN_FLIGHT: usize = 2;
/// S3's limit on the parts of one upload.
pub const MAX_PARTS: u64 = 10_000;

/// Where an upload stands.
enum State {
    /// Nothing sent yet: every byte is in `pending`.
    Buffering,
    /// The multipart upload has begun; the bytes sent are also in the spool file.
    Sending {
        multipart: WriteMultipart,
        spool: File,
        /// The upload's marker object (recorded uploads only), removed once it ends.
        marker: Option<Marker>,
    },
    /// Completed: the object is stored.
    Done,
    /// A request failed (the multipart upload, if any, was or will be aborted).
    Failed,
}

/// A shard on its way to an object store (see the module docs).
pub(crate) struct MultipartShardUpload {
    inner: Arc<dyn ObjectStore>,
    /// Multipart calls by id: with them the upload records itself in a marker.
    by_id: Option<Arc<dyn MultipartStore>>,
    url: Named,
    key: String,
    location: Path,
    /// Bytes not handed to the multipart upload yet (before it starts: all of them).
    pending: Vec<u8>,
    state: State,
    len: u64,
    /// Bytes handed to the multipart upload (and written to the spool).
    sent: u64,
}

impl std::fmt::Debug for MultipartShardUpload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.state {
            State::Buffering => "buffering",
            State::Sending { .. } => "sending",
            State::Done => "done",
            State::Failed => "failed",
        };
        f.debug_struct("MultipartShardUpload")
            .field("url", &self.url.as_str())
            .field("key", &self.key)
            .field("len", &self.len)
            .field("state", &state)
            .finish_non_exhaustive()
    }
}

impl MultipartShardUpload {
    pub(crate) fn new(
        inner: Arc<dyn ObjectStore>,
        by_id: Option<Arc<dyn MultipartStore>>,
        url: &Named,
        key: &str,
        location: Path,
    ) -> Self {
        Self {
            inner,
            by_id,
            url: url.clone(),
            key: key.to_string(),
            location,
            pending: Vec::new(),
            state: State::Buffering,
            len: 0,
            sent: 0,
        }
    }

    /// Mark the upload failed (aborting the multipart upload, if one is open) and
    /// describe `err`.
    fn fail(&mut self, err: &object_store::Error) -> StoreError {
        abort(std::mem::replace(&mut self.state, State::Failed));
        describe(&self.url, &self.key, err)
    }

    fn unusable(&self) -> Option<StoreError> {
        let what = match self.state {
            State::Done => "completed",
            State::Failed => "failed",
            _ => return None,
        };
        Some(StoreError::io(
            &self.key,
            format!("{}: this upload has {what}; begin another", self.url),
        ))
    }

    /// Begin the multipart upload and the spool file.
    fn start(&mut self) -> Result<(), StoreError> {
        let spool = tempfile::tempfile().map_err(|e| {
            StoreError::io(
                &self.key,
                format!(
                    "{}: cannot make the local spool file (TMPDIR): {e}",
                    self.url
                ),
            )
        })?;
        let (inner, location) = (self.inner.clone(), self.location.clone());
        let by_id = self.by_id.clone();
        let started = block_on(async move {
            let Some(by_id) = by_id else {
                let upload = inner
                    .put_multipart_opts(&location, PutMultipartOptions::default())
                    .await?;
                return Ok((upload, None));
            };
            // Recorded: the marker is stored before any part, so an upload holding bytes
            // always has one (see `abandoned`).
            let id = by_id.create_multipart(&location).await?;
            let marker = marker_for(&location);
            if let Err(e) = inner.put(&marker, marker_payload(&id)).await {
                let _ = by_id.abort_multipart(&location, &id).await;
                return Err(e);
            }
            let upload: Box<dyn MultipartUpload> = Box::new(ById {
                store: by_id,
                location: location.clone(),
                id,
                next: 0,
                parts: Arc::default(),
            });
            Ok((
                upload,
                Some(Marker {
                    inner,
                    path: marker,
                }),
            ))
        });
        match started {
            Ok((upload, marker)) => {
                self.state = State::Sending {
                    multipart: WriteMultipart::new_with_chunk_size(upload, PART_BYTES),
                    spool,
                    marker,
                };
                Ok(())
            }
            Err(e) => Err(self.fail(&e)),
        }
    }

    /// Send the whole parts of `pending`, one at a time, each once fewer than
    /// [`PARTS_IN_FLIGHT`] are on their way (so one big append cannot put many in flight).
    fn send_whole_parts(&mut self) -> Result<(), StoreError> {
        while self.pending.len() >= PART_BYTES {
            if matches!(self.state, State::Buffering) {
                self.start()?;
            }
            let State::Sending {
                multipart, spool, ..
            } = &mut self.state
            else {
                unreachable!("started above");
            };
            let waited = block_on(multipart.wait_for_capacity(PARTS_IN_FLIGHT));
            if let Err(e) = waited {
                return Err(self.fail(&e));
            }
            let part = bytes::Bytes::copy_from_slice(&self.pending[..PART_BYTES]);
            if let Err(e) = spool.write_all(&part) {
                abort(std::mem::replace(&mut self.state, State::Failed));
                return Err(StoreError::io(&self.key, format!("local spool file: {e}")));
            }
            {
                let _runtime = crate::runtime::enter(); // put() spawns the part's upload
                multipart.put(part);
            }
            self.pending.drain(..PART_BYTES);
            self.sent += PART_BYTES as u64;
        }
        Ok(())
    }
}

impl Upload for MultipartShardUpload {
    fn append(&mut self, parts: &[&[u8]]) -> Result<(), StoreError> {
        if let Some(err) = self.unusable() {
            return Err(err);
        }
        let added: u64 = parts.iter().map(|p| p.len() as u64).sum();
        if (self.len + added).div_ceil(PART_BYTES as u64) > MAX_PARTS {
            return Err(StoreError::io(
                &self.key,
                format!(
                    "{}: a shard larger than {MAX_PARTS} parts of {} MiB cannot be uploaded",
                    self.url,
                    PART_BYTES >> 20
                ),
            ));
        }
        for part in parts.iter().filter(|p| !p.is_empty()) {
            self.pending.extend_from_slice(part);
            self.len += part.len() as u64;
            self.send_whole_parts()?;
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn read(&mut self, range: Range<u64>) -> Result<Vec<u8>, StoreError> {
        if range.start > range.end || range.end > self.len {
            return Err(StoreError::Range {
                key: self.key.clone(),
                start: range.start,
                end: range.end,
                size: self.len,
            });
        }
        let n = usize::try_from(range.end - range.start)
            .map_err(|_| StoreError::io(&self.key, "range larger than memory"))?;
        let mut out =
            shardwright::buffer::zeroed(n).map_err(|e| StoreError::io(&self.key, e.to_string()))?;
        // The first `sent` bytes are in the spool, the rest in `pending`.
        let from_spool = range.end.min(self.sent).saturating_sub(range.start);
        if from_spool > 0 {
            let State::Sending { spool, .. } = &self.state else {
                return Err(self.unusable().unwrap_or_else(|| {
                    StoreError::io(&self.key, "sent bytes without a spool file")
                }));
            };
            spool
                .read_exact_at(&mut out[..from_spool as usize], range.start)
                .map_err(|e| StoreError::io(&self.key, format!("local spool file: {e}")))?;
        }
        let rest_start = range.start.max(self.sent) - self.sent;
        let rest = &mut out[from_spool as usize..];
        let at = rest_start as usize;
        rest.copy_from_slice(&self.pending[at..at + rest.len()]);
        Ok(out)
    }

    fn truncate(&mut self, len: u64) -> Result<(), StoreError> {
        if len == self.len {
            return Ok(());
        }
        Err(StoreError::io(
            &self.key,
            format!(
                "{}: a multipart upload cannot take back what it sent ({} bytes, asked to keep {len})",
                self.url, self.len
            ),
        ))
    }

    fn completes_conditionally(&self) -> bool {
        false
    }

    fn complete(&mut self, condition: Option<Option<&Version>>) -> Result<(), StoreError> {
        if let Some(err) = self.unusable() {
            return Err(err);
        }
        if condition.is_some() {
            return Err(StoreError::io(
                &self.key,
                format!(
                    "{}: a multipart upload cannot complete on a condition",
                    self.url
                ),
            ));
        }
        let pending = std::mem::take(&mut self.pending);
        match std::mem::replace(&mut self.state, State::Failed) {
            State::Buffering => {
                // Shorter than one part: one plain put (of the buffer itself, not a copy).
                let data = PutPayload::from(bytes::Bytes::from(pending));
                let (inner, location) = (self.inner.clone(), self.location.clone());
                let put = block_on(async move {
                    inner.put_opts(&location, data, PutOptions::default()).await
                });
                if let Err(e) = put {
                    return Err(self.fail(&e));
                }
            }
            State::Sending {
                mut multipart,
                marker,
                ..
            } => {
                {
                    let _runtime = crate::runtime::enter();
                    multipart.put(bytes::Bytes::from(pending));
                }
                // finish() aborts the upload itself when a part or the completion fails;
                // the marker goes either way (a failed removal only leaves a marker whose
                // upload has ended, which a sweep removes).
                let finished = block_on(async move {
                    let finished = multipart.finish().await;
                    if let Some(marker) = marker {
                        marker.remove().await;
                    }
                    finished
                });
                if let Err(e) = finished {
                    return Err(self.fail(&e));
                }
            }
            State::Done | State::Failed => unreachable!("checked above"),
        }
        self.state = State::Done;
        Ok(())
    }
}

impl Drop for MultipartShardUpload {
    fn drop(&mut self) {
        abort(std::mem::replace(&mut self.state, State::Failed));
    }
}

/// Abort the multipart upload of `state`, if it has one. Every part being sent ends first
/// (S3: a part still uploading during an abort may survive it, and cancelling one midway
/// leaves a half-sent request). Best effort: a failed abort leaves an incomplete upload,
/// which a bucket lifecycle rule (AbortIncompleteMultipartUpload) removes.
fn abort(state: State) {
    if let State::Sending {
        mut multipart,
        marker,
        ..
    } = state
    {
        block_on(async move {
            while multipart.wait_for_capacity(0).await.is_err() {}
            // A failed abort keeps the marker, so a sweep can abort the upload later.
            if multipart.abort().await.is_ok() {
                if let Some(marker) = marker {
                    marker.remove().await;
                }
            }
        });
    }
}

/// The marker object of a recorded upload.
struct Marker {
    inner: Arc<dyn ObjectStore>,
    path: Path,
}

impl Marker {
    /// Remove the marker; best effort (one left behind names an upload that has ended,
    /// and a sweep removes it).
    async fn remove(self) {
        let _ = self.inner.delete(&self.path).await;
    }
}

/// A multipart upload through the store's calls by upload id (so the id is known, for the
/// marker); parts as object_store's own uploads send them.
struct ById {
    store: Arc<dyn MultipartStore>,
    location: Path,
    id: MultipartId,
    next: usize,
    /// The parts sent, by index.
    parts: Arc<std::sync::Mutex<Vec<Option<PartId>>>>,
}

impl std::fmt::Debug for ById {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ById")
            .field("location", &self.location)
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl MultipartUpload for ById {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        let index = self.next;
        self.next += 1;
        let (store, location, id) = (self.store.clone(), self.location.clone(), self.id.clone());
        let parts = Arc::clone(&self.parts);
        Box::pin(async move {
            let part = store.put_part(&location, &id, index, data).await?;
            let mut parts = parts
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if parts.len() <= index {
                parts.resize(index + 1, None);
            }
            if let Some(slot) = parts.get_mut(index) {
                *slot = Some(part);
            }
            Ok(())
        })
    }

    async fn complete(&mut self) -> object_store::Result<PutResult> {
        let sent: Option<Vec<PartId>> = self
            .parts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .cloned()
            .collect();
        let parts = match sent {
            Some(parts) if parts.len() == self.next => parts,
            _ => {
                return Err(object_store::Error::Generic {
                    store: "shardwright",
                    source: "a part of the upload was not sent".into(),
                })
            }
        };
        self.store
            .complete_multipart(&self.location, &self.id, parts)
            .await
    }

    async fn abort(&mut self) -> object_store::Result<()> {
        self.store.abort_multipart(&self.location, &self.id).await
    }
}
