//! Reductions that fold each block's elements, in C order, into an accumulator
//! ([`Reduce`]: mean, min, max), and the kernel that runs them over a row segment
//! ([`Accumulate`]), decoding each input row once.

use super::elem::Elem;
use super::geometry::Geom;
use super::kernel::Kernel;

/// A reduction that folds a block's elements, in C order, into an accumulator.
pub(super) trait Reduce: Sync {
    type T: Elem;
    type A: Copy + Send + Sync;
    fn init(&self) -> Self::A;
    fn add(a: Self::A, x: Self::T) -> Self::A;
    /// The outputs of accumulators `acc` (output columns `c0..`), the blocks spanning
    /// `rows` input rows.
    fn finish(&self, g: &Geom, acc: &[Self::A], rows: usize, c0: usize, out: &mut [Self::T]);
    /// Correct outputs `out` (columns `c0..`) where the fast path may differ from
    /// TensorStore in ways that cannot happen often (which NaN a float sum gives).
    fn fixup(&self, _g: &Geom, _input: &[u8], _rows: &[usize], _c0: usize, _out: &mut [Self::T]) {}
}

/// The kernel that runs a [`Reduce`], a row segment at a time.
pub(super) struct Accumulate<R>(pub(super) R);

impl<R: Reduce> Kernel for Accumulate<R> {
    /// (accumulators, decoded input row, outputs)
    type Scratch = (Vec<R::A>, Vec<R::T>, Vec<R::T>);

    fn scratch(&self, _: &Geom) -> Self::Scratch {
        (Vec::new(), Vec::new(), Vec::new())
    }

    // Hot kernel loop: offsets come from `Geom` over the input whose length `downsample` checked.
    #[allow(clippy::indexing_slicing)]
    fn row(
        &self,
        (acc, dec, vals): &mut Self::Scratch,
        g: &Geom,
        input: &[u8],
        rows: &[usize],
        c0: usize,
        c1: usize,
        out: &mut [u8],
    ) {
        let size = R::T::SIZE;
        let f = g.f_last();
        let (cs, ce) = (c0 * f, (c1 * f).min(g.n_last()));
        let w = c1 - c0;
        acc.clear();
        acc.resize(w, self.0.init());
        if dec.len() < ce - cs {
            dec.resize(ce - cs, R::T::ZERO);
        }
        let dec = &mut dec[..ce - cs];
        for &off in rows {
            R::T::decode(&input[(off + cs) * size..(off + ce) * size], dec);
            match f {
                1 => fold_fixed::<R, 1>(acc, dec),
                2 => fold_fixed::<R, 2>(acc, dec),
                3 => fold_fixed::<R, 3>(acc, dec),
                4 => fold_fixed::<R, 4>(acc, dec),
                _ => fold_any::<R>(acc, dec, f),
            }
        }
        if vals.len() < w {
            vals.resize(w, R::T::ZERO);
        }
        self.0.finish(g, acc, rows.len(), c0, &mut vals[..w]);
        self.0.fixup(g, input, rows, c0, &mut vals[..w]);
        R::T::encode(&vals[..w], out);
    }
}

/// Fold a row into accumulators, `F` consecutive elements per accumulator (the last one
/// may get fewer).
#[inline(always)]
// Hot kernel loop: offsets come from `Geom` over the input whose length `downsample` checked.
#[allow(clippy::indexing_slicing)]
fn fold_fixed<R: Reduce, const F: usize>(acc: &mut [R::A], row: &[R::T]) {
    let (chunks, rest) = row.as_chunks::<F>();
    for (a, c) in acc.iter_mut().zip(chunks) {
        let mut v = *a;
        for &x in c {
            v = R::add(v, x);
        }
        *a = v;
    }
    if !rest.is_empty() {
        let a = &mut acc[chunks.len()];
        for &x in rest {
            *a = R::add(*a, x);
        }
    }
}

fn fold_any<R: Reduce>(acc: &mut [R::A], row: &[R::T], f: usize) {
    for (a, c) in acc.iter_mut().zip(row.chunks(f)) {
        let mut v = *a;
        for &x in c {
            v = R::add(v, x);
        }
        *a = v;
    }
}
