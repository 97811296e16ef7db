//! What the fixtures hold (tests/data/make_fixtures.py writes them by the same formula).
#![allow(dead_code)]

pub mod craft;

use shardwright::Domain;

pub fn data(name: &str) -> String {
    format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn weight(axis: &str) -> u64 {
    match axis {
        "t" => 7,
        "c" => 13,
        "z" => 31,
        "y" => 17,
        "x" => 3,
        _ => panic!("axis {axis}"),
    }
}

/// The fixture formula's elements over `region` of an array with `axes`, as native bytes.
pub fn expected(axes: &[String], region: &Domain, dtype: &str) -> Vec<u8> {
    let modulus: i64 = match dtype {
        "uint8" => 251,
        "int8" => 127,
        "int16" => 32749,
        _ => 65521,
    };
    let mut out = Vec::new();
    let n = region.size();
    let shape = region.shape();
    for i in 0..n {
        let mut rest = i;
        let mut total = 0u64;
        for k in (0..shape.len()).rev() {
            let c = region.origin()[k] + rest % shape[k];
            rest /= shape[k];
            total += c * weight(&axes[k]);
        }
        let v = (total % modulus as u64) as i64;
        match dtype {
            "uint8" => out.push(v as u8),
            "uint16" => out.extend((v as u16).to_ne_bytes()),
            "int16" => out.extend(((v - modulus / 2) as i16).to_ne_bytes()),
            "float32" => out.extend((v as f32).to_ne_bytes()),
            _ => panic!("dtype {dtype}"),
        }
    }
    out
}
