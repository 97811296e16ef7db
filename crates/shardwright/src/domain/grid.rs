//! Grids of cells over an array, clipped at the array edge: regular (one cell extent per
//! dimension) or rectilinear (the extent of every cell listed, per dimension).

use std::sync::Arc;

use super::{Domain, DomainError};

/// How a grid divides one dimension, as given to [`Grid::rectilinear`].
///
/// ```
/// use shardwright::domain::{AxisCells, Grid};
/// let grid = Grid::rectilinear(vec![10, 9], vec![AxisCells::Edges(vec![4, 6]), AxisCells::Regular(3)]).unwrap();
/// assert_eq!(grid.grid_shape(), &[2, 3]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AxisCells {
    /// Cells of one extent, from the origin on (what a regular grid does on every axis).
    Regular(u64),
    /// Cells of these extents, in order: their sum is at least the array's extent; a last
    /// cell may pass it (it is clipped), and cells that begin at or past it hold nothing
    /// and are not part of the grid.
    Edges(Vec<u64>),
}

/// One dimension of a grid: cells of one extent, or the end of each cell in order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Axis {
    Regular(u64),
    Varying(Arc<[u64]>),
}

impl Axis {
    /// Where cell `i` begins (for `i` inside the grid, or the cell just past it).
    fn start(&self, i: u64) -> u64 {
        match self {
            Axis::Regular(c) => i.saturating_mul(*c),
            Axis::Varying(ends) => match i.checked_sub(1) {
                None => 0,
                Some(before) => usize::try_from(before)
                    .ok()
                    .and_then(|b| ends.get(b))
                    .copied()
                    .unwrap_or(u64::MAX),
            },
        }
    }

    /// The extent of cell `i` (unclipped).
    fn extent(&self, i: u64) -> u64 {
        match self {
            Axis::Regular(c) => *c,
            Axis::Varying(ends) => {
                let end = usize::try_from(i)
                    .ok()
                    .and_then(|i| ends.get(i))
                    .copied()
                    .unwrap_or(0);
                end.saturating_sub(self.start(i))
            }
        }
    }

    /// The cell holding the element at `at`.
    fn cell_of(&self, at: u64) -> u64 {
        match self {
            Axis::Regular(c) => at / c,
            Axis::Varying(ends) => ends.partition_point(|end| *end <= at) as u64,
        }
    }

    /// The number of cells that begin before `extent`.
    fn count(&self, extent: u64) -> u64 {
        if extent == 0 {
            return 0;
        }
        self.cell_of(extent - 1) + 1
    }
}

/// A grid of cells tiling an array from the origin: regular (cells of `cell_shape`, built
/// with [`Grid::new`]) or rectilinear (each dimension's cell extents listed, built with
/// [`Grid::rectilinear`]).
///
/// Cells at the far edge of the array are clipped to it, so every cell a [`Grid`] hands out
/// holds only array elements; the cells tile the array exactly once.
///
/// ```
/// use shardwright::domain::{Domain, Grid};
///
/// let grid = Grid::new(vec![100], vec![32]).unwrap();
/// assert_eq!(grid.grid_shape(), &[4]);
/// assert_eq!(grid.cell(&[3]).unwrap(), Domain::new(vec![96], vec![4]));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grid {
    array_shape: Vec<u64>,
    axes: Vec<Axis>,
    /// The first cell's shape (unclipped): the cell shape of a regular grid.
    cell_shape: Vec<u64>,
    grid_shape: Vec<u64>,
    len: u64,
}

impl Grid {
    /// A regular grid of `cell_shape` cells over an array of `array_shape`.
    ///
    /// # Errors
    /// [`DomainError::Rank`] if the ranks differ, [`DomainError::ZeroCell`] if a cell extent is
    /// 0, [`DomainError::TooManyCells`] if the grid has more than `u64::MAX` cells.
    ///
    /// ```
    /// use shardwright::domain::{DomainError, Grid};
    /// let err = Grid::new(vec![u64::MAX; 2], vec![1, 1]).unwrap_err();
    /// assert!(matches!(err, DomainError::TooManyCells(_)));
    /// ```
    pub fn new(array_shape: Vec<u64>, cell_shape: Vec<u64>) -> Result<Self, DomainError> {
        let cells = cell_shape.into_iter().map(AxisCells::Regular).collect();
        Self::rectilinear(array_shape, cells)
    }

    /// A rectilinear grid over an array of `array_shape`: along each dimension, cells of
    /// one extent or of the extents listed (Zarr's `rectilinear` chunk grid).
    ///
    /// ```
    /// use shardwright::domain::{AxisCells, Domain, Grid};
    /// let grid = Grid::rectilinear(vec![10], vec![AxisCells::Edges(vec![4, 3, 5])]).unwrap();
    /// let cells: Vec<Domain> = grid.cells().collect();
    /// assert_eq!(cells, [Domain::new(vec![0], vec![4]), Domain::new(vec![4], vec![3]), Domain::new(vec![7], vec![3])]);
    /// assert!(!grid.is_regular());
    /// ```
    ///
    /// # Errors
    /// As [`Grid::new`], and [`DomainError::Edges`] for listed extents that are empty or
    /// do not reach the array's extent.
    pub fn rectilinear(array_shape: Vec<u64>, cells: Vec<AxisCells>) -> Result<Self, DomainError> {
        if array_shape.len() != cells.len() {
            return Err(DomainError::Rank {
                expected: array_shape.len(),
                got: cells.len(),
            });
        }
        let mut axes = Vec::with_capacity(cells.len());
        for (dim, (extent, given)) in array_shape.iter().zip(cells).enumerate() {
            axes.push(match given {
                AxisCells::Regular(c) => Axis::Regular(c),
                AxisCells::Edges(edges) => Axis::Varying(ends_of(dim, &edges, *extent)?),
            });
        }
        let cell_shape: Vec<u64> = axes.iter().map(|a| a.extent(0)).collect();
        if cell_shape.contains(&0) {
            return Err(DomainError::ZeroCell(cell_shape));
        }
        let grid_shape: Vec<u64> = axes
            .iter()
            .zip(&array_shape)
            .map(|(axis, a)| axis.count(*a))
            .collect();
        let len = grid_shape
            .iter()
            .try_fold(1u64, |n, g| n.checked_mul(*g))
            .ok_or_else(|| DomainError::TooManyCells(grid_shape.clone()))?;
        Ok(Self {
            array_shape,
            axes,
            cell_shape,
            grid_shape,
            len,
        })
    }

    /// The shape of the array the grid covers.
    #[must_use]
    pub fn array_shape(&self) -> &[u64] {
        &self.array_shape
    }

    /// The shape of one (unclipped) cell of a regular grid; of the first cell of a
    /// rectilinear one (see [`is_regular`](Self::is_regular) and
    /// [`cell_unclipped`](Self::cell_unclipped)).
    #[must_use]
    pub fn cell_shape(&self) -> &[u64] {
        &self.cell_shape
    }

    /// Whether every cell has the same (unclipped) shape: no dimension lists its extents.
    ///
    /// ```
    /// use shardwright::domain::Grid;
    /// assert!(Grid::new(vec![10], vec![4]).unwrap().is_regular());
    /// ```
    #[must_use]
    pub fn is_regular(&self) -> bool {
        self.axes.iter().all(|a| matches!(a, Axis::Regular(_)))
    }

    /// How the grid divides each dimension: the cell extent of a regular dimension, or the
    /// (unclipped) extent of each cell of a listed one — including listed cells past the
    /// array's extent, as metadata keeps them.
    ///
    /// ```
    /// use shardwright::domain::{AxisCells, Grid};
    /// let cells = vec![AxisCells::Edges(vec![4, 6, 5]), AxisCells::Regular(3)];
    /// assert_eq!(Grid::rectilinear(vec![9, 9], cells.clone()).unwrap().axis_cells(), cells);
    /// ```
    #[must_use]
    pub fn axis_cells(&self) -> Vec<AxisCells> {
        self.axes
            .iter()
            .map(|axis| match axis {
                Axis::Regular(c) => AxisCells::Regular(*c),
                Axis::Varying(ends) => {
                    let mut start = 0;
                    AxisCells::Edges(
                        ends.iter()
                            .map(|end| {
                                let extent = end - start;
                                start = *end;
                                extent
                            })
                            .collect(),
                    )
                }
            })
            .collect()
    }

    /// The extents of the cells along each dimension, clipped to the array (what dask calls
    /// an array's chunks).
    ///
    /// ```
    /// use shardwright::domain::Grid;
    /// assert_eq!(Grid::new(vec![10, 4], vec![4, 4]).unwrap().cell_sizes(), vec![vec![4, 4, 2], vec![4]]);
    /// ```
    #[must_use]
    pub fn cell_sizes(&self) -> Vec<Vec<u64>> {
        self.axes
            .iter()
            .zip(&self.array_shape)
            .zip(&self.grid_shape)
            .map(|((axis, a), n)| {
                (0..*n)
                    .map(|i| axis.extent(i).min(a.saturating_sub(axis.start(i))))
                    .collect()
            })
            .collect()
    }

    /// The number of cells along each dimension.
    #[must_use]
    pub fn grid_shape(&self) -> &[u64] {
        &self.grid_shape
    }

    /// The number of cells.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the grid has no cell (the array has a zero extent).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The whole array as a domain.
    #[must_use]
    pub fn bounds(&self) -> Domain {
        Domain::from_shape(self.array_shape.clone())
    }

    /// The cell at `index`, clipped to the array, tagged with its index.
    ///
    /// # Errors
    /// [`DomainError::Rank`] for an index of another rank, [`DomainError::OutOfBounds`] for an
    /// index outside the grid.
    pub fn cell(&self, index: &[u64]) -> Result<Domain, DomainError> {
        self.check_index(index)?;
        Ok(self.clipped(index))
    }

    /// The cell at an index known to lie inside the grid, clipped to the array. Its origin
    /// is at most `a - 1` (the cell begins inside the array) and its shape at most
    /// `a - origin`, so nothing overflows.
    fn clipped(&self, index: &[u64]) -> Domain {
        let origin: Vec<u64> = index
            .iter()
            .zip(&self.axes)
            .map(|(i, axis)| axis.start(*i))
            .collect();
        let shape = origin
            .iter()
            .zip(index.iter().zip(&self.axes))
            .zip(&self.array_shape)
            .map(|((o, (i, axis)), a)| axis.extent(*i).min(a.saturating_sub(*o)))
            .collect();
        Domain {
            origin,
            shape,
            index: Some(index.to_vec()),
        }
    }

    fn check_index(&self, index: &[u64]) -> Result<(), DomainError> {
        if index.len() != self.grid_shape.len() {
            return Err(DomainError::Rank {
                expected: self.grid_shape.len(),
                got: index.len(),
            });
        }
        if index.iter().zip(&self.grid_shape).any(|(i, g)| i >= g) {
            return Err(DomainError::OutOfBounds {
                region: Box::new(Domain {
                    origin: index.to_vec(),
                    // one element, or none at u64::MAX (a box never ends past it)
                    shape: index.iter().map(|&i| u64::from(i < u64::MAX)).collect(),
                    index: None,
                }),
                bounds: Box::new(Domain::from_shape(self.grid_shape.clone())),
            });
        }
        Ok(())
    }

    /// The cell at `index` with its full cell shape, even where it passes the array edge.
    ///
    /// # Errors
    /// As [`Grid::cell`], and [`DomainError::Overflow`] for a cell at the far edge of an
    /// array that ends within one cell of `u64::MAX`, which would end past it.
    pub fn cell_unclipped(&self, index: &[u64]) -> Result<Domain, DomainError> {
        self.check_index(index)?;
        let origin = self.clipped(index).origin;
        let shape = index
            .iter()
            .zip(&self.axes)
            .map(|(i, axis)| axis.extent(*i))
            .collect();
        Ok(Domain::try_new(origin, shape)?.with_index(index.to_vec()))
    }

    /// The grid index of the cell holding the element at `point` (past the grid's last
    /// cell along a dimension where `point` lies past the array).
    ///
    /// ```
    /// use shardwright::domain::{AxisCells, Grid};
    /// let grid = Grid::rectilinear(vec![10, 8], vec![AxisCells::Edges(vec![4, 6]), AxisCells::Regular(4)]).unwrap();
    /// assert_eq!(grid.cell_index_at(&[5, 3]), vec![1, 0]);
    /// ```
    #[must_use]
    pub fn cell_index_at(&self, point: &[u64]) -> Vec<u64> {
        point
            .iter()
            .zip(&self.axes)
            .map(|(p, axis)| axis.cell_of(*p))
            .collect()
    }

    /// The position of a grid index in C order (row-major).
    #[must_use]
    pub fn linear_index(&self, index: &[u64]) -> u64 {
        // Below `len` (a u64) for an index inside the grid; saturates for one outside it.
        index
            .iter()
            .zip(&self.grid_shape)
            .fold(0u64, |acc, (i, g)| {
                acc.saturating_mul(*g).saturating_add(*i)
            })
    }

    /// Every cell, clipped, in C order.
    #[must_use]
    pub fn cells(&self) -> GridCells {
        GridCells::new(
            self,
            vec![0; self.grid_shape.len()],
            self.grid_shape.clone(),
        )
    }

    /// The cells (clipped to the array, not to `region`) that meet `region`, in C order.
    /// A region of another rank, or one that misses the array, meets no cell.
    #[must_use]
    pub fn cells_meeting(&self, region: &Domain) -> GridCells {
        let rank = self.grid_shape.len();
        let Some(inside) = region.intersect(&self.bounds()).filter(|_| rank > 0) else {
            let empty = if rank == 0 && region.ndim() == 0 {
                self.grid_shape.clone()
            } else {
                vec![0; rank]
            };
            return GridCells::new(self, vec![0; rank], empty);
        };
        // `inside` is not empty and lies in the array, so every element named is in a cell.
        let lo = inside
            .origin()
            .iter()
            .zip(&self.axes)
            .map(|(o, axis)| axis.cell_of(*o))
            .collect();
        let hi = inside
            .stop()
            .iter()
            .zip(&self.axes)
            .map(|(s, axis)| axis.cell_of(s - 1) + 1)
            .collect();
        GridCells::new(self, lo, hi)
    }
}

/// The end of each cell of a listed dimension `dim` of extent `extent`.
fn ends_of(dim: usize, edges: &[u64], extent: u64) -> Result<Arc<[u64]>, DomainError> {
    let mut end = 0u64;
    let mut ends = Vec::with_capacity(edges.len());
    for edge in edges {
        if *edge == 0 {
            return Err(DomainError::Edges {
                dim,
                why: "a cell has extent 0".into(),
            });
        }
        end = end.checked_add(*edge).ok_or_else(|| DomainError::Edges {
            dim,
            why: "the extents add up past 2^64".into(),
        })?;
        ends.push(end);
    }
    if ends.is_empty() || end < extent {
        return Err(DomainError::Edges {
            dim,
            why: format!(
                "the extents {edges:?} add up to {end}, short of the array's extent {extent}"
            ),
        });
    }
    Ok(ends.into())
}

/// Iterator over the cells of a [`Grid`] in a block of grid indices, in C order. It holds
/// its own copy of the grid (short vectors; a rectilinear grid's extents are shared), so it
/// borrows nothing.
///
/// ```
/// use shardwright::domain::{Domain, Grid};
/// let grid = Grid::new(vec![8, 8], vec![4, 4]).unwrap();
/// let meeting: Vec<_> = grid.cells_meeting(&Domain::new(vec![3, 3], vec![2, 1])).collect();
/// assert_eq!(meeting.len(), 2);
/// ```
#[derive(Debug, Clone)]
pub struct GridCells {
    grid: Grid,
    lo: Vec<u64>,
    hi: Vec<u64>,
    next: Option<Vec<u64>>,
    remaining: u64,
}

impl GridCells {
    fn new(grid: &Grid, lo: Vec<u64>, hi: Vec<u64>) -> Self {
        let remaining: u64 = lo
            .iter()
            .zip(&hi)
            .map(|(l, h)| h.saturating_sub(*l))
            .product();
        let next = (remaining > 0).then(|| lo.clone());
        Self {
            grid: grid.clone(),
            lo,
            hi,
            next,
            remaining,
        }
    }
}

impl Iterator for GridCells {
    type Item = Domain;

    fn next(&mut self) -> Option<Domain> {
        let current = self.next.take()?;
        let mut following = current.clone();
        let mut advanced = false;
        for ((f, lo), hi) in following.iter_mut().zip(&self.lo).zip(&self.hi).rev() {
            *f += 1;
            if *f < *hi {
                advanced = true;
                break;
            }
            *f = *lo;
        }
        if advanced {
            self.next = Some(following);
        }
        self.remaining = self.remaining.saturating_sub(1);
        // `lo..hi` lies inside the grid (cells_meeting clips it), so `current` does too.
        Some(self.grid.clipped(&current))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.remaining).unwrap_or(usize::MAX);
        (n, Some(n))
    }
}

impl ExactSizeIterator for GridCells {}
