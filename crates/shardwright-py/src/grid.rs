//! Lazy iteration over grid cells, yielding `(origin, shape, index)` tuples.

use pyo3::prelude::*;
use shardwright::domain::GridCells;

type CellTuple = (Vec<u64>, Vec<u64>, Vec<u64>);

/// An iterator of grid cells as `(origin, shape, index)` tuples.
#[pyclass(module = "shardwright._core", name = "GridIter")]
pub(crate) struct PyGridIter {
    cells: GridCells,
}

impl PyGridIter {
    pub(crate) fn new(cells: GridCells) -> Self {
        Self { cells }
    }
}

#[pymethods]
impl PyGridIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self) -> Option<CellTuple> {
        self.cells.next().map(|d| {
            let index = d.index().map(<[u64]>::to_vec).unwrap_or_default();
            (d.origin().to_vec(), d.shape().to_vec(), index)
        })
    }

    fn __len__(&self) -> usize {
        self.cells.len()
    }
}
