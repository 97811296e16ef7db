//! Listing the objects under a prefix: one request per page of keys, so what reads a
//! whole array's shards costs what is stored, not one HEAD request per grid cell.

use futures::TryStreamExt;
use shardwright::store::StoreError;

use crate::{block_on, describe, ObjectStoreBackend};

impl ObjectStoreBackend {
    /// The keys of the objects under `prefix` (a folder key; `""` for the whole store),
    /// leaving out hidden ones (names starting with `.`: the markers of multipart uploads).
    ///
    /// # Errors
    /// [`StoreError::InvalidKey`] for a bad prefix; [`StoreError::Io`] if listing fails.
    pub(crate) fn list_keys(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        let prefix = prefix.trim_matches('/').to_string();
        let location = if prefix.is_empty() {
            None
        } else {
            Some(self.path(&prefix)?)
        };
        let (inner, url) = (self.inner.clone(), self.url.clone());
        block_on(async move {
            inner
                .list(location.as_ref())
                .try_filter_map(|meta| {
                    let hidden = meta.location.filename().is_some_and(|n| n.starts_with('.'));
                    futures::future::ready(Ok((!hidden).then(|| meta.location.to_string())))
                })
                .try_collect()
                .await
                .map_err(|e| describe(&url, &prefix, &e))
        })
    }
}
