//! `_core.PyramidTasks`: a pyramid built as one task per shard of each level
//! (`shardwright.dask.pyramid`). Prepared once where the graph is made, shipped to the
//! workers by pickling (reopened there from where it writes, nothing created), and run one
//! shard at a time.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use shardwright::pyramid::tasks::LevelTasks;

use crate::array::PyArray;
use crate::destination::{build_options, default_name, Destination, Settings};
use crate::errors::{guard, IntoPy};
use crate::pyramid::PySource;
use crate::writer::stats_dict;

/// Where the tasks write, as given: enough to open them again in another process.
struct Place {
    root: Option<PathBuf>,
    url: Option<String>,
    options: Vec<(String, String)>,
    adapter: Option<Py<PyAny>>,
    path: String,
}

/// A prepared pyramid whose shards are written by independent tasks.
#[pyclass(module = "shardwright._core", name = "PyramidTasks", frozen)]
pub(crate) struct PyPyramidTasks {
    inner: LevelTasks,
    destination: Destination,
    place: Place,
}

#[pymethods]
impl PyPyramidTasks {
    /// Plan the pyramid of `source` (not read: its shape, dtype and fill value) at the
    /// destination (a folder `root`, an object-store `url`, or `adapter` + `path`), clear
    /// it (`overwrite`) or refuse a non-empty one (unless `resume`), and create the level
    /// arrays. Arguments as `_core.build`'s.
    #[staticmethod]
    #[pyo3(signature = (source, root, url, options, adapter, path, settings, resume, overwrite))]
    #[allow(clippy::too_many_arguments)]
    fn prepare(
        py: Python<'_>,
        source: &PySource,
        root: Option<PathBuf>,
        url: Option<String>,
        options: Vec<(String, String)>,
        adapter: Option<Py<PyAny>>,
        path: String,
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
            // the settings are checked before anything is removed
            let shape = source.inner().shape();
            build
                .request
                .plan(&shape, &source.inner().data_type())
                .and_then(|plan| {
                    shardwright::pyramid::ome::group_metadata(&plan, "image", &build.image, &[])
                })
                .map_err(shardwright::Error::from)
                .py()?;
            let place = Place {
                root,
                url,
                options,
                adapter: adapter.as_ref().map(|a| a.clone_ref(py)),
                path,
            };
            let destination = place.destination(py)?;
            destination.make_room(py, overwrite, resume)?;
            let (store, dest_path) = destination.store_and_path();
            let inner = source.inner();
            let tasks = py
                .detach(|| LevelTasks::prepare(inner.as_ref(), store, &dest_path, &build))
                .py()?;
            Ok(Self {
                inner: tasks,
                destination,
                place,
            })
        })
    }

    /// The tasks of a prepared pyramid, opened again (by unpickling, on a worker).
    #[staticmethod]
    #[pyo3(signature = (root, url, options, adapter, path, levels, group))]
    #[allow(clippy::too_many_arguments)]
    fn reopen(
        py: Python<'_>,
        root: Option<PathBuf>,
        url: Option<String>,
        options: Vec<(String, String)>,
        adapter: Option<Py<PyAny>>,
        path: String,
        levels: usize,
        group: Vec<u8>,
    ) -> PyResult<Self> {
        guard(|| {
            let place = Place {
                root,
                url,
                options,
                adapter,
                path,
            };
            let destination = place.destination(py)?;
            let (store, dest_path) = destination.store_and_path();
            let tasks = py
                .detach(|| LevelTasks::open(store, &dest_path, levels, group))
                .py()?;
            Ok(Self {
                inner: tasks,
                destination,
                place,
            })
        })
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        let this = slf.get();
        let place = &this.place;
        let reopen = slf.get_type().getattr("reopen")?;
        let args = (
            place.root.clone(),
            place.url.clone(),
            place.options.clone(),
            place.adapter.as_ref().map(|a| a.clone_ref(py)),
            place.path.clone(),
            this.inner.levels().len(),
            PyBytes::new(py, this.inner.group_document()),
        )
            .into_pyobject(py)?;
        Ok((reopen, args))
    }

    /// The level arrays, level 0 first.
    fn levels(&self) -> Vec<PyArray> {
        self.inner
            .levels()
            .iter()
            .enumerate()
            .map(|(k, a)| self.destination.level(a.clone(), Some(&k.to_string())))
            .collect()
    }

    /// The shard grid indices already stored, per level (what a resumed job skips).
    fn stored(&self, py: Python<'_>) -> PyResult<Vec<Vec<Vec<u64>>>> {
        guard(|| {
            let stored = py.detach(|| self.inner.stored()).py()?;
            Ok(stored
                .iter()
                .zip(self.inner.levels())
                .map(|(linear, array)| {
                    // what is stored, in C order: not a walk over the whole grid
                    let mut linear: Vec<u64> = linear.iter().copied().collect();
                    linear.sort_unstable();
                    let grid = array.shard_grid().grid_shape();
                    linear.into_iter().map(|n| unravel(n, grid)).collect()
                })
                .collect())
        })
    }

    /// The shard indices of level `level - 1` that shard `index` of `level` reads.
    fn inputs(&self, level: usize, index: Vec<u64>) -> PyResult<Vec<Vec<u64>>> {
        guard(|| self.inner.inputs(level, &index).py())
    }

    /// Write shard `index` of `level` (1 or more) from the level below as stored; the
    /// commit's stats.
    fn write_shard<'py>(
        &self,
        py: Python<'py>,
        level: usize,
        index: Vec<u64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        guard(|| {
            let stats = py.detach(|| self.inner.write_shard(level, &index)).py()?;
            stats_dict(py, &stats)
        })
    }

    /// Write the group's metadata (last); the bytes written.
    fn finish(&self, py: Python<'_>) -> PyResult<u64> {
        guard(|| py.detach(|| self.inner.finish()).py())
    }
}

impl Place {
    fn destination(&self, py: Python<'_>) -> PyResult<Destination> {
        Destination::of(
            py,
            self.root.clone(),
            self.url.clone(),
            &self.options,
            self.adapter.as_ref().map(|a| a.clone_ref(py)),
            self.path.clone(),
        )
    }
}

/// The grid index (C order) of linear index `n` in a grid of shape `grid`.
fn unravel(mut n: u64, grid: &[u64]) -> Vec<u64> {
    let mut index = vec![0; grid.len()];
    for (i, extent) in index.iter_mut().zip(grid).rev() {
        *i = n % extent.max(&1);
        n /= extent.max(&1);
    }
    index
}
