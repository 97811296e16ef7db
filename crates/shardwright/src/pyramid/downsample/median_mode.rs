//! Order statistics: the median and the mode of each block as TensorStore computes them
//! ([`Gather`]). Small blocks are sorted many at a time with a sorting network
//! ([`sorting_network`]); the others, and float blocks whose result depends on the
//! algorithm, are gathered in TensorStore's order and selected from or sorted as
//! libstdc++ does ([`super::stdcxx`]).

use std::marker::PhantomData;
use std::ops::Add;

use super::elem::Elem;
use super::geometry::{full_columns, Geom};
use super::kernel::Kernel;
use super::stdcxx;

/// Median (`MODE = false`) or mode (`MODE = true`).
///
/// Blocks of up to [`NETWORK_MAX`] elements are sorted many at a time with a sorting
/// network (see [`Gather::network_columns`]); the others, and float blocks whose result
/// depends on the algorithm, are gathered one by one in the order TensorStore stores
/// them and selected from or sorted as TensorStore does. TensorStore stores element
/// `(r, e)` of a block (input row `r` of the block's `R` rows in C order, offset `e`
/// along the last axis, 0 if that axis is not downsampled) at index `e * R + r`.
pub(super) struct Gather<T, const MODE: bool>(PhantomData<T>);

impl<T, const MODE: bool> Default for Gather<T, MODE> {
    fn default() -> Self {
        Gather(PhantomData)
    }
}

/// Scratch space of [`Gather`].
pub(super) struct GatherScratch<T: OrderStat> {
    /// A decoded piece of an input row.
    dec: Vec<T>,
    /// Blocks, one after the other (the general path).
    blocks: Vec<T>,
    /// Outputs.
    vals: Vec<T>,
    /// Blocks, element `k` of every block in row `k` (the sorting-network path).
    soa: Vec<T>,
    /// The sorting network for blocks of `network.0` elements.
    network: (usize, Vec<(usize, usize)>),
    /// Mode scan state per block: current run, longest run so far.
    cur: Vec<T::Count>,
    best: Vec<T::Count>,
    /// Per block of floats: [`OrderStat::flags`] of its elements, or-ed.
    flags: Vec<u8>,
    /// Output columns the sorting-network path leaves to the general path.
    redo: Vec<usize>,
}

/// Blocks of at most this many elements are sorted with a sorting network, many blocks
/// at once.
pub(super) const NETWORK_MAX: usize = 128;

/// Elements of the sorting-network path's buffer per tile of output columns.
const NETWORK_TILE_ELEMS: usize = 1 << 14;

impl<T: OrderStat, const MODE: bool> Kernel for Gather<T, MODE> {
    type Scratch = GatherScratch<T>;

    fn scratch(&self, _: &Geom) -> Self::Scratch {
        GatherScratch {
            dec: Vec::new(),
            blocks: Vec::new(),
            vals: Vec::new(),
            soa: Vec::new(),
            network: (0, Vec::new()),
            cur: Vec::new(),
            best: Vec::new(),
            flags: Vec::new(),
            redo: Vec::new(),
        }
    }

    // Hot kernel loop: offsets come from `Geom` over the input and output whose lengths `downsample` checked; `v` is a non-empty block.
    #[allow(clippy::indexing_slicing)]
    fn row(
        &self,
        s: &mut Self::Scratch,
        g: &Geom,
        input: &[u8],
        rows: &[usize],
        c0: usize,
        c1: usize,
        out: &mut [u8],
    ) {
        let w = c1 - c0;
        if s.vals.len() < w {
            s.vals.resize(w, T::ZERO);
        }
        let n = rows.len() * g.f_last();
        let mut done = 0;
        if n <= NETWORK_MAX {
            done = full_columns(g, c0, w);
            if done > 0 {
                s.redo.clear();
                self.network_columns(s, g, input, rows, c0, c0 + done);
                for i in 0..s.redo.len() {
                    let j = s.redo[i];
                    self.general_columns(s, g, input, rows, j, j + 1, j - c0);
                }
            }
        }
        self.general_columns(s, g, input, rows, c0 + done, c1, done);
        T::encode(&s.vals[..w], out);
    }
}

impl<T: OrderStat, const MODE: bool> Gather<T, MODE> {
    /// Output columns `a..b` into `s.vals[at..]`, block by block: each block gathered in
    /// TensorStore's order and selected from or sorted as TensorStore does.
    #[allow(clippy::too_many_arguments)]
    // Hot kernel loop: offsets come from `Geom` over the input and output whose lengths `downsample` checked; `v` is a non-empty block.
    #[allow(clippy::indexing_slicing)]
    fn general_columns(
        &self,
        s: &mut GatherScratch<T>,
        g: &Geom,
        input: &[u8],
        rows: &[usize],
        a: usize,
        b: usize,
        at: usize,
    ) {
        if a == b {
            return;
        }
        let size = T::SIZE;
        let f = g.f_last();
        let (cs, ce) = (a * f, (b * f).min(g.n_last()));
        let w = b - a;
        let nr = rows.len();
        let vol = nr * f;
        if s.dec.len() < ce - cs {
            s.dec.resize(ce - cs, T::ZERO);
        }
        if s.blocks.len() < w * vol {
            s.blocks.resize(w * vol, T::ZERO);
        }
        let dec = &mut s.dec[..ce - cs];
        let buf = &mut s.blocks[..w * vol];
        for (r, &off) in rows.iter().enumerate() {
            T::decode(&input[(off + cs) * size..(off + ce) * size], dec);
            for (block, src) in buf.chunks_exact_mut(vol).zip(dec.chunks(f)) {
                for (e, &x) in src.iter().enumerate() {
                    block[e * nr + r] = x;
                }
            }
        }
        let vals = &mut s.vals[at..at + w];
        for (j, (v, block)) in (a..).zip(vals.iter_mut().zip(buf.chunks_exact_mut(vol))) {
            let block = &mut block[..nr * g.count_last(j)];
            *v = if MODE {
                T::mode(block)
            } else {
                T::median(block)
            };
        }
    }

    /// Output columns `a..b` (whole blocks of `rows.len() * f` elements each) into
    /// `s.vals[..]`, many blocks at once: the blocks are sorted with a sorting network
    /// applied to the rows of a transposed buffer (which vectorizes), then the median is
    /// read off, or the mode found by a branch-free scan.
    ///
    /// That gives TensorStore's result whenever it does not depend on the order of a
    /// block's elements or on the algorithm: always for integers; for floats, unless the
    /// block holds a NaN, or the result is a zero and the block holds zeros of both
    /// signs. Those columns are pushed to `s.redo`.
    // Hot kernel loop: offsets come from `Geom` over the input and output whose lengths `downsample` checked; `v` is a non-empty block.
    #[allow(clippy::indexing_slicing)]
    fn network_columns(
        &self,
        s: &mut GatherScratch<T>,
        g: &Geom,
        input: &[u8],
        rows: &[usize],
        a: usize,
        b: usize,
    ) {
        let size = T::SIZE;
        let f = g.f_last();
        let n = rows.len() * f;
        if s.network.0 != n {
            s.network = (n, sorting_network(n));
        }
        let tile = (NETWORK_TILE_ELEMS / n).clamp(16, 4096);
        let mut t0 = a;
        while t0 < b {
            let t1 = b.min(t0 + tile);
            let tw = t1 - t0;
            if s.dec.len() < tw * f {
                s.dec.resize(tw * f, T::ZERO);
            }
            if s.soa.len() < n * tw {
                s.soa.resize(n * tw, T::ZERO);
            }
            let dec = &mut s.dec[..tw * f];
            let soa = &mut s.soa[..n * tw];
            for (r, &off) in rows.iter().enumerate() {
                T::decode(&input[(off + t0 * f) * size..(off + t1 * f) * size], dec);
                for e in 0..f {
                    let dst = &mut soa[(r * f + e) * tw..(r * f + e + 1) * tw];
                    match f {
                        1 => dst.copy_from_slice(dec),
                        2 => {
                            for (d, pair) in dst.iter_mut().zip(dec.as_chunks::<2>().0) {
                                *d = pair[e];
                            }
                        }
                        _ => {
                            for (d, x) in dst.iter_mut().zip(dec[e..].iter().step_by(f)) {
                                *d = *x;
                            }
                        }
                    }
                }
            }
            if !T::ORDER_FREE {
                s.flags.clear();
                s.flags.resize(tw, 0);
                for k in 0..n {
                    for (fl, &x) in s.flags.iter_mut().zip(&soa[k * tw..(k + 1) * tw]) {
                        *fl |= T::flags(x);
                    }
                }
            }
            for &(i, j) in &s.network.1 {
                let (lo, hi) = soa.split_at_mut(j * tw);
                let x = &mut lo[i * tw..(i + 1) * tw];
                let y = &mut hi[..tw];
                for (p, q) in x.iter_mut().zip(y.iter_mut()) {
                    let (u, v) = (*p, *q);
                    let swap = v < u;
                    *p = if swap { v } else { u };
                    *q = if swap { u } else { v };
                }
            }
            let vals = &mut s.vals[t0 - a..t1 - a];
            if !MODE {
                let k = (n - 1) / 2;
                vals.copy_from_slice(&soa[k * tw..(k + 1) * tw]);
            } else {
                // TensorStore's scan (see `mode_of_sorted`), block by block in lockstep
                vals.copy_from_slice(&soa[..tw]);
                s.cur.clear();
                s.cur.resize(tw, T::ONE);
                s.best.clear();
                s.best.resize(tw, T::ONE);
                let (cur, best) = (&mut s.cur[..tw], &mut s.best[..tw]);
                for k in 1..n {
                    let prev = &soa[(k - 1) * tw..k * tw];
                    let next = &soa[k * tw..(k + 1) * tw];
                    let lanes = vals.iter_mut().zip(cur.iter_mut()).zip(best.iter_mut());
                    for (((v, c), bst), (&p, &x)) in lanes.zip(prev.iter().zip(next)) {
                        let same = x == p;
                        let better = !same && *c > *bst;
                        *bst = if better { *c } else { *bst };
                        *v = if better { p } else { *v };
                        *c = if same { *c + T::ONE } else { T::ONE };
                    }
                }
                let last = &soa[(n - 1) * tw..n * tw];
                let lanes = vals.iter_mut().zip(cur.iter().zip(best.iter()));
                for ((v, (&c, &bst)), &x) in lanes.zip(last) {
                    *v = if c > bst { x } else { *v };
                }
            }
            if !T::ORDER_FREE {
                for (jj, (&fl, &v)) in s.flags.iter().zip(vals.iter()).enumerate() {
                    if fl & FLAG_NAN != 0
                        || (fl & FLAG_BOTH_ZEROS == FLAG_BOTH_ZEROS && v == T::ZERO)
                    {
                        s.redo.push(t0 + jj);
                    }
                }
            }
            t0 = t1;
        }
    }
}

/// [`OrderStat::flags`]: a NaN.
const FLAG_NAN: u8 = 1;
/// [`OrderStat::flags`]: `+0.0` and `-0.0`.
const FLAG_BOTH_ZEROS: u8 = 6;

/// Batcher's odd-even merge sort network for `n` elements: compare-exchange pairs
/// `(i, j)`, `i < j`, which sort any input when applied in order.
pub(super) fn sorting_network(n: usize) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    let mut p = 1;
    while p < n {
        let mut k = p;
        while k >= 1 {
            let mut j = k % p;
            while j + k < n {
                for i in 0..k.min(n - j - k) {
                    if (i + j) / (2 * p) == (i + j + k) / (2 * p) {
                        pairs.push((i + j, i + j + k));
                    }
                }
                j += 2 * k;
            }
            k /= 2;
        }
        p *= 2;
    }
    pairs
}

/// The median and mode of a gathered block (never empty), as TensorStore computes them.
pub(super) trait OrderStat: Elem {
    /// Whether any correct selection or sort gives TensorStore's result (integers: equal
    /// values are identical).
    const ORDER_FREE: bool;
    /// A counter as wide as the element (for the mode scan, which then vectorizes);
    /// counts up to [`NETWORK_MAX`].
    type Count: Copy + Send + Sync + PartialOrd + Add<Output = Self::Count>;
    const ONE: Self::Count;
    /// `std::nth_element` at `(n-1)/2`, then that element.
    fn median(v: &mut [Self]) -> Self;
    /// `std::sort`, then the last element of the first longest run of `==` elements.
    fn mode(v: &mut [Self]) -> Self;
    /// For floats: [`FLAG_NAN`] for a NaN, 2 for `+0.0`, 4 for `-0.0`; 0 otherwise.
    fn flags(x: Self) -> u8;
}

macro_rules! impl_order_stat_int {
    ($($t:ty: $c:ty),*) => {$(
        // Equal integers are identical, so any correct selection or sort gives
        // TensorStore's result.
        impl OrderStat for $t {
            const ORDER_FREE: bool = true;
            type Count = $c;
            const ONE: $c = 1;
            fn median(v: &mut [$t]) -> $t {
                let k = (v.len() - 1) / 2;
                *v.select_nth_unstable(k).1
            }
            fn mode(v: &mut [$t]) -> $t {
                v.sort_unstable();
                mode_of_sorted(v)
            }
            #[inline(always)]
            fn flags(_: $t) -> u8 {
                0
            }
        }
    )*};
}

impl_order_stat_int!(u8: u8, i8: u8, u16: u16, i16: u16, u32: u32, i32: u32, u64: u64, i64: u64);

macro_rules! impl_order_stat_float {
    ($($t:ty: $c:ty),*) => {$(
        // NaN and ±0.0 make the result depend on the algorithm: run libstdc++'s.
        impl OrderStat for $t {
            const ORDER_FREE: bool = false;
            type Count = $c;
            const ONE: $c = 1;
            // Hot kernel loop: offsets come from `Geom` over the input and output whose lengths `downsample` checked; `v` is a non-empty block.
            #[allow(clippy::indexing_slicing)]
            fn median(v: &mut [$t]) -> $t {
                let k = (v.len() - 1) / 2;
                stdcxx::nth_element(v, k);
                v[k]
            }
            fn mode(v: &mut [$t]) -> $t {
                stdcxx::sort(v);
                mode_of_sorted(v)
            }
            #[inline(always)]
            fn flags(x: $t) -> u8 {
                if x.is_nan() {
                    FLAG_NAN
                } else if x == 0.0 {
                    if x.is_sign_negative() { 4 } else { 2 }
                } else {
                    0
                }
            }
        }
    )*};
}

impl_order_stat_float!(f32: u32, f64: u64);

/// TensorStore's mode of a sorted block: the last element of the first run of `==`
/// elements that is longer than every run before it (all runs of one: the first element).
// Hot kernel loop: offsets come from `Geom` over the input and output whose lengths `downsample` checked; `v` is a non-empty block.
#[allow(clippy::indexing_slicing)]
pub(super) fn mode_of_sorted<T: Copy + PartialEq>(v: &[T]) -> T {
    let (mut best_i, mut best, mut cur) = (0, 1, 1);
    for i in 1..v.len() {
        if v[i] == v[i - 1] {
            cur += 1;
        } else {
            if cur > best {
                best = cur;
                best_i = i - 1;
            }
            cur = 1;
        }
    }
    if cur > best {
        best_i = v.len() - 1;
    }
    v[best_i]
}
