//! Encoding and decoding one inner chunk with the layout's codec chain.

use std::borrow::Cow;

use zarrs::array::{ArrayBytes, ArrayToBytesCodecTraits};

use super::{codec_options, zstd_context, FormatError};
use crate::domain::copy::all_equal;
use crate::layout::{BytesCodec, Layout};

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
/// Memory is bounded by the chunk's decoded size whatever the bytes claim: each compressor
/// in the chain decodes into at most what its stage can hold (one raw chunk for the last
/// one), and a frame whose header claims more fails before anything that size is
/// allocated.
///
/// ```
/// use shardwright::format::{chunk, FormatError};
/// use shardwright::layout::{ArraySpec, Layout};
/// let json = ArraySpec::new(vec![4], "uint16", vec![2]).to_json().unwrap();
/// let layout = Layout::from_json(json.as_bytes()).unwrap();
/// // a zstd frame claiming 1 TB of content, for a 4-byte chunk
/// let frame = [0x28, 0xb5, 0x2f, 0xfd, 0xc0, 0, 0, 0, 0, 0, 0, 1, 0, 0];
/// let err = chunk::decode(&layout, &frame).unwrap_err();
/// assert!(matches!(err, FormatError::Corrupt(_)), "{err}");
/// ```
///
/// # Errors
/// [`FormatError::Corrupt`] if the bytes do not decode to one inner chunk.
pub fn decode(layout: &Layout, encoded: &[u8]) -> Result<Vec<u8>, FormatError> {
    let expected = layout.raw_chunk_bytes();
    let raw = if layout.plain_zstd().is_some() {
        zstd_context::decompress(encoded, expected)?
    } else {
        let bytes = decode_bytes_stages(layout, encoded)?;
        let decoded = layout
            .array_codecs()
            .decode(
                bytes,
                layout.chunk_shape_nz(),
                layout.data_type(),
                layout.fill_value(),
                &codec_options(),
            )
            .map_err(|e| corrupt(&e))?;
        decoded.into_fixed().map_err(|e| corrupt(&e))?.into_owned()
    };
    if raw.len() != expected {
        return Err(FormatError::Corrupt(format!(
            "inner chunk decodes to {} bytes, expected {expected}",
            raw.len(),
        )));
    }
    Ok(raw)
}

fn corrupt(e: &dyn std::fmt::Display) -> FormatError {
    FormatError::Corrupt(format!("inner chunk does not decode: {e}"))
}

/// Undo the chain's bytes-to-bytes codecs (last first), each within its stage's bound.
fn decode_bytes_stages<'a>(
    layout: &Layout,
    encoded: &'a [u8],
) -> Result<Cow<'a, [u8]>, FormatError> {
    let codecs = layout.inner_codecs().bytes_to_bytes_codecs();
    let mut bytes = Cow::Borrowed(encoded);
    for (stage, codec) in layout.decode_stages().iter().zip(codecs).rev() {
        bytes = match stage.codec {
            BytesCodec::Zstd => Cow::Owned(zstd_context::decompress(&bytes, stage.bound)?),
            other => {
                check_claim(other, &bytes, stage.bound)?;
                let out = codec
                    .decode(bytes, &stage.decoded, &codec_options())
                    .map_err(|e| corrupt(&e))?;
                if out.len() > stage.bound {
                    return Err(FormatError::Corrupt(format!(
                        "inner chunk's {other:?} stage decodes to {} bytes, at most {} expected",
                        out.len(),
                        stage.bound
                    )));
                }
                out
            }
        };
    }
    Ok(bytes)
}

/// Refuse a blosc or gzip frame whose header or trailer claims more than `bound` decoded
/// bytes, before its decoder allocates that much.
fn check_claim(codec: BytesCodec, frame: &[u8], bound: usize) -> Result<(), FormatError> {
    let claimed = match codec {
        // blosc 1 header: version, versionlz, flags, typesize, then nbytes (u32 LE).
        BytesCodec::Blosc => frame.get(4..8),
        // gzip trailer: CRC32 then ISIZE, the decoded size modulo 2^32 (u32 LE).
        BytesCodec::Gzip if bound < 1 << 32 => {
            frame.len().checked_sub(4).and_then(|at| frame.get(at..))
        }
        _ => return Ok(()),
    };
    let Some(claimed) = claimed.and_then(|b| <[u8; 4]>::try_from(b).ok()) else {
        return Err(FormatError::Corrupt(format!(
            "inner chunk of {} bytes is too short for a {codec:?} frame",
            frame.len()
        )));
    };
    let claimed = u32::from_le_bytes(claimed);
    if u64::from(claimed) > bound as u64 {
        return Err(FormatError::Corrupt(format!(
            "inner chunk's {codec:?} frame claims {claimed} decoded bytes, at most {bound} expected"
        )));
    }
    Ok(())
}
