//! Listing the files under a folder of a [`FilesystemStore`].

use std::fs;
use std::io::ErrorKind;

use super::FilesystemStore;
use crate::store::StoreError;

impl FilesystemStore {
    /// The keys of the files under `prefix` (a folder key; `""` for the whole store), in
    /// no set order, leaving out hidden files and folders (names starting with `.`: a
    /// writer's temporaries). Links are not followed; a missing folder has no keys.
    ///
    /// # Errors
    /// [`StoreError::InvalidKey`] for a bad prefix; [`StoreError::Io`] naming the folder
    /// that could not be read.
    pub(super) fn list_files(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        let prefix = prefix.trim_matches('/');
        let top = if prefix.is_empty() {
            self.root().to_path_buf()
        } else {
            self.path(prefix)?
        };
        let mut found = Vec::new();
        let mut folders = vec![(top, prefix.to_string())];
        while let Some((folder, key)) = folders.pop() {
            let entries = match fs::read_dir(&folder) {
                Ok(entries) => entries,
                Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                    continue;
                }
                Err(e) => return Err(StoreError::io(&key, e)),
            };
            for entry in entries {
                let entry = entry.map_err(|e| StoreError::io(&key, e))?;
                let name = entry.file_name();
                let Some(name) = name.to_str().filter(|n| !n.starts_with('.')) else {
                    continue; // hidden, or not a name a key can have
                };
                let child = if key.is_empty() {
                    name.to_string()
                } else {
                    format!("{key}/{name}")
                };
                let kind = entry.file_type().map_err(|e| StoreError::io(&child, e))?;
                if kind.is_dir() {
                    folders.push((entry.path(), child));
                } else if kind.is_file() {
                    found.push(child);
                }
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use crate::store::{FilesystemStore, Store};

    #[test]
    fn lists_files_under_a_folder_without_hidden_ones() {
        let dir = tempfile::tempdir().unwrap();
        let store = FilesystemStore::new(dir.path());
        store.put("a/c/0/1", &[b"x"]).unwrap();
        store.put("a/zarr.json", &[b"{}"]).unwrap();
        store.put("ab/c/0", &[b"y"]).unwrap();
        std::fs::write(dir.path().join("a/c/0/.1.f00.shardwright-tmp"), b"t").unwrap();
        let mut keys = store.list_prefix("a").unwrap().unwrap();
        keys.sort();
        assert_eq!(keys, ["a/c/0/1", "a/zarr.json"]);
        assert_eq!(store.list_prefix("missing").unwrap(), Some(vec![]));
        assert_eq!(store.list_prefix("").unwrap().unwrap().len(), 3);
    }
}
