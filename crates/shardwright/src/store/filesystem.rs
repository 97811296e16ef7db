//! A store on a local filesystem with atomic puts.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{check_key, check_range, Store, StoreError, Version};

/// The suffix of temporary files; a file with it is never a chunk key that a Zarr
/// reader looks for, and names start with `.` so listings skip them.
pub(crate) const TEMP_SUFFIX: &str = ".shardwright-tmp";

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A store rooted at a folder. `put` is atomic: the value is written to a temporary file in
/// the same folder, flushed to disk (fsync), then renamed over the key; on any error the
/// temporary file is removed and the old value stays. A crash can leave a temporary file
/// (a hidden `.NAME.PID.N.shardwright-tmp`), never a torn value under the key.
///
/// Versions are the file's inode, size and change time: every put makes a new file, so
/// any put changes the version. Renames onto a key happen under an advisory lock of its
/// folder (`flock`), shared with other processes, so `put_if`'s check and rename are one
/// step for every writer using this store.
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
        let path = self.path(key)?;
        let folder = path
            .parent()
            .expect("a key has a parent folder")
            .to_path_buf();
        fs::create_dir_all(&folder).map_err(|e| StoreError::io(key, e))?;
        let name = path
            .file_name()
            .expect("a key has a name")
            .to_string_lossy();
        let temp = folder.join(format!(
            ".{name}.{}.{}{TEMP_SUFFIX}",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let mut conflict = false;
        let mut write = || -> std::io::Result<()> {
            let mut file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&temp)?;
            write_all_vectored(&mut file, parts)?;
            file.sync_all()?;
            drop(file);
            let dir = File::open(&folder)?;
            dir.lock()?;
            if let Some(expected) = condition {
                if current_version(&path)?.as_ref() != expected {
                    conflict = true;
                    return Err(std::io::Error::other("conflict"));
                }
            }
            fs::rename(&temp, &path)?;
            // Make the rename itself durable; the lock goes with the descriptor.
            dir.sync_all()
        };
        let result = write();
        result.map_err(|e| {
            let _ = fs::remove_file(&temp);
            if conflict {
                StoreError::Conflict {
                    key: key.to_string(),
                }
            } else {
                StoreError::io(key, e)
            }
        })
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
        let mut buffer = vec![0u8; (range.end - range.start) as usize];
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
        let mut bytes = Vec::with_capacity(metadata.len() as usize);
        file.read_to_end(&mut bytes)
            .map_err(|e| StoreError::io(key, e))?;
        Ok(Some((bytes, version_of(&metadata))))
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
        let path = self.path(key)?;
        let Some(folder) = path.parent() else {
            return Err(StoreError::InvalidKey(key.to_string()));
        };
        let dir = match File::open(folder) {
            Ok(dir) => dir,
            Err(e) if e.kind() == ErrorKind::NotFound && expected.is_none() => return Ok(()),
            Err(e) => return Err(StoreError::io(key, e)),
        };
        dir.lock().map_err(|e| StoreError::io(key, e))?;
        if current_version(&path)
            .map_err(|e| StoreError::io(key, e))?
            .as_ref()
            != expected
        {
            return Err(StoreError::Conflict {
                key: key.to_string(),
            });
        }
        match fs::remove_file(&path) {
            Ok(()) => dir.sync_all().map_err(|e| StoreError::io(key, e)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io(key, e)),
        }
    }

    fn delete(&self, key: &str) -> Result<(), StoreError> {
        let path = self.path(key)?;
        let Some(folder) = path.parent() else {
            return Err(StoreError::InvalidKey(key.to_string()));
        };
        let dir = match File::open(folder) {
            Ok(dir) => dir,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(StoreError::io(key, e)),
        };
        // Under the folder's lock, like renames, so it cannot fall between a put_if's
        // check and its rename.
        dir.lock().map_err(|e| StoreError::io(key, e))?;
        match fs::remove_file(&path) {
            Ok(()) => dir.sync_all().map_err(|e| StoreError::io(key, e)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io(key, e)),
        }
    }
}

fn version_of(metadata: &fs::Metadata) -> Version {
    use std::os::unix::fs::MetadataExt;
    Version(format!(
        "{}:{}:{}:{}.{}:{}.{}",
        metadata.dev(),
        metadata.ino(),
        metadata.len(),
        metadata.mtime(),
        metadata.mtime_nsec(),
        metadata.ctime(),
        metadata.ctime_nsec()
    ))
}

/// The version of the file at `path` now, or `None` if there is none.
fn current_version(path: &Path) -> std::io::Result<Option<Version>> {
    match fs::metadata(path) {
        Ok(m) => Ok(Some(version_of(&m))),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Write every part with as few system calls as the kernel allows (one `writev` per 1024
/// parts, the kernel's limit of slices per call), rather than one `write` per chunk.
fn write_all_vectored(file: &mut File, parts: &[&[u8]]) -> std::io::Result<()> {
    use std::io::IoSlice;
    const MAX_SLICES: usize = 1024;
    for group in parts.chunks(MAX_SLICES) {
        let mut slices: Vec<IoSlice<'_>> = group.iter().map(|p| IoSlice::new(p)).collect();
        let mut rest = &mut slices[..];
        while !rest.is_empty() {
            match file.write_vectored(rest) {
                Ok(0) => return Err(std::io::Error::from(ErrorKind::WriteZero)),
                Ok(n) => IoSlice::advance_slices(&mut rest, n),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}
