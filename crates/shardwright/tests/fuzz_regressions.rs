//! What fuzzing found, kept as plain tests, and a replay of the committed fuzz corpus
//! through the same checks the fuzz targets run (`fuzz/src/checks.rs`), so `cargo test`
//! guards against regressions without cargo-fuzz.
//!
//! A counting global allocator records the largest single allocation made on the test's
//! thread, so a decode that allocates what a corrupt frame claims shows up even where the
//! system would overcommit.

#[path = "../../../fuzz/src/checks.rs"]
#[allow(dead_code)]
mod checks;

use std::alloc::{GlobalAlloc, Layout as AllocLayout, System};
use std::cell::Cell;
use std::path::Path;
use std::time::{Duration, Instant};

use shardwright::domain::{Domain, Grid};
use shardwright::format::{chunk, FormatError};
use shardwright::layout::Layout;

struct Counting;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
}

// SAFETY: every call is forwarded to the system allocator unchanged; the thread-local
// `Cell` written on the side does not allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: AllocLayout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's contract is passed on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: AllocLayout) -> *mut u8 {
        note(layout.size());
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: AllocLayout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: AllocLayout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// `f`'s result, the largest allocation it made on this thread, and how long it took.
fn measured<T>(f: impl FnOnce() -> T) -> (T, usize, Duration) {
    LARGEST.with(|l| l.set(0));
    let start = Instant::now();
    let out = f();
    (out, LARGEST.with(Cell::get), start.elapsed())
}

/// A layout of `CHAINS[chain]` with 4×4 inner chunks of 8×8 elements (128 B raw for
/// uint16).
fn layout(chain: usize) -> Layout {
    let json = checks::sharded_json([4, 4], [8, 8], chain, true, true);
    Layout::from_json(json.as_bytes()).unwrap()
}

fn chain(name: &str) -> usize {
    checks::CHAINS.iter().position(|c| c.0 == name).unwrap()
}

/// A zstd frame header claiming `content_size` decoded bytes, then a raw block of `body`.
fn zstd_frame_claiming(content_size: u64, body: &[u8]) -> Vec<u8> {
    let mut frame = vec![0x28, 0xb5, 0x2f, 0xfd];
    frame.push(0xc0); // 8-byte content size, a window descriptor follows
    frame.push(0x00); // window: 1 KiB
    frame.extend_from_slice(&content_size.to_le_bytes());
    let header = (body.len() as u32) << 3 | 1; // last block, raw
    frame.extend_from_slice(&header.to_le_bytes()[..3]);
    frame.extend_from_slice(body);
    frame
}

fn assert_corrupt_and_small(layout: &Layout, encoded: &[u8], what: &str) -> String {
    let (result, largest, took) = measured(|| chunk::decode(layout, encoded));
    let err = result.expect_err(what);
    assert!(matches!(err, FormatError::Corrupt(_)), "{what}: {err}");
    assert!(
        largest < 1 << 20,
        "{what}: allocated {largest} bytes for a {}-byte chunk",
        layout.raw_chunk_bytes()
    );
    assert!(took < Duration::from_secs(1), "{what}: took {took:?}");
    err.to_string()
}

/// Found by the `chunk` target: zarrs' zstd codec allocates the content size a frame
/// claims (1 TB here: the process aborts where the allocation fails). The decoder now
/// decodes into at most the chunk's size and refuses such a frame before allocating.
#[test]
fn a_zstd_frame_claiming_a_terabyte_fails_fast_with_a_typed_error() {
    let frame = zstd_frame_claiming(1 << 40, &[7; 16]);
    for name in ["zstd", "zstd+crc32c", "transpose+zstd-big", "zstd+gzip"] {
        let layout = layout(chain(name));
        let mut encoded = frame.clone();
        if name == "zstd+crc32c" {
            let crc = crc32c(&encoded);
            encoded.extend_from_slice(&crc.to_le_bytes());
        }
        if name == "zstd+gzip" {
            // the gzip stage is checked first; its trailer claims 1 MiB here
            let message = assert_corrupt_and_small(&layout, &gzip_claiming(1 << 20), name);
            assert!(message.contains("claims 1048576"), "{message}");
            continue;
        }
        let message = assert_corrupt_and_small(&layout, &encoded, name);
        assert!(
            message.contains("claims 1099511627776 decoded bytes"),
            "{name}: {message}"
        );
    }
}

/// A zstd frame without a content size that decodes to far more than one chunk (a
/// "bomb") stops at the chunk's size instead of growing its buffer.
#[test]
fn a_zstd_frame_without_a_content_size_is_decoded_into_one_chunk_at_most() {
    let layout = layout(chain("zstd"));
    let mut encoder = zstd::stream::Encoder::new(Vec::new(), 1).unwrap();
    encoder.include_contentsize(false).unwrap();
    std::io::Write::write_all(&mut encoder, &vec![0u8; 64 << 20]).unwrap();
    let bomb = encoder.finish().unwrap();
    assert!(bomb.len() < 8 << 10, "{}", bomb.len());
    assert_corrupt_and_small(&layout, &bomb, "zstd bomb");
}

/// Found by the `chunk` target: a blosc header claiming 2 GiB made zarrs reserve 2 GiB
/// before failing. Now the claim is checked against the chunk's size first.
#[test]
fn a_blosc_frame_claiming_gigabytes_fails_without_allocating_them() {
    for name in ["blosc-lz4", "blosc-zstd"] {
        let layout = layout(chain(name));
        let raw: Vec<u8> = (0..layout.raw_chunk_bytes())
            .map(|i| (i % 7) as u8)
            .collect();
        let mut encoded = chunk::encode(&layout, raw.clone()).unwrap().unwrap();
        assert_eq!(chunk::decode(&layout, &encoded).unwrap(), raw);
        encoded[4..8].copy_from_slice(&0x7fff_0000u32.to_le_bytes());
        let message = assert_corrupt_and_small(&layout, &encoded, name);
        assert!(message.contains("claims 2147418112"), "{name}: {message}");
        assert_corrupt_and_small(&layout, &encoded[..3], name);
    }
}

/// A gzip member whose trailer claims 1 MiB for a 128-byte chunk.
fn gzip_claiming(size: u32) -> Vec<u8> {
    let mut member = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    member.extend_from_slice(&[0x03, 0x00]); // an empty final deflate block
    member.extend_from_slice(&0u32.to_le_bytes());
    member.extend_from_slice(&size.to_le_bytes());
    member
}

#[test]
fn a_gzip_member_claiming_more_than_a_chunk_fails_before_inflating() {
    let layout = layout(chain("gzip"));
    let message = assert_corrupt_and_small(&layout, &gzip_claiming(1 << 20), "gzip");
    assert!(
        message.contains("claims 1048576 decoded bytes, at most 128"),
        "{message}"
    );
}

/// Every chain still decodes what it encodes, through the bounded decoder.
#[test]
fn every_chain_round_trips_through_the_bounded_decoder() {
    for (i, (name, _, _)) in checks::CHAINS.iter().enumerate() {
        let layout = layout(i);
        let raw: Vec<u8> = (0..layout.raw_chunk_bytes())
            .map(|i| (i % 13) as u8)
            .collect();
        let encoded = chunk::encode(&layout, raw.clone()).unwrap().unwrap();
        assert_eq!(chunk::decode(&layout, &encoded).unwrap(), raw, "{name}");
        let (_, largest, _) = measured(|| chunk::decode(&layout, &encoded));
        // gzip keeps a 32 KiB window and its tables
        assert!(largest <= 4 * raw.len() + (64 << 10), "{name}: {largest}");
    }
}

/// crc32c (Castagnoli), bit by bit: enough for the few bytes a test checksums.
fn crc32c(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0x82f6_3b78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// One target's check.
type CheckFn = fn(&[u8]) -> checks::Check;

fn replay(dir: &Path, target: &str, check: CheckFn) -> usize {
    let Ok(entries) = std::fs::read_dir(dir.join(target)) else {
        return 0;
    };
    let mut count = 0;
    for entry in entries {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        if let Err(broken) = check(&data) {
            panic!("{}: {broken}", path.display());
        }
        count += 1;
    }
    count
}

const TARGETS: [(&str, CheckFn); 5] = [
    ("index", checks::index),
    ("shard", checks::shard),
    ("chunk", checks::chunk),
    ("layout", checks::layout),
    ("grid", checks::grid),
];

/// Every committed corpus file and every minimized finding passes its target's checks.
#[test]
fn the_committed_corpus_and_findings_pass_their_checks() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    for (target, check) in TARGETS {
        let start = Instant::now();
        let corpus = replay(&fuzz.join("corpus"), target, check);
        assert!(corpus > 0, "no corpus for {target}");
        let findings = replay(&fuzz.join("regressions"), target, check);
        eprintln!(
            "{target}: {corpus} corpus files, {findings} findings, {:?}",
            start.elapsed()
        );
    }
}

/// Found by the `grid` target (its first random seed): a grid of more than 2^64 cells
/// overflowed counting its cells (`Grid::len`, and the iterators' remaining count).
/// Such a grid is now refused when it is made.
#[test]
fn a_grid_of_more_than_2_64_cells_is_refused() {
    let err = Grid::new(vec![u64::MAX, u64::MAX], vec![1, 1]).unwrap_err();
    assert!(err.to_string().contains("more than 2^64 cells"), "{err}");
    assert!(Grid::new(vec![1 << 32, 1 << 32], vec![1, 1]).is_err());
    let grid = Grid::new(vec![1 << 32, (1 << 32) - 1], vec![1, 1]).unwrap();
    assert_eq!(grid.len(), u64::MAX - (1 << 32) + 1);
    assert_eq!(grid.cells().len() as u64, grid.len());
}

/// Found by the `grid` target: the last cell of an array ending within one cell of
/// `u64::MAX` ended past it (a panic building the box, in `cell` and `cell_unclipped`).
/// `cell` now clips without building the unclipped box; `cell_unclipped` is an error.
#[test]
fn the_last_cell_of_an_array_ending_near_u64_max_is_clipped_without_overflow() {
    let cell = (1u64 << 63) + 1;
    let grid = Grid::new(vec![u64::MAX], vec![cell]).unwrap();
    let last = grid.cell(&[1]).unwrap();
    assert_eq!(last, Domain::new(vec![cell], vec![u64::MAX - cell]));
    assert!(grid.cell_unclipped(&[1]).is_err());
    assert_eq!(grid.cells().last(), Some(last));
    assert!(grid.cell(&[u64::MAX]).is_err());
}

/// Found by the `grid` target: the size of a box of more than 2^64 elements overflowed.
#[test]
fn the_size_of_a_huge_box_saturates() {
    assert_eq!(Domain::from_shape(vec![1 << 40, 1 << 40]).size(), u64::MAX);
    assert_eq!(Domain::from_shape(vec![1 << 40, 1 << 40, 0]).size(), 0);
}
