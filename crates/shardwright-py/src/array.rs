//! `_core.Array`: an opened array on a local filesystem or in an object store.

use std::path::PathBuf;
use std::sync::Arc;

use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use shardwright::layout::{ArraySpec, Compressor, IndexLocation};
use shardwright::store::Store;
use shardwright::{Array, Domain, FilesystemStore, Transaction, TransactionOptions, WriterOptions};
use shardwright_object_store::ObjectStoreBackend;

use crate::errors::{error, guard, IntoPy};
use crate::grid::{GridCellsArg, PyGridIter};
use crate::pystore::PyZarrStore;
use crate::txn::PyTransaction;
use crate::writer::PyShardWriter;

/// An array on a local filesystem (its folder is the store root) or in an object store
/// (the bucket is the store root).
#[pyclass(module = "shardwright._core", name = "Array", frozen)]
pub(crate) struct PyArray {
    pub(crate) inner: Array,
    /// The local folder, for an array on the filesystem.
    root: Option<PathBuf>,
    /// The URL, for an array in an object store.
    url: Option<String>,
}

impl PyArray {
    /// An array in the local folder `root`.
    pub(crate) fn local(inner: Array, root: PathBuf) -> Self {
        Self {
            inner,
            root: Some(root),
            url: None,
        }
    }

    /// This array's place, holding `inner` (its metadata rewritten).
    pub(crate) fn edited(&self, inner: Array) -> Self {
        Self {
            inner,
            root: self.root.clone(),
            url: self.url.clone(),
        }
    }

    /// An array in a store named by `url`.
    pub(crate) fn remote(inner: Array, url: String) -> Self {
        Self {
            inner,
            root: None,
            url: Some(url),
        }
    }
}

/// `text`, checked to be a JSON object's (attributes, kept as written: integers beyond
/// 64 bits keep every digit).
fn attributes(text: &str) -> PyResult<&str> {
    match serde_json::from_str::<&serde_json::value::RawValue>(text) {
        Ok(_) if text.trim_start().starts_with('{') => Ok(text),
        Ok(_) => Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "attributes must be a JSON object (a dict), got {}",
            text.trim()
        ))),
        Err(e) => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "attributes are not JSON: {e}"
        ))),
    }
}

/// Whether `path` in `store` holds a Zarr group's `zarr.json`.
pub(crate) fn is_group(store: &dyn Store, path: &str) -> bool {
    store
        .get(&shardwright::store::join(path, "zarr.json"))
        .ok()
        .flatten()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .is_some_and(|v| v["node_type"] == "group")
}

/// The error for a group at `text` where an array was expected (a `NotAnArrayError`, as
/// `sw.open` raises, for `sw.pyramid` and `sw.copy` too).
pub(crate) fn group_error(text: &str) -> PyErr {
    crate::errors::not_an_array(format!(
        "'{text}' is a Zarr group, not an array; name one of its arrays, e.g. '{}/0'",
        text.trim_end_matches('/')
    ))
}

/// Open the array at `path` in `store`, named `text` in messages: a group there, or no
/// `zarr.json`, is an error naming `text` (the group is looked for only once opening
/// failed). No store call holds the GIL (the store may be served by Python threads of
/// this process).
pub(crate) fn open_named(
    py: Python<'_>,
    store: Arc<dyn Store>,
    path: &str,
    text: &str,
) -> PyResult<Array> {
    py.detach(|| Array::open(Arc::clone(&store), path))
        .map_err(|e| match e.kind() {
            shardwright::ErrorKind::NotFound => {
                crate::errors::not_found(format!("no Zarr array at '{text}' (no zarr.json there)"))
            }
            // A failed store call (an unreachable endpoint) is not asked again for a group.
            _ if matches!(e, shardwright::Error::Store(_)) => crate::errors::to_py(e),
            _ if py.detach(|| is_group(store.as_ref(), path)) => group_error(text),
            _ => crate::errors::to_py(e),
        })
}

/// Open the array at `path` in `store`, named `url` in messages and `Array.url`.
fn open_at(py: Python<'_>, store: Arc<dyn Store>, path: &str, url: String) -> PyResult<PyArray> {
    let inner = open_named(py, store, path, &url)?;
    Ok(PyArray {
        inner,
        root: None,
        url: Some(url),
    })
}

/// The Python error of a failed create at `url`.
fn created_error(err: shardwright::Error, url: &str) -> PyErr {
    match err {
        shardwright::Error::AlreadyExists(_) => error(format!(
            "an array already exists at '{url}' (use overwrite=True)"
        )),
        e => crate::errors::to_py(e),
    }
}

/// The object store of `url` and the array's path in it.
pub(crate) fn object_store(
    url: &str,
    options: &[(String, String)],
) -> PyResult<(ObjectStoreBackend, String)> {
    let pairs: Vec<(&str, &str)> = options
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    ObjectStoreBackend::from_url(url, &pairs)
        .map_err(shardwright::Error::from)
        .py()
}

fn domain(origin: Vec<u64>, shape: Vec<u64>) -> PyResult<Domain> {
    Domain::try_new(origin, shape)
        .map_err(shardwright::Error::from)
        .py()
}

fn writer_options(
    max_in_flight: Option<usize>,
    retries: Option<u32>,
    overwrite_corrupt: bool,
) -> WriterOptions {
    let mut options = WriterOptions::default().overwrite_corrupt(overwrite_corrupt);
    if let Some(n) = max_in_flight {
        options = options.max_in_flight(n);
    }
    if let Some(r) = retries {
        options = options.retries(r);
    }
    options
}

fn within(array: &Array, region: Option<(Vec<u64>, Vec<u64>)>) -> PyResult<Domain> {
    match region {
        None => Ok(array.bounds()),
        Some((origin, shape)) => domain(origin, shape),
    }
}

#[pymethods]
impl PyArray {
    /// Open the array whose `zarr.json` is in folder `root`.
    #[staticmethod]
    fn open(py: Python<'_>, root: PathBuf) -> PyResult<Self> {
        guard(|| {
            let store = Arc::new(FilesystemStore::new(&root));
            let inner = py.detach(|| Array::open(store, "")).py()?;
            Ok(Self {
                inner,
                root: Some(root),
                url: None,
            })
        })
    }

    /// Open the array at an object-store URL (`s3://bucket/path`, `gs://…`, `az://…`,
    /// `memory:///path`); `options`: object_store configuration keys and values.
    #[staticmethod]
    fn open_url(py: Python<'_>, url: String, options: Vec<(String, String)>) -> PyResult<Self> {
        guard(|| {
            let (store, path) = object_store(&url, &options)?;
            open_at(py, Arc::new(store), &path, url)
        })
    }

    /// Create an array at an object-store URL from the text of its `zarr.json`; with
    /// `overwrite`, every object under the array's path is deleted first, otherwise an
    /// existing `zarr.json` is an error.
    #[staticmethod]
    fn create_url(
        py: Python<'_>,
        url: String,
        json: &str,
        options: Vec<(String, String)>,
        overwrite: bool,
    ) -> PyResult<Self> {
        guard(|| {
            let (backend, path) = object_store(&url, &options)?;
            let inner = py
                .detach(|| {
                    if overwrite {
                        // refuses the root of a bucket (it would empty the bucket)
                        backend.delete_prefix(&path)?;
                    }
                    Array::create_from_json(Arc::new(backend), &path, json)
                })
                .map_err(|e| created_error(e, &url))?;
            Ok(Self {
                inner,
                root: None,
                url: Some(url),
            })
        })
    }

    /// The `zarr.json` text of an array with these settings, checked (nothing is written).
    /// `grid_cells`: the outer grid (the shards, or the chunks when `shards` is None) as a
    /// rectilinear grid, one entry per dimension: an extent (regular) or a list of extents.
    #[staticmethod]
    #[pyo3(signature = (shape, dtype, chunks, shards, fill_value_json, compressor, level, index_location, dimension_names, attributes_json=None, grid_cells=None))]
    #[allow(clippy::too_many_arguments)]
    fn spec_json(
        shape: Vec<u64>,
        dtype: &str,
        chunks: Vec<u64>,
        shards: Option<Vec<u64>>,
        fill_value_json: &str,
        compressor: &str,
        level: Option<i32>,
        index_location: &str,
        dimension_names: Option<Vec<String>>,
        attributes_json: Option<&str>,
        grid_cells: Option<Vec<GridCellsArg>>,
    ) -> PyResult<String> {
        guard(|| {
            let fill: serde_json::Value = serde_json::from_str(fill_value_json)
                .map_err(|e| error(format!("fill value: {e}")))?;
            let location = match index_location {
                "start" => IndexLocation::Start,
                "end" => IndexLocation::End,
                other => {
                    return Err(pyo3::exceptions::PyValueError::new_err(format!(
                        "index_location must be 'start' or 'end', got {other:?}"
                    )))
                }
            };
            let compressor = Compressor::by_name(compressor, level)
                .map_err(shardwright::Error::from)
                .py()?;
            let mut spec = ArraySpec::new(shape, dtype, chunks)
                .fill_value(fill)
                .compressor(compressor)
                .index_location(location);
            let sharded = shards.is_some();
            if let Some(shards) = shards {
                spec = spec.shards(shards);
            }
            if let Some(cells) = grid_cells {
                let cells = cells.into_iter().map(GridCellsArg::into_cells).collect();
                spec = if sharded {
                    spec.shard_cells(cells)
                } else {
                    spec.chunk_cells(cells)
                };
            }
            if let Some(names) = dimension_names {
                spec = spec.dimension_names(names);
            }
            if let Some(text) = attributes_json {
                spec = spec
                    .attributes_json(attributes(text)?)
                    .map_err(shardwright::Error::from)
                    .py()?;
            }
            spec.to_json().map_err(shardwright::Error::from).py()
        })
    }

    /// Create an array in folder `root` (which must hold no `zarr.json`) from the text of
    /// its `zarr.json`.
    #[staticmethod]
    fn create(root: PathBuf, json: &str) -> PyResult<Self> {
        guard(|| {
            let store = Arc::new(FilesystemStore::new(&root));
            let inner = Array::create_from_json(store, "", json).py()?;
            Ok(Self {
                inner,
                root: Some(root),
                url: None,
            })
        })
    }

    /// Open the array at `path` in a zarr-python store, through `adapter` (a
    /// `shardwright._adapter.StoreAdapter`); `url` names it in messages and `Array.url`.
    #[staticmethod]
    fn open_adapter(
        py: Python<'_>,
        adapter: Py<PyAny>,
        path: String,
        url: String,
    ) -> PyResult<Self> {
        guard(|| {
            let store: Arc<dyn Store> = Arc::new(PyZarrStore::new(py, adapter)?);
            open_at(py, store, &path, url)
        })
    }

    /// Create an array at `path` in a zarr-python store (through `adapter`) from the text
    /// of its `zarr.json`; an existing `zarr.json` there is a conflict.
    #[staticmethod]
    fn create_adapter(
        py: Python<'_>,
        adapter: Py<PyAny>,
        path: String,
        json: &str,
        url: String,
    ) -> PyResult<Self> {
        guard(|| {
            let store: Arc<dyn Store> = Arc::new(PyZarrStore::new(py, adapter)?);
            let inner = py
                .detach(|| Array::create_from_json(store, &path, json))
                .map_err(|e| created_error(e, &url))?;
            Ok(Self {
                inner,
                root: None,
                url: Some(url),
            })
        })
    }

    /// The local folder (None for an array in an object store).
    #[getter]
    fn root(&self) -> Option<PathBuf> {
        self.root.clone()
    }

    /// The object-store URL (None for an array on the local filesystem).
    #[getter]
    fn url(&self) -> Option<String> {
        self.url.clone()
    }

    /// The array's path in its store (`""` at the store root).
    #[getter]
    fn key(&self) -> String {
        self.inner.path().to_string()
    }

    #[getter]
    fn shape(&self) -> Vec<u64> {
        self.inner.layout().shape().to_vec()
    }

    /// The data type's spec: its Zarr v3 name, or the compact JSON of the data type
    /// object of a type with a configuration (`numpy.datetime64`, `raw_bytes`, …).
    #[getter]
    fn dtype(&self) -> String {
        self.inner.layout().data_type_spec().to_string()
    }

    #[getter]
    fn chunks(&self) -> Vec<u64> {
        self.inner.layout().chunk_shape().to_vec()
    }

    /// The shard shape, or None for an unsharded array.
    #[getter]
    fn shards(&self) -> Option<Vec<u64>> {
        let layout = self.inner.layout();
        layout.is_sharded().then(|| layout.shard_shape().to_vec())
    }

    /// The shape of the outer grid cell (the shard, or the chunk when unsharded; the first
    /// one of a rectilinear grid).
    #[getter]
    fn shard_shape(&self) -> Vec<u64> {
        self.inner.layout().shard_shape().to_vec()
    }

    /// Whether every shard (every chunk, unsharded) has the same shape.
    #[getter]
    fn regular_shards(&self) -> bool {
        self.inner.layout().has_regular_shards()
    }

    /// The extents of the shards (chunks, unsharded) along each dimension, clipped to the
    /// array: zarr-python's `write_chunk_sizes`.
    #[getter]
    fn shard_sizes(&self) -> Vec<Vec<u64>> {
        self.inner.shard_grid().cell_sizes()
    }

    /// The extents of the inner chunks along each dimension, clipped to the array:
    /// zarr-python's `read_chunk_sizes`.
    #[getter]
    fn chunk_sizes(&self) -> Vec<Vec<u64>> {
        self.inner.chunk_grid().cell_sizes()
    }

    /// The number of shards (chunks, unsharded) along each dimension.
    #[getter]
    fn shard_grid_shape(&self) -> Vec<u64> {
        self.inner.shard_grid().grid_shape().to_vec()
    }

    /// The number of inner chunks along each dimension.
    #[getter]
    fn chunk_grid_shape(&self) -> Vec<u64> {
        self.inner.chunk_grid().grid_shape().to_vec()
    }

    /// The grid index of the shard holding the element at `point`.
    fn shard_index_at(&self, point: Vec<u64>) -> Vec<u64> {
        self.inner.shard_grid().cell_index_at(&point)
    }

    #[getter]
    fn fill_value_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.inner.layout().fill_value_bytes())
    }

    #[getter]
    fn metadata_json(&self) -> PyResult<String> {
        let layout = self.inner.layout(); // as stored: attributes keep every digit
        let parsed = || serde_json::to_string(layout.metadata()).map_err(|e| error(e.to_string()));
        layout.json().map(str::to_string).map_or_else(parsed, Ok)
    }

    #[pyo3(signature = (within_region=None))]
    fn iter_shards(&self, within_region: Option<(Vec<u64>, Vec<u64>)>) -> PyResult<PyGridIter> {
        let region = within(&self.inner, within_region)?;
        Ok(PyGridIter::new(self.inner.shards_meeting(&region)))
    }

    #[pyo3(signature = (within_region=None))]
    fn iter_chunks(&self, within_region: Option<(Vec<u64>, Vec<u64>)>) -> PyResult<PyGridIter> {
        let region = within(&self.inner, within_region)?;
        Ok(PyGridIter::new(self.inner.chunks_meeting(&region)))
    }

    /// The shard at grid index `index` as `(origin, shape)`.
    fn shard(&self, index: Vec<u64>) -> PyResult<(Vec<u64>, Vec<u64>)> {
        let d = self.inner.shard(&index).py()?;
        Ok((d.origin().to_vec(), d.shape().to_vec()))
    }

    /// A writer for the shard at grid index `index`.
    #[pyo3(signature = (index, max_in_flight=None, retries=None, overwrite_corrupt=false))]
    fn shard_writer(
        &self,
        index: Vec<u64>,
        max_in_flight: Option<usize>,
        retries: Option<u32>,
        overwrite_corrupt: bool,
    ) -> PyResult<PyShardWriter> {
        guard(|| {
            let shard = self.inner.shard(&index).py()?;
            let options = writer_options(max_in_flight, retries, overwrite_corrupt);
            let writer = self
                .inner
                .clone()
                .with_options(options)
                .shard_writer(&shard)
                .py()?;
            Ok(PyShardWriter::new(
                writer,
                self.inner.layout().element_size(),
            ))
        })
    }

    /// A transaction over the array.
    #[pyo3(signature = (memory_limit=None, early_commit=false, retries=None, overwrite_corrupt=false))]
    fn transaction(
        &self,
        memory_limit: Option<u64>,
        early_commit: bool,
        retries: Option<u32>,
        overwrite_corrupt: bool,
    ) -> PyTransaction {
        let mut options = TransactionOptions::default()
            .early_commit(early_commit)
            .writer(writer_options(None, retries, overwrite_corrupt));
        if let Some(limit) = memory_limit {
            options = options.memory_limit(limit);
        }
        let tx = Transaction::new(self.inner.clone(), options);
        PyTransaction::new(tx, self.inner.layout().element_size())
    }

    /// The same array with its user attributes changed in its `zarr.json`: replaced by
    /// the JSON object `replace_json` (if given), else the stored ones, with the keys of
    /// `set_json` set and those of `remove` dropped.
    #[pyo3(signature = (replace_json, set_json, remove))]
    fn update_attributes(
        &self,
        py: Python<'_>,
        replace_json: Option<&str>,
        set_json: &str,
        remove: Vec<String>,
    ) -> PyResult<Self> {
        let replace = replace_json.map(attributes).transpose()?;
        let set = attributes(set_json)?;
        let inner = py
            .detach(|| self.inner.update_attributes_json(replace, set, &remove))
            .py()?;
        Ok(self.edited(inner))
    }

    /// The same array resized to `shape` (see `Array::resize`).
    fn resize(&self, py: Python<'_>, shape: Vec<u64>) -> PyResult<Self> {
        let inner = py.detach(|| self.inner.resize(shape)).py()?;
        Ok(self.edited(inner))
    }

    /// Read a region as a flat uint8 numpy array of its raw elements.
    fn read<'py>(
        &self,
        py: Python<'py>,
        origin: Vec<u64>,
        shape: Vec<u64>,
    ) -> PyResult<Bound<'py, PyArray1<u8>>> {
        guard(|| {
            let region = domain(origin, shape)?;
            let bytes = py.detach(|| self.inner.read(&region)).py()?;
            Ok(PyArray1::from_vec(py, bytes))
        })
    }
}
