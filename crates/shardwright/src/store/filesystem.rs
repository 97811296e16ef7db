//! A store on a local filesystem with atomic puts.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{check_key, check_range, Store, StoreError, Upload, Version};

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
        let mut upload = self.upload(key)?;
        upload.append(parts)?;
        upload.complete(condition)
        // An upload that did not complete removes its temporary file when dropped.
    }

    /// A new temporary file next to `key`'s path.
    fn upload(&self, key: &str) -> Result<FileUpload, StoreError> {
        let path = self.path(key)?;
        let folder = path
            .parent()
            .expect("a key has a parent folder")
            .to_path_buf();
        let name = path
            .file_name()
            .expect("a key has a name")
            .to_string_lossy();
        let temp = folder.join(format!(
            ".{name}.{}.{}{TEMP_SUFFIX}",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let mut created = Vec::new();
        let mut attempts = 0;
        let file = loop {
            created
                .extend(create_folders(&folder, &self.root).map_err(|e| StoreError::io(key, e))?);
            let opened = OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&temp);
            match opened {
                Ok(file) => break file,
                // Another upload that was given up removed an empty folder meanwhile.
                Err(e) if e.kind() == ErrorKind::NotFound && attempts < 10 => attempts += 1,
                Err(e) => {
                    remove_folders(&created);
                    return Err(StoreError::io(key, e));
                }
            }
        };
        Ok(FileUpload {
            key: key.to_string(),
            path,
            folder,
            temp,
            file,
            len: 0,
            done: false,
            created,
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

/// A streaming upload: a hidden temporary file in the key's folder, renamed onto the key
/// at completion (after fsync, under the folder's lock), removed if dropped before.
#[derive(Debug)]
struct FileUpload {
    key: String,
    path: PathBuf,
    folder: PathBuf,
    temp: PathBuf,
    file: File,
    len: u64,
    done: bool,
    /// Folders this upload created (deepest last), removed again if it is given up and
    /// they are still empty.
    created: Vec<PathBuf>,
}

impl FileUpload {
    fn io(&self, e: impl std::fmt::Display) -> StoreError {
        StoreError::io(&self.key, e)
    }

    fn check_open(&self) -> Result<(), StoreError> {
        if self.done {
            return Err(self.io("the upload is already complete"));
        }
        Ok(())
    }
}

impl Upload for FileUpload {
    fn append(&mut self, parts: &[&[u8]]) -> Result<(), StoreError> {
        self.check_open()?;
        if let Err(e) = write_all_vectored(&mut self.file, parts) {
            // Part of it may be written: cut back so the upload stays what `len` says.
            let _ = self.truncate(self.len);
            return Err(self.io(e));
        }
        let start = self.len;
        self.len += parts.iter().map(|p| p.len() as u64).sum::<u64>();
        start_writeback(&self.file, start, self.len - start);
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn read(&mut self, range: Range<u64>) -> Result<Vec<u8>, StoreError> {
        use std::os::unix::fs::FileExt;
        check_range(&self.key, &range, self.len)?;
        let mut buffer = vec![0u8; (range.end - range.start) as usize];
        self.file
            .read_exact_at(&mut buffer, range.start)
            .map_err(|e| self.io(e))?;
        Ok(buffer)
    }

    fn truncate(&mut self, len: u64) -> Result<(), StoreError> {
        self.check_open()?;
        let len = len.min(self.len);
        self.file
            .set_len(len)
            .and_then(|()| self.file.seek(SeekFrom::Start(len)))
            .map_err(|e| self.io(e))?;
        self.len = len;
        Ok(())
    }

    fn complete(&mut self, condition: Option<Option<&Version>>) -> Result<(), StoreError> {
        self.check_open()?;
        self.file.sync_all().map_err(|e| self.io(e))?;
        let dir = File::open(&self.folder).map_err(|e| self.io(e))?;
        dir.lock().map_err(|e| self.io(e))?;
        if let Some(expected) = condition {
            if current_version(&self.path)
                .map_err(|e| self.io(e))?
                .as_ref()
                != expected
            {
                return Err(StoreError::Conflict {
                    key: self.key.clone(),
                });
            }
        }
        fs::rename(&self.temp, &self.path).map_err(|e| self.io(e))?;
        self.done = true;
        // Make the rename itself durable; the lock goes with the descriptor.
        dir.sync_all().map_err(|e| self.io(e))
    }
}

impl Drop for FileUpload {
    fn drop(&mut self) {
        if !self.done {
            let _ = fs::remove_file(&self.temp);
            remove_folders(&self.created);
        }
    }
}

/// Create `folder` and its missing parents up to `root`; returns those created, outermost
/// first.
fn create_folders(folder: &Path, root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut missing = Vec::new();
    let mut at = folder;
    while !at.exists() && at != root {
        missing.push(at.to_path_buf());
        match at.parent() {
            Some(parent) => at = parent,
            None => break,
        }
    }
    let mut created = Vec::new();
    for dir in missing.into_iter().rev() {
        match fs::create_dir(&dir) {
            Ok(()) => created.push(dir),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    if !folder.is_dir() {
        fs::create_dir_all(folder)?;
    }
    Ok(created)
}

/// Remove the folders `created` (outermost first) that are empty, deepest first.
fn remove_folders(created: &[PathBuf]) {
    for dir in created.iter().rev() {
        // Fails, harmlessly, when another writer put something in it meanwhile.
        let _ = fs::remove_dir(dir);
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

/// Ask the kernel to start writing `len` bytes at `offset` of `file` to disk now, without
/// waiting, so the fsync at completion has little left to do (measured: 6 ms per 10 MiB
/// shard otherwise). Only a hint: errors are ignored, and the fsync still decides.
#[cfg(target_os = "linux")]
fn start_writeback(file: &File, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return;
    };
    // SAFETY: the descriptor is open for the duration of the call; the call reads no
    // memory of ours.
    unsafe {
        libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE);
    }
}

#[cfg(not(target_os = "linux"))]
fn start_writeback(_file: &File, _offset: u64, _len: u64) {}

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
