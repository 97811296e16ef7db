//! Crash debris of the filesystem store: temporary files of writers that died before they
//! completed or gave up their upload (a SIGKILL, a power loss, an OOM kill).
//!
//! A temporary file is *stale* only if its exclusive `flock` can be taken without
//! waiting: a live upload holds that lock from just after it creates the file until the
//! file is renamed onto its key or removed (see `upload`). Every sweeper takes the lock,
//! checks that the path still names the file it opened, and removes it while holding the
//! lock. The creator's side of the race (its `O_EXCL` create comes a moment before its
//! lock): after locking, the creator checks that its path still names the file it
//! created, and if not (a sweeper took the unlocked file for a dead writer's and removed
//! it) it makes another. So a sweeper never deletes a file whose writer then goes on with
//! it, without any age threshold.
//!
//! Within one process `flock`s of two open files do not depend on the process, but on some
//! network filesystems locks are emulated per process; so the uploads of this process
//! are also registered here, and a sweep never even opens one of them. Where a lock cannot
//! be taken at all (a filesystem without `flock`), nothing is ever called stale.
//!
//! Who removes debris: the first upload of a process into a folder sweeps that folder
//! (one `readdir`, once per folder per process: the next writer of a shard after a crash
//! removes what the dead writer left beside it, at no cost per shard); and
//! [`FilesystemStore::remove_stale_temporaries`] sweeps a whole tree (`shardwright check
//! --repair`).

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use super::upload::TEMP_SUFFIX;
use super::FilesystemStore;
use crate::store::StoreError;

/// Folders remembered as swept by this process before the set is forgotten and begun
/// again (a bound on its memory; forgetting only means sweeping a folder once more).
const SWEPT_FOLDERS: usize = 1 << 16;

/// Temporary files of this process's uploads that are alive (created and neither
/// completed nor given up).
static LIVE: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

/// Folders this process has swept.
static SWEPT: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

/// Register `temp` as a live upload's temporary file of this process (before it is
/// created).
pub(super) fn register(temp: &Path) {
    LIVE.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get_or_insert_with(HashSet::new)
        .insert(temp.to_path_buf());
}

/// Forget `temp` (completed, given up, or never created).
pub(super) fn unregister(temp: &Path) {
    if let Some(live) = LIVE.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
        live.remove(temp);
    }
}

fn is_live_here(path: &Path) -> bool {
    LIVE.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .is_some_and(|live| live.contains(path))
}

/// Whether `name` is the name of a temporary file: `.{key name}.{16 hex digits}` and the
/// suffix.
pub(crate) fn is_temp_name(name: &str) -> bool {
    let Some(stem) = name
        .strip_prefix('.')
        .and_then(|n| n.strip_suffix(TEMP_SUFFIX))
    else {
        return false;
    };
    match stem.rsplit_once('.') {
        Some((key_name, random)) => {
            !key_name.is_empty()
                && random.len() == 16
                && random.bytes().all(|b| b.is_ascii_hexdigit())
        }
        None => false,
    }
}

/// What a sweep found a temporary file to be.
enum Found {
    /// Its writer is alive (the lock is held, or it is this process's), or it is gone.
    Live,
    /// Its writer is dead: the lock was taken. The file stays locked while this lives.
    Stale(File),
    /// Locks do not work here: never called stale.
    Unknown,
}

/// Examine the temporary file at `path`.
fn examine(path: &Path) -> std::io::Result<Found> {
    if is_live_here(path) {
        return Ok(Found::Live);
    }
    // Opened for writing where allowed: some network filesystems take exclusive locks
    // only on files open for writing.
    let opened = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .or_else(|e| match e.kind() {
            ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem => File::open(path),
            _ => Err(e),
        });
    let file = match opened {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Found::Live),
        Err(e) => return Err(e),
    };
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Ok(Found::Live),
        Err(std::fs::TryLockError::Error(_)) => return Ok(Found::Unknown),
    }
    // The path must still name the file locked (not one made since under that name).
    let here = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Found::Live),
        Err(e) => return Err(e),
    };
    let locked = file.metadata()?;
    if (here.dev(), here.ino()) != (locked.dev(), locked.ino()) {
        return Ok(Found::Live);
    }
    Ok(Found::Stale(file))
}

/// The stale temporary files directly in `folder` (with `remove`: removed, each while its
/// lock is held), as paths.
fn sweep_folder(folder: &Path, remove: bool) -> std::io::Result<Vec<PathBuf>> {
    let entries = match fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut stale = Vec::new();
    for entry in entries {
        let entry = entry?;
        let is_temp = entry.file_name().to_str().is_some_and(is_temp_name);
        if !is_temp || !entry.file_type()?.is_file() {
            continue;
        }
        let path = entry.path();
        let Found::Stale(locked) = examine(&path)? else {
            continue;
        };
        if remove {
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            }
        }
        drop(locked); // the lock goes only after the removal
        stale.push(path);
    }
    Ok(stale)
}

/// Sweep `folder` if this process has not yet: the first upload into a folder removes
/// the debris of dead writers there. Best effort: a failure leaves the debris, never
/// fails the upload.
pub(super) fn sweep_once(folder: &Path) {
    {
        let mut swept = SWEPT.lock().unwrap_or_else(PoisonError::into_inner);
        let swept = swept.get_or_insert_with(HashSet::new);
        if swept.contains(folder) {
            return;
        }
        if swept.len() >= SWEPT_FOLDERS {
            swept.clear();
        }
        swept.insert(folder.to_path_buf());
    }
    let _ = sweep_folder(folder, true);
}

/// Tests: forget which folders were swept, as a new process would.
#[cfg(test)]
pub(crate) fn forget_swept() {
    *SWEPT.lock().unwrap_or_else(PoisonError::into_inner) = None;
}

impl FilesystemStore {
    /// The stale temporary files under `prefix` (a folder key; `""` for the whole store),
    /// as keys, sorted: hidden `.NAME.RANDOM.shardwright-tmp` files that writers killed
    /// mid-upload left behind. A file is stale only if its `flock` can be taken, so a
    /// live writer's file (in any process) is never listed; on a filesystem without
    /// locks, none is. Reading this takes each candidate's lock for a moment.
    ///
    /// ```
    /// use shardwright::store::{FilesystemStore, Store};
    /// let dir = tempfile::tempdir().unwrap();
    /// let store = FilesystemStore::new(dir.path());
    /// store.put("a.zarr/c/0", &[b"shard"]).unwrap();
    /// // What a writer killed mid-upload leaves (no process holds its lock):
    /// std::fs::write(dir.path().join("a.zarr/c/.0.0123456789abcdef.shardwright-tmp"), b"x").unwrap();
    /// assert_eq!(
    ///     store.stale_temporaries("a.zarr").unwrap(),
    ///     ["a.zarr/c/.0.0123456789abcdef.shardwright-tmp"]
    /// );
    /// ```
    ///
    /// # Errors
    /// [`StoreError::InvalidKey`] for a bad prefix; [`StoreError::Io`] (naming the folder
    /// or file) if a folder cannot be listed or a file examined.
    pub fn stale_temporaries(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        self.sweep(prefix, false)
    }

    /// Remove the stale temporary files under `prefix` (a folder key; `""` for the whole
    /// store) and return their keys, sorted: see
    /// [`stale_temporaries`](FilesystemStore::stale_temporaries). A live writer's file is
    /// never removed, whatever process it is in; each file is removed while its lock is
    /// held, and a writer that created its file but had not locked it yet notices and
    /// makes another. Shards and other files are never touched.
    ///
    /// ```
    /// use shardwright::store::{FilesystemStore, Store};
    /// let dir = tempfile::tempdir().unwrap();
    /// let store = FilesystemStore::new(dir.path());
    /// let debris = dir.path().join("a.zarr/c/.0.0123456789abcdef.shardwright-tmp");
    /// std::fs::create_dir_all(debris.parent().unwrap()).unwrap();
    /// std::fs::write(&debris, b"half a shard").unwrap();
    /// let removed = store.remove_stale_temporaries("a.zarr").unwrap();
    /// assert_eq!(removed, ["a.zarr/c/.0.0123456789abcdef.shardwright-tmp"]);
    /// assert!(!debris.exists());
    /// assert!(store.remove_stale_temporaries("a.zarr").unwrap().is_empty());
    /// ```
    ///
    /// # Errors
    /// [`StoreError::InvalidKey`] for a bad prefix; [`StoreError::Io`] (naming the folder
    /// or file) if a folder cannot be listed or a file cannot be removed; what was removed
    /// before the error stays removed.
    pub fn remove_stale_temporaries(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        self.sweep(prefix, true)
    }

    fn sweep(&self, prefix: &str, remove: bool) -> Result<Vec<String>, StoreError> {
        let prefix = prefix.trim_matches('/');
        let top = if prefix.is_empty() {
            self.root().to_path_buf()
        } else {
            self.path(prefix)?
        };
        let key_of = |path: &Path| -> String {
            path.strip_prefix(self.root())
                .unwrap_or(path)
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/")
        };
        let mut found = Vec::new();
        let mut folders = vec![top];
        while let Some(folder) = folders.pop() {
            let entries = match fs::read_dir(&folder) {
                Ok(entries) => entries,
                Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                    continue;
                }
                Err(e) => return Err(StoreError::io(&key_of(&folder), e)),
            };
            for entry in entries {
                let entry = entry.map_err(|e| StoreError::io(&key_of(&folder), e))?;
                // Not followed: a link to a folder elsewhere is not this store's.
                let kind = entry
                    .file_type()
                    .map_err(|e| StoreError::io(&key_of(&entry.path()), e))?;
                if kind.is_dir() {
                    folders.push(entry.path());
                }
            }
            let stale =
                sweep_folder(&folder, remove).map_err(|e| StoreError::io(&key_of(&folder), e))?;
            found.extend(stale.iter().map(|p| key_of(p)));
        }
        found.sort();
        Ok(found)
    }
}
