//! TensorStore's semantics, example by example.

use super::{decode_all, encode_all};
use crate::pyramid::downsample::elem::Elem;
use crate::pyramid::downsample::{downsample, output_shape, Method};

fn run<T: Elem>(v: &[T], shape: &[u64], factors: &[u64], dtype: &str, method: Method) -> Vec<T> {
    decode_all(&downsample(&encode_all(v), shape, factors, dtype, method).unwrap())
}

fn bools(v: &[bool], factors: &[u64], method: Method) -> Vec<bool> {
    let bytes: Vec<u8> = v.iter().map(|&b| u8::from(b)).collect();
    downsample(&bytes, &[v.len() as u64], factors, "bool", method)
        .unwrap()
        .into_iter()
        .map(|b| b != 0)
        .collect()
}

#[test]
fn mean_rounds_to_nearest_ties_to_even() {
    assert_eq!(
        run(&[1u8, 2, 3, 4], &[4], &[2], "uint8", Method::Mean),
        [2, 4]
    );
    assert_eq!(
        run(&[-1i8, -2, -1, -4], &[4], &[2], "int8", Method::Mean),
        [-2, -2]
    );
    assert_eq!(run(&[1u8, 2, 3], &[3], &[2], "uint8", Method::Mean), [2, 3]);
    assert_eq!(
        run(&[5i16, 6, 6, -7, -8, -8], &[6], &[3], "int16", Method::Mean),
        [6, -8]
    );
    assert_eq!(
        run(&[-3i32, -4, 1, 2], &[4], &[2], "int32", Method::Mean),
        [-4, 2]
    );
    assert_eq!(
        run(
            &[u64::MAX, u64::MAX - 1],
            &[2],
            &[2],
            "uint64",
            Method::Mean
        ),
        [u64::MAX - 1]
    );
    assert_eq!(
        run(&[i64::MIN, i64::MIN + 1], &[2], &[2], "int64", Method::Mean),
        [i64::MIN]
    );
    assert_eq!(
        run(
            &[u16::MAX; 8],
            &[2, 2, 2],
            &[2, 2, 2],
            "uint16",
            Method::Mean
        ),
        [u16::MAX]
    );
    // divisors that are not powers of two
    assert_eq!(
        run(
            &[1u16, 1, 2, 10, 10, 11],
            &[6],
            &[3],
            "uint16",
            Method::Mean
        ),
        [1, 10]
    );
    assert_eq!(
        run(&[0u16, 1, 1, 0, 0, 1], &[6], &[6], "uint16", Method::Mean),
        [0]
    );
    assert_eq!(
        run(&[0u16, 1, 1, 0, 1, 1], &[6], &[6], "uint16", Method::Mean),
        [1]
    );
}

#[test]
fn bool_mean_is_the_rounded_fraction_of_true() {
    let (t, f) = (true, false);
    assert_eq!(bools(&[t, f, f, t, t, f, t, t], &[4], Method::Mean), [f, t]);
    assert_eq!(bools(&[t, f], &[2], Method::Mean), [f]);
    assert_eq!(bools(&[t, f, t], &[3], Method::Median), [t]);
    assert_eq!(bools(&[t, f, t, f], &[4], Method::Mode), [f]);
    assert_eq!(bools(&[t, f, t, t], &[4], Method::Min), [f]);
    assert_eq!(bools(&[f, f, t, f], &[4], Method::Max), [t]);
    // any non-zero byte is true
    let out = downsample(&[2, 0, 7, 9], &[4], &[2], "bool", Method::Max).unwrap();
    assert_eq!(out, [1, 1]);
}

#[test]
fn median_is_the_lower_median() {
    assert_eq!(run(&[2u8, 1], &[2], &[2], "uint8", Method::Median), [1]);
    assert_eq!(
        run(&[4u8, 1, 3, 2], &[4], &[4], "uint8", Method::Median),
        [2]
    );
    assert_eq!(
        run(&[9i16, -1, 5], &[3], &[3], "int16", Method::Median),
        [5]
    );
    assert_eq!(
        run(
            &[2.0f32, 1.0, 4.0, 3.0],
            &[4],
            &[4],
            "float32",
            Method::Median
        ),
        [2.0]
    );
}

#[test]
fn mode_ties_go_to_the_smallest_value() {
    assert_eq!(run(&[1u8, 2, 2, 1], &[4], &[4], "uint8", Method::Mode), [1]);
    assert_eq!(run(&[5u8, 3, 3, 5], &[4], &[4], "uint8", Method::Mode), [3]);
    assert_eq!(
        run(&[7i32, 9, 9, 1], &[4], &[4], "int32", Method::Mode),
        [9]
    );
    assert_eq!(
        run(&[4u16, 3, 2, 1], &[4], &[4], "uint16", Method::Mode),
        [1]
    );
}

#[test]
fn stride_takes_each_blocks_first_element() {
    let v: Vec<u16> = (0..20).collect();
    assert_eq!(
        run(&v, &[4, 5], &[2, 2], "uint16", Method::Stride),
        [0, 2, 4, 10, 12, 14]
    );
}

#[test]
fn partial_edge_blocks_use_only_the_elements_present() {
    // 5×3 with factors 2×2: blocks of 4, 2 (right edge), 2 (bottom edge) and 1.
    let v: Vec<u8> = (1..=15).collect();
    assert_eq!(
        run(&v, &[5, 3], &[2, 2], "uint8", Method::Mean),
        [3, 4, 9, 10, 14, 15]
    );
    assert_eq!(
        run(&v, &[5, 3], &[2, 2], "uint8", Method::Max),
        [5, 6, 11, 12, 14, 15]
    );
    // a factor larger than the extent: one partial block
    assert_eq!(run(&[1u8, 2, 9], &[3], &[4], "uint8", Method::Mean), [4]);
    assert_eq!(output_shape(&[3], &[4]), [1]);
}

#[test]
fn factors_of_one_and_empty_inputs() {
    let v: Vec<u8> = (0..12).collect();
    assert_eq!(run(&v, &[3, 4], &[1, 1], "uint8", Method::Mean), v);
    assert_eq!(
        run(&v, &[3, 4], &[1, 2], "uint8", Method::Min),
        [0, 2, 4, 6, 8, 10]
    );
    assert_eq!(
        run(&v, &[3, 4], &[3, 1], "uint8", Method::Max),
        [8, 9, 10, 11]
    );
    assert_eq!(run(&v, &[1, 12], &[5, 1], "uint8", Method::Mean), v);
    assert!(downsample(&[], &[0, 4], &[2, 2], "uint16", Method::Mean)
        .unwrap()
        .is_empty());
    assert_eq!(output_shape(&[0, 4], &[2, 2]), [0, 2]);
    // rank 0: one element, unchanged
    assert_eq!(
        downsample(&[7], &[], &[], "uint8", Method::Mean).unwrap(),
        [7]
    );
}

#[test]
fn float_nan_and_signed_zero_as_in_tensorstore() {
    let nan = f32::NAN;
    let f = |v: &[f32], m| run(v, &[v.len() as u64], &[v.len() as u64], "float32", m)[0];
    // min and max skip NaN; an all-NaN block gives +inf / -inf
    assert_eq!(f(&[1.5, nan, 3.0], Method::Max), 3.0);
    assert_eq!(f(&[1.5, nan, 3.0], Method::Min), 1.5);
    assert_eq!(f(&[nan, nan], Method::Min), f32::INFINITY);
    assert_eq!(f(&[nan, nan], Method::Max), f32::NEG_INFINITY);
    // the first of equal values stays
    assert!(f(&[0.0, -0.0], Method::Min).is_sign_positive());
    assert!(f(&[-0.0, 0.0], Method::Max).is_sign_negative());
    // NaN propagates in the mean; the sum starts from +0.0
    assert!(f(&[1.5, nan, 3.0], Method::Mean).is_nan());
    assert!(f(&[-0.0, -0.0], Method::Mean).is_sign_positive());
    // median and mode: TensorStore's (libstdc++'s) outcome
    assert!(f(&[1.5, nan, 3.0], Method::Median).is_nan());
    assert_eq!(f(&[nan, 1.5, 3.0], Method::Median), 1.5);
    assert_eq!(f(&[1.5, 3.0, nan], Method::Median), 3.0);
    assert_eq!(f(&[1.5, nan, 3.0], Method::Mode), 1.5);
    assert!(f(&[nan, 1.5, 3.0], Method::Mode).is_nan());
    assert!(f(&[nan, nan, 1.0, 2.0], Method::Mode).is_nan());
    assert_eq!(f(&[1.0, nan, nan, 2.0], Method::Mode), 1.0);
    assert!(f(&[0.0, -0.0, -0.0, 0.0], Method::Mode).is_sign_positive());
    assert!(f(&[-0.0, 0.0, 0.0, -0.0], Method::Mode).is_sign_negative());
    assert!(f(&[0.0, -0.0, -0.0], Method::Mode).is_sign_negative());
    // a single-element block when nothing is downsampled: unchanged (NaN stays NaN)
    assert!(run(&[nan], &[1], &[2], "float32", Method::Min)[0].is_nan());
}

#[test]
fn float32_mean_sums_in_float32_in_c_order() {
    // 2^24 + 1 + 1: in float32 each +1 is lost; in float64 it would not be.
    let big = 16_777_216.0f32;
    assert_eq!(
        run(&[big, 1.0, 1.0, 0.0], &[4], &[4], "float32", Method::Mean),
        [big / 4.0]
    );
    assert_eq!(
        run(&[1.0, 1.0, big, 0.0], &[4], &[4], "float32", Method::Mean),
        [(big + 2.0) / 4.0]
    );
    // 2-d: row by row, left to right
    assert_eq!(
        run(
            &[big, 1.0, 1.0, 0.0],
            &[2, 2],
            &[2, 2],
            "float32",
            Method::Mean
        ),
        [big / 4.0]
    );
    assert_eq!(
        run(
            &[1.0, big, 1.0, 0.0],
            &[2, 2],
            &[2, 2],
            "float32",
            Method::Mean
        ),
        [(big + 1.0) / 4.0]
    );
}

#[test]
fn unaligned_input() {
    let v: Vec<u16> = (0..64).map(|i| i * 3).collect();
    let bytes = encode_all(&v);
    let mut shifted = vec![0u8; bytes.len() + 1];
    shifted[1..].copy_from_slice(&bytes);
    for method in Method::ALL {
        let a = downsample(&bytes, &[8, 8], &[2, 2], "uint16", method).unwrap();
        let b = downsample(&shifted[1..], &[8, 8], &[2, 2], "uint16", method).unwrap();
        assert_eq!(a, b, "{method}");
    }
}
