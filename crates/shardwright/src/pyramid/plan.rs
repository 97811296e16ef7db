//! What a pyramid will look like before anything is read or written: the levels' shapes,
//! inner-chunk and shard shapes, the axes, and the blocks the one-pass driver works in.

use super::downsample::{self, Method};
use super::PyramidError;
use crate::domain::{Domain, Grid};

/// The kind of an OME-Zarr axis, from its name: `t` is time, `c` channel, `z`/`y`/`x`
/// space; any other name is a custom axis (treated as channel-like: chunk 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AxisKind {
    /// `t`
    Time,
    /// `c`
    Channel,
    /// `z`, `y`, `x`
    Space,
    /// any other name
    Custom,
}

impl AxisKind {
    /// The kind of the axis named `name`.
    ///
    /// ```
    /// use shardwright::pyramid::plan::AxisKind;
    /// assert_eq!(AxisKind::of("y"), AxisKind::Space);
    /// assert_eq!(AxisKind::of("t"), AxisKind::Time);
    /// ```
    #[must_use]
    pub fn of(name: &str) -> Self {
        match name {
            "t" => Self::Time,
            "c" => Self::Channel,
            "z" | "y" | "x" => Self::Space,
            _ => Self::Custom,
        }
    }

    /// The OME-Zarr `type` of the axis (`None` for a custom axis).
    #[must_use]
    pub fn ome_type(self) -> Option<&'static str> {
        match self {
            Self::Time => Some("time"),
            Self::Channel => Some("channel"),
            Self::Space => Some("space"),
            Self::Custom => None,
        }
    }
}

/// The default axes of an `ndim`-dimensional image: the last `ndim` of `t, c, z, y, x`.
///
/// ```
/// assert_eq!(shardwright::pyramid::plan::default_axes(3), ["z", "y", "x"]);
/// ```
#[must_use]
pub fn default_axes(ndim: usize) -> Vec<String> {
    let all = ["t", "c", "z", "y", "x"];
    all.get(all.len().saturating_sub(ndim)..)
        .unwrap_or_default()
        .iter()
        .map(|s| (*s).to_string())
        .collect()
}

/// The shapes of the levels: level 0 is `shape`; each next level is the one before divided
/// by `factors`, rounded up (a partial block at the edge makes one element). With
/// `levels = None`, levels are added while they still shrink: the pyramid stops at the
/// first level that a further downsampling would leave unchanged (every downsampled axis
/// has length 1), or at level 0 if no factor is above 1.
///
/// ```
/// use shardwright::pyramid::plan::level_shapes;
/// assert_eq!(level_shapes(&[5, 8], &[1, 2], None), vec![vec![5, 8], vec![5, 4], vec![5, 2], vec![5, 1]]);
/// assert_eq!(level_shapes(&[5, 8], &[1, 2], Some(2)).len(), 2);
/// ```
#[must_use]
pub fn level_shapes(shape: &[u64], factors: &[u64], levels: Option<usize>) -> Vec<Vec<u64>> {
    let mut shapes = Vec::new();
    let mut last = shape.to_vec();
    loop {
        let next = downsample::output_shape(&last, factors);
        let done = match levels {
            Some(n) => shapes.len() + 1 >= n,
            None => next == last,
        };
        shapes.push(std::mem::replace(&mut last, next));
        if done {
            break;
        }
    }
    shapes
}

/// One level of a planned pyramid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelPlan {
    /// The level's shape.
    pub shape: Vec<u64>,
    /// Its inner-chunk shape (clipped to the shape).
    pub chunks: Vec<u64>,
    /// Its shard shape (a multiple of `chunks`, clipped to the chunks the shape needs).
    pub shards: Vec<u64>,
    /// The blocks the driver hands on whole: `lcm(chunks, factors)` per axis, so a block
    /// downsamples exactly (no source block of the next level crosses it) and covers whole
    /// inner chunks.
    pub block: Vec<u64>,
}

impl LevelPlan {
    /// The grid of the level's shards.
    ///
    /// # Errors
    /// [`PyramidError::Invalid`] for shard and level shapes that make no grid (a plan from
    /// [`PlanRequest::plan`] always makes one).
    pub fn shard_grid(&self) -> Result<Grid, PyramidError> {
        Grid::new(self.shape.clone(), self.shards.clone())
            .map_err(|e| PyramidError::invalid(format!("level shards: {e}")))
    }

    /// The grid of the level's blocks.
    ///
    /// # Errors
    /// As [`LevelPlan::shard_grid`].
    pub fn block_grid(&self) -> Result<Grid, PyramidError> {
        Grid::new(self.shape.clone(), self.block.clone())
            .map_err(|e| PyramidError::invalid(format!("level blocks: {e}")))
    }
}

/// The whole plan: levels, factors, method, axes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The levels, full resolution first.
    pub levels: Vec<LevelPlan>,
    /// The downsampling factors, one per axis.
    pub factors: Vec<u64>,
    /// The method.
    pub method: Method,
    /// The axis names.
    pub axes: Vec<String>,
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

pub(super) fn lcm(a: u64, b: u64) -> u64 {
    a / gcd(a, b) * b
}

pub(super) fn shape_text(shape: &[u64]) -> String {
    let parts: Vec<String> = shape.iter().map(u64::to_string).collect();
    format!("({})", parts.join(", "))
}

/// The default inner chunks of an array of `shape` with `axes`: 1 along time, channel and
/// custom axes; along space axes 64 when there are three of them, 256 when there are two
/// (a 512 KiB uint16 chunk either way).
///
/// ```
/// use shardwright::pyramid::plan::default_chunks;
/// let axes: Vec<String> = ["c", "z", "y", "x"].iter().map(|s| s.to_string()).collect();
/// assert_eq!(default_chunks(&axes), vec![1, 64, 64, 64]);
/// ```
#[must_use]
pub fn default_chunks(axes: &[String]) -> Vec<u64> {
    let space = axes
        .iter()
        .filter(|a| AxisKind::of(a) == AxisKind::Space)
        .count();
    let side = if space >= 3 { 64 } else { 256 };
    axes.iter()
        .map(|a| match AxisKind::of(a) {
            AxisKind::Space => side,
            _ => 1,
        })
        .collect()
}

/// The default shards for `chunks`: 4 inner chunks along each space axis (64 inner chunks
/// of 512 KiB, a 32 MiB uint16 shard, for 3-d images), 1 along the others.
///
/// ```
/// use shardwright::pyramid::plan::default_shards;
/// let axes: Vec<String> = ["z", "y", "x"].iter().map(|s| s.to_string()).collect();
/// assert_eq!(default_shards(&axes, &[64, 64, 64]), vec![256, 256, 256]);
/// ```
#[must_use]
pub fn default_shards(axes: &[String], chunks: &[u64]) -> Vec<u64> {
    axes.iter()
        .zip(chunks)
        .map(|(a, c)| match AxisKind::of(a) {
            AxisKind::Space => c * 4,
            _ => *c,
        })
        .collect()
}

/// What the caller asked for, before it is checked against the source.
#[derive(Debug, Clone, Default)]
pub struct PlanRequest {
    /// Factors, one per axis, each at least 1.
    pub factors: Vec<u64>,
    /// The number of levels (level 0 included), at most the number [`level_shapes`] makes
    /// with `None` (the last one's downsampled axes all 1); or `None`: up to the first
    /// level whose downsampled axes (factor above 1) each fit within one inner chunk (the
    /// requested chunk extent, before clipping to the level), as ngff-zarr and ome-zarr-py
    /// stop.
    ///
    /// ```
    /// use shardwright::pyramid::plan::PlanRequest;
    /// // default 2-d chunks are 256 × 256: 1024, 512, 256
    /// let request = PlanRequest { factors: vec![2, 2], ..Default::default() };
    /// let shapes: Vec<_> = request.plan(&[1024, 1024], "uint8").unwrap().levels.into_iter().map(|l| l.shape).collect();
    /// assert_eq!(shapes, vec![vec![1024, 1024], vec![512, 512], vec![256, 256]]);
    /// let too_many = PlanRequest { factors: vec![2, 2], levels: Some(8), ..Default::default() };
    /// assert!(too_many.plan(&[64, 64], "uint8").unwrap_err().to_string().contains("at most 7 levels (the last 1×1)"));
    /// ```
    pub levels: Option<usize>,
    /// The method.
    pub method: Option<Method>,
    /// Inner chunks: one shape for every level, or one per level; `None`: the defaults.
    pub chunks: Option<Vec<Vec<u64>>>,
    /// Shards: as `chunks`; `None`: 4 inner chunks along each space axis.
    pub shards: Option<Vec<Vec<u64>>>,
    /// Axis names; `None`: the last `ndim` of `t, c, z, y, x`.
    pub axes: Option<Vec<String>>,
}

/// The `what` shape of `level` of `levels`; `chosen`: the number of levels was chosen by
/// the stop rule (`levels=None`), which the message then says.
fn per_level(
    what: &str,
    given: &[Vec<u64>],
    (level, levels): (usize, usize),
    chosen: bool,
    ndim: usize,
) -> Result<Vec<u64>, PyramidError> {
    let shape = match (given.len(), given.first(), given.get(level)) {
        (1, Some(only), _) => only,
        (n, _, Some(this)) if n == levels => this,
        (n, _, _) if chosen => {
            return Err(PyramidError::invalid(format!(
                "{what}: {n} shapes given, one per level, but levels=None makes {levels} \
                 levels of this source (down to the first whose downsampled axes fit one \
                 inner chunk): give levels={n}, or {levels} shapes, or one for every level"
            )))
        }
        (n, _, _) => {
            return Err(PyramidError::invalid(format!(
                "{what}: expected one shape for every level or one per level ({levels}); got {n}"
            )))
        }
    };
    if shape.len() != ndim || shape.contains(&0) {
        return Err(PyramidError::invalid(format!(
            "{what} {} must have {ndim} values of at least 1, one per axis of the source",
            shape_text(shape)
        )));
    }
    Ok(shape.clone())
}

impl PlanRequest {
    /// The level shapes: `levels` of them, or with `levels = None` up to the first level
    /// whose downsampled axes each fit within one inner chunk.
    fn shapes(&self, shape: &[u64], chunks: &[Vec<u64>]) -> Result<Vec<Vec<u64>>, PyramidError> {
        let mut shrinking = level_shapes(shape, &self.factors, None);
        let keep = match self.levels {
            Some(n) if n > shrinking.len() => {
                return Err(super::stop::too_many(shape, &self.factors, n, &shrinking));
            }
            Some(n) => n,
            None => super::stop::last_fitting(&shrinking, &self.factors, chunks) + 1,
        };
        shrinking.truncate(keep);
        Ok(shrinking)
    }

    /// Check the request against a source of `shape` and `data_type` and work out every
    /// level.
    ///
    /// ```
    /// use shardwright::pyramid::plan::PlanRequest;
    /// let request = PlanRequest { factors: vec![2, 2], levels: Some(3), ..Default::default() };
    /// let plan = request.plan(&[1000, 600], "uint16").unwrap();
    /// assert_eq!(plan.levels[2].shape, vec![250, 150]);
    /// assert_eq!(plan.levels[2].chunks, vec![250, 150]);
    /// assert!(request.plan(&[1000], "uint16").is_err()); // factors of the wrong length
    /// ```
    ///
    /// # Errors
    /// [`PyramidError`] naming what was given: factors of the wrong length or below 1, no
    /// levels or more levels than downsample anything, axes of the wrong length or repeated, chunk or shard shapes of the wrong
    /// length or that do not divide, a method the data type has no kernel for.
    pub fn plan(&self, shape: &[u64], data_type: &str) -> Result<Plan, PyramidError> {
        let ndim = shape.len();
        if self.factors.len() != ndim || self.factors.contains(&0) {
            return Err(PyramidError::invalid(format!(
                "factors {} must have {ndim} values of at least 1, one per axis of the source \
                 (shape {})",
                shape_text(&self.factors),
                shape_text(shape)
            )));
        }
        // (an axis of length 0 is an image still to be appended to: its levels have
        // length 0 there too, with the chunks and shards asked for)
        if shape.is_empty() {
            return Err(PyramidError::invalid(
                "the source has shape (); a pyramid needs at least one axis",
            ));
        }
        if self.levels == Some(0) {
            return Err(PyramidError::invalid(
                "levels=0: a pyramid has at least level 0",
            ));
        }
        let method = self.method.unwrap_or(Method::Mean);
        downsample::check_supported(data_type, method)?;
        let axes = match &self.axes {
            Some(axes) => axes.clone(),
            None if ndim <= 5 => default_axes(ndim),
            None => {
                return Err(PyramidError::invalid(format!(
                    "a {ndim}-d source needs axes=: the default axes are the last ndim of \
                     t, c, z, y, x"
                )))
            }
        };
        if axes.len() != ndim {
            return Err(PyramidError::invalid(format!(
                "axes {axes:?} must have {ndim} names, one per axis of the source"
            )));
        }
        for (i, a) in axes.iter().enumerate() {
            if a.is_empty() || axes.iter().take(i).any(|b| b == a) {
                return Err(PyramidError::invalid(format!(
                    "axes {axes:?}: each name must be non-empty and used once"
                )));
            }
        }
        let default_chunks = vec![default_chunks(&axes)];
        let chunks_given = self.chunks.as_ref().unwrap_or(&default_chunks);
        let shapes = self.shapes(shape, chunks_given)?;
        let n = shapes.len();
        let mut levels = Vec::with_capacity(n);
        for (k, level_shape) in shapes.into_iter().enumerate() {
            let chosen = self.levels.is_none();
            let chunks = per_level("chunks", chunks_given, (k, n), chosen, ndim)?;
            let shards = match &self.shards {
                Some(given) => per_level("shards", given, (k, n), chosen, ndim)?,
                None => default_shards(&axes, &chunks),
            };
            let axis_pairs = shards.iter().zip(&chunks).zip(&axes).enumerate();
            for (d, ((s, c), axis)) in axis_pairs {
                if s % c != 0 {
                    return Err(PyramidError::invalid(format!(
                        "shards {} are not a multiple of chunks {} along axis {d} ('{axis}') \
                         of level {k}",
                        shape_text(&shards),
                        shape_text(&chunks),
                    )));
                }
            }
            let chunks: Vec<u64> = chunks
                .iter()
                .zip(&level_shape)
                .map(|(c, s)| if *s == 0 { *c } else { (*c).min(*s) })
                .collect();
            let shards: Vec<u64> = shards
                .iter()
                .zip(&level_shape)
                .zip(&chunks)
                .map(|((h, s), c)| {
                    if *s == 0 {
                        *h
                    } else {
                        (*h).min(s.div_ceil(*c) * c)
                    }
                })
                .collect();
            let block = chunks
                .iter()
                .zip(&self.factors)
                .map(|(c, f)| lcm(*c, *f))
                .collect();
            levels.push(LevelPlan {
                shape: level_shape,
                chunks,
                shards,
                block,
            });
        }
        Ok(Plan {
            levels,
            factors: self.factors.clone(),
            method,
            axes,
        })
    }
}

impl Plan {
    /// Take level `k`'s inner-chunk and shard shapes from an array stored with them (an
    /// image opened again: the plan clips them to the level's shape now, which has grown
    /// since they were chosen), its block with them.
    ///
    /// ```
    /// use shardwright::pyramid::plan::PlanRequest;
    /// let request = PlanRequest { factors: vec![2], levels: Some(2), chunks: Some(vec![vec![8]]), shards: Some(vec![vec![64]]), ..Default::default() };
    /// let mut plan = request.plan(&[6], "uint8").unwrap();
    /// assert_eq!(plan.levels[0].shards, vec![6]); // clipped to the 6 elements there are
    /// plan.adopt_grid(0, &[8], &[64]);
    /// assert_eq!((plan.levels[0].shards.clone(), plan.levels[0].block.clone()), (vec![64], vec![8]));
    /// ```
    pub fn adopt_grid(&mut self, k: usize, chunks: &[u64], shards: &[u64]) {
        let factors = self.factors.clone();
        let Some(level) = self.levels.get_mut(k) else {
            return;
        };
        if chunks.len() != level.chunks.len() || shards.len() != level.shards.len() {
            return;
        }
        level.chunks = chunks.to_vec();
        level.shards = shards.to_vec();
        level.block = chunks
            .iter()
            .zip(&factors)
            .map(|(c, f)| lcm(*c, *f))
            .collect();
    }

    /// The region of level `level + 1` that `block` (a region of level `level` whose origin
    /// is a multiple of the factors) downsamples to.
    #[must_use]
    pub fn downsampled(&self, block: &Domain) -> Domain {
        let origin = block
            .origin()
            .iter()
            .zip(&self.factors)
            .map(|(o, f)| o / f)
            .collect();
        Domain::new(
            origin,
            downsample::output_shape(block.shape(), &self.factors),
        )
    }

    /// The bound on the raw bytes the driver holds at once, for elements of `element_size`
    /// bytes: per level, four blocks (at level 0 one being read, two waiting in the
    /// reader's queue and one being written and downsampled; above, the block being
    /// assembled and the pieces downsampled into it), when blocks nest, as they do with
    /// one chunk shape for every level. The shard writers add their encoders' in-flight
    /// chunks (see [`memory_bound`](Self::memory_bound)).
    ///
    /// ```
    /// use shardwright::pyramid::plan::PlanRequest;
    /// let request = PlanRequest { factors: vec![2, 2], levels: Some(2), chunks: Some(vec![vec![64, 64]]), ..Default::default() };
    /// let plan = request.plan(&[1024, 1024], "uint8").unwrap();
    /// assert_eq!(plan.raw_bytes_bound(1), 2 * 4 * 64 * 64);
    /// ```
    #[must_use]
    pub fn raw_bytes_bound(&self, element_size: usize) -> u64 {
        self.levels
            .iter()
            .map(|l| {
                let block: u64 = l
                    .block
                    .iter()
                    .zip(&l.shape)
                    .map(|(b, s)| (*b).min(*s))
                    .product();
                4 * block * element_size as u64
            })
            .sum()
    }

    /// The bound on the raw bytes a build holds at once
    /// ([`raw_bytes_bound`](Self::raw_bytes_bound)) plus the shard writers' raw chunks
    /// waiting for an encoder:
    /// each writer open or committing holds at most `2 × threads` of them, and there is one
    /// open writer per level (when blocks nest) plus `commits_in_flight` committing. In all:
    ///
    /// `Σ_k 4·block_k + (levels + commits_in_flight) · 2·threads · max_k chunk_k` bytes,
    ///
    /// with `block_k = lcm(chunk_k, factors)` — the shard and chunk shapes and the number of
    /// levels, never the array size. Encoded bytes go to each shard's staging file (or,
    /// with the index at the start, stay in memory: add the shards in flight then).
    ///
    /// ```
    /// use shardwright::pyramid::plan::PlanRequest;
    /// let request = PlanRequest { factors: vec![2, 2], levels: Some(2), chunks: Some(vec![vec![64, 64]]), ..Default::default() };
    /// let plan = request.plan(&[1024, 1024], "uint8").unwrap();
    /// assert_eq!(plan.memory_bound(1, 2, 4), 2 * 4 * 4096 + (2 + 4) * 2 * 2 * 4096);
    /// ```
    #[must_use]
    pub fn memory_bound(
        &self,
        element_size: usize,
        threads: usize,
        commits_in_flight: usize,
    ) -> u64 {
        let chunk = self
            .levels
            .iter()
            .map(|l| l.chunks.iter().product::<u64>())
            .max()
            .unwrap_or(0)
            * element_size as u64;
        let writers = (self.levels.len() + commits_in_flight) as u64;
        self.raw_bytes_bound(element_size) + writers * 2 * threads as u64 * chunk
    }
}
