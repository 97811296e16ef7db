//! `_core.Image`: an image whose coarser levels fill as level 0's shards are stored
//! (`shardwright.create_image`, `shardwright.open_image`).

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::PyDict;
use shardwright::image::{Image, ImageReport};

use crate::array::PyArray;
use crate::destination::{build_options, default_name, Destination, Settings};
use crate::errors::{error, guard, IntoPy};

/// A grid cell as Python sees it: `(origin, shape, index)`.
type Cell = (Vec<u64>, Vec<u64>, Vec<u64>);

/// An image being written; `finish` or `abandon` ends it.
#[pyclass(module = "shardwright._core", name = "Image", frozen)]
pub(crate) struct PyImage {
    inner: Mutex<Option<Image>>,
    destination: Destination,
}

fn report_dict<'py>(py: Python<'py>, r: &ImageReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("shards_written", r.shards_written.clone())?;
    d.set_item("bytes_written", r.bytes_written)?;
    d.set_item("puts", r.puts)?;
    d.set_item("rewritten", r.rewritten)?;
    d.set_item("seconds", r.seconds)?;
    Ok(d)
}

impl PyImage {
    /// `f` of the image, without the GIL (the lock is taken without it too: a thread
    /// holding the lock never waits for the GIL while another waits for the lock).
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Image) -> shardwright::Result<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            match inner.as_ref() {
                Some(image) => f(image).map_err(Some),
                None => Err(None),
            }
        })
        .map_err(|e| match e {
            Some(e) => crate::errors::to_py(e),
            None => error("the image is closed (finished or abandoned)"),
        })
    }

    fn take(&self, py: Python<'_>) -> PyResult<Image> {
        py.detach(|| {
            self.inner
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
        })
        .ok_or_else(|| error("the image is closed (finished or abandoned)"))
    }
}

impl Drop for PyImage {
    /// An image dropped unfinished is abandoned without the GIL: its feeding thread may
    /// be storing a shard through a zarr-python store, which takes the GIL.
    fn drop(&mut self) {
        let image = self
            .inner
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(image) = image {
            Python::attach(|py| py.detach(move || drop(image)));
        }
    }
}

#[pymethods]
impl PyImage {
    /// Create (or with `resume`, continue) an image at the destination (a folder `root`,
    /// an object-store `url` with `options`, or `adapter` + `path`).
    #[staticmethod]
    #[pyo3(signature = (root, url, options, adapter, path, shape, dtype, fill_json, settings, resume, overwrite))]
    #[allow(clippy::too_many_arguments)]
    fn create(
        py: Python<'_>,
        root: Option<PathBuf>,
        url: Option<String>,
        options: Vec<(String, String)>,
        adapter: Option<Py<PyAny>>,
        path: String,
        shape: Vec<u64>,
        dtype: String,
        fill_json: String,
        settings: Settings,
        resume: bool,
        overwrite: bool,
    ) -> PyResult<Self> {
        guard(|| {
            let build = build_options(
                settings,
                resume,
                default_name(root.as_deref(), url.as_deref()),
            )?;
            let fill: serde_json::Value =
                serde_json::from_str(&fill_json).map_err(|e| error(format!("fill value: {e}")))?;
            // Every setting checked before the destination is cleared.
            let plan = build
                .request
                .plan(&shape, &dtype)
                .map_err(shardwright::Error::from)
                .py()?;
            build
                .image
                .check(&plan)
                .map_err(shardwright::Error::from)
                .py()?;
            let destination = Destination::of(py, root, url, &options, adapter, path)?;
            destination.make_room(py, overwrite, resume)?;
            let (store, dest_path) = destination.store_and_path();
            let image = if resume
                && py
                    .detach(|| store.size(&shardwright::store::join(&dest_path, "zarr.json")))
                    .map_err(shardwright::Error::from)
                    .py()?
                    .is_none()
            {
                let mut fresh = build.clone();
                fresh.resume = false;
                py.detach(|| Image::create(store, &dest_path, &shape, &dtype, Some(fill), &fresh))
            } else {
                py.detach(|| Image::create(store, &dest_path, &shape, &dtype, Some(fill), &build))
            }
            .py()?;
            Ok(Self {
                inner: Mutex::new(Some(image)),
                destination,
            })
        })
    }

    /// Continue the image at the destination with the settings it recorded.
    #[staticmethod]
    fn open(
        py: Python<'_>,
        root: Option<PathBuf>,
        url: Option<String>,
        options: Vec<(String, String)>,
        adapter: Option<Py<PyAny>>,
        path: String,
    ) -> PyResult<Self> {
        guard(|| {
            let destination = Destination::of(py, root, url, &options, adapter, path)?;
            let (store, dest_path) = destination.store_and_path();
            let image = py.detach(|| Image::open(store, &dest_path)).py()?;
            Ok(Self {
                inner: Mutex::new(Some(image)),
                destination,
            })
        })
    }

    /// The level arrays, level 0 (whose writers feed the others) first.
    fn levels(&self, py: Python<'_>) -> PyResult<Vec<PyArray>> {
        let arrays = self.with(py, |image| Ok(image.levels().to_vec()))?;
        Ok(arrays
            .into_iter()
            .enumerate()
            .map(|(k, a)| self.destination.level(a, Some(&k.to_string())))
            .collect())
    }

    /// The downsampling factors and the method's name, as the plan has them.
    fn plan_settings(&self, py: Python<'_>) -> PyResult<(Vec<u64>, String)> {
        self.with(py, |image| {
            let plan = image.plan();
            Ok((plan.factors.clone(), plan.method.name().to_string()))
        })
    }

    /// Level 0's shards not stored yet, as `(origin, shape, index)`, in the order that
    /// completes the coarser levels' blocks soonest.
    fn shards_in_order(&self, py: Python<'_>) -> PyResult<Vec<Cell>> {
        let shards = self.with(py, Image::shards_in_order)?;
        Ok(shards
            .into_iter()
            .map(|s| {
                let index = s.index().map(<[u64]>::to_vec).unwrap_or_default();
                (s.origin().to_vec(), s.shape().to_vec(), index)
            })
            .collect())
    }

    /// Finish: complete what level 0's unwritten parts left open, write the OME metadata
    /// last. Returns the level arrays and what the image did.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<(Vec<PyArray>, Bound<'py, PyDict>)> {
        guard(|| {
            let image = self.take(py)?;
            let report = py.detach(|| image.finish()).py()?;
            let arrays = report
                .levels
                .iter()
                .enumerate()
                .map(|(k, a)| self.destination.level(a.clone(), Some(&k.to_string())))
                .collect();
            Ok((arrays, report_dict(py, &report)?))
        })
    }

    /// Stop after an error: shards stored stay, each whole; `open` continues.
    fn abandon(&self, py: Python<'_>) -> PyResult<()> {
        guard(|| {
            let image = self.take(py)?;
            py.detach(|| image.abandon()).py()
        })
    }

    /// Whether `finish` or `abandon` was called.
    #[getter]
    fn closed(&self, py: Python<'_>) -> bool {
        py.detach(|| {
            self.inner
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_none()
        })
    }
}
