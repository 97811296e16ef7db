//! Kernels for the data types TensorStore does not downsample, whose results follow
//! numpy: times (`numpy.datetime64`, `numpy.timedelta64`: int64, NaT = -2⁶³) and fixed
//! byte strings (`fixed_length_utf32`, `null_terminated_bytes`, `raw_bytes`).
//!
//! - times: [`MinTime`] and the int64 maximum skip NaT as `np.nanmin` / `np.nanmax` do
//!   (an all-NaT block gives NaT); the mode orders NaT after every time, as `np.sort`
//!   does, so a time tied with NaT wins (the mode kernel sorts them as [`NatLast`]).
//! - byte strings: [`ModeOfStrings`], the most frequent value, ties to the smallest in
//!   numpy's order: byte by byte for `S` and `V` (a NUL-padded value compares as numpy's
//!   shorter one), code unit by code unit for UTF-32 (`U`: code points).

use std::cmp::Ordering;

use super::accumulate::Reduce;
use super::elem::Elem;
use super::geometry::Geom;
use super::kernel::Kernel;
use super::median_mode::{mode_of_sorted, OrderStat};

/// NaT, the int64 of "not a time".
pub(super) const NAT: i64 = i64::MIN;

/// The minimum of a block of times without its NaTs (`np.nanmin`); NaT if all are.
pub(super) struct MinTime;

impl Reduce for MinTime {
    type T = i64;
    type A = i64;
    fn init(&self) -> i64 {
        NAT // "none yet"
    }
    #[inline(always)]
    fn add(a: i64, x: i64) -> i64 {
        if x != NAT && (a == NAT || x < a) {
            x
        } else {
            a
        }
    }
    fn finish(&self, _: &Geom, acc: &[i64], _: usize, _: usize, out: &mut [i64]) {
        out.copy_from_slice(acc);
    }
}

/// A time held as `x - 1` (wrapping), so that NaT orders after every time and the others
/// keep their order: the element the mode kernel ([`Gather`](super::median_mode::Gather))
/// sorts times as, decoded and encoded as it reads and writes them (no extra pass).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct NatLast(i64);

impl Elem for NatLast {
    const SIZE: usize = 8;
    const ZERO: Self = NatLast(0);
    const LOWEST: Self = NatLast(i64::MIN);
    const HIGHEST: Self = NatLast(i64::MAX);
    #[inline]
    fn decode(src: &[u8], dst: &mut [Self]) {
        for (d, c) in dst.iter_mut().zip(src.as_chunks::<8>().0) {
            *d = NatLast(i64::from_ne_bytes(*c).wrapping_sub(1));
        }
    }
    #[inline]
    fn encode(src: &[Self], dst: &mut [u8]) {
        for (c, s) in dst.as_chunks_mut::<8>().0.iter_mut().zip(src) {
            *c = s.0.wrapping_add(1).to_ne_bytes();
        }
    }
}

impl OrderStat for NatLast {
    // Equal times are identical: any correct sort gives the same mode.
    const ORDER_FREE: bool = true;
    type Count = u64;
    const ONE: u64 = 1;
    fn median(v: &mut [Self]) -> Self {
        let k = (v.len() - 1) / 2;
        *v.select_nth_unstable(k).1
    }
    fn mode(v: &mut [Self]) -> Self {
        v.sort_unstable();
        mode_of_sorted(v)
    }
    #[inline(always)]
    fn flags(_: Self) -> u8 {
        0
    }
}

/// How two byte strings compare in numpy's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StringOrder {
    /// Byte by byte (`S`, `V`).
    Bytes,
    /// Native-endian 4-byte code unit by code unit (`U`).
    Utf32,
}

impl StringOrder {
    fn compare(self, a: &[u8], b: &[u8]) -> Ordering {
        match self {
            StringOrder::Bytes => a.cmp(b),
            StringOrder::Utf32 => code_units(a).cmp(code_units(b)),
        }
    }
}

/// The native-endian 4-byte code units of a UTF-32 string.
fn code_units(s: &[u8]) -> impl Iterator<Item = u32> + '_ {
    s.as_chunks::<4>().0.iter().map(|c| u32::from_ne_bytes(*c))
}

/// The mode of each block of fixed-size strings: the most frequent value, ties to the
/// smallest in `order`.
pub(super) struct ModeOfStrings {
    /// The element size in bytes.
    pub(super) size: usize,
    pub(super) order: StringOrder,
}

impl Kernel for ModeOfStrings {
    /// The element offsets of one block.
    type Scratch = Vec<usize>;

    fn scratch(&self, _: &Geom) -> Vec<usize> {
        Vec::new()
    }

    // Kernel loop: offsets come from `Geom` over the input and output whose lengths
    // `downsample` checked; every block holds at least one element.
    #[allow(clippy::indexing_slicing)]
    fn row(
        &self,
        block: &mut Vec<usize>,
        g: &Geom,
        input: &[u8],
        rows: &[usize],
        c0: usize,
        c1: usize,
        out: &mut [u8],
    ) {
        let size = self.size;
        let f = g.f_last();
        let element = |i: usize| &input[i * size..(i + 1) * size];
        for (j, o) in (c0..c1).zip(out.chunks_exact_mut(size)) {
            block.clear();
            let count = g.count_last(j);
            for &r in rows {
                block.extend((0..count).map(|e| r + j * f + e));
            }
            block.sort_unstable_by(|&a, &b| self.order.compare(element(a), element(b)));
            let (mut best, mut best_run, mut run) = (block[0], 0, 0);
            for (k, &i) in block.iter().enumerate() {
                if k > 0 && element(block[k - 1]) == element(i) {
                    run += 1;
                } else {
                    run = 1;
                }
                if run > best_run {
                    (best, best_run) = (i, run);
                }
            }
            o.copy_from_slice(element(best));
        }
    }
}
