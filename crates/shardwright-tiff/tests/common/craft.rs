//! Hand-made little-endian TIFF bytes (classic or BigTIFF) of one IFD, for files that
//! declare what no writer would: the test builds the tags it needs.

/// One IFD entry: its tag, TIFF type (2 ASCII, 3 SHORT, 4 LONG, 16 LONG8), the count it
/// declares and the value bytes written (fewer than the count says, for a lying entry).
pub struct Entry {
    pub tag: u16,
    pub kind: u16,
    pub count: u64,
    pub bytes: Vec<u8>,
}

pub fn short(tag: u16, values: &[u16]) -> Entry {
    Entry {
        tag,
        kind: 3,
        count: values.len() as u64,
        bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
    }
}

pub fn long(tag: u16, values: &[u32]) -> Entry {
    Entry {
        tag,
        kind: 4,
        count: values.len() as u64,
        bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
    }
}

/// An ASCII entry declaring `count` bytes, of which `text` is written.
pub fn ascii(tag: u16, count: u64, text: &[u8]) -> Entry {
    Entry {
        tag,
        kind: 2,
        count,
        bytes: text.to_vec(),
    }
}

fn type_size(kind: u16) -> u64 {
    match kind {
        2 => 1,
        3 => 2,
        4 => 4,
        _ => 8,
    }
}

/// Where pixel data given to [`tiff`] starts: right after the header.
pub fn data_offset(big: bool) -> u32 {
    if big {
        16
    } else {
        8
    }
}

/// A TIFF (BigTIFF when `big`) whose pixel data `data` follows the header and whose one
/// IFD holds `entries` (sorted here by tag), values too long to fit inline after it.
pub fn tiff(big: bool, mut entries: Vec<Entry>, data: &[u8]) -> Vec<u8> {
    entries.sort_by_key(|e| e.tag);
    let inline = if big { 8 } else { 4 };
    let (entry_size, count_size) = if big { (20, 8) } else { (12, 2) };
    let ifd = (data_offset(big) as usize + data.len()).next_multiple_of(2);
    let mut values_at = ifd + count_size + entries.len() * entry_size + inline;
    let mut out = Vec::new();
    if big {
        out.extend(b"II\x2b\0\x08\0\0\0");
        out.extend((ifd as u64).to_le_bytes());
    } else {
        out.extend(b"II\x2a\0");
        out.extend((ifd as u32).to_le_bytes());
    }
    out.extend(data);
    out.resize(ifd, 0);
    if big {
        out.extend((entries.len() as u64).to_le_bytes());
    } else {
        out.extend((entries.len() as u16).to_le_bytes());
    }
    let mut values = Vec::new();
    for e in &entries {
        out.extend(e.tag.to_le_bytes());
        out.extend(e.kind.to_le_bytes());
        if big {
            out.extend(e.count.to_le_bytes());
        } else {
            out.extend((e.count as u32).to_le_bytes());
        }
        let declared = e.count.saturating_mul(type_size(e.kind));
        if declared <= inline as u64 && e.bytes.len() <= inline {
            let mut field = e.bytes.clone();
            field.resize(inline, 0);
            out.extend(field);
        } else {
            if big {
                out.extend((values_at as u64).to_le_bytes());
            } else {
                out.extend((values_at as u32).to_le_bytes());
            }
            let mut bytes = e.bytes.clone();
            bytes.resize(bytes.len().next_multiple_of(2), 0);
            values_at += bytes.len();
            values.extend(bytes);
        }
    }
    out.extend(vec![0; inline]);
    out.extend(values);
    out
}
