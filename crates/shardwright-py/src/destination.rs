//! Where a pyramid or a copy writes (a folder, an object-store URL, a zarr-python store),
//! and the build options the Python arguments make: shared by `_core.build` (the one-pass
//! driver) and `_core.PyramidTasks` (the pyramid as per-shard tasks).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pyo3::prelude::*;
use shardwright::pyramid::build::BuildOptions;
use shardwright::pyramid::image_metadata::{Channel, ImageMetadata};
use shardwright::pyramid::plan::PlanRequest;
use shardwright::pyramid::{Method, PyramidError};
use shardwright::store::Store;
use shardwright::{Array, Compressor, FilesystemStore};
use shardwright_object_store::ObjectStoreBackend;

use crate::array::{object_store, PyArray};
use crate::errors::{error, IntoPy};
use crate::pystore::PyZarrStore;

/// The settings of `sw.pyramid` / `sw.copy` / `shardwright.dask.pyramid`, as the dict
/// `_pyramid.prepare` makes (every key present): one argument, so a new setting touches
/// only the dict, this struct and [`build_options`].
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub(crate) struct Settings {
    factors: Vec<u64>,
    levels: Option<usize>,
    method: String,
    chunks: Option<Vec<Vec<u64>>>,
    shards: Option<Vec<Vec<u64>>>,
    compressor: String,
    compression_level: Option<i32>,
    axes: Option<Vec<String>>,
    units: Option<Vec<Option<String>>>,
    name: Option<String>,
    scale: Option<Vec<f64>>,
    translation: Option<Vec<f64>>,
    /// `(label, color)` per channel.
    channels: Option<Vec<(Option<String>, Option<String>)>>,
}

/// The build options of `settings`, resuming or not; the image is named `name` unless the
/// settings name it.
pub(crate) fn build_options(
    settings: Settings,
    resume: bool,
    name: Option<String>,
) -> PyResult<BuildOptions> {
    let method: Method = settings
        .method
        .parse()
        .map_err(PyramidError::from)
        .map_err(shardwright::Error::from)
        .py()?;
    let compressor = match settings.compressor.as_str() {
        "none" => Compressor::None,
        other => Compressor::by_name(other, settings.compression_level)
            .map_err(shardwright::Error::from)
            .py()?,
    };
    let request = PlanRequest {
        factors: settings.factors,
        levels: settings.levels,
        method: Some(method),
        chunks: settings.chunks,
        shards: settings.shards,
        axes: settings.axes,
    };
    let mut options = BuildOptions::new(request, compressor);
    options.resume = resume;
    options.image = ImageMetadata {
        name: settings.name.or(name),
        units: settings.units,
        scale: settings.scale,
        translation: settings.translation,
        channels: settings.channels.map(|channels| {
            channels
                .into_iter()
                .map(|(label, color)| Channel { label, color })
                .collect()
        }),
    };
    Ok(options)
}

/// The multiscale's default name: the last part of the destination's path or URL.
pub(crate) fn default_name(root: Option<&Path>, url: Option<&str>) -> Option<String> {
    let text = match (root, url) {
        (Some(root), _) => root.display().to_string(),
        (None, Some(url)) => url.to_string(),
        _ => String::new(),
    };
    text.trim_end_matches('/')
        .rsplit('/')
        .next()
        .filter(|s| !s.is_empty())
        .map(String::from)
}

/// Where a build writes.
pub(crate) enum Destination {
    Folder(PathBuf),
    Url(ObjectStoreBackend, String, String),
    Adapter(Arc<PyZarrStore>, Py<PyAny>, String, String),
}

impl Destination {
    /// The destination of a folder `root`, an object-store `url` (with `options`), or
    /// `adapter` (a zarr-python store's) + `path`, named `url`.
    pub(crate) fn of(
        py: Python<'_>,
        root: Option<PathBuf>,
        url: Option<String>,
        options: &[(String, String)],
        adapter: Option<Py<PyAny>>,
        path: String,
    ) -> PyResult<Self> {
        Ok(match (root, url, adapter) {
            (Some(root), _, _) => Self::Folder(root),
            (None, Some(url), None) => {
                let (backend, path) = object_store(&url, options)?;
                Self::Url(backend, path, url)
            }
            (None, Some(url), Some(adapter)) => Self::Adapter(
                Arc::new(PyZarrStore::new(py, adapter.clone_ref(py))?),
                adapter,
                path,
                url,
            ),
            _ => return Err(error("a destination needs a folder or a URL")),
        })
    }

    /// Clear the destination (`overwrite`), or refuse one that holds something already
    /// unless `resume`.
    pub(crate) fn make_room(&self, py: Python<'_>, overwrite: bool, resume: bool) -> PyResult<()> {
        if overwrite {
            return self.clear(py);
        }
        if !resume && self.exists(py)? {
            let text = match self {
                Self::Folder(root) => root.display().to_string(),
                Self::Url(_, _, url) | Self::Adapter(_, _, _, url) => url.clone(),
            };
            return Err(error(format!(
                "'{text}' exists already (use overwrite=True to replace it, or resume=True to \
                 finish a job that stopped)"
            )));
        }
        Ok(())
    }

    pub(crate) fn store_and_path(&self) -> (Arc<dyn Store>, String) {
        match self {
            Self::Folder(root) => (Arc::new(FilesystemStore::new(root)), String::new()),
            Self::Url(backend, path, _) => (Arc::new(backend.clone()), path.clone()),
            Self::Adapter(store, _, path, _) => (store.clone(), path.clone()),
        }
    }

    fn exists(&self, py: Python<'_>) -> PyResult<bool> {
        if let Self::Folder(root) = self {
            return Ok(root.read_dir().is_ok_and(|mut d| d.next().is_some()));
        }
        let (store, path) = self.store_and_path();
        let key = shardwright::store::join(&path, "zarr.json");
        py.detach(|| store.size(&key))
            .map(|s| s.is_some())
            .map_err(shardwright::Error::from)
            .py()
    }

    fn clear(&self, py: Python<'_>) -> PyResult<()> {
        match self {
            Self::Folder(root) => {
                py.detach(|| shardwright::store::remove_folder_to_overwrite(root))
                    .map_err(shardwright::Error::from)
                    .py()?;
            }
            Self::Url(backend, path, _) => {
                py.detach(|| backend.delete_prefix(path))
                    .map_err(shardwright::Error::from)
                    .py()?;
            }
            Self::Adapter(_, adapter, path, _) => {
                adapter.bind(py).call_method1("delete_dir", (path,))?;
            }
        }
        Ok(())
    }

    /// The Python array of `array`, written at `sub` under the destination.
    pub(crate) fn level(&self, array: Array, sub: Option<&str>) -> PyArray {
        let join = |base: &str| match sub {
            Some(s) => format!("{}/{s}", base.trim_end_matches('/')),
            None => base.to_string(),
        };
        match self {
            Self::Folder(root) => PyArray::local(
                array,
                match sub {
                    Some(s) => root.join(s),
                    None => root.clone(),
                },
            ),
            Self::Url(_, _, url) | Self::Adapter(_, _, _, url) => PyArray::remote(array, join(url)),
        }
    }
}

/// Remove the folder `path` to overwrite it (`sw.create(..., overwrite=True)`), refusing an
/// empty path, the filesystem root, the home folder, the current folder and any folder
/// holding one of them (a `ShardwrightError`, nothing removed).
#[pyfunction]
pub(crate) fn remove_folder_to_overwrite(py: Python<'_>, path: PathBuf) -> PyResult<()> {
    py.detach(|| shardwright::store::remove_folder_to_overwrite(&path))
        .map_err(shardwright::Error::from)
        .py()
}
