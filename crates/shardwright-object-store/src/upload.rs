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
use std::io::Write;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use object_store::path::Path;
use object_store::{ObjectStore, PutMultipartOptions, PutOptions, WriteMultipart};
use shardwright::store::{StoreError, Upload, Version};

use crate::{block_on, describe, payload};

/// The size of each part but the last.
pub const PART_BYTES: usize = 8 << 20;
/// Parts being sent at once, per upload.
pub const PARTS_IN_FLIGHT: usize = 2;
/// S3's limit on the parts of one upload.
pub const MAX_PARTS: u64 = 10_000;

/// A shard on its way to an object store (see the module docs).
pub(crate) struct MultipartShardUpload {
    inner: Arc<dyn ObjectStore>,
    url: String,
    key: String,
    location: Path,
    /// Bytes not handed to the multipart upload yet (before it starts: all of them).
    pending: Vec<u8>,
    multipart: Option<WriteMultipart>,
    spool: File,
    len: u64,
    done: bool,
}

impl std::fmt::Debug for MultipartShardUpload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultipartShardUpload")
            .field("url", &self.url)
            .field("key", &self.key)
            .field("len", &self.len)
            .field("started", &self.multipart.is_some())
            .finish_non_exhaustive()
    }
}

impl MultipartShardUpload {
    pub(crate) fn new(
        inner: Arc<dyn ObjectStore>,
        url: &str,
        key: &str,
        location: Path,
    ) -> Result<Self, StoreError> {
        let spool = tempfile::tempfile().map_err(|e| {
            StoreError::io(key, format!("{url}: cannot make the local spool file: {e}"))
        })?;
        Ok(Self {
            inner,
            url: url.to_string(),
            key: key.to_string(),
            location,
            pending: Vec::new(),
            multipart: None,
            spool,
            len: 0,
            done: false,
        })
    }

    fn fail(&self, err: &object_store::Error) -> StoreError {
        describe(&self.url, &self.key, err)
    }

    /// Hand whole parts of `pending` to the multipart upload (starting it), waiting while
    /// [`PARTS_IN_FLIGHT`] are being sent.
    fn send_whole_parts(&mut self) -> Result<(), StoreError> {
        if self.pending.len() < PART_BYTES {
            return Ok(());
        }
        if self.multipart.is_none() {
            let (inner, location) = (self.inner.clone(), self.location.clone());
            let upload = block_on(async move {
                inner
                    .put_multipart_opts(&location, PutMultipartOptions::default())
                    .await
            })
            .map_err(|e| self.fail(&e))?;
            self.multipart = Some(WriteMultipart::new_with_chunk_size(upload, PART_BYTES));
        }
        let whole = self.pending.len() / PART_BYTES * PART_BYTES;
        let multipart = self.multipart.as_mut().expect("started above");
        {
            let _runtime = crate::runtime::enter(); // write() spawns the part uploads
            multipart.write(&self.pending[..whole]);
        }
        self.pending.drain(..whole);
        let waited = block_on(multipart.wait_for_capacity(PARTS_IN_FLIGHT));
        waited.map_err(|e| self.fail(&e))
    }
}

impl Upload for MultipartShardUpload {
    fn append(&mut self, parts: &[&[u8]]) -> Result<(), StoreError> {
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
            self.spool
                .write_all(part)
                .map_err(|e| StoreError::io(&self.key, format!("local spool file: {e}")))?;
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
        self.spool
            .read_exact_at(&mut out, range.start)
            .map_err(|e| StoreError::io(&self.key, format!("local spool file: {e}")))?;
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
        if condition.is_some() {
            return Err(StoreError::io(
                &self.key,
                format!(
                    "{}: a multipart upload cannot complete on a condition",
                    self.url
                ),
            ));
        }
        match self.multipart.take() {
            None => {
                // Shorter than one part: one plain put.
                let data = payload(&[&self.pending]);
                let (inner, location) = (self.inner.clone(), self.location.clone());
                block_on(
                    async move { inner.put_opts(&location, data, PutOptions::default()).await },
                )
                .map_err(|e| self.fail(&e))?;
            }
            Some(mut multipart) => {
                {
                    let _runtime = crate::runtime::enter();
                    multipart.write(&self.pending);
                }
                // finish() aborts the upload itself when a part or the completion fails.
                block_on(multipart.finish()).map_err(|e| self.fail(&e))?;
            }
        }
        self.pending = Vec::new();
        self.done = true;
        Ok(())
    }
}

impl Drop for MultipartShardUpload {
    fn drop(&mut self) {
        if let Some(mut multipart) = self.multipart.take() {
            if !self.done {
                // Let the parts being sent finish first: S3 says a part still uploading
                // during an abort may survive it (and cancelling one midway leaves a
                // half-sent request). Best effort: a failed abort leaves an incomplete
                // upload, which a bucket lifecycle rule (AbortIncompleteMultipartUpload)
                // removes.
                let _ = block_on(async move {
                    let _ = multipart.wait_for_capacity(0).await;
                    multipart.abort().await
                });
            }
        }
    }
}
