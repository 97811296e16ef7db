//! The kernels against a naive reference: per output element, gather the block (in C
//! order, or in the order TensorStore stores it), compute.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::{decode_all, encode_all, random_data, Rng};
use crate::pyramid::downsample::elem::Elem;
use crate::pyramid::downsample::mean::FloatElem;
use crate::pyramid::downsample::median_mode::{mode_of_sorted, OrderStat};
use crate::pyramid::downsample::{downsample, output_shape, stdcxx, Method};

/// For each output element (C order), the linear input indices of its block: in C order
/// (`ts_order == false`), or in the order TensorStore stores them for the median and the
/// mode (`ts_order == true`), derived here from TensorStore's iteration layout directly:
/// the axes of extent > 1, neighbours that are both not downsampled merged; the last two
/// of those (`I0`, `I1`) are the "inner" axes; a block's element with offsets `e0`, `e1`
/// on them and C-order rank `p` among the offsets on the other downsampled axes is stored
/// at `e1 * (P * n0) + p * n0 + e0`.
fn blocks(shape: &[u64], factors: &[u64], ts_order: bool) -> Vec<Vec<usize>> {
    let nd = shape.len();
    let out = output_shape(shape, factors);
    let strides: Vec<usize> = (0..nd)
        .map(|i| shape[i + 1..].iter().product::<u64>() as usize)
        .collect();
    let ds = |d: usize| shape[d] > 1 && factors[d] > 1;
    // TensorStore's iteration axes: groups of original axes
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (d, &extent) in shape.iter().enumerate() {
        if extent == 1 {
            continue;
        }
        match groups.last_mut() {
            Some(g) if !ds(*g.last().unwrap()) && !ds(d) => g.push(d),
            _ => groups.push(vec![d]),
        }
    }
    let inner: Vec<Option<usize>> = {
        let k = groups.len();
        let pick = |i: Option<usize>| i.map(|i| groups[i][0]).filter(|&d| ds(d));
        vec![pick(k.checked_sub(2)), pick(k.checked_sub(1))]
    };
    let mut result = Vec::new();
    for_each_index(&out, |o| {
        let lo: Vec<u64> = (0..nd).map(|d| o[d] * factors[d]).collect();
        let ext: Vec<u64> = (0..nd).map(|d| factors[d].min(shape[d] - lo[d])).collect();
        let index =
            |e: &[u64]| -> usize { (0..nd).map(|d| (lo[d] + e[d]) as usize * strides[d]).sum() };
        let mut block = Vec::new();
        if !ts_order {
            for_each_index(&ext, |e| block.push(index(e)));
        } else {
            // e1 slowest, then the other axes in C order, then e0 fastest
            let mut order: Vec<usize> = Vec::new();
            order.extend(inner[1]);
            order.extend((0..nd).filter(|d| Some(*d) != inner[0] && Some(*d) != inner[1]));
            order.extend(inner[0]);
            let oext: Vec<u64> = order.iter().map(|&d| ext[d]).collect();
            for_each_index(&oext, |oe| {
                let mut e = vec![0; nd];
                for (k, &d) in order.iter().enumerate() {
                    e[d] = oe[k];
                }
                block.push(index(&e));
            });
        }
        result.push(block);
    });
    result
}

/// The extent of TensorStore's last iteration axis (the trailing axes of extent > 1 that
/// are not downsampled, merged), if the array's last such axis is not downsampled.
fn ts_undownsampled_last_group(shape: &[u64], factors: &[u64]) -> Option<usize> {
    let mut l = 1;
    for d in (0..shape.len()).rev() {
        if shape[d] == 1 {
            continue;
        }
        if factors[d] > 1 {
            break;
        }
        l *= shape[d] as usize;
    }
    (l > 1).then_some(l)
}

/// Call `f` with every index of `shape`, in C order (once, with `[]`, for rank 0).
fn for_each_index(shape: &[u64], mut f: impl FnMut(&[u64])) {
    if shape.contains(&0) {
        return;
    }
    let mut idx = vec![0u64; shape.len()];
    loop {
        f(&idx);
        let mut d = shape.len();
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

fn no_downsampled_axis(shape: &[u64], factors: &[u64]) -> bool {
    shape.iter().zip(factors).all(|(&n, &f)| n == 1 || f == 1)
}

/// `sum / n` rounded to nearest, ties to even, computed with floor division.
fn round_half_even(sum: i128, n: i128) -> i128 {
    let q = sum.div_euclid(n);
    let r = sum.rem_euclid(n);
    match (2 * r).cmp(&n) {
        std::cmp::Ordering::Less => q,
        std::cmp::Ordering::Greater => q + 1,
        std::cmp::Ordering::Equal => q + (q & 1),
    }
}

fn reference_int<T>(input: &[u8], shape: &[u64], factors: &[u64], method: Method) -> Vec<u8>
where
    T: Elem + Ord + Into<i128> + TryFrom<i128>,
    <T as TryFrom<i128>>::Error: std::fmt::Debug,
{
    let x = decode_all::<T>(input);
    let out: Vec<T> = blocks(shape, factors, false)
        .into_iter()
        .map(|b| {
            let v: Vec<T> = b.iter().map(|&i| x[i]).collect();
            match method {
                Method::Mean => {
                    let sum: i128 = v.iter().map(|&e| e.into()).sum();
                    T::try_from(round_half_even(sum, v.len() as i128)).unwrap()
                }
                Method::Min => *v.iter().min().unwrap(),
                Method::Max => *v.iter().max().unwrap(),
                Method::Median => {
                    let mut s = v.clone();
                    s.sort();
                    s[(s.len() - 1) / 2]
                }
                Method::Mode => {
                    let mut counts = BTreeMap::new();
                    for &e in &v {
                        *counts.entry(e).or_insert(0usize) += 1;
                    }
                    let best = *counts.values().max().unwrap();
                    *counts.iter().find(|(_, &c)| c == best).unwrap().0
                }
                Method::Stride => v[0],
            }
        })
        .collect();
    encode_all(&out)
}

fn reference_float<T>(input: &[u8], shape: &[u64], factors: &[u64], method: Method) -> Vec<u8>
where
    T: FloatElem + OrderStat,
{
    let x = decode_all::<T>(input);
    let last_group = ts_undownsampled_last_group(shape, factors);
    let c_blocks = blocks(shape, factors, false);
    let ts_blocks = blocks(shape, factors, true);
    let out: Vec<T> = c_blocks
        .into_iter()
        .zip(ts_blocks)
        .map(|(b, tb)| {
            let v: Vec<T> = b.iter().map(|&i| x[i]).collect();
            let mut tv: Vec<T> = tb.iter().map(|&i| x[i]).collect();
            match method {
                Method::Mean => {
                    let sum = b.iter().fold(T::ZERO, |a, &i| {
                        let e = x[i];
                        let s = a + e;
                        if !s.is_nan() {
                            return s;
                        }
                        // which NaN: see `ts_nan_sum`
                        let input_first = last_group.is_some_and(|l| {
                            let (k, piece) = (
                                i % l % T::TS_ROW_BLOCK,
                                T::TS_ROW_BLOCK.min(l - i % l / T::TS_ROW_BLOCK * T::TS_ROW_BLOCK),
                            );
                            !((piece % 2 == 1 && k == piece - 1)
                                || (T::TS_SCALAR_PAIRS && piece == 2))
                        });
                        if e.is_nan() && (input_first || !a.is_nan()) {
                            e.quiet()
                        } else if a.is_nan() {
                            a
                        } else {
                            T::DEFAULT_NAN
                        }
                    });
                    sum / T::from_count(v.len())
                }
                Method::Min => v.iter().fold(T::HIGHEST, |a, &e| if e < a { e } else { a }),
                Method::Max => v.iter().fold(T::LOWEST, |a, &e| if a < e { e } else { a }),
                Method::Median => {
                    let k = (tv.len() - 1) / 2;
                    stdcxx::nth_element(&mut tv, k);
                    tv[k]
                }
                Method::Mode => {
                    stdcxx::sort(&mut tv);
                    mode_of_sorted(&tv)
                }
                Method::Stride => v[0],
            }
        })
        .collect();
    encode_all(&out)
}

fn reference_bool(input: &[u8], shape: &[u64], factors: &[u64], method: Method) -> Vec<u8> {
    blocks(shape, factors, false)
        .into_iter()
        .map(|b| {
            let v: Vec<bool> = b.iter().map(|&i| input[i] != 0).collect();
            let trues = v.iter().filter(|&&t| t).count();
            let r = match method {
                Method::Mean | Method::Median | Method::Mode => 2 * trues > v.len(),
                Method::Min => trues == v.len(),
                Method::Max => trues > 0,
                Method::Stride => return input[b[0]],
            };
            u8::from(r)
        })
        .collect()
}

fn reference(input: &[u8], shape: &[u64], factors: &[u64], dtype: &str, method: Method) -> Vec<u8> {
    if shape.contains(&0) {
        return Vec::new();
    }
    if no_downsampled_axis(shape, factors) {
        return input.to_vec();
    }
    let (i, s, f, m) = (input, shape, factors, method);
    match dtype {
        "bool" => reference_bool(i, s, f, m),
        "uint8" => reference_int::<u8>(i, s, f, m),
        "uint16" => reference_int::<u16>(i, s, f, m),
        "uint32" => reference_int::<u32>(i, s, f, m),
        "uint64" => reference_int::<u64>(i, s, f, m),
        "int8" => reference_int::<i8>(i, s, f, m),
        "int16" => reference_int::<i16>(i, s, f, m),
        "int32" => reference_int::<i32>(i, s, f, m),
        "int64" => reference_int::<i64>(i, s, f, m),
        "float32" => reference_float::<f32>(i, s, f, m),
        "float64" => reference_float::<f64>(i, s, f, m),
        _ => unreachable!("{dtype}"),
    }
}

const DTYPES: [&str; 8] = [
    "uint8", "uint16", "int16", "int32", "uint64", "float32", "float64", "bool",
];

fn check_against_reference(
    shape: &[u64],
    factors: &[u64],
    dtype: &str,
    method: Method,
    seed: u64,
    style: u64,
) {
    let n = shape.iter().product::<u64>() as usize;
    let mut rng = Rng(seed | 1);
    let input = random_data(dtype, n, style, &mut rng);
    let got = downsample(&input, shape, factors, dtype, method).unwrap();
    let want = reference(&input, shape, factors, dtype, method);
    assert_eq!(
        got, want,
        "{dtype} {method} shape {shape:?} factors {factors:?} seed {seed} style {style}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn matches_naive_reference(
        dims in prop::collection::vec((0u64..=9, 1u64..=4), 1..=5),
        dtype in 0..DTYPES.len(),
        method in 0..Method::ALL.len(),
        seed in any::<u64>(),
        style in 0u64..3,
    ) {
        let shape: Vec<u64> = dims.iter().map(|d| d.0).collect();
        let factors: Vec<u64> = dims.iter().map(|d| d.1).collect();
        check_against_reference(&shape, &factors, DTYPES[dtype], Method::ALL[method], seed, style);
    }
}

#[test]
fn larger_inputs_split_across_tasks_match_reference() {
    // Enough output elements that the driver cuts rows between parallel tasks.
    for (shape, factors) in [
        (vec![3u64, 70, 301], vec![2u64, 3, 4]),
        (vec![5000], vec![3]),
        (vec![2, 9, 2, 700], vec![1, 2, 1, 2]),
        (vec![40, 41, 3], vec![2, 2, 1]),
    ] {
        for method in Method::ALL {
            for dtype in ["uint16", "float32", "int8"] {
                check_against_reference(&shape, &factors, dtype, method, 99, 1);
                check_against_reference(&shape, &factors, dtype, method, 7, 2);
            }
        }
    }
}

#[test]
fn wide_accumulators_for_big_blocks() {
    // Blocks too big for 32-bit sums of uint16 / int16 / uint8 (volume > 65537).
    for dtype in ["uint16", "int16", "uint8", "int32", "uint32", "int64"] {
        check_against_reference(&[300, 300], &[300, 300], dtype, Method::Mean, 5, 2);
        check_against_reference(&[260, 260], &[257, 256], dtype, Method::Mean, 6, 0);
    }
}
