//! Boxes and grids: which shards and inner chunks meet a region, and where.
//!
//! This layer does no I/O. A [`Domain`] is a half-open box (`origin .. origin + shape`);
//! a [`Grid`] is a grid of cells over an array shape — regular, or rectilinear (each
//! dimension's cell extents listed) — whose cells at the far edge are clipped to the
//! array. [`copy`] moves n-dimensional blocks of elements between byte buffers.
//!
//! ```
//! use shardwright::domain::{Domain, Grid};
//!
//! let grid = Grid::new(vec![10, 10], vec![4, 4]).unwrap();
//! let cells: Vec<Domain> = grid.cells().collect();
//! assert_eq!(cells.len(), 9);
//! assert_eq!(cells[8], Domain::new(vec![8, 8], vec![2, 2]).with_index(vec![2, 2]));
//! ```

pub mod copy;
mod grid;

pub use grid::{AxisCells, Grid, GridCells};

use std::fmt;

/// Errors of the `domain` layer: boxes whose rank or extent does not fit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DomainError {
    /// Two shapes or boxes that must have the same rank do not.
    #[error("rank mismatch: expected {expected} dimensions, got {got}")]
    Rank {
        /// The rank that was expected.
        expected: usize,
        /// The rank that was given.
        got: usize,
    },
    /// A region reaches outside the box it must lie in.
    #[error("region {region} is not inside {bounds}")]
    OutOfBounds {
        /// The region that was given.
        region: Box<Domain>,
        /// The box it must lie in.
        bounds: Box<Domain>,
    },
    /// A box whose end does not fit in 64 bits.
    #[error("box with origin {origin:?} and shape {shape:?} ends past 2^64")]
    Overflow {
        /// The origin given.
        origin: Vec<u64>,
        /// The shape given.
        shape: Vec<u64>,
    },
    /// A grid cell shape has a zero extent.
    #[error("grid cell shape {0:?} has a zero extent")]
    ZeroCell(Vec<u64>),
    /// A grid of this shape (cells along each dimension) has more than `u64::MAX` cells.
    #[error("a grid of {0:?} cells has more than 2^64 cells")]
    TooManyCells(Vec<u64>),
    /// The cell extents listed for a dimension of a rectilinear grid do not tile it.
    #[error("rectilinear grid, dimension {dim}: {why}")]
    Edges {
        /// The dimension.
        dim: usize,
        /// What is wrong with its extents.
        why: String,
    },
}

/// A half-open box of array elements: `origin[d] .. origin[d] + shape[d]` in each dimension.
///
/// A domain handed out by a [`Grid`] also carries its grid `index`; any other has none.
/// Equality and hashing ignore the index.
///
/// ```
/// use shardwright::domain::Domain;
///
/// let a = Domain::new(vec![0, 0], vec![4, 4]);
/// let b = Domain::new(vec![2, 3], vec![4, 4]);
/// assert_eq!(a.intersect(&b), Some(Domain::new(vec![2, 3], vec![2, 1])));
/// assert_eq!(a.size(), 16);
/// assert!(a.contains(&Domain::new(vec![1, 1], vec![2, 2])));
/// ```
#[derive(Clone, Eq)]
pub struct Domain {
    origin: Vec<u64>,
    shape: Vec<u64>,
    index: Option<Vec<u64>>,
}

impl PartialEq for Domain {
    fn eq(&self, other: &Self) -> bool {
        self.origin == other.origin && self.shape == other.shape
    }
}

impl std::hash::Hash for Domain {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.origin.hash(state);
        self.shape.hash(state);
    }
}

impl fmt::Debug for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[")?;
        for (d, (o, s)) in self.origin.iter().zip(&self.shape).enumerate() {
            if d > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{o}:{}", o + s)?;
        }
        write!(f, "]")
    }
}

impl Domain {
    /// A box from its origin and shape.
    ///
    /// # Panics
    /// Panics if `origin` and `shape` differ in length or the box ends past `u64::MAX`;
    /// use [`Domain::try_new`] for input that is not known to be well formed.
    ///
    /// ```
    /// let d = shardwright::domain::Domain::new(vec![1, 2], vec![3, 4]);
    /// assert_eq!(d.stop(), vec![4, 6]);
    /// ```
    #[must_use]
    // The documented panic of a constructor for boxes known to be well formed (like slice
    // indexing); input from users goes through `try_new`.
    #[allow(clippy::expect_used)]
    pub fn new(origin: Vec<u64>, shape: Vec<u64>) -> Self {
        Self::try_new(origin, shape).expect("origin and shape must have the same rank")
    }

    /// A box from its origin and shape, or an error if their ranks differ.
    ///
    /// ```
    /// use shardwright::domain::Domain;
    /// assert!(Domain::try_new(vec![0], vec![1, 2]).is_err());
    /// ```
    ///
    /// # Errors
    /// [`DomainError::Rank`] when `origin` and `shape` differ in length,
    /// [`DomainError::Overflow`] when the box ends past `u64::MAX`.
    pub fn try_new(origin: Vec<u64>, shape: Vec<u64>) -> Result<Self, DomainError> {
        if origin.len() != shape.len() {
            return Err(DomainError::Rank {
                expected: origin.len(),
                got: shape.len(),
            });
        }
        if origin
            .iter()
            .zip(&shape)
            .any(|(o, s)| o.checked_add(*s).is_none())
        {
            return Err(DomainError::Overflow { origin, shape });
        }
        Ok(Self {
            origin,
            shape,
            index: None,
        })
    }

    /// The box from the origin of an array of `shape`.
    ///
    /// ```
    /// let d = shardwright::domain::Domain::from_shape(vec![3, 4]);
    /// assert_eq!(d.origin(), &[0, 0]);
    /// ```
    #[must_use]
    pub fn from_shape(shape: Vec<u64>) -> Self {
        // A box from the origin never ends past u64::MAX.
        Self {
            origin: vec![0; shape.len()],
            shape,
            index: None,
        }
    }

    /// The same box, tagged with a grid index.
    ///
    /// ```
    /// let d = shardwright::domain::Domain::from_shape(vec![2]).with_index(vec![0]);
    /// assert_eq!(d.index(), Some(&[0u64][..]));
    /// ```
    #[must_use]
    pub fn with_index(mut self, index: Vec<u64>) -> Self {
        self.index = Some(index);
        self
    }

    /// The first element of the box.
    #[must_use]
    pub fn origin(&self) -> &[u64] {
        &self.origin
    }

    /// The extent of the box in each dimension.
    #[must_use]
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }

    /// The grid index of a domain handed out by a [`Grid`], else `None`.
    #[must_use]
    pub fn index(&self) -> Option<&[u64]> {
        self.index.as_deref()
    }

    /// The number of dimensions.
    #[must_use]
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// One past the last element in each dimension.
    #[must_use]
    pub fn stop(&self) -> Vec<u64> {
        self.origin
            .iter()
            .zip(&self.shape)
            .map(|(o, s)| o + s)
            .collect()
    }

    /// The number of elements in the box, saturating at `u64::MAX` (a box of more elements
    /// than that can be described but never held: sizing a buffer for it fails).
    ///
    /// ```
    /// use shardwright::domain::Domain;
    /// assert_eq!(Domain::from_shape(vec![1 << 40, 1 << 40]).size(), u64::MAX);
    /// ```
    #[must_use]
    pub fn size(&self) -> u64 {
        self.shape
            .iter()
            .try_fold(1u64, |n, s| n.checked_mul(*s))
            .unwrap_or(if self.is_empty() { 0 } else { u64::MAX })
    }

    /// Whether the box holds no element.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.shape.contains(&0)
    }

    /// The common part of two boxes, or `None` when they do not meet (or differ in rank).
    #[must_use]
    pub fn intersect(&self, other: &Domain) -> Option<Domain> {
        if self.ndim() != other.ndim() {
            return None;
        }
        let mut origin = Vec::with_capacity(self.ndim());
        let mut shape = Vec::with_capacity(self.ndim());
        // Both boxes end at or before u64::MAX (try_new checks it), so the sums fit.
        for ((&o1, &s1), (&o2, &s2)) in self
            .origin
            .iter()
            .zip(&self.shape)
            .zip(other.origin.iter().zip(&other.shape))
        {
            let lo = o1.max(o2);
            let hi = (o1 + s1).min(o2 + s2);
            if hi <= lo {
                return None;
            }
            origin.push(lo);
            shape.push(hi - lo);
        }
        Some(Domain {
            origin,
            shape,
            index: None,
        })
    }

    /// Whether `other` lies entirely inside this box (an empty box lies inside any box of
    /// its rank whose bounds hold its origin).
    #[must_use]
    pub fn contains(&self, other: &Domain) -> bool {
        self.ndim() == other.ndim()
            && self
                .origin
                .iter()
                .zip(&self.shape)
                .zip(other.origin.iter().zip(&other.shape))
                .all(|((&o, &s), (&oo, &os))| oo >= o && oo + os <= o + s)
    }

    /// The box moved by `offset` (which may be negative), or `None` if it would leave the
    /// non-negative coordinates.
    ///
    /// ```
    /// use shardwright::domain::Domain;
    /// let d = Domain::new(vec![4, 4], vec![2, 2]);
    /// assert_eq!(d.translate(&[-4, 1]), Some(Domain::new(vec![0, 5], vec![2, 2])));
    /// assert_eq!(d.translate(&[-5, 0]), None);
    /// ```
    #[must_use]
    pub fn translate(&self, offset: &[i64]) -> Option<Domain> {
        if offset.len() != self.ndim() {
            return None;
        }
        let origin = self
            .origin
            .iter()
            .zip(offset)
            .map(|(&o, &d)| o.checked_add_signed(d))
            .collect::<Option<Vec<u64>>>()?;
        Domain::try_new(origin, self.shape.clone()).ok()
    }

    /// The box expressed relative to `base`'s origin; it must lie at or after that origin.
    ///
    /// ```
    /// use shardwright::domain::Domain;
    /// let shard = Domain::new(vec![8, 8], vec![8, 8]);
    /// let chunk = Domain::new(vec![12, 8], vec![4, 4]);
    /// assert_eq!(chunk.relative_to(&shard), Some(Domain::new(vec![4, 0], vec![4, 4])));
    /// ```
    #[must_use]
    pub fn relative_to(&self, base: &Domain) -> Option<Domain> {
        if base.ndim() != self.ndim() {
            return None;
        }
        let origin = self
            .origin
            .iter()
            .zip(&base.origin)
            .map(|(&o, &b)| o.checked_sub(b))
            .collect::<Option<Vec<u64>>>()?;
        // Moved towards 0, the box still ends before u64::MAX.
        Some(Domain {
            origin,
            shape: self.shape.clone(),
            index: None,
        })
    }

    /// An error unless `self` lies inside `bounds`.
    ///
    /// # Errors
    /// [`DomainError::Rank`] or [`DomainError::OutOfBounds`].
    pub fn check_inside(&self, bounds: &Domain) -> Result<(), DomainError> {
        if self.ndim() != bounds.ndim() {
            return Err(DomainError::Rank {
                expected: bounds.ndim(),
                got: self.ndim(),
            });
        }
        if !bounds.contains(self) {
            return Err(DomainError::OutOfBounds {
                region: Box::new(self.clone()),
                bounds: Box::new(bounds.clone()),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
