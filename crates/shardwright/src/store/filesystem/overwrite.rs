//! Removing a folder to overwrite it (`overwrite=True`, `--overwrite`), refusing the
//! folders whose removal can only be a mistake: an empty path, the filesystem root, the
//! home folder, the current folder and any folder holding one of them.

use std::path::{Path, PathBuf};

use crate::store::StoreError;

/// Remove `folder` and everything in it, to write a new array there; a missing folder is
/// not an error. Refused with [`StoreError::Config`] (nothing removed) when `folder` is
/// empty (`""`), or is, or holds, the filesystem root, the home folder (`$HOME`) or the
/// current folder: an `overwrite` of `"."`, `""`, `"/"` or `"~"`'s expansion never deletes
/// a user's files.
///
/// ```
/// use shardwright::store::remove_folder_to_overwrite;
/// let dir = tempfile::tempdir().unwrap();
/// let old = dir.path().join("old.zarr");
/// std::fs::create_dir_all(old.join("c")).unwrap();
/// remove_folder_to_overwrite(&old).unwrap();
/// assert!(!old.exists());
/// let refused = remove_folder_to_overwrite(std::path::Path::new(".")).unwrap_err();
/// assert!(refused.to_string().contains("the current folder"), "{refused}");
/// ```
pub fn remove_folder_to_overwrite(folder: &Path) -> Result<(), StoreError> {
    refuse_protected(folder)?;
    match std::fs::remove_dir_all(folder) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StoreError::Io {
            key: folder.display().to_string(),
            message: format!("cannot remove it to overwrite it: {e}"),
        }),
    }
}

/// Refuse a `folder` that [`remove_folder_to_overwrite`] must never remove.
fn refuse_protected(folder: &Path) -> Result<(), StoreError> {
    let refuse = |what: String| StoreError::Config {
        url: folder.display().to_string(),
        message: format!(
            "overwrite would delete {what} and everything in it; refused: give the array a \
             folder of its own"
        ),
    };
    if folder.as_os_str().is_empty() {
        return Err(refuse("the current folder (an empty path)".into()));
    }
    let target = resolved(folder);
    if target.parent().is_none() {
        return Err(refuse("the filesystem root".into()));
    }
    let protected = [
        (
            "the current folder",
            std::env::current_dir().ok().map(|d| resolved(&d)),
        ),
        (
            "the home folder",
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| resolved(Path::new(&h))),
        ),
    ];
    for (name, place) in protected {
        let Some(place) = place else { continue };
        if place == target {
            return Err(refuse(format!("{name} ({})", place.display())));
        }
        if place.starts_with(&target) {
            return Err(refuse(format!(
                "a folder holding {name} ({})",
                place.display()
            )));
        }
    }
    Ok(())
}

/// `path` absolute, with links and `..` resolved as far as it exists.
fn resolved(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    // The nearest existing ancestor, canonical, with the rest appended (lexically).
    let mut missing = Vec::new();
    let mut base = absolute.as_path();
    while let Some(parent) = base.parent() {
        if let Some(name) = base.file_name() {
            missing.push(name.to_os_string());
        }
        if let Ok(real) = std::fs::canonicalize(parent) {
            let mut out = real;
            for name in missing.iter().rev() {
                out.push(name);
            }
            return out;
        }
        base = parent;
    }
    absolute
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_empty_dot_root_home_and_ancestors_of_the_current_folder() {
        let cwd = std::env::current_dir().unwrap();
        let mut refused = vec![
            PathBuf::from(""),
            PathBuf::from("."),
            PathBuf::from("./"),
            PathBuf::from("/"),
            cwd.clone(),
        ];
        if let Some(parent) = cwd.parent() {
            refused.push(parent.to_path_buf());
            refused.push(PathBuf::from(".."));
        }
        if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
            refused.push(PathBuf::from(home));
        }
        for path in refused {
            let err = refuse_protected(&path).expect_err(&path.display().to_string());
            assert!(matches!(err, StoreError::Config { .. }), "{err}");
            assert!(err.to_string().contains("refused"), "{err}");
        }
        assert!(cwd.exists(), "nothing was removed");
    }

    #[test]
    fn removes_an_ordinary_folder_and_accepts_a_missing_one() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("a.zarr");
        std::fs::create_dir_all(folder.join("c/0")).unwrap();
        std::fs::write(folder.join("zarr.json"), b"{}").unwrap();
        remove_folder_to_overwrite(&folder).unwrap();
        assert!(!folder.exists());
        remove_folder_to_overwrite(&folder).unwrap();
        remove_folder_to_overwrite(&dir.path().join("missing/deeper")).unwrap();
    }
}
