//! Encoding and decoding one inner chunk with the layout's codec chain.

use std::borrow::Cow;

use zarrs::array::{ArrayBytes, ArrayToBytesCodecTraits};

use super::{codec_options, zstd_context, FormatError};
use crate::domain::copy::all_equal;
use crate::layout::Layout;

/// Encode one raw inner chunk (C order, native endian, the full inner chunk shape).
/// Returns `None` when every element equals the fill value: such chunks are not stored.
///
/// ```
/// use shardwright::format::chunk;
/// use shardwright::layout::{ArraySpec, Layout};
/// let json = ArraySpec::new(vec![4], "uint16", vec![2]).to_json().unwrap();
/// let layout = Layout::from_json(json.as_bytes()).unwrap();
/// assert!(chunk::encode(&layout, vec![0; 4]).unwrap().is_none());
/// assert!(chunk::encode(&layout, vec![1, 0, 0, 0]).unwrap().is_some());
/// ```
///
/// # Errors
/// [`FormatError::RawLength`] for data of the wrong length, [`FormatError::Codec`] if a
/// codec fails.
pub fn encode(layout: &Layout, raw: Vec<u8>) -> Result<Option<Vec<u8>>, FormatError> {
    encode_cow(layout, Cow::Owned(raw))
}

/// As [`encode`], borrowing the raw chunk (so its buffer can be reused).
///
/// ```
/// use shardwright::format::chunk;
/// use shardwright::layout::{ArraySpec, Layout};
/// let json = ArraySpec::new(vec![4], "uint16", vec![2]).to_json().unwrap();
/// let layout = Layout::from_json(json.as_bytes()).unwrap();
/// let raw = vec![1, 0, 2, 0];
/// let encoded = chunk::encode_slice(&layout, &raw).unwrap().unwrap();
/// assert_eq!(chunk::decode(&layout, &encoded).unwrap(), raw);
/// ```
///
/// # Errors
/// As [`encode`].
pub fn encode_slice(layout: &Layout, raw: &[u8]) -> Result<Option<Vec<u8>>, FormatError> {
    encode_cow(layout, Cow::Borrowed(raw))
}

/// The chunk holding only the fill value, encoded (where a value must be stored because
/// it cannot be deleted, e.g. an unsharded chunk on an object store, which has no
/// conditional delete).
///
/// ```
/// use shardwright::format::chunk;
/// use shardwright::layout::{ArraySpec, Layout};
/// let json = ArraySpec::new(vec![4], "uint16", vec![2]).to_json().unwrap();
/// let layout = Layout::from_json(json.as_bytes()).unwrap();
/// let encoded = chunk::encode_fill(&layout).unwrap();
/// assert_eq!(chunk::decode(&layout, &encoded).unwrap(), vec![0; 4]);
/// ```
///
/// # Errors
/// [`FormatError::Codec`] if a codec fails.
pub fn encode_fill(layout: &Layout) -> Result<Vec<u8>, FormatError> {
    let raw = layout
        .fill_chunk()
        .map_err(|e| FormatError::Codec(e.to_string()))?;
    encode_raw(layout, Cow::Owned(raw))
}

fn encode_cow(layout: &Layout, raw: Cow<'_, [u8]>) -> Result<Option<Vec<u8>>, FormatError> {
    let expected = layout.raw_chunk_bytes();
    if raw.len() != expected {
        return Err(FormatError::RawLength {
            expected,
            got: raw.len(),
        });
    }
    if all_equal(&raw, layout.fill_value_bytes()) {
        return Ok(None);
    }
    encode_raw(layout, raw).map(Some)
}

fn encode_raw(layout: &Layout, raw: Cow<'_, [u8]>) -> Result<Vec<u8>, FormatError> {
    if let Some(settings) = layout.plain_zstd() {
        return zstd_context::compress(settings, &raw);
    }
    let encoded = layout
        .inner_codecs()
        .encode(
            ArrayBytes::new_flen(raw),
            layout.chunk_shape_nz(),
            layout.data_type(),
            layout.fill_value(),
            &codec_options(),
        )
        .map_err(|e| FormatError::Codec(e.to_string()))?;
    let mut encoded = encoded.into_owned();
    // Codecs allocate for the worst case; a shard keeps hundreds of these.
    encoded.shrink_to_fit();
    Ok(encoded)
}

/// Decode one stored inner chunk into raw bytes (C order, native endian, full chunk shape).
///
/// # Errors
/// [`FormatError::Corrupt`] if the bytes do not decode to one inner chunk.
pub fn decode(layout: &Layout, encoded: &[u8]) -> Result<Vec<u8>, FormatError> {
    let decoded = layout
        .inner_codecs()
        .decode(
            Cow::Borrowed(encoded),
            layout.chunk_shape_nz(),
            layout.data_type(),
            layout.fill_value(),
            &codec_options(),
        )
        .map_err(|e| FormatError::Corrupt(format!("inner chunk does not decode: {e}")))?;
    let raw = decoded
        .into_fixed()
        .map_err(|e| FormatError::Corrupt(format!("inner chunk does not decode: {e}")))?;
    if raw.len() != layout.raw_chunk_bytes() {
        return Err(FormatError::Corrupt(format!(
            "inner chunk decodes to {} bytes, expected {}",
            raw.len(),
            layout.raw_chunk_bytes()
        )));
    }
    Ok(raw.into_owned())
}
