//! A store on a local filesystem with atomic puts.
//!
//! [`FilesystemStore`] is here; its streaming uploads (temporary files renamed into place)
//! are in `upload`, its versions (file identity held open) in `version`, and the removal
//! of crash debris (temporary files of dead writers) in `debris`, and the guarded removal
//! of a folder to overwrite it in `overwrite`.

mod debris;
mod list;
mod overwrite;
mod upload;
mod version;

use std::fs::{self, File};
use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::{Path, PathBuf};

#[cfg(test)]
pub(crate) use upload::TEMP_SUFFIX;
#[cfg(test)]
pub(crate) use upload::{temp_name, write_all_vectored, CREATED, RACE};
#[cfg(test)]
pub(crate) use version::TEST_GRANULARITY_NS;

pub use overwrite::remove_folder_to_overwrite;

use super::{check_key, check_range, Debris, Store, StoreError, Upload, Version};

/// A store rooted at a folder. `put` is atomic: the value is written to a temporary file in
/// the same folder, flushed to disk (fsync), then renamed over the key; on any error the
/// temporary file is removed and the old value stays. A crash can leave a temporary file
/// (a hidden `.NAME.RANDOM.shardwright-tmp`, locked with `flock` while its writer lives),
/// never a torn value under the key. Such debris is removed by the first upload of a later
/// process into its folder, and by
/// [`remove_stale_temporaries`](FilesystemStore::remove_stale_temporaries); a file whose
/// lock is held (a live writer's, in any process) never is.
///
/// Versions are the file's identity (device, inode), size and times, and a version read
/// with [`get_versioned`](Store::get_versioned) keeps the file open, so its inode cannot
/// be reused meanwhile: every put makes a new file, so any put changes the version, even
/// on filesystems with coarse timestamps. Only such a pinned version can pass a
/// conditional put or delete: one rebuilt from its tag ([`Version::new`]) is a conflict. Renames onto a key happen under an advisory lock
/// of its folder (`flock`), shared with other processes, so `put_if`'s check and rename
/// are one step for every writer using this store.
///
/// ```
/// use shardwright::store::{FilesystemStore, Store};
/// let dir = tempfile::tempdir().unwrap();
/// let store = FilesystemStore::new(dir.path());
/// store.put("arr/c/0/0", &[b"shard"]).unwrap();
/// assert_eq!(std::fs::read(dir.path().join("arr/c/0/0")).unwrap(), b"shard");
/// ```
#[derive(Debug, Clone)]
pub struct FilesystemStore {
    root: PathBuf,
}

impl FilesystemStore {
    /// A store whose keys are paths under `root`.
    pub fn new(root: impl AsRef<Path>) -> Self {
        Self {
            root: root.as_ref().to_path_buf(),
        }
    }

    /// The root folder.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, key: &str) -> Result<PathBuf, StoreError> {
        check_key(key)?;
        Ok(self.root.join(key))
    }

    /// Write `parts` to a temporary file, fsync it, then — under the folder's lock, after
    /// checking the current version when `condition` is given — rename it onto `key`.
    fn replace(
        &self,
        key: &str,
        parts: &[&[u8]],
        condition: Option<Option<&Version>>,
    ) -> Result<(), StoreError> {
        let mut upload = self.upload(key)?;
        upload.append(parts)?;
        upload.complete(condition)
        // An upload that did not complete removes its temporary file when dropped.
    }

    /// A new temporary file next to `key`'s path.
    fn upload(&self, key: &str) -> Result<upload::FileUpload, StoreError> {
        self.upload_named(key, upload::temp_name)
    }

    /// Remove the file at `key` (with `condition`, only if it is still at that version),
    /// under its folder's lock, like renames, so it cannot fall between a conditional put's
    /// check and its rename; then flush the folder.
    fn remove(&self, key: &str, condition: Option<Option<&Version>>) -> Result<(), StoreError> {
        let path = self.path(key)?;
        let Some(folder) = path.parent() else {
            return Err(StoreError::InvalidKey(key.to_string()));
        };
        let dir = match File::open(folder) {
            Ok(dir) => dir,
            // No folder, so no value: nothing to remove, unless one was expected there.
            Err(e) if e.kind() == ErrorKind::NotFound => {
                return match condition {
                    Some(Some(_)) => Err(StoreError::Conflict {
                        key: key.to_string(),
                    }),
                    _ => Ok(()),
                };
            }
            Err(e) => return Err(StoreError::io(key, e)),
        };
        dir.lock().map_err(|e| StoreError::io(key, e))?;
        if let Some(expected) = condition {
            if !version::matches(&path, expected).map_err(|e| StoreError::io(key, e))? {
                return Err(StoreError::Conflict {
                    key: key.to_string(),
                });
            }
        }
        match fs::remove_file(&path) {
            Ok(()) => dir.sync_all().map_err(|e| StoreError::NotDurable {
                key: key.to_string(),
                message: e.to_string(),
            }),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io(key, e)),
        }
    }

    fn open(&self, key: &str) -> Result<Option<File>, StoreError> {
        let path = self.path(key)?;
        match File::open(&path) {
            Ok(file) => Ok(Some(file)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::io(key, e)),
        }
    }
}

impl Store for FilesystemStore {
    fn begin_upload(&self, key: &str) -> Result<Option<Box<dyn Upload>>, StoreError> {
        Ok(Some(Box::new(self.upload(key)?)))
    }

    fn streams(&self) -> bool {
        true
    }

    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.path(key)?;
        match fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) if path.is_dir() => Err(StoreError::io(key, format!("is a folder ({e})"))),
            Err(e) => Err(StoreError::io(key, e)),
        }
    }

    fn get_range(&self, key: &str, range: Range<u64>) -> Result<Option<Vec<u8>>, StoreError> {
        let Some(mut file) = self.open(key)? else {
            return Ok(None);
        };
        let size = file.metadata().map_err(|e| StoreError::io(key, e))?.len();
        check_range(key, &range, size)?;
        let mut buffer = crate::buffer::zeroed((range.end - range.start) as usize)
            .map_err(|e| StoreError::io(key, e))?;
        file.seek(SeekFrom::Start(range.start))
            .and_then(|_| file.read_exact(&mut buffer))
            .map_err(|e| StoreError::io(key, e))?;
        Ok(Some(buffer))
    }

    fn size(&self, key: &str) -> Result<Option<u64>, StoreError> {
        let path = self.path(key)?;
        match fs::metadata(&path) {
            Ok(m) if m.is_file() => Ok(Some(m.len())),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::io(key, e)),
        }
    }

    fn put(&self, key: &str, parts: &[&[u8]]) -> Result<(), StoreError> {
        self.replace(key, parts, None)
    }

    fn get_versioned(&self, key: &str) -> Result<Option<(Vec<u8>, Version)>, StoreError> {
        let Some(mut file) = self.open(key)? else {
            return Ok(None);
        };
        // The version and the bytes come from the same open file.
        let metadata = file.metadata().map_err(|e| StoreError::io(key, e))?;
        let mut bytes = Vec::new();
        bytes
            .try_reserve_exact(metadata.len() as usize)
            .map_err(|_| StoreError::io(key, crate::buffer::AllocError::new(metadata.len())))?;
        file.read_to_end(&mut bytes)
            .map_err(|e| StoreError::io(key, e))?;
        Ok(Some((bytes, version::pinned(file, &metadata))))
    }

    fn put_if(
        &self,
        key: &str,
        parts: &[&[u8]],
        expected: Option<&Version>,
    ) -> Result<(), StoreError> {
        self.replace(key, parts, Some(expected))
    }

    fn delete_if(&self, key: &str, expected: Option<&Version>) -> Result<(), StoreError> {
        self.remove(key, Some(expected))
    }

    fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.remove(key, None)
    }

    /// Every file under `prefix` but hidden ones (temporaries); links are not followed.
    fn list_prefix(&self, prefix: &str) -> Result<Option<Vec<String>>, StoreError> {
        self.list_files(prefix).map(Some)
    }

    /// The stale temporary files under `prefix` (see [`FilesystemStore::stale_temporaries`]).
    fn debris(&self, prefix: &str, remove: bool) -> Result<Vec<Debris>, StoreError> {
        let keys = if remove {
            self.remove_stale_temporaries(prefix)?
        } else {
            self.stale_temporaries(prefix)?
        };
        Ok(keys
            .into_iter()
            .map(|key| Debris {
                key,
                what: "stale temporary file of a dead writer".into(),
            })
            .collect())
    }
}

#[cfg(test)]
mod debris_tests;
#[cfg(test)]
mod tests;
