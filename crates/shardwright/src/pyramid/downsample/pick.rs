//! Kernels whose output is one of a block's elements, found in one pass: stride (the first
//! element, [`StrideKernel`]), min and max (TensorStore's `std::min` / `std::max` folds,
//! [`MinOf`] and [`MaxOf`], run by [`super::accumulate::Accumulate`]).

use std::marker::PhantomData;

use super::accumulate::Reduce;
use super::elem::Elem;
use super::geometry::Geom;
use super::kernel::Kernel;

/// Stride: each block's first element, copied as bytes.
pub(super) struct StrideKernel {
    /// The element size in bytes.
    pub(super) size: usize,
}

impl Kernel for StrideKernel {
    type Scratch = ();
    fn scratch(&self, _: &Geom) {}
    // Hot kernel loop: offsets come from `Geom` over the input and output whose lengths `downsample` checked.
    #[allow(clippy::indexing_slicing)]
    fn row(
        &self,
        _: &mut (),
        g: &Geom,
        input: &[u8],
        rows: &[usize],
        c0: usize,
        c1: usize,
        out: &mut [u8],
    ) {
        let size = self.size;
        let f = g.f_last();
        let row = &input[rows[0] * size..(rows[0] + g.n_last()) * size];
        for (j, o) in (c0..c1).zip(out.chunks_exact_mut(size)) {
            o.copy_from_slice(&row[j * f * size..(j * f + 1) * size]);
        }
    }
}

/// TensorStore's minimum: `acc = std::min(acc, x)` from `HIGHEST`, i.e. `x` replaces the
/// accumulator only when `x < acc` (NaN never does; the first of equal values stays).
pub(super) struct MinOf<T>(PhantomData<T>);

impl<T> Default for MinOf<T> {
    fn default() -> Self {
        MinOf(PhantomData)
    }
}

impl<T: Elem> Reduce for MinOf<T> {
    type T = T;
    type A = T;
    fn init(&self) -> T {
        T::HIGHEST
    }
    #[inline(always)]
    fn add(a: T, x: T) -> T {
        if x < a {
            x
        } else {
            a
        }
    }
    fn finish(&self, _: &Geom, acc: &[T], _: usize, _: usize, out: &mut [T]) {
        out.copy_from_slice(acc);
    }
}

/// TensorStore's maximum: `acc = std::max(acc, x)` from `LOWEST`, i.e. `x` replaces the
/// accumulator only when `acc < x`.
pub(super) struct MaxOf<T>(PhantomData<T>);

impl<T> Default for MaxOf<T> {
    fn default() -> Self {
        MaxOf(PhantomData)
    }
}

impl<T: Elem> Reduce for MaxOf<T> {
    type T = T;
    type A = T;
    fn init(&self) -> T {
        T::LOWEST
    }
    #[inline(always)]
    fn add(a: T, x: T) -> T {
        if a < x {
            x
        } else {
            a
        }
    }
    fn finish(&self, _: &Geom, acc: &[T], _: usize, _: usize, out: &mut [T]) {
        out.copy_from_slice(acc);
    }
}
