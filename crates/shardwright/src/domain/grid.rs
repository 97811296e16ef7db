//! A regular grid of cells over an array, clipped at the array edge.

use super::{Domain, DomainError};

/// A regular grid: cells of `cell_shape` tiling an array of `array_shape` from the origin.
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
    cell_shape: Vec<u64>,
    grid_shape: Vec<u64>,
}

impl Grid {
    /// A grid of `cell_shape` cells over an array of `array_shape`.
    ///
    /// # Errors
    /// [`DomainError::Rank`] if the ranks differ, [`DomainError::ZeroCell`] if a cell extent is 0.
    pub fn new(array_shape: Vec<u64>, cell_shape: Vec<u64>) -> Result<Self, DomainError> {
        if array_shape.len() != cell_shape.len() {
            return Err(DomainError::Rank {
                expected: array_shape.len(),
                got: cell_shape.len(),
            });
        }
        if cell_shape.contains(&0) {
            return Err(DomainError::ZeroCell(cell_shape));
        }
        let grid_shape = array_shape
            .iter()
            .zip(&cell_shape)
            .map(|(a, c)| a.div_ceil(*c))
            .collect();
        Ok(Self {
            array_shape,
            cell_shape,
            grid_shape,
        })
    }

    /// The shape of the array the grid covers.
    #[must_use]
    pub fn array_shape(&self) -> &[u64] {
        &self.array_shape
    }

    /// The shape of one (unclipped) cell.
    #[must_use]
    pub fn cell_shape(&self) -> &[u64] {
        &self.cell_shape
    }

    /// The number of cells along each dimension.
    #[must_use]
    pub fn grid_shape(&self) -> &[u64] {
        &self.grid_shape
    }

    /// The number of cells.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.grid_shape.iter().product()
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
        let unclipped = self.cell_unclipped(index)?;
        let clipped = unclipped
            .intersect(&self.bounds())
            .expect("a cell inside the grid meets the array");
        Ok(clipped.with_index(index.to_vec()))
    }

    /// The cell at `index` with its full cell shape, even where it passes the array edge.
    ///
    /// # Errors
    /// As [`Grid::cell`].
    pub fn cell_unclipped(&self, index: &[u64]) -> Result<Domain, DomainError> {
        if index.len() != self.grid_shape.len() {
            return Err(DomainError::Rank {
                expected: self.grid_shape.len(),
                got: index.len(),
            });
        }
        if index.iter().zip(&self.grid_shape).any(|(i, g)| i >= g) {
            return Err(DomainError::OutOfBounds {
                region: Box::new(Domain::new(index.to_vec(), vec![1; index.len()])),
                bounds: Box::new(Domain::from_shape(self.grid_shape.clone())),
            });
        }
        let origin = index
            .iter()
            .zip(&self.cell_shape)
            .map(|(i, c)| i * c)
            .collect();
        Ok(Domain::new(origin, self.cell_shape.clone()).with_index(index.to_vec()))
    }

    /// The position of a grid index in C order (row-major).
    #[must_use]
    pub fn linear_index(&self, index: &[u64]) -> u64 {
        index
            .iter()
            .zip(&self.grid_shape)
            .fold(0, |acc, (i, g)| acc * g + i)
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
        let lo = inside
            .origin()
            .iter()
            .zip(&self.cell_shape)
            .map(|(o, c)| o / c)
            .collect();
        let hi = inside
            .stop()
            .iter()
            .zip(&self.cell_shape)
            .map(|(s, c)| s.div_ceil(*c))
            .collect();
        GridCells::new(self, lo, hi)
    }
}

/// Iterator over the cells of a [`Grid`] in a block of grid indices, in C order. It holds
/// its own copy of the grid (three short vectors), so it borrows nothing.
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
        for d in (0..following.len()).rev() {
            following[d] += 1;
            if following[d] < self.hi[d] {
                advanced = true;
                break;
            }
            following[d] = self.lo[d];
        }
        if advanced {
            self.next = Some(following);
        }
        self.remaining -= 1;
        Some(self.grid.cell(&current).expect("index inside the grid"))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.remaining).unwrap_or(usize::MAX);
        (n, Some(n))
    }
}

impl ExactSizeIterator for GridCells {}
