//! Times, text and bytes: the kernels against a naive reference of numpy's reading of
//! each method (`np.nanmin` / `np.nanmax` skip NaT; the mode orders NaT last, text by
//! code point, bytes byte by byte), and the methods refused.

use super::Rng;
use crate::pyramid::downsample::{
    check_supported, downsample, output_shape, DownsampleError, Method,
};

const NAT: i64 = i64::MIN;
const DATETIME: &str =
    r#"{"name":"numpy.datetime64","configuration":{"unit":"s","scale_factor":1}}"#;
const TIMEDELTA: &str =
    r#"{"name":"numpy.timedelta64","configuration":{"unit":"ns","scale_factor":10}}"#;
const UTF32: &str = r#"{"name":"fixed_length_utf32","configuration":{"length_bytes":8}}"#;
const BYTES: &str = r#"{"name":"null_terminated_bytes","configuration":{"length_bytes":3}}"#;
const RAW: &str = r#"{"name":"raw_bytes","configuration":{"length_bytes":2}}"#;

fn times(values: &[i64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_ne_bytes()).collect()
}

fn utf32(texts: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for text in texts {
        let mut units: Vec<u32> = text.chars().map(u32::from).collect();
        units.resize(2, 0);
        out.extend(units.iter().flat_map(|u| u.to_ne_bytes()));
    }
    out
}

/// numpy's order of two elements of `data_type`.
fn order(data_type: &str, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    match data_type {
        DATETIME | TIMEDELTA => {
            let key = |x: &[u8]| {
                let v = i64::from_ne_bytes(x.try_into().unwrap());
                (v == NAT, v)
            };
            key(a).cmp(&key(b))
        }
        UTF32 => {
            let units = |x: &[u8]| -> Vec<u32> {
                x.chunks(4)
                    .map(|c| u32::from_ne_bytes(c.try_into().unwrap()))
                    .collect()
            };
            units(a).cmp(&units(b))
        }
        _ => a.cmp(b),
    }
}

/// One block's result, computed the plain way.
fn block_result(data_type: &str, block: &[&[u8]], method: Method) -> Vec<u8> {
    match method {
        Method::Stride => block[0].to_vec(),
        Method::Min | Method::Max => {
            let mut present: Vec<i64> = block
                .iter()
                .map(|x| i64::from_ne_bytes((*x).try_into().unwrap()))
                .filter(|&v| v != NAT)
                .collect();
            present.sort_unstable();
            let found = if method == Method::Min {
                present.first()
            } else {
                present.last()
            };
            found.copied().unwrap_or(NAT).to_ne_bytes().to_vec()
        }
        _ => {
            let mut sorted = block.to_vec();
            sorted.sort_by(|a, b| order(data_type, a, b));
            let mut best = (0, sorted[0]);
            let mut i = 0;
            while i < sorted.len() {
                let run = sorted[i..].iter().take_while(|x| **x == sorted[i]).count();
                if run > best.0 {
                    best = (run, sorted[i]);
                }
                i += run;
            }
            best.1.to_vec()
        }
    }
}

/// `downsample` of a 2-d array, the plain way.
fn reference(data_type: &str, input: &[u8], shape: [u64; 2], f: [u64; 2], m: Method) -> Vec<u8> {
    let size = input.len() / (shape[0] * shape[1]) as usize;
    let out = output_shape(&shape, &f);
    let mut result = Vec::new();
    for i in 0..out[0] {
        for j in 0..out[1] {
            let mut block = Vec::new();
            for r in i * f[0]..((i + 1) * f[0]).min(shape[0]) {
                for c in j * f[1]..((j + 1) * f[1]).min(shape[1]) {
                    let at = (r * shape[1] + c) as usize * size;
                    block.push(&input[at..at + size]);
                }
            }
            result.extend(block_result(data_type, &block, m));
        }
    }
    result
}

/// Random elements of `data_type` from a small pool (so blocks have ties), NaT or an
/// empty string among them.
fn pool_data(data_type: &str, n: usize, rng: &mut Rng) -> Vec<u8> {
    let pool: Vec<Vec<u8>> = match data_type {
        DATETIME | TIMEDELTA => [NAT, -3, 0, 7, i64::MAX, NAT + 1]
            .iter()
            .map(|v| v.to_ne_bytes().to_vec())
            .collect(),
        UTF32 => ["", "a", "ā", "ÿ", "🎉b", "a\0"]
            .iter()
            .map(|t| utf32(&[t]))
            .collect(),
        BYTES => [b"\0\0\0", b"a\0\0", b"a\0b", b"\xff\0\0", b"ab\0"]
            .iter()
            .map(|b| b.to_vec())
            .collect(),
        _ => [[0u8, 0], [0, 1], [1, 0], [255, 255]]
            .iter()
            .map(|b| b.to_vec())
            .collect(),
    };
    (0..n)
        .flat_map(|_| pool[rng.below(pool.len() as u64) as usize].clone())
        .collect()
}

#[test]
fn times_text_and_bytes_match_the_reference() {
    let mut rng = Rng(0x5eed);
    let cases: [(&str, &[Method]); 5] = [
        (
            DATETIME,
            &[Method::Stride, Method::Mode, Method::Min, Method::Max],
        ),
        (
            TIMEDELTA,
            &[Method::Stride, Method::Mode, Method::Min, Method::Max],
        ),
        (UTF32, &[Method::Stride, Method::Mode]),
        (BYTES, &[Method::Stride, Method::Mode]),
        (RAW, &[Method::Stride, Method::Mode]),
    ];
    for (data_type, methods) in cases {
        for &m in methods {
            for (shape, f) in [
                ([7, 5], [2, 2]),
                ([9, 13], [3, 4]),
                ([1, 40], [1, 6]),
                ([64, 3], [5, 1]),
            ] {
                let n = (shape[0] * shape[1]) as usize;
                let input = pool_data(data_type, n, &mut rng);
                let got = downsample(&input, &shape, &f, data_type, m).unwrap();
                let want = reference(data_type, &input, shape, f, m);
                assert_eq!(got, want, "{data_type} {m} {shape:?} {f:?}");
            }
        }
    }
}

#[test]
fn nat_is_skipped_by_min_and_max_and_comes_last_in_the_mode() {
    let input = times(&[NAT, 5, NAT, 3, NAT, NAT, 9, 9, NAT, 2]);
    let min = downsample(&input, &[5, 2], &[1, 2], DATETIME, Method::Min).unwrap();
    assert_eq!(min, times(&[5, 3, NAT, 9, 2]));
    let max = downsample(&input, &[5, 2], &[1, 2], DATETIME, Method::Max).unwrap();
    assert_eq!(max, times(&[5, 3, NAT, 9, 2]));
    let mode = downsample(&input, &[5, 2], &[1, 2], TIMEDELTA, Method::Mode).unwrap();
    assert_eq!(mode, times(&[5, 3, NAT, 9, 2])); // a tie of NaT and a time: the time
}

#[test]
fn text_ties_go_to_the_smallest_code_point_not_the_smallest_byte() {
    // 'ā' is U+0101 and 'ÿ' U+00FF: in little-endian bytes 'ā' sorts first, by code point 'ÿ'
    let input = utf32(&["ā", "ÿ", "ÿ", "ā"]);
    let mode = downsample(&input, &[4], &[4], UTF32, Method::Mode).unwrap();
    assert_eq!(mode, utf32(&["ÿ"]));
    let input = b"b\0\0a\0\0".to_vec();
    let mode = downsample(&input, &[2], &[2], BYTES, Method::Mode).unwrap();
    assert_eq!(mode, b"a\0\0");
}

#[test]
fn other_methods_are_refused_naming_the_methods_that_work() {
    for (data_type, works) in [
        (DATETIME, "stride, mode, min, max"),
        (TIMEDELTA, "stride, mode, min, max"),
        (UTF32, "stride, mode"),
        (BYTES, "stride, mode"),
        (RAW, "stride, mode"),
        ("r16", "stride, mode"),
    ] {
        for m in Method::ALL {
            let err = match check_supported(data_type, m) {
                Ok(()) => {
                    assert!(works.contains(m.name()), "{data_type} {m}");
                    continue;
                }
                Err(err) => err,
            };
            assert!(!works.split(", ").any(|w| w == m.name()), "{data_type} {m}");
            assert!(matches!(err, DownsampleError::MethodNotForDataType { .. }));
            let text = err.to_string();
            assert!(text.contains(&format!("method '{m}'")), "{text}");
            assert!(text.contains(data_type), "{text}");
            assert!(
                text.ends_with(&format!("the methods for it: {works}")),
                "{text}"
            );
            assert_eq!(downsample(&[0; 8], &[4], &[2], data_type, m), Err(err));
        }
    }
}
