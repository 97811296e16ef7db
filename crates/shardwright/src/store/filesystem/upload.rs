//! Streaming uploads of the filesystem store: a hidden temporary file in the key's folder,
//! renamed onto the key at completion, removed if the upload is dropped before.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::version::matches;
use super::{debris, FilesystemStore};
use crate::store::{check_range, StoreError, Upload, Version};

/// The suffix of temporary files; a file with it is never a chunk key that a Zarr
/// reader looks for, and names start with `.` so listings skip them.
pub(crate) const TEMP_SUFFIX: &str = ".shardwright-tmp";

/// How many times creating the folders and the temporary file is tried again when a
/// concurrent upload that was given up removed a folder meanwhile, or a name was taken.
const CREATE_ATTEMPTS: u32 = 32;

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A name for a temporary file no other writer takes: 64 random bits (the standard
/// library's randomly keyed hasher over the process id, a counter and the clock), so
/// writers in other PID namespaces sharing the folder (containers on one volume) do not
/// collide; the file is still created with `O_EXCL`, and a name taken anyway is retried.
pub(crate) fn temp_name(name: &str) -> String {
    use std::hash::BuildHasher;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed = (
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed),
        nanos,
    );
    let random = std::hash::RandomState::new().hash_one(seed);
    format!(".{name}.{random:016x}{TEMP_SUFFIX}")
}

/// A streaming upload: a hidden temporary file in the key's folder, renamed onto the key
/// at completion (after fsync, under the folder's lock), removed if dropped before. The
/// file is locked (`flock`, exclusive) while the upload lives, so a clean-up of crash
/// debris can tell a live writer's temporary file from a dead one's.
#[derive(Debug)]
pub(crate) struct FileUpload {
    key: String,
    path: PathBuf,
    folder: PathBuf,
    temp: PathBuf,
    file: File,
    len: u64,
    done: bool,
    /// Folders this upload created (outermost first), removed again if it is given up and
    /// they are still empty.
    created: Vec<PathBuf>,
    #[cfg(test)]
    pub(crate) fail_dir_syncs: u32,
}

impl FilesystemStore {
    /// A new temporary file next to `key`'s path, named by `names` (tried again with the
    /// next name if one is taken).
    pub(crate) fn upload_named(
        &self,
        key: &str,
        mut names: impl FnMut(&str) -> String,
    ) -> Result<FileUpload, StoreError> {
        let path = self.path(key)?;
        let (Some(folder), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(StoreError::InvalidKey(key.to_string()));
        };
        let folder = folder.to_path_buf();
        let name = name.to_string_lossy().into_owned();
        let mut created = Vec::new();
        let mut attempt = 0;
        let (temp, file) = loop {
            attempt += 1;
            let retry = attempt < CREATE_ATTEMPTS;
            // A concurrent upload that was given up may remove an empty folder at any
            // moment until our file is in it: creating the folders or the file then fails
            // with `NotFound`, and both are tried again.
            match create_folders(&folder, self.root()) {
                Ok(made) => created.extend(made),
                Err(e) if e.kind() == ErrorKind::NotFound && retry => continue,
                Err(e) => {
                    remove_folders(&created);
                    return Err(StoreError::io(key, e));
                }
            }
            // The debris of dead writers in this folder goes, once per process.
            debris::sweep_once(&folder);
            let temp = folder.join(names(&name));
            #[cfg(test)]
            race_point(&folder);
            debris::register(&temp);
            let opened = OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&temp)
                .and_then(|file| {
                    #[cfg(test)]
                    created_point(&temp);
                    lock_created(file, &temp)
                });
            let failure = match opened {
                Ok(Some(file)) => break (temp, file),
                // A sweeper of another process removed it before it was locked.
                Ok(None) if retry => None,
                Ok(None) => Some(StoreError::io(
                    key,
                    "another process removed each temporary file made for this upload",
                )),
                Err(e)
                    if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::AlreadyExists)
                        && retry =>
                {
                    None
                }
                Err(e) => Some(StoreError::io(key, e)),
            };
            debris::unregister(&temp);
            if let Some(err) = failure {
                remove_folders(&created);
                return Err(err);
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
            #[cfg(test)]
            fail_dir_syncs: 0,
        })
    }
}

/// Lock the temporary file just created at `temp` (blocking only while a sweeper examines
/// it, a moment) and check that `temp` still names it: a sweeper of another process may
/// have taken the file, unlocked between its creation and this lock, for a dead writer's
/// and removed it; then `None`, and the caller makes another. Where locks do not work the
/// file is used unlocked: sweeps never remove files there.
fn lock_created(file: File, temp: &Path) -> std::io::Result<Option<File>> {
    use std::os::unix::fs::MetadataExt;
    if file.lock().is_err() {
        return Ok(Some(file));
    }
    let here = match fs::symlink_metadata(temp) {
        Ok(here) => here,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            let _ = fs::remove_file(temp); // made by this upload (O_EXCL)
            return Err(e);
        }
    };
    let mine = file.metadata()?;
    Ok(((here.dev(), here.ino()) == (mine.dev(), mine.ino())).then_some(file))
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

    /// The temporary file's path.
    #[cfg(test)]
    pub(crate) fn temp_path(&self) -> &Path {
        &self.temp
    }

    /// Flush the folder (and so the rename) to disk. Only an interrupted call is tried
    /// again: after a real failure Linux forgets the error, so a second fsync could
    /// "succeed" without the data on disk.
    fn sync_folder(&mut self, dir: &File) -> std::io::Result<()> {
        loop {
            #[cfg(test)]
            if self.fail_dir_syncs > 0 {
                self.fail_dir_syncs -= 1;
                return Err(std::io::Error::other("injected fsync failure"));
            }
            match dir.sync_all() {
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                other => return other,
            }
        }
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
        let mut buffer =
            crate::buffer::zeroed((range.end - range.start) as usize).map_err(|e| self.io(e))?;
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
            if !matches(&self.path, expected).map_err(|e| self.io(e))? {
                return Err(StoreError::Conflict {
                    key: self.key.clone(),
                });
            }
        }
        fs::rename(&self.temp, &self.path).map_err(|e| self.io(e))?;
        self.done = true;
        debris::unregister(&self.temp);
        // Make the rename itself durable; the lock goes with the descriptor.
        self.sync_folder(&dir).map_err(|e| StoreError::NotDurable {
            key: self.key.clone(),
            message: e.to_string(),
        })
    }
}

impl Drop for FileUpload {
    fn drop(&mut self) {
        if !self.done {
            let _ = fs::remove_file(&self.temp);
            debris::unregister(&self.temp);
            remove_folders(&self.created);
        }
    }
}

/// Create `folder` and its missing parents up to `root`; returns those created, outermost
/// first. `NotFound` means a parent vanished meanwhile (the caller tries again).
fn create_folders(folder: &Path, root: &Path) -> std::io::Result<Vec<PathBuf>> {
    if !root.is_dir() {
        fs::create_dir_all(root)?;
    }
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
        #[cfg(test)]
        race_point(&dir);
        match fs::create_dir(&dir) {
            Ok(()) => created.push(dir),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => {
                remove_folders(&created);
                return Err(e);
            }
        }
    }
    Ok(created)
}

/// Tests: what another writer does at the moments a race could hit (before each folder is
/// made, before the temporary file is opened), given that folder.
#[cfg(test)]
pub(crate) static RACE: std::sync::Mutex<Option<RaceHook>> = std::sync::Mutex::new(None);

/// What [`RACE`] holds.
#[cfg(test)]
pub(crate) type RaceHook = Box<dyn FnMut(&Path) + Send>;

#[cfg(test)]
fn race_point(folder: &Path) {
    if let Some(race) = RACE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .as_mut()
    {
        race(folder);
    }
}

/// Tests: what another process does to a temporary file just created, before its upload
/// locks it (given its path).
#[cfg(test)]
pub(crate) static CREATED: std::sync::Mutex<Option<RaceHook>> = std::sync::Mutex::new(None);

#[cfg(test)]
fn created_point(temp: &Path) {
    if let Some(hook) = CREATED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .as_mut()
    {
        hook(temp);
    }
}

/// Remove the folders `created` (outermost first) that are empty, deepest first.
fn remove_folders(created: &[PathBuf]) {
    for dir in created.iter().rev() {
        // Fails, harmlessly, when another writer put something in it meanwhile.
        let _ = fs::remove_dir(dir);
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
    if len == 0 {
        return; // a length of 0 means "to the end of the file"
    }
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
/// Empty parts are skipped, and writing nothing makes no call: a `writev` of only empty
/// slices returns 0, which is not a failure to write.
pub(crate) fn write_all_vectored(file: &mut impl Write, parts: &[&[u8]]) -> std::io::Result<()> {
    use std::io::IoSlice;
    const MAX_SLICES: usize = 1024;
    let parts: Vec<&[u8]> = parts.iter().copied().filter(|p| !p.is_empty()).collect();
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
