//! The properties the fuzz targets check, one function per target. Each takes the raw fuzz
//! input, builds what it needs through shardwright's public API and returns `Err` naming the
//! broken property when the library misbehaves (a panic is caught by the caller's harness:
//! libFuzzer in `fuzz/`, or the replay in `crates/shardwright/tests/fuzz_regressions.rs`,
//! which includes this file). A typed error from the library is a correct outcome.
//!
//! Inputs are read with [`Input`]: the first bytes pick the geometry and codecs, the rest is
//! the bytes under test, so corpus files stay meaningful as the targets evolve.

use std::rc::Rc;
use std::sync::Arc;

use shardwright::domain::{AxisCells, Domain, Grid};
use shardwright::format::{chunk, index, shard};
use shardwright::layout::{IndexLocation, Layout};
use shardwright::store::{MemoryStore, Store};
use shardwright::Array;

/// The outcome of one check: `Err` names a broken property.
pub type Check = Result<(), String>;

/// A cursor over the fuzz input: numbers come from the front, `rest` is what remains.
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    /// A cursor at the start of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    /// The next byte (0 once the input is used up).
    pub fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    /// The next 8 bytes as a little-endian `u64` (zero-padded at the end of the input).
    pub fn u64(&mut self) -> u64 {
        let mut raw = [0u8; 8];
        for b in &mut raw {
            *b = self.byte();
        }
        u64::from_le_bytes(raw)
    }

    /// A number biased to the values that break arithmetic: small ones, powers of two and
    /// their neighbours, and values near `u64::MAX`.
    pub fn extent(&mut self) -> u64 {
        let mode = self.byte();
        let v = self.byte();
        match mode % 6 {
            0 => u64::from(v % 8),
            1 => u64::from(v),
            2 => 1u64 << (v % 64),
            3 => u64::MAX - u64::from(v % 4),
            4 => (1u64 << (v % 64))
                .wrapping_add(u64::from(mode >> 4))
                .wrapping_sub(8),
            _ => self.u64(),
        }
    }

    /// Everything not read yet.
    pub fn rest(self) -> &'a [u8] {
        self.data
    }
}

fn fail(what: String) -> Check {
    Err(what)
}

/// The inner codec chains the targets use: (name, `codecs` JSON, data type).
pub const CHAINS: [(&str, &str, &str); 8] = [
    (
        "zstd",
        r#"[{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 1, "checksum": false}}]"#,
        "uint16",
    ),
    (
        "zstd+crc32c",
        r#"[{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 1, "checksum": true}}, {"name": "crc32c"}]"#,
        "uint16",
    ),
    (
        "blosc-lz4",
        r#"[{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2, "blocksize": 0}}]"#,
        "uint16",
    ),
    (
        "blosc-zstd",
        r#"[{"name": "bytes"}, {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 3, "shuffle": "noshuffle", "typesize": 1, "blocksize": 0}}]"#,
        "uint8",
    ),
    (
        "gzip",
        r#"[{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "gzip", "configuration": {"level": 1}}]"#,
        "uint16",
    ),
    (
        "transpose+zstd-big",
        r#"[{"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes", "configuration": {"endian": "big"}}, {"name": "zstd", "configuration": {"level": 1, "checksum": false}}]"#,
        "float32",
    ),
    (
        "bytes",
        r#"[{"name": "bytes", "configuration": {"endian": "little"}}]"#,
        "uint16",
    ),
    (
        "zstd+gzip",
        r#"[{"name": "bytes"}, {"name": "zstd", "configuration": {"level": 1, "checksum": false}}, {"name": "gzip", "configuration": {"level": 1}}]"#,
        "uint8",
    ),
];

/// The `zarr.json` of a 2-d sharded array: `chunks_per_shard` inner chunks of
/// `chunk_shape` per shard, a 2×1 grid of shards (the second one clipped), the inner chain
/// `CHAINS[chain]`, the index with or without crc32c, at the start or the end.
pub fn sharded_json(
    chunks_per_shard: [u64; 2],
    chunk_shape: [u64; 2],
    chain: usize,
    crc: bool,
    end: bool,
) -> String {
    let (_, codecs, data_type) = CHAINS[chain % CHAINS.len()];
    let shard = [
        chunks_per_shard[0] * chunk_shape[0],
        chunks_per_shard[1] * chunk_shape[1],
    ];
    let shape = [shard[0] * 2 - 1, shard[1]];
    let index_codecs = if crc {
        r#"[{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]"#
    } else {
        r#"[{"name": "bytes", "configuration": {"endian": "little"}}]"#
    };
    let location = if end { "end" } else { "start" };
    format!(
        r#"{{"zarr_format": 3, "node_type": "array", "shape": [{}, {}], "data_type": "{data_type}",
        "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [{}, {}]}}}},
        "chunk_key_encoding": {{"name": "default"}}, "fill_value": 0,
        "codecs": [{{"name": "sharding_indexed", "configuration": {{
            "chunk_shape": [{}, {}], "codecs": {codecs}, "index_codecs": {index_codecs},
            "index_location": "{location}"}}}}]}}"#,
        shape[0], shape[1], shard[0], shard[1], chunk_shape[0], chunk_shape[1]
    )
}

thread_local! {
    /// Layouts by their two header bytes: parsing one costs more than most checks.
    static LAYOUTS: std::cell::RefCell<std::collections::HashMap<(u8, u8), Rc<Layout>>> =
        std::cell::RefCell::default();
}

/// A layout picked by the next two bytes of `input`: up to 8×8 inner chunks per shard of
/// up to 8×8 elements, any chain of [`CHAINS`], the index with or without crc32c, at the
/// start or the end.
fn pick_layout(input: &mut Input<'_>) -> Result<Rc<Layout>, String> {
    let geometry = input.byte();
    let codecs = input.byte();
    if let Some(layout) = LAYOUTS.with(|l| l.borrow().get(&(geometry, codecs)).cloned()) {
        return Ok(layout);
    }
    let layout = Rc::new(make_layout(geometry, codecs)?);
    LAYOUTS.with(|l| {
        l.borrow_mut()
            .insert((geometry, codecs), Rc::clone(&layout))
    });
    Ok(layout)
}

fn make_layout(geometry: u8, codecs: u8) -> Result<Layout, String> {
    let per_shard = [
        u64::from(geometry & 7) + 1,
        u64::from((geometry >> 3) & 3) + 1,
    ];
    let chunk_shape = [
        u64::from((codecs >> 5) & 7) + 1,
        u64::from(geometry >> 5) + 1,
    ];
    let json = sharded_json(
        per_shard,
        chunk_shape,
        usize::from(codecs & 7),
        codecs & 8 == 0,
        codecs & 16 != 0,
    );
    Layout::from_json(json.as_bytes()).map_err(|e| format!("a valid test layout fails: {e}"))
}

/// The index's slots as raw `(offset, nbytes)` pairs taken from `bytes` (missing ones
/// empty).
fn entries_from(bytes: &[u8], slots: usize) -> Vec<(u64, u64)> {
    let mut input = Input::new(bytes);
    (0..slots)
        .map(|_| match input.byte() % 4 {
            0 => index::EMPTY,
            1 => (input.u64() % 4096, input.u64() % 4096),
            2 => (u64::from(input.byte()), u64::from(input.byte())),
            _ => (input.u64(), input.u64()),
        })
        .collect()
}

fn check_ranges(ranges: &[Option<std::ops::Range<u64>>], layout: &Layout, shard_len: u64) -> Check {
    let Some(spec) = layout.index() else {
        return fail("a sharded layout has no index".into());
    };
    if ranges.len() != layout.slots_per_shard() {
        return fail(format!(
            "{} ranges for {} slots",
            ranges.len(),
            layout.slots_per_shard()
        ));
    }
    let size = spec.encoded_size();
    let data = match spec.location() {
        IndexLocation::Start => size..shard_len,
        IndexLocation::End => 0..shard_len.saturating_sub(size),
    };
    for range in ranges.iter().flatten() {
        if range.start > range.end || range.start < data.start || range.end > data.end {
            return fail(format!("range {range:?} outside the shard's data {data:?}"));
        }
    }
    Ok(())
}

/// Target `index`: decoding a shard index of any bytes (or of encoded arbitrary entries),
/// for any slot count, with or without crc32c, at the start or the end; every range it
/// yields lies inside the shard.
pub fn index(data: &[u8]) -> Check {
    let mut input = Input::new(data);
    let layout = pick_layout(&mut input)?;
    let mode = input.byte();
    let shard_len = match mode % 3 {
        0 => u64::from(input.byte()) * 16,
        1 => input.extent(),
        _ => input.u64() % (1 << 20),
    };
    let rest = input.rest();
    let encoded;
    let index_bytes = if mode & 0x80 == 0 {
        rest
    } else {
        let entries = entries_from(rest, layout.slots_per_shard());
        encoded = index::encode(&layout, &entries).map_err(|e| format!("encode fails: {e}"))?;
        match index::decode(&layout, &encoded) {
            Ok(decoded) if decoded == entries => {}
            other => return fail(format!("encoded entries do not decode back: {other:?}")),
        }
        &encoded[..]
    };
    if let Ok(entries) = index::decode(&layout, index_bytes) {
        if entries.len() != layout.slots_per_shard() {
            return fail(format!("{} entries decoded", entries.len()));
        }
    }
    if let Ok(ranges) = shard::split_index(&layout, index_bytes, shard_len) {
        check_ranges(&ranges, &layout, shard_len)?;
    }
    Ok(())
}

fn check_decoded(layout: &Layout, encoded: &[u8]) -> Check {
    match chunk::decode(layout, encoded) {
        Ok(raw) if raw.len() != layout.raw_chunk_bytes() => fail(format!(
            "a chunk decodes to {} bytes, expected {}",
            raw.len(),
            layout.raw_chunk_bytes()
        )),
        _ => Ok(()),
    }
}

/// Target `shard`: a stored shard of any bytes (or assembled from arbitrary chunk bytes and
/// then damaged) is split into ranges inside it, each range decodes or fails with a typed
/// error, and reading the array or merging a write into the shard never panics.
pub fn shard(data: &[u8]) -> Check {
    let mut input = Input::new(data);
    let layout = pick_layout(&mut input)?;
    let mode = input.byte();
    let rest = input.rest();
    let stored = if mode & 1 == 0 {
        rest.to_vec()
    } else {
        // Chunks of arbitrary bytes, laid out by the library, then one byte damaged.
        let slots = layout.slots_per_shard();
        let mut pieces: Vec<Option<&[u8]>> = Vec::with_capacity(slots);
        let mut tail = rest;
        for _ in 0..slots {
            let Some((&len, after)) = tail.split_first() else {
                pieces.push(None);
                continue;
            };
            let take = usize::from(len).min(after.len());
            let (piece, after) = after.split_at(take);
            pieces.push((len != 0).then_some(piece));
            tail = after;
        }
        let mut bytes = shard::assemble(&layout, &pieces)
            .map_err(|e| format!("assemble fails: {e}"))?
            .to_vec();
        if let Some((&at, _)) = tail.split_first() {
            let len = bytes.len();
            if let Some(b) = bytes.get_mut(usize::from(at) * len / 256) {
                *b ^= mode | 1;
            }
        }
        bytes
    };
    if let Ok(ranges) = shard::split(&layout, &stored) {
        let as_u64: Vec<_> = ranges
            .iter()
            .map(|r| r.as_ref().map(|r| r.start as u64..r.end as u64))
            .collect();
        check_ranges(&as_u64, &layout, stored.len() as u64)?;
        for range in ranges.into_iter().flatten() {
            let Some(bytes) = stored.get(range.clone()) else {
                return fail(format!(
                    "range {range:?} outside a {}-byte shard",
                    stored.len()
                ));
            };
            check_decoded(&layout, bytes)?;
        }
    }
    if mode & 2 != 0 {
        // The whole path: open, read a region through the stored shard, merge a write.
        let store = Arc::new(MemoryStore::new());
        let json = serde_json::to_vec(layout.metadata()).map_err(|e| e.to_string())?;
        let put = |key: &str, bytes: &[u8]| {
            store
                .put(key, &[bytes])
                .map_err(|e| format!("memory put fails: {e}"))
        };
        put("a/zarr.json", &json)?;
        put(&format!("a/{}", layout.shard_key(&[0, 0])), &stored)?;
        let array = Array::open(store.clone(), "a").map_err(|e| format!("open fails: {e}"))?;
        let shard = array.shard(&[0, 0]).map_err(|e| e.to_string())?;
        if let Ok(raw) = array.read(&shard) {
            let expected = shard.size() as usize * layout.element_size();
            if raw.len() != expected {
                return fail(format!("read {} bytes, expected {expected}", raw.len()));
            }
        }
        if mode & 4 != 0 {
            let writer = array.shard_writer(&shard).map_err(|e| e.to_string())?;
            if let Some(first) = writer.inner_chunks().next() {
                let raw = vec![7u8; first.size() as usize * layout.element_size()];
                if writer.write_chunk(&first, &raw).is_ok() {
                    let _ = writer.commit();
                }
            }
        }
    }
    Ok(())
}

/// Target `chunk`: decoding a stored inner chunk of any bytes with any chain gives exactly
/// one raw chunk or a typed error, and never allocates more than a few raw chunks (the
/// fuzz run's `-malloc_limit_mb` catches a frame whose claimed size drives an allocation).
pub fn chunk(data: &[u8]) -> Check {
    let mut input = Input::new(data);
    let layout = pick_layout(&mut input)?;
    check_decoded(&layout, input.rest())
}

/// Target `layout`: any `zarr.json` gives a layout or a typed error; a layout's grids,
/// keys and index are usable without overflow or huge allocations.
pub fn layout(data: &[u8]) -> Check {
    let Ok(layout) = Layout::from_json(data) else {
        return Ok(());
    };
    let shards = layout.shard_grid();
    let chunks = layout.chunk_grid();
    let (n_shards, _) = (shards.len(), chunks.len());
    if layout.slots_per_shard() as u64 != layout.chunks_per_shard().iter().product::<u64>() {
        return fail("slots_per_shard is not the product of chunks_per_shard".into());
    }
    if n_shards > 0 {
        let last: Vec<u64> = shards.grid_shape().iter().map(|g| g - 1).collect();
        let cell = shards.cell(&last).map_err(|e| format!("last shard: {e}"))?;
        if !layout.bounds().contains(&cell) {
            return fail(format!("last shard {cell} outside {}", layout.bounds()));
        }
        let _ = layout.shard_key(&last);
        // a rectilinear grid's last shard has its own layout
        let own = layout
            .shard_layout(&last)
            .map_err(|e| format!("the last shard's layout: {e}"))?;
        if own.slots_per_shard() as u64 != own.chunks_per_shard().iter().product::<u64>() {
            return fail("the last shard's slots are not its chunks per shard".into());
        }
        if shards.linear_index(&last) != n_shards - 1 {
            return fail("the last shard's linear index is not len - 1".into());
        }
        let tail = Domain::try_new(cell.origin().to_vec(), vec![1; cell.ndim()])
            .map_err(|e| format!("a one-element box at the last shard: {e}"))?;
        if chunks.cells_meeting(&tail).take(4).count() != 1 {
            return fail("one element meets one inner chunk".into());
        }
    }
    if layout.raw_chunk_bytes() <= 1 << 16 {
        let raw = layout.fill_chunk().map_err(|e| e.to_string())?;
        if let Ok(encoded) = chunk::encode_fill(&layout) {
            match chunk::decode(&layout, &encoded) {
                Ok(back) if back == raw => {}
                other => return fail(format!("the fill chunk does not round-trip: {other:?}")),
            }
        }
    }
    if layout.is_sharded() && layout.slots_per_shard() <= 1 << 12 {
        let entries = vec![index::EMPTY; layout.slots_per_shard()];
        let bytes = index::encode(&layout, &entries).map_err(|e| e.to_string())?;
        match shard::split_index(&layout, &bytes, bytes.len() as u64) {
            Ok(ranges) if ranges.iter().all(Option::is_none) => {}
            other => return fail(format!("an empty index does not split empty: {other:?}")),
        }
    }
    Ok(())
}

/// Target `grid`: grid and box arithmetic on arbitrary shapes (near `u64::MAX` too) gives
/// consistent answers or errors, never an overflow.
pub fn grid(data: &[u8]) -> Check {
    let mut input = Input::new(data);
    let rank = usize::from(input.byte() % 4) + 1;
    let array: Vec<u64> = (0..rank).map(|_| input.extent()).collect();
    let cell: Vec<u64> = (0..rank).map(|_| input.extent()).collect();
    let origin: Vec<u64> = (0..rank).map(|_| input.extent()).collect();
    let shape: Vec<u64> = (0..rank).map(|_| input.extent()).collect();
    let offset: Vec<i64> = (0..rank).map(|_| input.extent() as i64).collect();
    // Some dimensions list their cells (a rectilinear grid): up to 4 extents each.
    let cells: Vec<AxisCells> = cell
        .iter()
        .map(|&c| match input.byte() % 3 {
            0 => AxisCells::Edges((0..=input.byte() % 4).map(|_| input.extent()).collect()),
            _ => AxisCells::Regular(c),
        })
        .collect();
    let Ok(grid) = Grid::rectilinear(array.clone(), cells) else {
        return Ok(());
    };
    let bounds = grid.bounds();
    let _ = (grid.len(), grid.is_empty());
    if let Ok(region) = Domain::try_new(origin, shape) {
        let _ = (region.size(), region.is_empty(), region.stop());
        let _ = region.translate(&offset);
        let _ = region.relative_to(&bounds);
        let _ = region.check_inside(&bounds);
        let meeting = grid.cells_meeting(&region);
        let (announced, _) = meeting.size_hint();
        let mut seen = 0usize;
        for cell in meeting.take(8) {
            seen += 1;
            if !bounds.contains(&cell) {
                return fail(format!("cell {cell} outside the array {bounds}"));
            }
            if cell.intersect(&region).is_none() {
                return fail(format!("cell {cell} does not meet {region}"));
            }
            let Some(index) = cell.index() else {
                return fail(format!("cell {cell} has no grid index"));
            };
            match grid.cell(index) {
                Ok(again) if again == cell => {}
                other => return fail(format!("cell {index:?} is not stable: {other:?}")),
            }
        }
        if seen > announced {
            return fail(format!("{seen} cells met, {announced} announced"));
        }
        if let Some(common) = region.intersect(&bounds) {
            if !region.contains(&common) || !bounds.contains(&common) {
                return fail(format!("{common} is not inside both boxes"));
            }
        }
    }
    let last: Vec<u64> = grid
        .grid_shape()
        .iter()
        .map(|g| g.saturating_sub(1))
        .collect();
    if !grid.is_empty() {
        let cell = grid
            .cell(&last)
            .map_err(|e| format!("the last cell: {e}"))?;
        if !bounds.contains(&cell) {
            return fail(format!("the last cell {cell} is outside {bounds}"));
        }
        let _ = grid.cell_unclipped(&last);
        let _ = grid.linear_index(&last);
        if grid.cell_index_at(cell.origin()) != last {
            return fail(format!("the last cell {cell} is not where its origin lies"));
        }
    }
    Ok(())
}
