//! [`downsample_part`]: parts of an array, made of its blocks, give what the whole array
//! gives (issue 22, item 9: TensorStore's values at the array's high edge).

use proptest::prelude::*;

use super::{decode_all, encode_all, random_data, Rng};
use crate::pyramid::downsample::elem::DType;
use crate::pyramid::downsample::{
    downsample, downsample_part, output_shape, DownsampleError, Method,
};

fn part_f32(
    v: &[f32],
    origin: &[u64],
    shape: &[u64],
    array_shape: &[u64],
    method: Method,
) -> Vec<u32> {
    let factors = vec![2; shape.len()];
    let out = downsample_part(
        &encode_all(v),
        origin,
        shape,
        array_shape,
        &factors,
        "float32",
        method,
    );
    decode_all::<f32>(&out.unwrap())
        .iter()
        .map(|x| x.to_bits())
        .collect()
}

#[test]
fn a_part_holding_one_nan_block_skips_the_nan_for_min_and_max() {
    // The corner [2, 2] of a 3×3 array, halved: a block of one NaN, whose min and max
    // (NaN skipped) are +inf and -inf, as TensorStore gives for the whole array.
    let (origin, shape, array) = ([2, 2], [1, 1], [3, 3]);
    let min = part_f32(&[f32::NAN], &origin, &shape, &array, Method::Min);
    assert_eq!(min, [f32::INFINITY.to_bits()]);
    let max = part_f32(&[f32::NAN], &origin, &shape, &array, Method::Max);
    assert_eq!(max, [f32::NEG_INFINITY.to_bits()]);
    // the edge row: a block of NaN and 1 (min 1), then one of NaN alone
    let row = part_f32(
        &[f32::NAN, 1.0, f32::NAN],
        &[2, 0],
        &[1, 3],
        &array,
        Method::Min,
    );
    assert_eq!(row, [1f32.to_bits(), f32::INFINITY.to_bits()]);
    // the others give the element (mean: -0.0 summed from 0.0 is 0.0, as in TensorStore)
    for (method, want) in [
        (Method::Mean, 0.0f32),
        (Method::Median, -0.0),
        (Method::Mode, -0.0),
        (Method::Stride, -0.0),
    ] {
        let got = part_f32(&[-0.0], &origin, &shape, &array, method);
        assert_eq!(got, [want.to_bits()], "{method}");
    }
    // an array of one element is not downsampled at all: unchanged, as in TensorStore
    let alone = part_f32(&[f32::NAN], &[0, 0], &[1, 1], &[1, 1], Method::Min);
    assert!(f32::from_bits(alone[0]).is_nan());
}

#[test]
fn a_partial_edge_part_gathers_its_blocks_in_the_whole_arrays_order() {
    // The blocks at x = 2 of a (2, 2, 3) array: (2, 2, 1), which TensorStore gathers in C
    // order; without the array's last axis they would be gathered transposed.
    let nan = f32::NAN;
    let (origin, shape, array) = ([0, 0, 2], [2, 2, 1], [2, 2, 3]);
    // libstdc++'s sort of [-1, nan, -1, -3] ends with -3 first, each value once
    let mode = part_f32(
        &[-1.0, nan, -1.0, -3.0],
        &origin,
        &shape,
        &array,
        Method::Mode,
    );
    assert_eq!(mode, [(-3f32).to_bits()]);
    // nth_element of [-1, -1, nan, 2] picks the NaN
    let median = part_f32(
        &[-1.0, -1.0, nan, 2.0],
        &origin,
        &shape,
        &array,
        Method::Median,
    );
    assert_eq!(median, [nan.to_bits()]);
}

#[test]
fn parts_not_made_of_whole_blocks_are_refused() {
    let part = |origin: &[u64], shape: &[u64], array: &[u64]| {
        let n = shape.iter().product::<u64>() as usize;
        downsample_part(
            &vec![0; n],
            origin,
            shape,
            array,
            &[2, 2],
            "uint8",
            Method::Mean,
        )
    };
    for (origin, shape, array) in [
        (&[1u64, 0][..], &[2u64, 3][..], &[3u64, 3][..]), // origin off a block boundary
        (&[2, 0], &[2, 3], &[3, 3]),                      // past the array's edge
        (&[0, 0], &[3, 3], &[5, 5]),                      // ends inside a block
        (&[0], &[2, 3], &[3, 3]),                         // origin of another length
        (&[0, 0], &[2, 3], &[3]),                         // array shape of another length
    ] {
        let err = part(origin, shape, array).unwrap_err();
        assert_eq!(
            err,
            DownsampleError::Part {
                origin: origin.to_vec(),
                shape: shape.to_vec(),
                array_shape: array.to_vec(),
                factors: vec![2, 2],
            }
        );
    }
    assert_eq!(
        part(&[1, 0], &[2, 3], &[3, 3]).unwrap_err().to_string(),
        "a part of shape [2, 3] at [1, 0] is not made of whole downsampling blocks \
         (factors [2, 2]) of an array of shape [3, 3]"
    );
    // factors are checked first, the input's length after
    let err = downsample_part(&[0; 4], &[0], &[2, 2], &[2, 2], &[2], "uint8", Method::Mean);
    assert!(
        matches!(err, Err(DownsampleError::Factors { .. })),
        "{err:?}"
    );
    let err = downsample_part(
        &[0; 3],
        &[0, 0],
        &[2, 2],
        &[2, 2],
        &[2, 2],
        "uint8",
        Method::Mean,
    );
    assert!(
        matches!(err, Err(DownsampleError::InputLength { .. })),
        "{err:?}"
    );
    // whole blocks in the middle, and parts reaching the edge, are fine
    assert!(part(&[2, 0], &[2, 4], &[5, 5]).is_ok());
    assert!(part(&[4, 2], &[1, 3], &[5, 5]).is_ok());
    assert!(part(&[0, 0], &[0, 0], &[5, 5]).is_ok());
}

/// The box `origin`/`shape` of a C-order array of shape `array` and `size`-byte elements.
fn cut(data: &[u8], array: &[u64], origin: &[u64], shape: &[u64], size: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for_each_box_row(array, origin, shape, size, |at, len| {
        out.extend_from_slice(&data[at..at + len]);
    });
    out
}

/// Write `part` (the box `origin`/`shape`) into the C-order array `data` of shape `array`.
fn paste(data: &mut [u8], array: &[u64], origin: &[u64], shape: &[u64], part: &[u8], size: usize) {
    let mut from = 0;
    for_each_box_row(array, origin, shape, size, |at, len| {
        data[at..at + len].copy_from_slice(&part[from..from + len]);
        from += len;
    });
}

/// Call `f(byte offset, byte length)` for each last-axis row of a box, in C order.
fn for_each_box_row(
    array: &[u64],
    origin: &[u64],
    shape: &[u64],
    size: usize,
    mut f: impl FnMut(usize, usize),
) {
    let nd = array.len();
    if shape.contains(&0) {
        return;
    }
    let mut idx = vec![0u64; nd];
    loop {
        let mut at = 0u64;
        for d in 0..nd {
            at = at * array[d] + origin[d] + if d + 1 < nd { idx[d] } else { 0 };
        }
        f(at as usize * size, shape[nd - 1] as usize * size);
        // advance every axis but the last
        let mut d = nd - 1;
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

/// Downsample `shape` part by part (parts of `blocks[d] * factors[d]` elements) and
/// compare with the whole array downsampled at once.
fn parts_equal_the_whole(
    shape: &[u64],
    factors: &[u64],
    blocks: &[u64],
    dtype: &str,
    method: Method,
    seed: u64,
    style: u64,
) {
    let size = DType::parse(dtype).unwrap().size();
    let n = shape.iter().product::<u64>() as usize;
    let input = random_data(dtype, n, style, &mut Rng(seed | 1));
    let whole = downsample(&input, shape, factors, dtype, method).unwrap();
    let out_shape = output_shape(shape, factors);
    let mut assembled = vec![0xAAu8; whole.len()];
    let step: Vec<u64> = blocks.iter().zip(factors).map(|(b, f)| b * f).collect();
    let counts: Vec<u64> = shape
        .iter()
        .zip(&step)
        .map(|(s, t)| s.div_ceil(*t))
        .collect();
    let mut cell = vec![0u64; shape.len()];
    while !counts.contains(&0) {
        let origin: Vec<u64> = cell.iter().zip(&step).map(|(c, t)| c * t).collect();
        let part_shape: Vec<u64> = (0..shape.len())
            .map(|d| step[d].min(shape[d] - origin[d]))
            .collect();
        let part = cut(&input, shape, &origin, &part_shape, size);
        let down =
            downsample_part(&part, &origin, &part_shape, shape, factors, dtype, method).unwrap();
        let out_origin: Vec<u64> = origin.iter().zip(factors).map(|(o, f)| o / f).collect();
        let down_shape = output_shape(&part_shape, factors);
        paste(
            &mut assembled,
            &out_shape,
            &out_origin,
            &down_shape,
            &down,
            size,
        );
        // next part, last axis fastest
        let mut d = shape.len();
        loop {
            if d == 0 {
                break;
            }
            d -= 1;
            cell[d] += 1;
            if cell[d] < counts[d] {
                break;
            }
            cell[d] = 0;
        }
        if cell.iter().all(|&c| c == 0) {
            break;
        }
    }
    let (got, want) = if method == Method::Mean && dtype.starts_with("float") {
        // which NaN a float mean ends with may differ between a part and the whole
        (
            canonical_nans(&assembled, dtype),
            canonical_nans(&whole, dtype),
        )
    } else {
        (assembled, whole)
    };
    assert_eq!(got, want, "{dtype} {method} shape {shape:?} factors {factors:?} blocks {blocks:?} seed {seed} style {style}");
}

fn canonical_nans(b: &[u8], dtype: &str) -> Vec<u8> {
    if dtype == "float32" {
        let v: Vec<f32> = decode_all::<f32>(b)
            .into_iter()
            .map(|x| if x.is_nan() { f32::NAN } else { x })
            .collect();
        encode_all(&v)
    } else {
        let v: Vec<f64> = decode_all::<f64>(b)
            .into_iter()
            .map(|x| if x.is_nan() { f64::NAN } else { x })
            .collect();
        encode_all(&v)
    }
}

const DTYPES: [&str; 5] = ["uint8", "int16", "float32", "float64", "bool"];

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn parts_assembled_equal_the_whole_array(
        dims in prop::collection::vec((0u64..=7, 1u64..=3, 1u64..=2), 1..=4),
        dtype in 0..DTYPES.len(),
        method in 0..Method::ALL.len(),
        seed in any::<u64>(),
        style in 0u64..3,
    ) {
        let shape: Vec<u64> = dims.iter().map(|d| d.0).collect();
        let factors: Vec<u64> = dims.iter().map(|d| d.1).collect();
        let blocks: Vec<u64> = dims.iter().map(|d| d.2).collect();
        parts_equal_the_whole(&shape, &factors, &blocks, DTYPES[dtype], Method::ALL[method], seed, style);
    }
}
