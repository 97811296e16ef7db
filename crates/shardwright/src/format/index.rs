//! The shard index: one `(offset, nbytes)` pair per inner chunk slot, C order, encoded with
//! the index codecs (usually `bytes` little-endian + `crc32c`).

use std::borrow::Cow;

use zarrs::array::{ArrayBytes, ArrayToBytesCodecTraits, FillValue};

use super::{codec_options, FormatError};
use crate::layout::{IndexSpec, Layout};

/// The index entry of an empty slot (no chunk stored: read as the fill value).
pub const EMPTY: (u64, u64) = (u64::MAX, u64::MAX);

fn spec(layout: &Layout) -> Result<&IndexSpec, FormatError> {
    layout.index().ok_or(FormatError::NotSharded)
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
/// [`FormatError::SlotCount`] for a number of entries other than the slots in a shard,
/// [`FormatError::NotSharded`] for a layout without shards.
pub fn encode(layout: &Layout, entries: &[(u64, u64)]) -> Result<Vec<u8>, FormatError> {
    if entries.len() != layout.slots_per_shard() {
        return Err(FormatError::SlotCount {
            expected: layout.slots_per_shard(),
            got: entries.len(),
        });
    }
    let spec = spec(layout)?;
    let mut raw = Vec::with_capacity(entries.len() * 16);
    for (offset, nbytes) in entries {
        raw.extend_from_slice(&offset.to_ne_bytes());
        raw.extend_from_slice(&nbytes.to_ne_bytes());
    }
    let encoded = spec
        .codecs
        .encode(
            ArrayBytes::new_flen(Cow::Owned(raw)),
            &spec.shape,
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
/// [`FormatError::Corrupt`] when the checksum fails or the bytes are not an index,
/// [`FormatError::NotSharded`] for a layout without shards.
pub fn decode(layout: &Layout, bytes: &[u8]) -> Result<Vec<(u64, u64)>, FormatError> {
    let spec = spec(layout)?;
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
            &spec.shape,
            &zarrs::array::data_type::uint64(),
            &FillValue::from(u64::MAX),
            &codec_options(),
        )
        .and_then(|b| Ok(b.into_fixed()?))
        .map_err(|e| FormatError::Corrupt(format!("shard index does not decode: {e}")))?;
    let (words, rest) = decoded.as_chunks::<8>();
    let words: Vec<u64> = words.iter().map(|w| u64::from_ne_bytes(*w)).collect();
    let (pairs, odd) = words.as_chunks::<2>();
    if !rest.is_empty() || !odd.is_empty() || pairs.len() != layout.slots_per_shard() {
        return Err(FormatError::Corrupt(format!(
            "shard index decodes to {} bytes, expected {}",
            decoded.len(),
            layout.slots_per_shard() * 16
        )));
    }
    Ok(pairs
        .iter()
        .map(|&[offset, nbytes]| (offset, nbytes))
        .collect())
}
