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
    len: u64,
}

impl Grid {
    /// A grid of `cell_shape` cells over an array of `array_shape`.
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
        if array_shape.len() != cell_shape.len() {
            return Err(DomainError::Rank {
                expected: array_shape.len(),
                got: cell_shape.len(),
            });
        }
        if cell_shape.contains(&0) {
            return Err(DomainError::ZeroCell(cell_shape));
        }
        let grid_shape: Vec<u64> = array_shape
            .iter()
            .zip(&cell_shape)
            .map(|(a, c)| a.div_ceil(*c))
            .collect();
        let len = grid_shape
            .iter()
            .try_fold(1u64, |n, g| n.checked_mul(*g))
            .ok_or_else(|| DomainError::TooManyCells(grid_shape.clone()))?;
        Ok(Self {
            array_shape,
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
    /// `i * c` is at most `a - 1` (as `i < ceil(a / c)`) and its shape at most `a - i * c`,
    /// so nothing overflows.
    fn clipped(&self, index: &[u64]) -> Domain {
        let origin: Vec<u64> = index
            .iter()
            .zip(&self.cell_shape)
            .map(|(i, c)| i.saturating_mul(*c))
            .collect();
        let shape = origin
            .iter()
            .zip(&self.cell_shape)
            .zip(&self.array_shape)
            .map(|((o, c), a)| (*c).min(a.saturating_sub(*o)))
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
        Ok(Domain::try_new(origin, self.cell_shape.clone())?.with_index(index.to_vec()))
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
