//! Examining one stored shard: its index (length, checksum, every entry's byte range) and,
//! unless the check is quick, every inner chunk it points to (decoded, its size checked).

use std::ops::Range;

use rayon::prelude::*;

use super::Problem;
use crate::format::{chunk, index, FormatError};
use crate::layout::{IndexLocation, Layout};

/// Inner codecs that notice damaged bytes (a compressed frame that does not decode, a
/// checksum): chunks read from an index that failed its checksum are kept only with these.
const VERIFYING_CODECS: &[&str] = &["zstd", "gzip", "blosc", "crc32c"];

/// What the layout says about shards, as the check needs it.
pub(super) struct Geometry<'a> {
    pub(super) layout: &'a Layout,
    pub(super) index_size: u64,
    pub(super) location: IndexLocation,
    /// The index codecs end with a `crc32c` checksum.
    index_checksum: bool,
    /// The index's `bytes` codec is big-endian.
    index_big_endian: bool,
    /// The inner chain would notice damaged bytes (see [`VERIFYING_CODECS`]).
    chunks_verify: bool,
}

fn codec_names(list: Option<&serde_json::Value>) -> Vec<String> {
    list.and_then(serde_json::Value::as_array)
        .map(|codecs| {
            codecs
                .iter()
                .filter_map(|c| c.get("name").and_then(serde_json::Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

impl<'a> Geometry<'a> {
    /// The geometry of a sharded `layout` (`None` for an unsharded one).
    pub(super) fn of(layout: &'a Layout) -> Option<Self> {
        let spec = layout.index()?;
        let codecs = serde_json::to_value(&layout.metadata().codecs).unwrap_or_default();
        let config = codecs.get(0).and_then(|c| c.get("configuration"));
        let index_codecs = config.and_then(|c| c.get("index_codecs"));
        let index_big_endian = index_codecs
            .and_then(serde_json::Value::as_array)
            .into_iter()
            .flatten()
            .filter(|c| c.get("name").and_then(serde_json::Value::as_str) == Some("bytes"))
            .any(|c| {
                c.pointer("/configuration/endian")
                    .and_then(serde_json::Value::as_str)
                    == Some("big")
            });
        let inner = codec_names(config.and_then(|c| c.get("codecs")));
        Some(Self {
            layout,
            index_size: spec.encoded_size(),
            location: spec.location(),
            index_checksum: codec_names(index_codecs).iter().any(|n| n == "crc32c"),
            index_big_endian,
            chunks_verify: inner.iter().any(|n| VERIFYING_CODECS.contains(&n.as_str())),
        })
    }

    /// Where the index lies in a shard of `len` bytes (at least the index's size).
    pub(super) fn index_range(&self, len: u64) -> Range<u64> {
        match self.location {
            IndexLocation::Start => 0..self.index_size,
            IndexLocation::End => len.saturating_sub(self.index_size)..len,
        }
    }

    /// The global chunk grid coordinates of `slot` of the shard at `shard`.
    pub(super) fn chunk_of(&self, shard: &[u64], slot: usize) -> Vec<u64> {
        chunk_coordinates(
            self.layout.chunks_per_shard(),
            &self.layout.shard_first_chunk(shard),
            slot,
        )
    }

    /// The entries of an index that failed its checksum, read as they are: the pairs the
    /// `bytes` codec laid out before the checksum.
    fn unverified_entries(&self, bytes: &[u8]) -> Option<Vec<(u64, u64)>> {
        let slots = self.layout.slots_per_shard();
        let pairs = bytes.get(..slots.checked_mul(16)?)?;
        let word = |b: &[u8]| -> Option<u64> {
            let b: [u8; 8] = b.try_into().ok()?;
            Some(if self.index_big_endian {
                u64::from_be_bytes(b)
            } else {
                u64::from_le_bytes(b)
            })
        };
        pairs
            .chunks_exact(16)
            .map(|pair| {
                let (offset, nbytes) = pair.split_at(8);
                Some((word(offset)?, word(nbytes)?))
            })
            .collect()
    }
}

/// The global chunk coordinates of `slot` (C order) of the shard whose first inner chunk
/// is at `first`.
pub(super) fn chunk_coordinates(chunks_per_shard: &[u64], first: &[u64], slot: usize) -> Vec<u64> {
    let mut rest = slot as u64;
    let mut local: Vec<u64> = chunks_per_shard
        .iter()
        .rev()
        .map(|n| {
            let l = rest % n.max(&1);
            rest /= n.max(&1);
            l
        })
        .collect();
    local.reverse();
    first.iter().zip(local).map(|(f, l)| f + l).collect()
}

/// What a stored shard's index says, and what is wrong with it.
#[derive(Debug)]
pub(super) struct Findings {
    pub(super) problems: Vec<Problem>,
    /// Each slot's chunk byte range, where it is usable (inside the shard's data, and, once
    /// decoded, a chunk that decodes); `None` for an empty slot or an unusable chunk.
    pub(super) ranges: Vec<Option<Range<u64>>>,
    /// Slots whose entry says a chunk is stored (usable or not).
    pub(super) stored: Vec<bool>,
    /// No entry of the index could be read (the shard is shorter than its index, or the
    /// index fails its checksum and its chunks cannot be told apart from damage).
    pub(super) unreadable: bool,
    /// The entries come from an index that failed its checksum.
    pub(super) unverified: bool,
    /// Inner chunks decoded.
    pub(super) decoded: u64,
}

impl Findings {
    fn unreadable(problems: Vec<Problem>, slots: usize) -> Self {
        Self {
            problems,
            ranges: vec![None; slots],
            stored: vec![false; slots],
            unreadable: true,
            unverified: false,
            decoded: 0,
        }
    }

    /// Inner chunks the index says are stored.
    pub(super) fn chunks_stored(&self) -> u64 {
        self.stored.iter().filter(|s| **s).count() as u64
    }
}

fn shard_problem(message: String) -> Problem {
    Problem {
        chunk: None,
        message,
    }
}

/// Read the index `index_bytes` of the shard at grid index `shard`, `len` bytes long
/// (`index_bytes` is ignored when `len` is shorter than an index).
pub(super) fn read_index(
    g: &Geometry<'_>,
    shard: &[u64],
    index_bytes: &[u8],
    len: u64,
) -> Findings {
    let slots = g.layout.slots_per_shard();
    let size = g.index_size;
    if len < size {
        let what = if len == 0 {
            "empty (0 bytes)".to_string()
        } else {
            format!("{len} bytes")
        };
        return Findings::unreadable(
            vec![shard_problem(format!(
                "the shard is {what}, shorter than its {size}-byte index: the index is lost"
            ))],
            slots,
        );
    }
    let mut problems = Vec::new();
    let (entries, unverified) = match index::decode(g.layout, index_bytes) {
        Ok(entries) => (entries, false),
        Err(err) => {
            problems.push(shard_problem(index_error(g, &err)));
            match g.unverified_entries(index_bytes) {
                Some(entries) if g.chunks_verify => (entries, true),
                _ => {
                    problems.push(shard_problem(
                        "its chunks cannot be told apart from damage without the index (the \
                         inner codecs have no compressor or checksum to verify them)"
                            .to_string(),
                    ));
                    return Findings::unreadable(problems, slots);
                }
            }
        }
    };
    let index_at = g.index_range(len);
    let mut findings = Findings {
        problems,
        ranges: Vec::with_capacity(slots),
        stored: Vec::with_capacity(slots),
        unreadable: false,
        unverified,
        decoded: 0,
    };
    for (slot, (offset, nbytes)) in entries.into_iter().enumerate() {
        let stored = (offset, nbytes) != index::EMPTY;
        findings.stored.push(stored);
        let range = stored
            .then(|| entry_range(offset, nbytes, len, &index_at))
            .transpose();
        match range {
            Ok(range) => findings.ranges.push(range),
            Err(why) => {
                findings.ranges.push(None);
                if !unverified {
                    findings.problems.push(Problem {
                        chunk: Some(g.chunk_of(shard, slot)),
                        message: why,
                    });
                }
            }
        }
    }
    if unverified {
        drop_overlapping(&mut findings.ranges);
    }
    findings
}

/// The message for an index that does not decode.
fn index_error(g: &Geometry<'_>, err: &FormatError) -> String {
    let text = match err {
        FormatError::Corrupt(why) | FormatError::Codec(why) => why.clone(),
        other => other.to_string(),
    };
    if g.index_checksum && text.contains("checksum") {
        "index checksum mismatch (crc32c)".to_string()
    } else {
        text
    }
}

/// The byte range of an index entry, if it lies in the shard's data.
fn entry_range(
    offset: u64,
    nbytes: u64,
    len: u64,
    index_at: &Range<u64>,
) -> Result<Range<u64>, String> {
    if offset == u64::MAX || nbytes == u64::MAX {
        return Err(format!(
            "index entry ({offset}, {nbytes}) is neither a byte range nor the empty-slot \
             marker (both 2^64-1)"
        ));
    }
    let Some(end) = offset.checked_add(nbytes) else {
        return Err(format!(
            "byte range at {offset}, {nbytes} bytes long, passes 2^64: past the end of the \
             {len}-byte shard"
        ));
    };
    if end > len {
        return Err(format!(
            "byte range {offset}..{end} past the end of the {len}-byte shard"
        ));
    }
    if nbytes > 0 && offset < index_at.end && end > index_at.start {
        return Err(format!(
            "byte range {offset}..{end} overlaps the index (bytes {}..{})",
            index_at.start, index_at.end
        ));
    }
    Ok(offset..end)
}

/// Drop every range that overlaps another (entries of an index that failed its checksum:
/// of two entries sharing bytes, one was damaged, and which one cannot be told).
pub(super) fn drop_overlapping(ranges: &mut [Option<Range<u64>>]) {
    let mut order: Vec<(u64, u64, usize)> = ranges
        .iter()
        .enumerate()
        .filter_map(|(slot, r)| r.as_ref().map(|r| (r.start, r.end, slot)))
        .collect();
    order.sort_unstable();
    let mut overlapping = Vec::new();
    let mut reach: Option<(u64, usize)> = None; // the largest end so far, and its slot
    for (start, end, slot) in order {
        if let Some((far, far_slot)) = reach {
            if start < far {
                overlapping.push(slot);
                overlapping.push(far_slot);
            }
        }
        if reach.is_none_or(|(far, _)| end > far) {
            reach = Some((end, slot));
        }
    }
    for slot in overlapping {
        if let Some(r) = ranges.get_mut(slot) {
            *r = None;
        }
    }
}

/// Decode every usable chunk of the stored shard `bytes` (in parallel), marking those that
/// fail unusable with a problem naming their coordinates.
pub(super) fn decode_chunks(
    g: &Geometry<'_>,
    shard: &[u64],
    bytes: &[u8],
    findings: &mut Findings,
) {
    let failures: Vec<(usize, String)> = findings
        .ranges
        .par_iter()
        .enumerate()
        .filter_map(|(slot, range)| {
            let range = range.as_ref()?;
            let encoded = usize::try_from(range.start)
                .ok()
                .zip(usize::try_from(range.end).ok())
                .and_then(|(a, b)| bytes.get(a..b));
            let Some(encoded) = encoded else {
                return Some((
                    slot,
                    format!("byte range {}..{} was not read", range.start, range.end),
                ));
            };
            chunk_error(g.layout, encoded).map(|why| (slot, why))
        })
        .collect();
    findings.decoded = findings.ranges.iter().flatten().count() as u64;
    let unverified = findings.unverified;
    for (slot, why) in failures {
        if let Some(r) = findings.ranges.get_mut(slot) {
            *r = None;
        }
        if !unverified {
            findings.problems.push(Problem {
                chunk: Some(g.chunk_of(shard, slot)),
                message: why,
            });
        }
    }
    if unverified {
        let kept = findings.ranges.iter().flatten().count();
        findings.problems.push(shard_problem(format!(
            "read without its checksum, the index lists {} chunk(s), of which {kept} decode",
            findings.chunks_stored()
        )));
    }
    findings.problems.sort_by(|a, b| a.chunk.cmp(&b.chunk));
}

/// What is wrong with the encoded chunk `encoded`, if anything.
pub(super) fn chunk_error(layout: &Layout, encoded: &[u8]) -> Option<String> {
    match chunk::decode(layout, encoded) {
        Ok(_) => None,
        Err(FormatError::Corrupt(why) | FormatError::Codec(why)) => {
            // "chunk 0,2: zstd frame header is invalid", not "chunk 0,2: inner chunk: …"
            let rest = why
                .strip_prefix("inner chunk: ")
                .or_else(|| why.strip_prefix("inner chunk "))
                .filter(|r| !r.starts_with("of ") && !r.starts_with("'s "));
            Some(rest.map_or_else(|| why.clone(), str::to_string))
        }
        Err(other) => Some(other.to_string()),
    }
}
