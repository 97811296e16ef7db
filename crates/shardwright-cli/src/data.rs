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

/// The raw bytes (native-endian uint16, C order) of the example over `domain`: the same
/// as [`value`] at each point, with the work of all but the last axis done once per row.
pub(crate) fn chunk_bytes(domain: &Domain) -> Vec<u8> {
    let mut out = Vec::with_capacity(domain.size() as usize * 2);
    let rank = domain.ndim();
    if domain.is_empty() {
        return out;
    }
    if rank == 0 {
        out.extend_from_slice(&value(&[]).to_ne_bytes());
        return out;
    }
    let last = rank - 1;
    let (x0, x1) = (domain.origin()[last], domain.stop()[last]);
    let stride = 3 + 2 * last as u64;
    let mut point = domain.origin().to_vec();
    let stop = domain.stop();
    loop {
        // the smooth part and the hash of every axis but the last
        let mut smooth = 0u64;
        let mut hash = 0x9E37_79B9_7F4A_7C15u64;
        for (d, p) in point[..last].iter().enumerate() {
            smooth += p * (3 + 2 * d as u64);
            hash = (hash ^ p).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            hash ^= hash >> 31;
        }
        for x in x0..x1 {
            let mut h = (hash ^ x).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            h ^= h >> 31;
            let v = ((((smooth + x * stride) / 8) << 2) as u16) | (h & 3) as u16;
            out.extend_from_slice(&v.to_ne_bytes());
        }
        let mut d = last;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_equal_the_point_function() {
        let domain = Domain::new(vec![1, 0, 3], vec![2, 3, 5]);
        let bytes = chunk_bytes(&domain);
        let mut i = 0;
        for a in 1..3 {
            for b in 0..3 {
                for c in 3..8 {
                    assert_eq!(&bytes[i..i + 2], &value(&[a, b, c]).to_ne_bytes());
                    i += 2;
                }
            }
        }
    }
}
