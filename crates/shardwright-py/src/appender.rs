//! `_core.Appender`: frames appended along one axis of an array (see
//! `shardwright::append`). The frame is copied with the GIL held; the engine appender
//! runs behind a mutex with the GIL released, so calls from several threads are
//! serialized: each call's frames stay together, in the order the calls take the lock.

use std::sync::{Mutex, MutexGuard, PoisonError};

use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use std::str::FromStr;

use shardwright::append::{Appender, ImageAppender};
use shardwright::pyramid::Method;
use shardwright::Domain;

use crate::array::PyArray;
use crate::errors::{error, guard, IntoPy};
use crate::writer::gather;

/// An appender of frames (see `shardwright.Appender`); `None` once closed.
#[pyclass(module = "shardwright._core", name = "Appender", frozen)]
pub(crate) struct PyAppender {
    inner: Mutex<Option<Appender>>,
    array: Py<PyArray>,
    element_size: usize,
}

impl PyAppender {
    fn lock(&self) -> MutexGuard<'_, Option<Appender>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Run `f` on the open appender, with the GIL released.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Appender) -> shardwright::Result<T> + Send,
    ) -> PyResult<T> {
        let done = py.detach(|| match self.lock().as_mut() {
            Some(appender) => Ok(f(appender)),
            None => Err(()),
        });
        match done {
            Ok(result) => result.py(),
            Err(()) => Err(closed()),
        }
    }
}

fn closed() -> PyErr {
    error("the appender is closed: open another with Array.appender(axis)")
}

#[pymethods]
impl PyAppender {
    /// An appender of frames along `axis` of `array` (continuing from its stored shape);
    /// `near_end`: looking for debris only in the slabs past the shape, never listing.
    #[staticmethod]
    #[pyo3(signature = (array, axis, near_end = false))]
    fn open(py: Python<'_>, array: Py<PyArray>, axis: usize, near_end: bool) -> PyResult<Self> {
        guard(|| {
            let inner = array.get().inner.clone();
            let element_size = inner.layout().element_size();
            let appender = py
                .detach(|| {
                    if near_end {
                        inner.appender_near_end(axis)
                    } else {
                        inner.appender(axis)
                    }
                })
                .py()?;
            Ok(Self {
                inner: Mutex::new(Some(appender)),
                array,
                element_size,
            })
        })
    }

    /// Append a frame or a block of frames (a numpy array of the array's dtype).
    fn append(&self, py: Python<'_>, data: &Bound<'_, PyUntypedArray>) -> PyResult<()> {
        guard(|| {
            let shape: Vec<u64> = data.shape().iter().map(|s| *s as u64).collect();
            let raw = gather(
                data,
                &Domain::from_shape(shape.clone()),
                self.element_size,
                |len| Ok(shardwright::buffer::zeroed(len)?),
            )?;
            self.with(py, move |a| a.append(&raw, &shape))
        })
    }

    /// Wait until every complete slab is stored and shown.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        guard(|| self.with(py, Appender::flush))
    }

    /// Store the last slab, set the exact shape, and return the array (reopened); a
    /// second close does nothing and returns `None`.
    fn close(&self, py: Python<'_>) -> PyResult<Option<PyArray>> {
        guard(|| {
            let Some(appender) = py.detach(|| self.lock().take()) else {
                return Ok(None);
            };
            let array = py.detach(|| appender.finish()).py()?;
            Ok(Some(self.array.get().edited(array)))
        })
    }

    /// Whether it was closed.
    #[getter]
    fn closed(&self, py: Python<'_>) -> bool {
        py.detach(|| self.lock().is_none())
    }

    /// The frames along the axis so far.
    #[getter]
    fn length(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |a| Ok(a.length()))
    }

    /// The array's shape once every frame appended so far is stored.
    #[getter]
    fn shape(&self, py: Python<'_>) -> PyResult<Vec<u64>> {
        self.with(py, |a| Ok(a.shape()))
    }

    /// The shape shown in `zarr.json` now.
    #[getter]
    fn shown_shape(&self, py: Python<'_>) -> PyResult<Vec<u64>> {
        self.with(py, |a| Ok(a.array().layout().shape().to_vec()))
    }
}

/// An appender of frames to level 0 of an image, its levels following (see
/// `shardwright.ImageAppender`); `None` once closed.
#[pyclass(module = "shardwright._core", name = "ImageAppender", frozen)]
pub(crate) struct PyImageAppender {
    inner: Mutex<Option<ImageAppender>>,
    levels: Vec<Py<PyArray>>,
    element_size: usize,
}

impl PyImageAppender {
    fn lock(&self) -> MutexGuard<'_, Option<ImageAppender>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Run `f` on the open appender, with the GIL released.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut ImageAppender) -> shardwright::Result<T> + Send,
    ) -> PyResult<T> {
        let done = py.detach(|| self.lock().as_mut().map(f));
        match done {
            Some(result) => result.py(),
            None => Err(closed()),
        }
    }
}

#[pymethods]
impl PyImageAppender {
    /// An appender of frames along `axis` to `levels[0]`, each level downsampled from
    /// the one below by `factors` with `method`.
    #[staticmethod]
    fn open(
        py: Python<'_>,
        levels: Vec<Py<PyArray>>,
        factors: Vec<u64>,
        method: &str,
        axis: usize,
    ) -> PyResult<Self> {
        guard(|| {
            let arrays: Vec<shardwright::Array> =
                levels.iter().map(|l| l.get().inner.clone()).collect();
            let method = Method::from_str(method)
                .map_err(|e| shardwright::Error::from(shardwright::pyramid::PyramidError::from(e)))
                .py()?;
            let element_size = arrays.first().map_or(1, |a| a.layout().element_size());
            let appender = py
                .detach(|| ImageAppender::new(&arrays, &factors, method, axis))
                .py()?;
            Ok(Self {
                inner: Mutex::new(Some(appender)),
                levels,
                element_size,
            })
        })
    }

    /// Append a frame or a block of frames (a numpy array of the image's dtype).
    fn append(&self, py: Python<'_>, data: &Bound<'_, PyUntypedArray>) -> PyResult<()> {
        guard(|| {
            let shape: Vec<u64> = data.shape().iter().map(|s| *s as u64).collect();
            let raw = gather(
                data,
                &Domain::from_shape(shape.clone()),
                self.element_size,
                |len| Ok(shardwright::buffer::zeroed(len)?),
            )?;
            self.with(py, move |a| a.append(&raw, &shape))
        })
    }

    /// Wait until every level's complete slabs are stored and shown.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        guard(|| self.with(py, ImageAppender::flush))
    }

    /// Reduce the partial groups, store every level's last slab, set the exact shapes;
    /// returns the levels (reopened), or `None` if it was closed already.
    fn close(&self, py: Python<'_>) -> PyResult<Option<Vec<PyArray>>> {
        guard(|| {
            let Some(appender) = py.detach(|| self.lock().take()) else {
                return Ok(None);
            };
            let arrays = py.detach(|| appender.finish()).py()?;
            Ok(Some(
                arrays
                    .into_iter()
                    .zip(&self.levels)
                    .map(|(a, l)| l.get().edited(a))
                    .collect(),
            ))
        })
    }

    /// Whether it was closed.
    #[getter]
    fn closed(&self, py: Python<'_>) -> bool {
        py.detach(|| self.lock().is_none())
    }

    /// The frames of level 0 along the axis so far.
    #[getter]
    fn length(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |a| Ok(a.length()))
    }

    /// Each level's shape once the frames so far are stored.
    #[getter]
    fn shapes(&self, py: Python<'_>) -> PyResult<Vec<Vec<u64>>> {
        self.with(py, |a| Ok(a.shapes()))
    }
}
