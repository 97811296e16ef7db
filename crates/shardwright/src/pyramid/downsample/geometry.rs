//! The geometry of a call: the input's shape and factors simplified ([`Geom`]), the input
//! rows that each output row's blocks span ([`Geom::block_rows`]), and which blocks at the
//! high edge are partial ([`Geom::count_last`], [`full_columns`]).

/// The input's shape and factors, simplified: axes of extent 1 in the whole array
/// dropped, factors clamped to the input's extent, neighbouring axes that are not
/// downsampled merged. None of this changes any result: blocks, the C order of a block's
/// elements, and the order TensorStore iterates a block in (which it derives from the
/// whole array's layout simplified the same way) stay the same.
///
/// The input may be a part of a larger array (see [`super::downsample_part`]): an axis the
/// whole array downsamples is kept where the part has extent 1 (at the array's high edge),
/// so that the last axis, along which TensorStore orders a block's elements slowest, is
/// the whole array's, and a part whose blocks hold one element each is still reduced.
#[derive(Debug)]
pub(super) struct Geom {
    /// Extent of each axis (at least one axis).
    n: Vec<usize>,
    /// Factor of each axis, `1 <= f <= n`.
    f: Vec<usize>,
    /// Output extent of each axis.
    out: Vec<usize>,
    /// Input stride (in elements) of each axis.
    stride: Vec<usize>,
    /// Number of output rows (product of the output extents but the last).
    pub(super) out_rows: usize,
    /// The most input rows one block spans (product of the factors but the last).
    max_rows: usize,
}

impl Geom {
    /// `None` when the whole array, of shape `array_shape`, has no axis that is
    /// downsampled. `in_shape` is the input's, a part of that array made of its blocks.
    pub(super) fn new(in_shape: &[u64], array_shape: &[u64], factors: &[u64]) -> Option<Geom> {
        let downsampled = |(&extent, &factor): (&u64, &u64)| extent > 1 && factor > 1;
        if !array_shape.iter().zip(factors).any(downsampled) {
            return None;
        }
        let mut n: Vec<usize> = Vec::new();
        let mut f: Vec<usize> = Vec::new();
        for ((&extent, &whole), &factor) in in_shape.iter().zip(array_shape).zip(factors) {
            if whole == 1 {
                continue;
            }
            // Extents fit in usize: the input's byte length was checked.
            let extent = extent as usize;
            let factor = factor.min(extent as u64) as usize;
            if let (Some(1), Some(last)) = (f.last(), n.last_mut()) {
                if factor == 1 {
                    *last *= extent;
                    continue;
                }
            }
            n.push(extent);
            f.push(factor);
        }
        let out: Vec<usize> = n.iter().zip(&f).map(|(&n, &f)| n.div_ceil(f)).collect();
        let mut stride = vec![1usize; n.len()];
        let mut step = 1;
        for (s, &extent) in stride.iter_mut().zip(&n).rev() {
            *s = step;
            step *= extent;
        }
        // An axis of the array is downsampled (checked above): it is kept.
        let (_, out_outer) = out.split_last()?;
        let (_, f_outer) = f.split_last()?;
        Some(Geom {
            out_rows: out_outer.iter().product(),
            max_rows: f_outer.iter().product(),
            n,
            f,
            out,
            stride,
        })
    }

    // `new` makes at least one axis; 1 would be the extent of a missing one.
    pub(super) fn n_last(&self) -> usize {
        self.n.last().copied().unwrap_or(1)
    }
    pub(super) fn f_last(&self) -> usize {
        self.f.last().copied().unwrap_or(1)
    }
    pub(super) fn out_last(&self) -> usize {
        self.out.last().copied().unwrap_or(1)
    }
    /// The most input elements one block holds.
    pub(super) fn volume(&self) -> usize {
        self.max_rows * self.f_last()
    }
    /// Number of input elements of output column `j` along the last axis.
    pub(super) fn count_last(&self, j: usize) -> usize {
        self.f_last().min(self.n_last() - j * self.f_last())
    }

    /// Fill `rows` with the input element offsets of the starts of the input rows that
    /// output row `row` covers, in C order; `ctr` is scratch.
    // Hot kernel loop: `ctr` is resized to `2 * outer` and the shape vectors have `outer + 1` axes.
    #[allow(clippy::indexing_slicing)]
    pub(super) fn block_rows(&self, row: usize, rows: &mut Vec<usize>, ctr: &mut Vec<usize>) {
        let outer = self.n.len() - 1;
        // ctr[i]: offset within the block on outer axis i; ctr[outer + i]: its extent
        ctr.clear();
        let mut rem = row;
        let mut base = 0;
        ctr.resize(2 * outer, 0);
        for i in (0..outer).rev() {
            let o = rem % self.out[i];
            rem /= self.out[i];
            let lo = o * self.f[i];
            base += lo * self.stride[i];
            ctr[outer + i] = self.f[i].min(self.n[i] - lo);
        }
        rows.clear();
        loop {
            let within: usize = ctr[..outer]
                .iter()
                .zip(&self.stride)
                .map(|(c, s)| c * s)
                .sum();
            rows.push(base + within);
            // advance the odometer, last outer axis fastest
            let mut i = outer;
            loop {
                if i == 0 {
                    return;
                }
                i -= 1;
                ctr[i] += 1;
                if ctr[i] < ctr[outer + i] {
                    break;
                }
                ctr[i] = 0;
            }
        }
    }
}

/// How many of the `w` output columns from `c0` have whole blocks along the last axis
/// (all but possibly the row's last).
pub(super) fn full_columns(g: &Geom, c0: usize, w: usize) -> usize {
    if c0 + w == g.out_last() && !g.n_last().is_multiple_of(g.f_last()) {
        w - 1
    } else {
        w
    }
}
