//! Where the command line reads and writes: a local folder or an object-store URL
//! (`s3://bucket/path`, `gs://…`, `az://…`, `memory:///…`), and the source to read.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use shardwright::pyramid::source::{ArraySource, Source, ZarrsSource};
use shardwright::store::Store;
use shardwright::{Array, ErrorKind, FilesystemStore};
use shardwright_object_store::ObjectStoreBackend;

type Failure = Box<dyn std::error::Error>;

/// A store and a path in it, named `text` in messages.
pub(crate) struct Location {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) path: String,
    /// The local folder, for a location on the filesystem.
    pub(crate) folder: Option<PathBuf>,
    backend: Option<ObjectStoreBackend>,
    pub(crate) text: String,
}

fn is_url(text: &str) -> bool {
    text.contains("://") && !text.starts_with("file://")
}

/// Parse `KEY=VALUE` storage options.
pub(crate) fn options(given: &[String]) -> Result<Vec<(String, String)>, Failure> {
    given
        .iter()
        .map(|o| match o.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
            _ => Err(format!("--storage-option '{o}': expected KEY=VALUE").into()),
        })
        .collect()
}

impl Location {
    /// The location of `text` (nothing is created: stores make folders as they write).
    pub(crate) fn parse(text: &str, options: &[(String, String)]) -> Result<Self, Failure> {
        if is_url(text) {
            let pairs: Vec<(&str, &str)> = options
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            let (backend, path) = ObjectStoreBackend::from_url(text, &pairs)?;
            return Ok(Self {
                store: Arc::new(backend.clone()),
                path,
                folder: None,
                backend: Some(backend),
                text: text.to_string(),
            });
        }
        let folder = PathBuf::from(text.strip_prefix("file://").unwrap_or(text));
        Ok(Self {
            store: Arc::new(FilesystemStore::new(&folder)),
            path: String::new(),
            folder: Some(folder),
            backend: None,
            text: text.to_string(),
        })
    }

    /// For a local path that cannot hold an array: a file (a TIFF, say) or nothing at all,
    /// the error to report.
    pub(crate) fn not_an_array(&self) -> Option<Failure> {
        let folder = self.folder.as_ref()?;
        if folder.is_file() {
            return Some(not_a_folder(&self.text).into());
        }
        (!folder.exists()).then(|| {
            format!(
                "no Zarr array at '{}' (no zarr.json or .zarray there)",
                self.text
            )
            .into()
        })
    }

    /// Whether anything is stored here (a `zarr.json`, or for a folder, any file).
    pub(crate) fn exists(&self) -> Result<bool, Failure> {
        if let Some(folder) = &self.folder {
            return Ok(folder
                .read_dir()
                .map(|mut d| d.next().is_some())
                .unwrap_or(false));
        }
        let key = shardwright::store::join(&self.path, "zarr.json");
        Ok(self.store.size(&key)?.is_some())
    }

    /// Remove everything here (`--overwrite`).
    pub(crate) fn clear(&self) -> Result<(), Failure> {
        if let Some(folder) = &self.folder {
            shardwright::store::remove_folder_to_overwrite(folder)?;
        } else if let Some(backend) = &self.backend {
            backend.delete_prefix(&self.path)?;
        }
        Ok(())
    }
}

/// Open the array at `text` to read from: a shardwright-readable Zarr v3 array on any
/// store, (local folders) any Zarr v2 or v3 array zarrs reads, or a TIFF file, a folder
/// of TIFF files or a glob pattern of them.
pub(crate) fn open_source(
    text: &str,
    options: &[(String, String)],
) -> Result<Box<dyn Source>, Failure> {
    if !is_url(text) && shardwright_tiff::is_tiff_spec(text) {
        return Ok(Box::new(shardwright_tiff::TiffSource::open(text)?));
    }
    let location = Location::parse(text, options)?;
    if let Some(err) = location.not_an_array() {
        return Err(err);
    }
    if is_group(&location) {
        return Err(group_error(text));
    }
    let error = match Array::open(Arc::clone(&location.store), &location.path) {
        Ok(array) => return Ok(Box::new(ArraySource::new(array))),
        Err(e) => e,
    };
    let Some(folder) = location.folder else {
        if error.kind() == ErrorKind::Unsupported {
            return Err(format!(
                "{error}; from object stores shardwright reads the Zarr v3 arrays it can \
                 write: copy others to a local folder first"
            )
            .into());
        }
        return Err(error.into());
    };
    if !folder.join("zarr.json").exists() && !folder.join(".zarray").exists() {
        return Err(format!("no Zarr array at '{text}' (no zarr.json or .zarray there)").into());
    }
    Ok(Box::new(ZarrsSource::open(&folder)?))
}

/// A file named where an array's folder was expected, and how to convert it.
pub(crate) fn not_a_folder(text: &str) -> String {
    format!(
        "'{text}' is a file, not a Zarr array (a folder holding zarr.json or .zarray); a \
         TIFF converts with: shardwright convert {text} DST"
    )
}

fn group_error(text: &str) -> Failure {
    format!(
        "'{text}' is a Zarr group, not an array; name one of its arrays, e.g. '{}'",
        Path::new(text).join("0").display()
    )
    .into()
}

fn is_group(location: &Location) -> bool {
    let key = shardwright::store::join(&location.path, "zarr.json");
    location
        .store
        .get(&key)
        .ok()
        .flatten()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .is_some_and(|v| v["node_type"] == "group")
}
