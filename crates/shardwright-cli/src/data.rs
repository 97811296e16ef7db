//! The built-in example data: a pure function of coordinates — a smooth field plus two bits
//! of integer-hash noise (compresses about 3.4× with zstd level 3), as uint16.

use shardwright::Domain;

/// The value at one point.
fn value(point: &[u64]) -> u16 {
    let mut smooth = 0u64;
    let mut hash = 0x9E37_79B9_7F4A_7C15u64;
    for (d, p) in point.iter().enumerate() {
        smooth += p * (3 + 2 * d as u64);
        hash = (hash ^ p).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        hash ^= hash >> 31;
    }
    (((smooth / 8) << 2) as u16) | (hash & 3) as u16
}

/// The raw bytes (native-endian uint16, C order) of the example over `domain`.
pub(crate) fn chunk_bytes(domain: &Domain) -> Vec<u8> {
    let mut out = Vec::with_capacity(domain.size() as usize * 2);
    let rank = domain.ndim();
    let mut point = domain.origin().to_vec();
    let stop = domain.stop();
    if domain.is_empty() {
        return out;
    }
    loop {
        out.extend_from_slice(&value(&point).to_ne_bytes());
        let mut d = rank;
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            point[d] += 1;
            if point[d] < stop[d] {
                break;
            }
            point[d] = domain.origin()[d];
        }
    }
}
