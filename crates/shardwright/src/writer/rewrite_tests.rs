//! Tests of inner chunks written more than once: in a streamed shard (the commit compacts
//! the upload), and by two threads at once.

use std::sync::{Arc, Barrier};

use crate::domain::Domain;
use crate::layout::{ArraySpec, Compressor};
use crate::store::{FilesystemStore, MemoryStore, Store};
use crate::writer::spill::STAGE_BYTES;
use crate::Array;

/// `len` bytes that differ for each `seed`, none of them the fill value (0).
fn data(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 56) as u8 | 1
        })
        .collect()
}

/// A one-shard uint8 array of `n` inner chunks of `chunk` bytes, uncompressed (so an
/// encoded chunk is exactly `chunk` bytes long).
fn array(store: Arc<dyn Store>, chunk: u64, n: u64) -> Array {
    let spec = ArraySpec::new(vec![chunk * n], "uint8", vec![chunk])
        .shards(vec![chunk * n])
        .compressor(Compressor::None);
    Array::create(store, "a", &spec).unwrap()
}

/// What a rewritten chunk gets.
#[derive(Debug, Clone, Copy)]
enum Rewrite {
    /// New data.
    Data,
    /// The fill value everywhere (an empty slot).
    Fill,
    /// A region covering half of it (a partial chunk over the streamed one).
    Half,
}

/// Write every chunk, wait until each one is streamed, rewrite the chunks `rewrites` (in
/// that order, waiting after each), commit; check the commit and what reads back.
fn write_then_rewrite(store: Arc<dyn Store>, chunk: u64, n: u64, rewrites: &[(usize, Rewrite)]) {
    let array = array(store, chunk, n);
    let writer = array.shard_writer(&array.shard(&[0]).unwrap()).unwrap();
    let chunks: Vec<Domain> = writer.inner_chunks().collect();
    let mut expected: Vec<Vec<u8>> = Vec::new();
    for (i, c) in chunks.iter().enumerate() {
        expected.push(data(i as u64, chunk as usize));
        writer.write_chunk(c, &expected[i]).unwrap();
    }
    writer.wait_placed();
    for (k, &(at, how)) in rewrites.iter().enumerate() {
        let c = &chunks[at];
        let fresh = data(1000 + k as u64, chunk as usize);
        match how {
            Rewrite::Data => {
                writer.write_chunk(c, &fresh).unwrap();
                expected[at] = fresh;
            }
            Rewrite::Fill => {
                writer.write_chunk_value(c, &[0]).unwrap();
                expected[at] = vec![0; chunk as usize];
            }
            Rewrite::Half => {
                let half = chunk.div_ceil(2);
                let region = Domain::new(c.origin().to_vec(), vec![half]);
                writer
                    .write_region(&region, &fresh[..half as usize])
                    .unwrap();
                expected[at][..half as usize].copy_from_slice(&fresh[..half as usize]);
            }
        }
        writer.wait_placed();
    }
    let what = format!("chunk {chunk} B × {n}, rewrites {rewrites:?}");
    let stats = writer
        .commit()
        .unwrap_or_else(|e| panic!("{what}: commit failed: {e}"));
    assert_eq!(stats.gets, 0, "{what}");
    let all = array.read(&array.bounds()).unwrap();
    assert!(all == expected.concat(), "{what}: wrong data read back");
}

/// Encoded chunk sizes around the staging buffer's: the compaction's last batch is empty
/// when the last live chunk fills a batch exactly, or when no streamed chunk stays live.
fn sizes() -> Vec<u64> {
    let stage = STAGE_BYTES as u64;
    vec![
        1,
        7,
        stage / 2 - 1,
        stage / 2,
        stage / 2 + 1,
        stage - 1,
        stage,
        stage + 1,
    ]
}

#[test]
fn rewriting_any_streamed_chunk_commits_with_the_right_data() {
    let n = 4;
    for chunk in sizes() {
        for at in 0..n as usize {
            for how in [Rewrite::Data, Rewrite::Fill, Rewrite::Half] {
                let dir = tempfile::tempdir().unwrap();
                write_then_rewrite(
                    Arc::new(FilesystemStore::new(dir.path())),
                    chunk,
                    n,
                    &[(at, how)],
                );
                write_then_rewrite(Arc::new(MemoryStore::new()), chunk, n, &[(at, how)]);
            }
        }
    }
}

#[test]
fn rewriting_every_chunk_and_one_chunk_many_times_commits() {
    let every_fill = [(0, Rewrite::Fill), (1, Rewrite::Fill)];
    let every_data: Vec<(usize, Rewrite)> = (0..4).map(|i| (i, Rewrite::Data)).collect();
    let one_again = [
        (2, Rewrite::Data),
        (2, Rewrite::Fill),
        (2, Rewrite::Data),
        (2, Rewrite::Half),
    ];
    for chunk in sizes() {
        // Every chunk as the fill value: nothing streamed stays live (the issue's 1-byte case).
        // Every chunk with new data. One chunk four more times.
        for (n, rewrites) in [
            (2, &every_fill[..]),
            (4, &every_data[..]),
            (4, &one_again[..]),
        ] {
            let dir = tempfile::tempdir().unwrap();
            write_then_rewrite(
                Arc::new(FilesystemStore::new(dir.path())),
                chunk,
                n,
                rewrites,
            );
        }
    }
}

#[test]
fn the_issue_example_of_one_recomputed_chunk_commits() {
    // 64³ uint16 random chunks (512 KiB, incompressible), zstd: chunk 5 of 64 recomputed.
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(FilesystemStore::new(dir.path()));
    let spec = ArraySpec::new(vec![256; 3], "uint16", vec![64; 3]).shards(vec![256; 3]);
    let array = Array::create(store, "a", &spec).unwrap();
    let writer = array
        .shard_writer(&array.shard(&[0, 0, 0]).unwrap())
        .unwrap();
    let chunks: Vec<Domain> = writer.inner_chunks().collect();
    for (i, c) in chunks.iter().enumerate() {
        writer
            .write_chunk(c, &data(i as u64, 64 * 64 * 64 * 2))
            .unwrap();
    }
    writer.wait_placed();
    let fresh = data(99, 64 * 64 * 64 * 2);
    writer.write_chunk(&chunks[5], &fresh).unwrap();
    writer.commit().unwrap();
    assert_eq!(array.read(&chunks[5]).unwrap(), fresh);
    assert_eq!(array.read(&chunks[63]).unwrap(), data(63, 64 * 64 * 64 * 2));
}

#[test]
fn two_threads_writing_one_chunk_whole_and_in_part_lose_neither_write() {
    // Thread A writes chunk 0 whole, thread B a region inside it, at the same moment. The
    // outcome is A then B (A's data with B's region on top) or B then A (A's data only),
    // never B's region over the stored (here: fill) data.
    let whole = vec![1u8; 64];
    let part = [2u8; 8];
    for trial in 0..3000 {
        let array = array(Arc::new(MemoryStore::new()), 64, 2);
        let writer = array.shard_writer(&array.shard(&[0]).unwrap()).unwrap();
        let chunk = writer.inner_chunks().next().unwrap();
        let region = Domain::new(vec![8], vec![8]);
        let start = Barrier::new(2);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                start.wait();
                writer.write_chunk(&chunk, &whole).unwrap();
            });
            scope.spawn(|| {
                start.wait();
                writer.write_region(&region, &part).unwrap();
            });
        });
        writer.commit().unwrap();
        let got = array.read(&chunk).unwrap();
        let mut a_then_b = whole.clone();
        a_then_b[8..16].copy_from_slice(&part);
        assert!(
            got == whole || got == a_then_b,
            "trial {trial}: a write was lost: {got:?}"
        );
    }
}

#[test]
fn a_partial_write_at_the_moment_a_whole_write_drops_the_partial_chunk_waits_for_it() {
    // Thread A writes chunk 0 whole; at the exact moment A has dropped the chunk's partial
    // data but not yet marked its slot pending, thread B writes a region inside the chunk.
    // B must be ordered after A (A's data with B's region on top): had B started a partial
    // chunk from the slot's old state there, the commit would complete it from the stored
    // (fill) data and A's write would be lost.
    let array = Arc::new(array(Arc::new(MemoryStore::new()), 64, 2));
    let writer = Arc::new(array.shard_writer(&array.shard(&[0]).unwrap()).unwrap());
    let chunk = writer.inner_chunks().next().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let other = Arc::clone(&writer);
    *crate::writer::RACE.lock().unwrap() = Some(Box::new(move || {
        let other = Arc::clone(&other);
        let b = std::thread::spawn(move || {
            other
                .write_region(&Domain::new(vec![8], vec![8]), &[2; 8])
                .unwrap();
        });
        // Give B every chance to get in before A goes on.
        std::thread::sleep(std::time::Duration::from_millis(100));
        tx.send(b).unwrap();
    }));
    writer.write_chunk(&chunk, &[1; 64]).unwrap();
    rx.recv().unwrap().join().unwrap();
    let writer = Arc::into_inner(writer).expect("B is done");
    writer.commit().unwrap();
    let mut expected = vec![1u8; 64];
    expected[8..16].fill(2);
    assert_eq!(array.read(&chunk).unwrap(), expected);
}
