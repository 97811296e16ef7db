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
        let (prefix, location) = self.list_location(prefix)?;
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

impl ObjectStoreBackend {
    /// `prefix` without its outer slashes, and the location a listing of it starts at
    /// (`None`: the whole store).
    ///
    /// # Errors
    /// [`StoreError::InvalidKey`] for a bad prefix.
    pub(crate) fn list_location(
        &self,
        prefix: &str,
    ) -> Result<(String, Option<object_store::path::Path>), StoreError> {
        let prefix = prefix.trim_matches('/').to_string();
        let location = match prefix.is_empty() {
            true => None,
            false => Some(self.path(&prefix)?),
        };
        Ok((prefix, location))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use object_store::memory::InMemory;
    use shardwright::store::Store;
    use shardwright::{Array, ArraySpec};

    use crate::ObjectStoreBackend;

    #[test]
    fn lists_the_objects_under_a_folder_without_hidden_markers() {
        let store = ObjectStoreBackend::new(Arc::new(InMemory::new()), "memory://test");
        for key in ["a/c/0/1", "a/zarr.json", "a/c/0/.1.upload", "ab/c/0"] {
            store.put(key, &[b"x"]).unwrap();
        }
        let mut keys = store.list_prefix("a").unwrap().unwrap();
        keys.sort();
        assert_eq!(keys, ["a/c/0/1", "a/zarr.json"]);
        assert_eq!(store.list_prefix("").unwrap().unwrap().len(), 3);
        assert_eq!(store.list_prefix("none").unwrap(), Some(vec![]));
    }

    #[test]
    fn an_arrays_stored_shards_come_from_one_listing() {
        let store = Arc::new(ObjectStoreBackend::new(
            Arc::new(InMemory::new()),
            "memory://t",
        ));
        let spec = ArraySpec::new(vec![1_000_000_000], "uint8", vec![64]).shards(vec![64]);
        let array = Array::create(store.clone(), "big", &spec).unwrap();
        store.put("big/c/99", &[b"x"]).unwrap();
        assert_eq!(array.stored_shards().unwrap(), Some(vec![vec![99]]));
    }
}
