//! The sorting building blocks: the sorting networks and the libstdc++ emulation.

use super::{decode_all, hex, le_to_ne, Rng};
use crate::pyramid::downsample::median_mode::{sorting_network, NETWORK_MAX};
use crate::pyramid::downsample::stdcxx;

#[test]
fn sorting_networks_sort() {
    let apply = |v: &mut [u64], net: &[(usize, usize)]| {
        for &(i, j) in net {
            if v[j] < v[i] {
                v.swap(i, j);
            }
        }
    };
    // 0-1 principle: a network sorts everything if it sorts every 0/1 input
    for n in 1..=16 {
        let net = sorting_network(n);
        for bits in 0u32..1 << n {
            let mut v: Vec<u64> = (0..n).map(|i| u64::from(bits >> i & 1)).collect();
            apply(&mut v, &net);
            assert!(
                v.windows(2).all(|w| w[0] <= w[1]),
                "n = {n}, input {bits:b}"
            );
        }
    }
    let mut rng = Rng(3);
    for n in 17..=NETWORK_MAX {
        let net = sorting_network(n);
        for _ in 0..200 {
            let mut v: Vec<u64> = (0..n)
                .map(|_| rng.below(if n % 2 == 0 { 2 } else { 1000 }))
                .collect();
            let mut want = v.clone();
            want.sort();
            apply(&mut v, &net);
            assert_eq!(v, want, "n = {n}");
        }
    }
    assert_eq!(sorting_network(8).len(), 19);
}

#[test]
fn stdcxx_sort_and_nth_element_order_numbers() {
    // Without NaN they are a sort and a selection (the TensorStore cases cover NaN).
    let mut rng = Rng(11);
    for n in 0..200 {
        let v: Vec<f64> = (0..n).map(|_| (rng.below(50) as f64) - 25.0).collect();
        let mut want = v.clone();
        want.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let mut got = v.clone();
        stdcxx::sort(&mut got);
        assert_eq!(got, want);
        if n > 0 {
            for k in [0, (n - 1) / 2, n - 1] {
                let mut got = v.clone();
                stdcxx::nth_element(&mut got, k);
                assert_eq!(got[k], want[k]);
                assert!(got[..k].iter().all(|&x| x <= got[k]));
                assert!(got[k..].iter().all(|&x| x >= got[k]));
            }
        }
    }
    // descending input drives introsort to its depth limit (heap sort)
    let mut v: Vec<f32> = (0..5000).map(|i| ((i * 7919) % 5000) as f32).collect();
    v.reverse();
    let mut want = v.clone();
    want.sort_by(|a, b| a.partial_cmp(b).unwrap());
    stdcxx::sort(&mut v);
    assert_eq!(v, want);
}

/// Compare `stdcxx` with libstdc++'s results: lines `sort|nth n k input output` (float64
/// arrays, little-endian hex; `#` lines are comments). Returns (lines, differing lines).
fn check_stdcxx_lines(text: &str) -> (usize, usize) {
    let (mut n, mut bad) = (0, 0);
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let parts: Vec<&str> = line.split(' ').collect();
        let k: usize = parts[2].parse().unwrap();
        let mut v: Vec<f64> = decode_all(&le_to_ne(hex(parts[3]), 8));
        let want: Vec<f64> = decode_all(&le_to_ne(hex(parts[4]), 8));
        if parts[0] == "sort" {
            stdcxx::sort(&mut v);
        } else {
            stdcxx::nth_element(&mut v, k);
        }
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        n += 1;
        if bits(&v) != bits(&want) {
            bad += 1;
            println!("{} n={} k={k} differs", parts[0], parts[1]);
        }
    }
    (n, bad)
}

/// Inputs that drive libstdc++'s introsort and introselect to their heap-sort fallbacks
/// (McIlroy's "killer adversary for quicksort" run against g++ 12's `std::sort` and
/// `std::nth_element`), with libstdc++'s results; the generator is in the file's header.
#[test]
fn stdcxx_matches_libstdcxx_on_adversarial_inputs() {
    let (n, bad) = check_stdcxx_lines(include_str!("../../testdata/stdcxx_killer_cases.txt"));
    assert_eq!((n, bad), (3, 0));
}
