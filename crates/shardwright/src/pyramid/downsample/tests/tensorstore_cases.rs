//! The kernels against TensorStore's own results, recorded in a case file.

use super::{hex, le_to_ne};
use crate::pyramid::downsample::elem::DType;
use crate::pyramid::downsample::{downsample, Method};

/// Run every case of a file written by the generator; returns (cases, failures).
fn run_ts_cases(json: &str) -> (usize, Vec<String>) {
    let doc: serde_json::Value = serde_json::from_str(json).unwrap();
    let cases = doc["cases"].as_array().unwrap();
    let mut failures = Vec::new();
    for c in cases {
        let dtype = c["data_type"].as_str().unwrap();
        let size = DType::parse(dtype).unwrap().size();
        let shape: Vec<u64> = c["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        let factors: Vec<u64> = c["factors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        let method: Method = c["method"].as_str().unwrap().parse().unwrap();
        let input = le_to_ne(hex(c["input"].as_str().unwrap()), size);
        let want = le_to_ne(hex(c["output"].as_str().unwrap()), size);
        let got = downsample(&input, &shape, &factors, dtype, method).unwrap();
        if got != want {
            failures.push(format!(
                "{dtype} {method} shape {shape:?} factors {factors:?}: input {} got {} want {}",
                c["input"],
                hexs(&got),
                c["output"]
            ));
        }
    }
    (cases.len(), failures)
}

fn hexs(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn matches_tensorstore_cases() {
    let (n, failures) = run_ts_cases(include_str!("../../testdata/ts_downsample_cases.json"));
    assert!(n >= 100, "{n} cases");
    assert!(
        failures.is_empty(),
        "{} of {n} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
