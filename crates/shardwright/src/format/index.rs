//! The shard index: one `(offset, nbytes)` pair per inner chunk slot, C order, encoded with
//! the index codecs (usually `bytes` little-endian + `crc32c`).

use std::borrow::Cow;
use std::num::NonZeroU64;

use zarrs::array::{ArrayBytes, ArrayToBytesCodecTraits, FillValue};

use super::{codec_options, FormatError};
use crate::layout::{IndexSpec, Layout};

/// The index entry of an empty slot (no chunk stored: read as the fill value).
pub const EMPTY: (u64, u64) = (u64::MAX, u64::MAX);

fn spec(layout: &Layout) -> &IndexSpec {
    layout
        .index()
        .expect("a shard index exists only in sharded arrays")
}

fn index_shape(layout: &Layout) -> Vec<NonZeroU64> {
    let mut shape: Vec<NonZeroU64> = layout
        .chunks_per_shard()
        .iter()
        .map(|c| NonZeroU64::new(*c).expect("non-zero"))
        .collect();
    shape.push(NonZeroU64::new(2).expect("2 > 0"));
    shape
}

/// Encode the index of a shard of a sharded array.
///
/// ```
/// use shardwright::format::index;
/// use shardwright::layout::{ArraySpec, Layout};
/// let json = ArraySpec::new(vec![4], "uint8", vec![2]).shards(vec![4]).to_json().unwrap();
/// let layout = Layout::from_json(json.as_bytes()).unwrap();
/// let bytes = index::encode(&layout, &[(0, 10), index::EMPTY]).unwrap();
/// assert_eq!(bytes.len(), 2 * 16 + 4); // two pairs of u64 and a crc32c
/// assert_eq!(index::decode(&layout, &bytes).unwrap(), vec![(0, 10), index::EMPTY]);
/// ```
///
/// # Errors
/// [`FormatError::SlotCount`] for a number of entries other than the slots in a shard.
///
/// # Panics
/// Panics if the layout is not sharded.
pub fn encode(layout: &Layout, entries: &[(u64, u64)]) -> Result<Vec<u8>, FormatError> {
    if entries.len() != layout.slots_per_shard() {
        return Err(FormatError::SlotCount {
            expected: layout.slots_per_shard(),
            got: entries.len(),
        });
    }
    let mut raw = Vec::with_capacity(entries.len() * 16);
    for (offset, nbytes) in entries {
        raw.extend_from_slice(&offset.to_ne_bytes());
        raw.extend_from_slice(&nbytes.to_ne_bytes());
    }
    let encoded = spec(layout)
        .codecs
        .encode(
            ArrayBytes::new_flen(Cow::Owned(raw)),
            &index_shape(layout),
            &zarrs::array::data_type::uint64(),
            &FillValue::from(u64::MAX),
            &codec_options(),
        )
        .map_err(|e| FormatError::Codec(format!("shard index: {e}")))?;
    Ok(encoded.into_owned())
}

/// Decode (and check the checksum of) an encoded shard index.
///
/// # Errors
/// [`FormatError::Corrupt`] when the checksum fails or the bytes are not an index.
///
/// # Panics
/// Panics if the layout is not sharded.
pub fn decode(layout: &Layout, bytes: &[u8]) -> Result<Vec<(u64, u64)>, FormatError> {
    let spec = spec(layout);
    if bytes.len() as u64 != spec.encoded_size {
        return Err(FormatError::Corrupt(format!(
            "shard index is {} bytes, expected {}",
            bytes.len(),
            spec.encoded_size
        )));
    }
    let decoded = spec
        .codecs
        .decode(
            Cow::Borrowed(bytes),
            &index_shape(layout),
            &zarrs::array::data_type::uint64(),
            &FillValue::from(u64::MAX),
            &codec_options(),
        )
        .and_then(|b| Ok(b.into_fixed()?))
        .map_err(|e| FormatError::Corrupt(format!("shard index does not decode: {e}")))?;
    Ok(decoded
        .chunks_exact(16)
        .map(|pair| {
            let offset = u64::from_ne_bytes(pair[..8].try_into().expect("8 bytes"));
            let nbytes = u64::from_ne_bytes(pair[8..].try_into().expect("8 bytes"));
            (offset, nbytes)
        })
        .collect())
}
