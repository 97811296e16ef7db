//! Tests of the downsampling kernels: a naive reference ([`reference`]), TensorStore's own
//! results ([`tensorstore_cases`]), TensorStore's semantics example by example
//! ([`semantics`]), names and errors ([`errors`]), times, text and bytes ([`fixed`]), the sorting building blocks
//! ([`sorting`]), parts of arrays against the whole ([`parts`]) and a throughput run by
//! hand ([`throughput`]). The helpers they share (element codecs, random data, hex case
//! files) are here.

mod errors;
mod fixed;
mod parts;
mod reference;
mod semantics;
mod sorting;
mod tensorstore_cases;

use super::elem::{DType, Elem};

fn decode_all<T: Elem>(bytes: &[u8]) -> Vec<T> {
    let mut v = vec![T::ZERO; bytes.len() / T::SIZE];
    T::decode(bytes, &mut v);
    v
}

fn encode_all<T: Elem>(v: &[T]) -> Vec<u8> {
    let mut b = vec![0u8; v.len() * T::SIZE];
    T::encode(v, &mut b);
    b
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// `n` random elements of `dtype` as bytes; `style` 0: any bits (integers) or wide-range
/// finite values (floats), 1: few distinct values (ties), 2: extremes (integers) or NaN,
/// ±0.0 and infinities among ordinary values (floats).
fn random_data(dtype: &str, n: usize, style: u64, rng: &mut Rng) -> Vec<u8> {
    let size = DType::parse(dtype).unwrap().size();
    let mut out = Vec::with_capacity(n * size);
    for _ in 0..n {
        match dtype {
            "bool" => out.push(u8::from(rng.below(2) == 1)),
            "float32" | "float64" => {
                let pool = [
                    0.0,
                    -0.0,
                    1.0,
                    -1.0,
                    2.5,
                    f64::NAN,
                    -f64::NAN,
                    f64::INFINITY,
                    f64::NEG_INFINITY,
                ];
                let v = match style {
                    1 => pool[rng.below(pool.len() as u64) as usize],
                    2 if rng.below(3) == 0 => pool[rng.below(pool.len() as u64) as usize],
                    _ => (rng.next() as i64 as f64) / (1u64 << rng.below(63)) as f64,
                };
                if dtype == "float32" {
                    out.extend((v as f32).to_ne_bytes());
                } else {
                    out.extend(v.to_ne_bytes());
                }
            }
            _ => {
                let bits = match style {
                    1 => rng.below(4).wrapping_sub(1),
                    2 => [
                        0u64,
                        u64::MAX,
                        1 << (size * 8 - 1),
                        (1 << (size * 8 - 1)) - 1,
                    ][rng.below(4) as usize],
                    _ => rng.next(),
                };
                out.extend(&bits.to_le_bytes()[..size]);
                if cfg!(target_endian = "big") {
                    let k = out.len() - size;
                    out[k..].reverse();
                }
            }
        }
    }
    out
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Little-endian bytes (as stored in the case files) to native-endian ones.
fn le_to_ne(mut b: Vec<u8>, size: usize) -> Vec<u8> {
    if cfg!(target_endian = "big") {
        for c in b.chunks_exact_mut(size) {
            c.reverse();
        }
    }
    b
}
