//! Versions of files, for conditional puts and deletes.
//!
//! A version's tag is the file's device, inode, size, modification and change times. Tags
//! alone can be fooled: a filesystem hands a freed inode to the next new file (ext4 did in
//! 300 of 300 trials), and on a filesystem with coarse timestamps two puts of the same size
//! within one tick give the same tag. So a version read from a file also *pins* it: the
//! file stays open as long as the version lives, and an inode that is open is never freed,
//! so no other file can have it meanwhile. "The key still names the pinned inode" then
//! means the key was not replaced, whatever the timestamps; the tag's times and size still
//! catch a change made in place (by a writer that does not replace files).
//!
//! Only a pinned version can match: a version rebuilt from its tag (`Version::new`, e.g.
//! a tag saved as a string and read back) or one from another store never does, so a
//! conditional put or delete with it is a [`Conflict`](crate::store::StoreError::Conflict)
//! (the caller reads the value again, which gives a pinned version). Clones share the pin.
//! What remains out of reach: a foreign writer that changes a file *in place* (rather
//! than replacing it, as shardwright and zarr-python 3 do) to the same size within one
//! timestamp tick of the filesystem, and filesystems that do not keep an open file's
//! inode number (some FUSE filesystems).

use std::fs::{self, File};
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::store::Version;

/// A file held open for a version: its inode cannot be reused while it is.
#[derive(Debug)]
pub(crate) struct PinnedFile {
    _file: File,
    dev: u64,
    ino: u64,
}

/// The tag of a file with `metadata`; times are cut to `granularity_ns` (1 outside tests,
/// where a coarse-timestamp filesystem is simulated).
fn tag_of(metadata: &fs::Metadata, granularity_ns: i64) -> String {
    let cut = |s: i64, ns: i64| {
        let total = i128::from(s) * 1_000_000_000 + i128::from(ns);
        total - total.rem_euclid(i128::from(granularity_ns))
    };
    format!(
        "{}:{}:{}:{}:{}",
        metadata.dev(),
        metadata.ino(),
        metadata.len(),
        cut(metadata.mtime(), metadata.mtime_nsec()),
        cut(metadata.ctime(), metadata.ctime_nsec()),
    )
}

/// The time granularity of tags.
fn granularity() -> i64 {
    #[cfg(test)]
    {
        let ns = TEST_GRANULARITY_NS.load(std::sync::atomic::Ordering::Relaxed);
        if ns > 0 {
            return ns;
        }
    }
    1
}

/// Tests set this to simulate a filesystem whose timestamps have a coarse granularity.
#[cfg(test)]
pub(crate) static TEST_GRANULARITY_NS: std::sync::atomic::AtomicI64 =
    std::sync::atomic::AtomicI64::new(0);

/// The version of `file` (open, with `metadata`), pinning it.
pub(crate) fn pinned(file: File, metadata: &fs::Metadata) -> Version {
    let pin = PinnedFile {
        dev: metadata.dev(),
        ino: metadata.ino(),
        _file: file,
    };
    Version::pinned(tag_of(metadata, granularity()), pin)
}

/// Whether the file at `path` is still at version `expected` (`None`: there is no file).
///
/// # Errors
/// What reading the file's metadata fails with (other than its absence).
pub(crate) fn matches(path: &Path, expected: Option<&Version>) -> std::io::Result<bool> {
    let current = match fs::metadata(path) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    Ok(match (expected, current) {
        (None, None) => true,
        (None, Some(_)) | (Some(_), None) => false,
        (Some(expected), Some(current)) => match expected.pin::<PinnedFile>() {
            Some(pin) => {
                (pin.dev, pin.ino) == (current.dev(), current.ino())
                    && tag_of(&current, granularity()) == expected.tag()
            }
            // A version without its pinned file (rebuilt from its tag with
            // `Version::new`, or another store's) cannot tell a replacement that reused
            // the inode within one timestamp tick from the file it names: it is never
            // taken for "unchanged", so the conditional put or delete is a conflict.
            None => false,
        },
    })
}
