//! Means. Floats: summed in the element type from `0.0`, in C order ([`MeanFloat`]), with
//! the NaN that TensorStore's x86-64 build ends with ([`ts_nan_sum`]). Integers (and
//! `bool`, as `uint8`): summed exactly in a wider accumulator ([`IntAcc`]) and divided
//! rounding to nearest, ties to even ([`MeanInt`]).

use std::marker::PhantomData;
use std::ops::Add;

use super::accumulate::Reduce;
use super::elem::Elem;
use super::geometry::{full_columns, Geom};

/// Mean of floats: summed in the element type from `0.0`, in C order, divided by the
/// count converted to the element type (TensorStore accumulates `float32` in `float32`).
pub(super) struct MeanFloat<T>(PhantomData<T>);

impl<T> Default for MeanFloat<T> {
    fn default() -> Self {
        MeanFloat(PhantomData)
    }
}

/// `float32` and `float64`.
pub(super) trait FloatElem:
    Elem + Add<Output = Self> + std::ops::Div<Output = Self>
{
    /// x86's default NaN ("real indefinite", negative), what `inf + -inf` gives.
    const DEFAULT_NAN: Self;
    /// The length of the pieces TensorStore cuts a row into when it iterates it.
    const TS_ROW_BLOCK: usize;
    /// Whether TensorStore adds a row piece of exactly two elements one by one.
    const TS_SCALAR_PAIRS: bool;
    fn from_count(n: usize) -> Self;
    fn is_nan(self) -> bool;
    /// The NaN with the quiet bit set.
    fn quiet(self) -> Self;
}

impl FloatElem for f32 {
    const DEFAULT_NAN: f32 = f32::from_bits(0xffc0_0000);
    const TS_ROW_BLOCK: usize = 6144;
    const TS_SCALAR_PAIRS: bool = false;
    fn from_count(n: usize) -> f32 {
        n as f32
    }
    fn is_nan(self) -> bool {
        self.is_nan()
    }
    fn quiet(self) -> f32 {
        f32::from_bits(self.to_bits() | 0x0040_0000)
    }
}

impl FloatElem for f64 {
    const DEFAULT_NAN: f64 = f64::from_bits(0xfff8_0000_0000_0000);
    const TS_ROW_BLOCK: usize = 3072;
    const TS_SCALAR_PAIRS: bool = true;
    fn from_count(n: usize) -> f64 {
        n as f64
    }
    fn is_nan(self) -> bool {
        self.is_nan()
    }
    fn quiet(self) -> f64 {
        f64::from_bits(self.to_bits() | 0x0008_0000_0000_0000)
    }
}

/// Which NaN a sum of floats ends with, as TensorStore's x86-64 build computes it.
///
/// Whether a sum is NaN does not depend on how each addition's operands are ordered, but
/// which NaN it is does: x86 returns the first operand's NaN when both are NaN, and a
/// negative default NaN for `inf + -inf`. TensorStore's compiled loops put the
/// accumulator first, except where the last axis is not downsampled: there the row is
/// cut into pieces of `TS_ROW_BLOCK` elements, added two at a time with the input first,
/// an odd piece's last element (and, for `float64`, both of a two-element piece) with the
/// accumulator first.
// Hot kernel loop: offsets come from `Geom` over the input and output whose lengths `downsample` checked.
#[allow(clippy::indexing_slicing)]
fn ts_nan_sum<T: FloatElem>(g: &Geom, input: &[u8], rows: &[usize], j: usize) -> T {
    let (f, n) = (g.f_last(), g.n_last());
    let mut acc = T::ZERO;
    let mut x = [T::ZERO];
    for &off in rows {
        for i in j * f..j * f + g.count_last(j) {
            T::decode(&input[(off + i) * T::SIZE..], &mut x);
            let x = x[0];
            let input_first = f == 1 && {
                let start = i / T::TS_ROW_BLOCK * T::TS_ROW_BLOCK;
                let piece = T::TS_ROW_BLOCK.min(n - start);
                let odd_last = piece % 2 == 1 && i == start + piece - 1;
                !(odd_last || (T::TS_SCALAR_PAIRS && piece == 2))
            };
            acc = match (acc.is_nan(), x.is_nan()) {
                (_, true) if input_first => x.quiet(),
                (true, _) => acc,
                (false, true) => x.quiet(),
                (false, false) => {
                    let s = acc + x;
                    if s.is_nan() {
                        T::DEFAULT_NAN
                    } else {
                        s
                    }
                }
            };
        }
    }
    acc
}

impl<T: FloatElem> Reduce for MeanFloat<T> {
    type T = T;
    type A = T;
    fn init(&self) -> T {
        T::ZERO
    }
    #[inline(always)]
    fn add(a: T, x: T) -> T {
        a + x
    }
    // Hot kernel loop: offsets come from `Geom` over the input and output whose lengths `downsample` checked.
    #[allow(clippy::indexing_slicing)]
    fn finish(&self, g: &Geom, acc: &[T], rows: usize, c0: usize, out: &mut [T]) {
        let w = acc.len();
        let full = full_columns(g, c0, w);
        let d = T::from_count(rows * g.f_last());
        for (o, &a) in out[..full].iter_mut().zip(&acc[..full]) {
            *o = a / d;
        }
        for i in full..w {
            out[i] = acc[i] / T::from_count(rows * g.count_last(c0 + i));
        }
    }
    fn fixup(&self, g: &Geom, input: &[u8], rows: &[usize], c0: usize, out: &mut [T]) {
        for (j, o) in (c0..).zip(out.iter_mut()) {
            if o.is_nan() {
                // NaN / count is that NaN
                *o = ts_nan_sum(g, input, rows, j);
            }
        }
    }
}

/// Mean of integers: the exact sum in the accumulator `A`, divided by the count and
/// rounded to nearest, ties to even.
pub(super) struct MeanInt<T, A>(PhantomData<(T, A)>);

impl<T, A> Default for MeanInt<T, A> {
    fn default() -> Self {
        MeanInt(PhantomData)
    }
}

impl<T, A> Reduce for MeanInt<T, A>
where
    T: Elem + FromAcc<A>,
    A: IntAcc + From<T>,
{
    type T = T;
    type A = A;
    fn init(&self) -> A {
        A::ZERO
    }
    #[inline(always)]
    fn add(a: A, x: T) -> A {
        a + A::from(x)
    }
    // Hot kernel loop: offsets come from `Geom` over the input and output whose lengths `downsample` checked.
    #[allow(clippy::indexing_slicing)]
    fn finish(&self, g: &Geom, acc: &[A], rows: usize, c0: usize, out: &mut [T]) {
        let w = acc.len();
        let full = full_columns(g, c0, w);
        A::round_div_row(&acc[..full], (rows * g.f_last()) as u64, &mut out[..full]);
        for i in full..w {
            let d = (rows * g.count_last(c0 + i)) as u64;
            out[i] = T::from_acc(acc[i].round_div(d));
        }
    }
}

/// An integer accumulator for means.
trait IntAcc: Copy + Send + Sync + Add<Output = Self> + 'static {
    const ZERO: Self;
    /// `self / d` rounded to nearest, ties to even (`d >= 1`), as TensorStore rounds.
    fn round_div(self, d: u64) -> Self;
    /// [`IntAcc::round_div`] of each of `acc`, converted to `T`.
    fn round_div_row<T: FromAcc<Self>>(acc: &[Self], d: u64, out: &mut [T]) {
        for (o, &a) in out.iter_mut().zip(acc) {
            *o = T::from_acc(a.round_div(d));
        }
    }
}

/// Conversion of a mean (which is within the element type's range) back to the element.
trait FromAcc<A> {
    fn from_acc(a: A) -> Self;
}

macro_rules! impl_from_acc {
    ($($t:ty: $($a:ty),*;)*) => {$($(
        impl FromAcc<$a> for $t {
            #[inline(always)]
            fn from_acc(a: $a) -> $t {
                a as $t
            }
        }
    )*)*};
}

impl_from_acc!(
    u8: u32, u64;
    u16: u32, u64;
    u32: u64, u128;
    u64: u128;
    i8: i32, i64;
    i16: i32, i64;
    i32: i64, i128;
    i64: i128;
);

/// `q + round`, where `q, r = a / d, a % d`: up when `r > d/2`, or `r == d/2` and `q` odd.
macro_rules! round_unsigned {
    ($a:expr, $d:expr, $t:ty) => {{
        let (a, d): ($t, $t) = ($a, $d);
        let q = a / d;
        let r = a - q * d;
        q + <$t>::from(2 * r + (q & 1) > d)
    }};
}

/// [`IntAcc::round_div`] of a `u64` by `2^k`.
#[inline(always)]
fn round_shift(a: u64, k: u32) -> u64 {
    let (q, r) = (a >> k, a & ((1 << k) - 1));
    q + u64::from(2 * r + (q & 1) > 1 << k)
}

impl IntAcc for u64 {
    const ZERO: u64 = 0;
    fn round_div(self, d: u64) -> u64 {
        round_unsigned!(self, d, u64)
    }
    fn round_div_row<T: FromAcc<u64>>(acc: &[u64], d: u64, out: &mut [T]) {
        if d.is_power_of_two() {
            let k = d.trailing_zeros();
            for (o, &a) in out.iter_mut().zip(acc) {
                *o = T::from_acc(round_shift(a, k));
            }
        } else {
            for (o, &a) in out.iter_mut().zip(acc) {
                *o = T::from_acc(a.round_div(d));
            }
        }
    }
}

impl IntAcc for u128 {
    const ZERO: u128 = 0;
    fn round_div(self, d: u64) -> u128 {
        round_unsigned!(self, d as u128, u128)
    }
}

impl IntAcc for i64 {
    const ZERO: i64 = 0;
    fn round_div(self, d: u64) -> i64 {
        let m = round_unsigned!(self.unsigned_abs(), d, u64) as i64;
        if self < 0 {
            -m
        } else {
            m
        }
    }
    fn round_div_row<T: FromAcc<i64>>(acc: &[i64], d: u64, out: &mut [T]) {
        if d.is_power_of_two() {
            let k = d.trailing_zeros();
            for (o, &a) in out.iter_mut().zip(acc) {
                let m = round_shift(a.unsigned_abs(), k) as i64;
                *o = T::from_acc(if a < 0 { -m } else { m });
            }
        } else {
            for (o, &a) in out.iter_mut().zip(acc) {
                *o = T::from_acc(a.round_div(d));
            }
        }
    }
}

impl IntAcc for i128 {
    const ZERO: i128 = 0;
    fn round_div(self, d: u64) -> i128 {
        let m = round_unsigned!(self.unsigned_abs(), d as u128, u128) as i128;
        if self < 0 {
            -m
        } else {
            m
        }
    }
}

/// Division of `u32`s by a divisor fixed for a whole row, without a `div` per element.
#[derive(Clone, Copy)]
enum Divisor32 {
    /// `d = 2^k`
    Shift(u32),
    /// `d` not a power of two: `a / d = (m * a) >> 64` with `m = ceil(2^64 / d)`, exact
    /// for every 32-bit `a` and `d` (Lemire, Kaser & Kurz 2019).
    Magic(u64),
}

impl Divisor32 {
    fn new(d: u32) -> Divisor32 {
        if d.is_power_of_two() {
            Divisor32::Shift(d.trailing_zeros())
        } else {
            Divisor32::Magic(u64::MAX / d as u64 + 1)
        }
    }

    /// `a / d` rounded as [`IntAcc::round_div`].
    #[inline(always)]
    fn round(self, a: u32, d: u32) -> u32 {
        let q = match self {
            Divisor32::Shift(k) => a >> k,
            Divisor32::Magic(m) => ((m as u128 * a as u128) >> 64) as u32,
        };
        let r = a - q * d;
        q + u32::from(2 * r + (q & 1) > d)
    }
}

impl IntAcc for u32 {
    const ZERO: u32 = 0;
    fn round_div(self, d: u64) -> u32 {
        round_unsigned!(self, d as u32, u32)
    }
    fn round_div_row<T: FromAcc<u32>>(acc: &[u32], d: u64, out: &mut [T]) {
        // d is at most the block volume, which the accumulator choice keeps below 2^31.
        let d = d as u32;
        match Divisor32::new(d) {
            div @ Divisor32::Shift(_) => {
                for (o, &a) in out.iter_mut().zip(acc) {
                    *o = T::from_acc(div.round(a, d));
                }
            }
            div @ Divisor32::Magic(_) => {
                for (o, &a) in out.iter_mut().zip(acc) {
                    *o = T::from_acc(div.round(a, d));
                }
            }
        }
    }
}

impl IntAcc for i32 {
    const ZERO: i32 = 0;
    fn round_div(self, d: u64) -> i32 {
        let m = round_unsigned!(self.unsigned_abs(), d as u32, u32) as i32;
        if self < 0 {
            -m
        } else {
            m
        }
    }
    fn round_div_row<T: FromAcc<i32>>(acc: &[i32], d: u64, out: &mut [T]) {
        let d = d as u32;
        let div = Divisor32::new(d);
        for (o, &a) in out.iter_mut().zip(acc) {
            let m = div.round(a.unsigned_abs(), d) as i32;
            *o = T::from_acc(if a < 0 { -m } else { m });
        }
    }
}
