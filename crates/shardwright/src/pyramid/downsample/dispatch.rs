//! The driver that cuts the output into contiguous pieces computed in parallel on
//! rayon's pool ([`drive`]), and the choice of kernel for each data type and method
//! ([`dispatch`]).

use rayon::prelude::*;

use super::accumulate::Accumulate;
use super::elem::{DType, Elem};
use super::fixed::{MinTime, ModeOfStrings, NatLast, StringOrder};
use super::geometry::Geom;
use super::kernel::Kernel;
use super::mean::{MeanFloat, MeanInt};
use super::median_mode::Gather;
use super::pick::{MaxOf, MinOf, StrideKernel};
use super::Method;

/// Input elements a parallel task should cover at least.
const MIN_TASK_INPUT_ELEMS: usize = 1 << 15;

// Hot kernel loop: offsets come from `Geom` over the input whose length `downsample` checked.
#[allow(clippy::indexing_slicing)]
fn drive<K: Kernel>(kernel: &K, input: &[u8], g: &Geom, elem_size: usize) -> Vec<u8> {
    let out_last = g.out_last();
    let total = g.out_rows * out_last;
    let mut out = vec![0u8; total * elem_size];
    let threads = rayon::current_num_threads().max(1);
    let min_chunk = MIN_TASK_INPUT_ELEMS.div_ceil(g.volume()).max(1);
    let chunk = total.div_ceil(threads * 8).max(min_chunk).min(total);
    let init = || (kernel.scratch(g), Vec::new(), Vec::new());
    // Output elements `start..` into `out_chunk`, row segment by row segment.
    let work = |(scratch, rows, ctr): &mut (K::Scratch, Vec<usize>, Vec<usize>),
                start: usize,
                out_chunk: &mut [u8]| {
        let end = start + out_chunk.len() / elem_size;
        let mut pos = start;
        while pos < end {
            let row = pos / out_last;
            let c0 = pos % out_last;
            let c1 = out_last.min(c0 + (end - pos));
            g.block_rows(row, rows, ctr);
            let o = (pos - start) * elem_size;
            let seg = &mut out_chunk[o..o + (c1 - c0) * elem_size];
            kernel.row(scratch, g, input, rows, c0, c1, seg);
            pos += c1 - c0;
        }
    };
    if chunk == total {
        // small: not worth handing to the pool
        work(&mut init(), 0, &mut out);
    } else {
        out.par_chunks_mut(chunk * elem_size)
            .enumerate()
            .for_each_init(init, |state, (ci, out_chunk)| {
                work(state, ci * chunk, out_chunk)
            });
    }
    out
}

pub(super) fn dispatch(input: &[u8], g: &Geom, dtype: DType, method: Method) -> Vec<u8> {
    if method == Method::Stride {
        return drive(&StrideKernel { size: dtype.size() }, input, g, dtype.size());
    }
    match dtype {
        DType::Time => return times(input, g, method),
        DType::Utf32(size) | DType::Bytes(size) => {
            // `downsample_part` lets strings and bytes through for stride and mode only
            let order = match dtype {
                DType::Utf32(_) => StringOrder::Utf32,
                _ => StringOrder::Bytes,
            };
            return drive(&ModeOfStrings { size, order }, input, g, size);
        }
        _ => {}
    }
    if dtype == DType::Bool {
        // bool is u8 holding 0 or 1; median and mode equal the mean (as in TensorStore).
        let normalized;
        let input = if input.iter().any(|&b| b > 1) {
            normalized = input.iter().map(|&b| u8::from(b != 0)).collect::<Vec<u8>>();
            &normalized[..]
        } else {
            input
        };
        let method = match method {
            Method::Median | Method::Mode => Method::Mean,
            m => m,
        };
        return dispatch(input, g, DType::U8, method);
    }
    macro_rules! per_method {
        ($t:ty, $mean:expr) => {
            match method {
                Method::Mean => $mean,
                Method::Min => drive(&Accumulate(MinOf::<$t>::default()), input, g, <$t>::SIZE),
                Method::Max => drive(&Accumulate(MaxOf::<$t>::default()), input, g, <$t>::SIZE),
                Method::Median => drive(&Gather::<$t, false>::default(), input, g, <$t>::SIZE),
                Method::Mode => drive(&Gather::<$t, true>::default(), input, g, <$t>::SIZE),
                Method::Stride => unreachable!("handled above"),
            }
        };
    }
    macro_rules! mean_int {
        ($t:ty, $narrow:ty, $wide:ty, $limit:expr) => {
            if g.volume() as u128 <= $limit {
                drive(
                    &Accumulate(MeanInt::<$t, $narrow>::default()),
                    input,
                    g,
                    <$t>::SIZE,
                )
            } else {
                drive(
                    &Accumulate(MeanInt::<$t, $wide>::default()),
                    input,
                    g,
                    <$t>::SIZE,
                )
            }
        };
    }
    match dtype {
        DType::U8 => per_method!(
            u8,
            mean_int!(u8, u32, u64, u32::MAX as u128 / u8::MAX as u128)
        ),
        DType::U16 => per_method!(
            u16,
            mean_int!(u16, u32, u64, u32::MAX as u128 / u16::MAX as u128)
        ),
        DType::I8 => per_method!(i8, mean_int!(i8, i32, i64, (i32::MAX as u128) >> 7)),
        DType::I16 => per_method!(i16, mean_int!(i16, i32, i64, (i32::MAX as u128) >> 15)),
        DType::U32 => per_method!(
            u32,
            mean_int!(u32, u64, u128, u64::MAX as u128 / u32::MAX as u128)
        ),
        DType::I32 => per_method!(i32, mean_int!(i32, i64, i128, (i64::MAX as u128) >> 31)),
        DType::U64 => per_method!(
            u64,
            drive(&Accumulate(MeanInt::<u64, u128>::default()), input, g, 8)
        ),
        DType::I64 => per_method!(
            i64,
            drive(&Accumulate(MeanInt::<i64, i128>::default()), input, g, 8)
        ),
        DType::F32 => per_method!(
            f32,
            drive(&Accumulate(MeanFloat::<f32>::default()), input, g, 4)
        ),
        DType::F64 => per_method!(
            f64,
            drive(&Accumulate(MeanFloat::<f64>::default()), input, g, 8)
        ),
        DType::Bool | DType::Time | DType::Utf32(_) | DType::Bytes(_) => {
            unreachable!("handled above")
        }
    }
}

/// Min, max or mode of times (int64, NaT = -2⁶³): NaT skipped by min and max, ordered
/// after every time by the mode (`downsample_part` lets mean and median not through).
fn times(input: &[u8], g: &Geom, method: Method) -> Vec<u8> {
    match method {
        Method::Min => drive(&Accumulate(MinTime), input, g, 8),
        // NaT is the least int64: the maximum skips it unless the block is all NaT
        Method::Max => drive(&Accumulate(MaxOf::<i64>::default()), input, g, 8),
        _ => drive(&Gather::<NatLast, true>::default(), input, g, 8),
    }
}
