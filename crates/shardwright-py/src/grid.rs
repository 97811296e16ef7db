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

/// One dimension of a rectilinear grid as Python gives it: an extent, or a list of them.
#[derive(FromPyObject)]
pub(crate) enum GridCellsArg {
    /// Cells of one extent.
    Regular(u64),
    /// The extent of each cell.
    Edges(Vec<u64>),
}

impl GridCellsArg {
    pub(crate) fn into_cells(self) -> shardwright::domain::AxisCells {
        match self {
            GridCellsArg::Regular(c) => shardwright::domain::AxisCells::Regular(c),
            GridCellsArg::Edges(e) => shardwright::domain::AxisCells::Edges(e),
        }
    }
}
