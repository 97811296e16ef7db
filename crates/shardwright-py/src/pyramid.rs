//! `_core.Source` (what a pyramid or copy reads) and `_core.build` (the one-pass driver:
//! `shardwright.pyramid` and `shardwright.copy`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PySlice, PyTuple};
use shardwright::pyramid::build::{self as driver, Progress, Report};
use shardwright::pyramid::source::{source_error, ArraySource, Source, ZarrsSource};
use shardwright::pyramid::PyramidError;
use shardwright::store::Store;
use shardwright::{Array, Domain, ErrorKind, FilesystemStore};

use crate::array::{group_error, is_group, object_store, open_named, PyArray};
use crate::destination::{build_options, default_name, Destination, Settings};
use crate::errors::{guard, IntoPy};
use crate::pystore::PyZarrStore;

/// The Python exception a callback source or the progress callback raised, kept to be
/// raised again once the build has stopped.
type Raised = Arc<Mutex<Option<PyErr>>>;

/// Any object with numpy-style slicing, read under the GIL from the reader thread.
struct ObjectSource {
    object: Py<PyAny>,
    shape: Vec<u64>,
    dtype: String,
    grain: Option<Vec<u64>>,
    raised: Raised,
}

impl Source for ObjectSource {
    fn read_grain(&self) -> Option<Vec<u64>> {
        self.grain.clone()
    }

    fn shape(&self) -> Vec<u64> {
        self.shape.clone()
    }

    fn data_type(&self) -> String {
        self.dtype.clone()
    }

    fn read(&self, region: &Domain) -> Result<Vec<u8>, PyramidError> {
        Python::attach(|py| {
            let read = || -> PyResult<Vec<u8>> {
                let slices: Vec<Bound<'_, PySlice>> = region
                    .origin()
                    .iter()
                    .zip(region.stop())
                    .map(|(o, s)| PySlice::new(py, *o as isize, s as isize, 1))
                    .collect();
                let key = PyTuple::new(py, slices)?;
                let part = self.object.bind(py).get_item(key)?;
                let helper = py.import("shardwright._sources")?;
                let bytes = helper.call_method1(
                    "_block_bytes",
                    (
                        part,
                        region.shape().to_vec(),
                        &self.dtype,
                        region.to_string(),
                    ),
                )?;
                bytes.extract::<Vec<u8>>()
            };
            read().map_err(|err| {
                let message = err.to_string();
                let mut slot = self.raised.lock().unwrap_or_else(PoisonError::into_inner);
                slot.get_or_insert(err);
                source_error(region, message)
            })
        })
    }
}

/// What a pyramid or a copy reads: an array opened natively, or any sliceable object.
#[pyclass(module = "shardwright._core", name = "Source", frozen)]
pub(crate) struct PySource {
    inner: Arc<dyn Source>,
    raised: Raised,
}

impl PySource {
    /// The engine's source.
    pub(crate) fn inner(&self) -> Arc<dyn Source> {
        Arc::clone(&self.inner)
    }
}

pub(crate) fn native(inner: impl Source + 'static) -> PySource {
    PySource {
        inner: Arc::new(inner),
        raised: Arc::default(),
    }
}

#[pymethods]
impl PySource {
    /// A Zarr v2 or v3 array in a local folder (v3 arrays shardwright reads natively, the
    /// rest through zarrs).
    #[staticmethod]
    fn open_path(py: Python<'_>, root: PathBuf) -> PyResult<Self> {
        guard(|| {
            let text = root.display().to_string();
            let store: Arc<dyn Store> = Arc::new(FilesystemStore::new(&root));
            if py.detach(|| is_group(store.as_ref(), "")) {
                return Err(group_error(&text));
            }
            match py.detach(|| Array::open(store, "")) {
                Ok(array) => return Ok(native(ArraySource::new(array))),
                Err(e) if e.kind() == ErrorKind::NotFound && !root.join(".zarray").exists() => {
                    return Err(crate::errors::not_found(format!(
                        "no Zarr array at '{text}' (no zarr.json or .zarray there)"
                    )))
                }
                Err(_) => {}
            }
            let source = py
                .detach(|| ZarrsSource::open(&root))
                .map_err(shardwright::Error::from)
                .py()?;
            Ok(native(source))
        })
    }

    /// A Zarr v3 array at an object-store URL.
    #[staticmethod]
    fn open_url(py: Python<'_>, url: String, options: Vec<(String, String)>) -> PyResult<Self> {
        guard(|| {
            let (store, path) = object_store(&url, &options)?;
            Ok(native(ArraySource::new(open_named(
                py,
                Arc::new(store),
                &path,
                &url,
            )?)))
        })
    }

    /// A Zarr v3 array at `path` in a zarr-python store (through `adapter`).
    #[staticmethod]
    fn open_adapter(
        py: Python<'_>,
        adapter: Py<PyAny>,
        path: String,
        url: String,
    ) -> PyResult<Self> {
        guard(|| {
            let store: Arc<dyn Store> = Arc::new(PyZarrStore::new(py, adapter)?);
            Ok(native(ArraySource::new(open_named(
                py, store, &path, &url,
            )?)))
        })
    }

    /// An opened shardwright array.
    #[staticmethod]
    fn of_array(array: &PyArray) -> Self {
        native(ArraySource::new(array.inner.clone()))
    }

    /// Any object with `.shape`, `.dtype` and numpy-style slicing: `object[a:b, c:d]` is
    /// read for each block (cast to `dtype` when it holds every value exactly). `grain`:
    /// the object's chunk shape, if it reads whole chunks (blocks that cut its chunks are
    /// then cut from chunks read once each).
    #[staticmethod]
    #[pyo3(signature = (object, shape, dtype, grain=None))]
    fn of_object(
        object: Py<PyAny>,
        shape: Vec<u64>,
        dtype: String,
        grain: Option<Vec<u64>>,
    ) -> Self {
        let raised = Raised::default();
        Self {
            inner: Arc::new(ObjectSource {
                object,
                shape,
                dtype,
                grain,
                raised: Arc::clone(&raised),
            }),
            raised,
        }
    }

    /// The source's shape.
    #[getter]
    fn shape(&self) -> Vec<u64> {
        self.inner.shape()
    }

    /// Its Zarr v3 data type name.
    #[getter]
    fn dtype(&self) -> String {
        self.inner.data_type()
    }

    /// Read a region as a flat uint8 numpy array of its raw elements (C order, native
    /// endian).
    fn read<'py>(
        &self,
        py: Python<'py>,
        origin: Vec<u64>,
        shape: Vec<u64>,
    ) -> PyResult<Bound<'py, numpy::PyArray1<u8>>> {
        guard(|| {
            let region = Domain::try_new(origin, shape)
                .map_err(shardwright::Error::from)
                .py()?;
            let inner = Arc::clone(&self.inner);
            let bytes = py
                .detach(|| inner.read(&region))
                .map_err(shardwright::Error::from)
                .py()?;
            Ok(numpy::PyArray1::from_vec(py, bytes))
        })
    }
}

/// The engine's progress callback for `progress` (a Python callable, or none): it calls
/// `progress` with [`progress_dict`] after each stored shard, and stops the job on Ctrl-C
/// or when `progress` raises, keeping the exception in `raised` to be raised again.
pub(crate) fn progress_callback<'a>(
    progress: Option<&'a Py<PyAny>>,
    raised: &'a Mutex<Option<PyErr>>,
) -> impl FnMut(&Progress) -> bool + 'a {
    move |p: &Progress| -> bool {
        Python::attach(|py| {
            let outcome = py.check_signals().and_then(|()| match progress {
                Some(callback) => callback.call1(py, (progress_dict(py, p)?,)).map(|_| ()),
                None => Ok(()),
            });
            match outcome {
                Ok(()) => true,
                Err(err) => {
                    let mut slot = raised.lock().unwrap_or_else(PoisonError::into_inner);
                    slot.get_or_insert(err);
                    false
                }
            }
        })
    }
}

pub(crate) fn progress_dict<'py>(py: Python<'py>, p: &Progress) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("level", p.level)?;
    d.set_item("shards_done", p.shards_done.iter().sum::<u64>())?;
    d.set_item("shards_total", p.shards_total.iter().sum::<u64>())?;
    d.set_item("shards_done_per_level", p.shards_done.clone())?;
    d.set_item("shards_total_per_level", p.shards_total.clone())?;
    d.set_item("bytes_read", p.bytes_read)?;
    d.set_item("bytes_written", p.bytes_written)?;
    Ok(d)
}

pub(crate) fn report_dict<'py>(py: Python<'py>, r: &Report) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("bytes_read", r.bytes_read)?;
    d.set_item("bytes_written", r.bytes_written)?;
    d.set_item("shards_written", r.shards_written.clone())?;
    d.set_item("shards_skipped", r.shards_skipped.clone())?;
    d.set_item("puts", r.puts)?;
    d.set_item("gets", r.gets)?;
    d.set_item("seconds", r.seconds)?;
    d.set_item("memory_bound", r.memory_bound)?;
    Ok(d)
}

/// Build a pyramid (`kind="pyramid"`) or a copy (`kind="copy"`) of `source` at the
/// destination (a folder `root`, an object-store `url`, or `adapter` + `path`), after
/// checking every setting (nothing is written or removed when one is wrong). Returns the
/// written arrays and the build's report.
#[pyfunction]
#[pyo3(signature = (source, kind, root, url, options, adapter, path, settings, resume, overwrite, progress))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn build<'py>(
    py: Python<'py>,
    source: &PySource,
    kind: &str,
    root: Option<PathBuf>,
    url: Option<String>,
    options: Vec<(String, String)>,
    adapter: Option<Py<PyAny>>,
    path: String,
    settings: Settings,
    resume: bool,
    overwrite: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<(Vec<PyArray>, Bound<'py, PyDict>)> {
    guard(|| {
        let as_pyramid = kind == "pyramid";
        let build_options = build_options(
            settings,
            resume,
            default_name(root.as_deref(), url.as_deref()),
        )?;
        // without the GIL: the check reads one element (a callback source takes the GIL
        // itself; a store may be served by Python threads of this process)
        let checked =
            py.detach(|| driver::check(source.inner.as_ref(), &build_options, as_pyramid));
        if let Err(e) = checked {
            let kept = source
                .raised
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            return Err(kept.unwrap_or_else(|| crate::errors::to_py(e)));
        }
        let destination = Destination::of(py, root, url, &options, adapter, path)?;
        destination.make_room(py, overwrite, resume)?;
        let (store, dest_path) = destination.store_and_path();
        let raised = Arc::clone(&source.raised);
        let mut on_progress = progress_callback(progress.as_ref(), &raised);
        let inner = Arc::clone(&source.inner);
        let outcome = py.detach(|| {
            if as_pyramid {
                driver::pyramid(
                    inner.as_ref(),
                    store,
                    &dest_path,
                    &build_options,
                    &mut on_progress,
                )
            } else {
                driver::copy(
                    inner.as_ref(),
                    store,
                    &dest_path,
                    &build_options,
                    &mut on_progress,
                )
            }
        });
        let kept = source
            .raised
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let report = match (outcome, kept) {
            (Ok(report), _) => report,
            (Err(_), Some(err)) => return Err(err),
            (Err(e), None) => return Err(crate::errors::to_py(e)),
        };
        let arrays = report
            .levels
            .iter()
            .enumerate()
            .map(|(k, a)| {
                let sub = k.to_string();
                destination.level(a.clone(), as_pyramid.then_some(sub.as_str()))
            })
            .collect();
        Ok((arrays, report_dict(py, &report)?))
    })
}
