//! Fault injection at every store call of realistic jobs: new shards, merges, transactions,
//! streaming uploads, metadata; each faulted run fails typed, naming the key, leaves every
//! shard whole (old or new), and a retry succeeds with the right data.

mod faults_common;

use std::sync::Arc;

use faults_common::{block, fill, fill_json, sweep, Backend, Content, Geometry, Run, PATH};
use shardwright::store::{Fault, FaultOp, Store};
use shardwright::{Array, Domain, Error, ErrorKind, Transaction, TransactionOptions};

fn old(y: u64, x: u64) -> u16 {
    (y * 7 + x * 3) as u16
}

fn new(y: u64, x: u64) -> u16 {
    1000 + (y * x) as u16
}

/// Looks random: zstd stores it as raw blocks.
fn noise(y: u64, x: u64) -> u16 {
    ((y * 4096 + x).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 48) as u16
}

fn noise_new(y: u64, x: u64) -> u16 {
    noise(x, y) ^ 0x5a5a
}

/// `d`'s content: `inside` where `regions` cover it, `outside` elsewhere.
fn patched(d: &Domain, regions: &[Domain], inside: Content, outside: Content) -> Vec<u8> {
    let covers = |r: &Domain, y: u64, x: u64| {
        (r.origin()[0]..r.stop()[0]).contains(&y) && (r.origin()[1]..r.stop()[1]).contains(&x)
    };
    let mut out = Vec::with_capacity(d.size() as usize * 2);
    for y in d.origin()[0]..d.stop()[0] {
        for x in d.origin()[1]..d.stop()[1] {
            let hit = regions.iter().any(|r| covers(r, y, x));
            let v = if hit { inside(y, x) } else { outside(y, x) };
            out.extend_from_slice(&v.to_ne_bytes());
        }
    }
    out
}

fn write_all(store: Arc<dyn Store>, content: fn(u64, u64) -> u16) -> shardwright::Result<()> {
    let array = Array::open(store, PATH)?;
    for shard in array.shards() {
        let w = array.shard_writer(&shard)?;
        for c in w.inner_chunks() {
            w.write_chunk(&c, &block(&c, content))?;
        }
        w.commit()?;
    }
    Ok(())
}

#[test]
fn new_shards_survive_a_fault_at_every_call() {
    let g = Geometry::small();
    for backend in [Backend::Memory, Backend::Filesystem] {
        let s = sweep(
            "new shards",
            backend,
            &|store| {
                Array::create(Arc::clone(store), PATH, &g.spec()).unwrap();
            },
            &|store| write_all(store, new),
            &|d| vec![0; d.size() as usize * 2],
            &|d| block(d, new),
        );
        eprintln!("new shards ({backend:?}): {s:?}");
        assert!(s.injected > 10);
    }
}

/// A region inside each shard, meeting chunks only in part.
fn merge_regions(array: &Array) -> Vec<Domain> {
    array
        .shards()
        .map(|s| Domain::new(vec![s.origin()[0] + 4, s.origin()[1] + 3], vec![16, 26]))
        .collect()
}

#[test]
fn merges_survive_a_fault_at_every_call() {
    let g = Geometry::small();
    // With chunk checksums, a bit flipped in the read of a kept chunk is detected (see
    // `without_a_chunk_checksum_a_kept_chunk_is_carried_verbatim_as_read` for without).
    let json = with_chunk_checksums(&g);
    let regions = {
        let run = Run::new(Backend::Memory);
        merge_regions(&Array::create(run.inner, PATH, &g.spec()).unwrap())
    };
    let backend = Backend::Memory;
    let s = sweep(
        "merge",
        backend,
        &|store| {
            fill_json(Arc::clone(store), &json, old);
        },
        &|store| {
            let array = Array::open(store, PATH)?;
            for (shard, region) in array.shards().zip(&regions) {
                let w = array.shard_writer(&shard)?;
                w.write_region(region, &block(region, new))?;
                w.commit()?;
            }
            Ok(())
        },
        &|d| block(d, old),
        &|d| patched(d, &regions, new, old),
    );
    eprintln!("merge ({backend:?}): {s:?}");
    assert!(s.injected > 10);
}

#[test]
fn transactions_survive_a_fault_at_every_call() {
    let json = with_chunk_checksums(&Geometry::small());
    let region = Domain::new(vec![20, 10], vec![24, 50]); // meets the four shards
    let s = sweep(
        "transaction",
        Backend::Memory,
        &|store| {
            fill_json(Arc::clone(store), &json, old);
        },
        &|store| {
            let array = Array::open(store, PATH)?;
            let tx = Transaction::new(array, TransactionOptions::default().memory_limit(1 << 20));
            tx.write(&region, &block(&region, new))?;
            tx.commit()?;
            Ok(())
        },
        &|d| block(d, old),
        &|d| patched(d, std::slice::from_ref(&region), new, old),
    );
    eprintln!("transaction: {s:?}");
    assert!(s.injected > 10);
}

/// Two shards of 1.1 MiB of noise (768×768 uint16 in chunks of 128×128): written, they
/// spill to their uploads once before the commit.
fn streaming() -> Geometry {
    Geometry {
        shape: [768, 1536],
        chunks: [128, 128],
        shards: [768, 768],
        index: shardwright::IndexLocation::End,
    }
}

#[test]
fn streaming_uploads_survive_a_fault_at_every_call() {
    let g = streaming();
    // Shard 0 is written whole; shard 1 all but its last row of chunks (a streamed merge).
    let kept = Domain::new(vec![640, 768], vec![128, 768]);
    let json = with_chunk_checksums(&g);
    // The memory store streams too, but only the filesystem's uploads leave temporaries.
    let backend = Backend::Memory;
    let s = sweep(
        "streaming",
        backend,
        &|store| {
            fill_json(Arc::clone(store), &json, noise);
        },
        &|store| {
            let array = Array::open(store, PATH)?;
            for shard in array.shards() {
                let w = array.shard_writer(&shard)?;
                for c in w.inner_chunks() {
                    if kept.intersect(&c).is_some_and(|i| !i.is_empty()) {
                        continue;
                    }
                    w.write_chunk(&c, &block(&c, noise_new))?;
                }
                w.commit()?;
            }
            Ok(())
        },
        &|d| block(d, noise),
        &|d| patched(d, std::slice::from_ref(&kept), noise, noise_new),
    );
    eprintln!("streaming ({backend:?}): {s:?}");
    assert!(s.injected > 10);
}

#[test]
fn metadata_create_survives_a_fault_at_every_call() {
    let g = Geometry::small();
    let count = Run::new(Backend::Memory);
    Array::create(count.faulty(), PATH, &g.spec()).unwrap();
    let counts = count.faulty.counts();
    assert_eq!(counts, vec![(FaultOp::PutIf, 1)]);
    for backend in [Backend::Memory, Backend::Filesystem] {
        for fault in [Fault::Fail, Fault::FailAfter] {
            let run = Run::new(backend);
            run.faulty.inject(FaultOp::PutIf, 0, fault);
            let err = Array::create(run.faulty(), PATH, &g.spec()).unwrap_err();
            faults_common::check_error(&err, fault, "a.zarr/zarr.json", "create");
            match fault {
                // Nothing stored: the retry creates it.
                Fault::Fail => {
                    assert!(run.inner.get("a.zarr/zarr.json").unwrap().is_none());
                    Array::create(run.faulty(), PATH, &g.spec()).unwrap();
                }
                // Stored, and the reply lost: the retry is told it exists, and it opens whole.
                _ => {
                    let again = Array::create(run.faulty(), PATH, &g.spec()).unwrap_err();
                    assert!(matches!(again, Error::AlreadyExists(_)), "{again:?}");
                }
            }
            let array = Array::open(run.inner, PATH).unwrap();
            assert_eq!(array.layout().shape(), &[64, 64]);
        }
    }
}

/// The stored bytes of shard `index` and the range of its chunk `slot`.
fn shard_and_chunk(
    store: &Arc<dyn Store>,
    array: &Array,
    slot: usize,
) -> (Vec<u8>, std::ops::Range<usize>) {
    let key = array.shard_key(&[0, 0]);
    let bytes = store.get(&key).unwrap().unwrap();
    let ranges = shardwright::format::shard::split(array.layout(), &bytes).unwrap();
    (bytes, ranges[slot].clone().unwrap())
}

/// A merge of shard (0, 0) that rewrites part of chunk 0 and keeps the others.
fn merge_shard0(store: Arc<dyn Store>) -> shardwright::Result<()> {
    let array = Array::open(store, PATH)?;
    let w = array.shard_writer(&array.shard(&[0, 0])?)?;
    let region = Domain::new(vec![1, 1], vec![3, 3]);
    w.write_region(&region, &block(&region, new))?;
    w.commit()?;
    Ok(())
}

#[test]
fn damaged_reads_of_the_shard_to_merge_are_detected() {
    let g = Geometry::small();
    for content in [old as fn(u64, u64) -> u16, noise] {
        let run = Run::new(Backend::Memory);
        let array = fill(Arc::clone(&run.inner), &g, content);
        let key = array.shard_key(&[0, 0]);
        let (bytes, _) = shard_and_chunk(&run.inner, &array, 1);
        let len = bytes.len() as u64;
        // Truncated anywhere, or a bit flipped in the index: a corrupt shard, nothing stored.
        let index_bits = (len - 16 * 16 - 4) * 8..len * 8;
        let faults = [
            Fault::Truncate(len - 1),
            Fault::Truncate(len / 2),
            Fault::Truncate(3),
            Fault::FlipBit(index_bits.start),
            Fault::FlipBit(index_bits.start + 77),
            Fault::FlipBit(len * 8 - 1),
        ];
        for fault in faults {
            run.faulty.reset();
            // get #0 is the metadata, get #1 the shard.
            run.faulty.inject(FaultOp::Get, 1, fault);
            let err = merge_shard0(run.faulty()).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::CorruptShard, "{fault:?}: {err}");
            assert!(err.to_string().contains(&key), "{err}");
            assert_eq!(
                run.inner.get(&key).unwrap().unwrap(),
                bytes,
                "{fault:?}: the shard changed"
            );
        }
    }
}

/// `g`'s `zarr.json` with a `crc32c` codec at the end of the inner chain.
fn with_chunk_checksums(g: &Geometry) -> String {
    // (The small geometry's and the streaming one's are alike but for their sizes.)
    let mut json: serde_json::Value = serde_json::from_str(&g.spec().to_json().unwrap()).unwrap();
    let inner = json["codecs"][0]["configuration"]["codecs"]
        .as_array_mut()
        .unwrap();
    inner.push(serde_json::json!({"name": "crc32c"}));
    json.to_string()
}

/// Flip bits of kept chunk 5 in the read of shard (0, 0) for a merge; returns, per flip,
/// the merge's result and whether the stored shard is unchanged.
fn flip_kept(json: &str, content: Content) -> Vec<(shardwright::Result<()>, bool, Vec<u8>)> {
    let run = Run::new(Backend::Memory);
    let array = fill_json(Arc::clone(&run.inner), json, content);
    let key = array.shard_key(&[0, 0]);
    let (bytes, chunk) = shard_and_chunk(&run.inner, &array, 5);
    let mut out = Vec::new();
    for bit in [
        0,
        13,
        8 * (chunk.len() as u64 / 2) + 1,
        8 * chunk.len() as u64 - 1,
    ] {
        run.inner.put(&key, &[&bytes]).unwrap();
        run.faulty.reset();
        run.faulty.inject(
            FaultOp::Get,
            1,
            Fault::FlipBit(chunk.start as u64 * 8 + bit),
        );
        let result = merge_shard0(run.faulty());
        let stored = run.inner.get(&key).unwrap().unwrap();
        let (_, kept) = shard_and_chunk(&run.inner, &array, 5);
        let mut flipped = bytes[chunk.clone()].to_vec();
        let b = (bit / 8) as usize;
        flipped[b] ^= 1 << (bit % 8);
        let carried = stored[kept] == flipped[..];
        out.push((
            result,
            stored == bytes,
            if carried { flipped } else { Vec::new() },
        ));
    }
    out
}

#[test]
fn a_bit_flipped_in_a_kept_chunk_with_a_checksum_is_never_stored() {
    let g = Geometry::small();
    let json = with_chunk_checksums(&g);
    for content in [old as Content, noise] {
        for (result, unchanged, _) in flip_kept(&json, content) {
            let err = result.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::CorruptShard, "{err}");
            assert!(err.to_string().contains("a.zarr/c/0/0"), "{err}");
            assert!(unchanged, "the shard changed");
        }
    }
}

/// The documented limit: without a chunk checksum, a kept chunk is carried over as it was
/// read (never decoded), so a flip in transit is stored; the rest of the shard is right.
#[test]
fn without_a_chunk_checksum_a_kept_chunk_is_carried_verbatim_as_read() {
    let g = Geometry::small();
    let json = g.spec().to_json().unwrap();
    for (result, _, carried) in flip_kept(&json, noise) {
        result.unwrap();
        assert!(
            !carried.is_empty(),
            "the kept chunk was not carried verbatim"
        );
    }
}

/// Wait (up to 20 s) until `done` holds.
fn wait_for(mut done: impl FnMut() -> bool, what: &str) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(
            start.elapsed().as_secs() < 20,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

#[test]
fn a_stalled_put_does_not_hold_up_other_shards_commits() {
    let g = Geometry::small();
    let run = Run::new(Backend::Memory);
    fill(Arc::clone(&run.inner), &g, old);
    let region = Domain::new(vec![20, 10], vec![24, 50]); // meets the four shards
    run.faulty.inject(FaultOp::PutIf, 0, Fault::Block);
    let array = Array::open(run.faulty(), PATH).unwrap();
    let tx = Transaction::new(array, TransactionOptions::default());
    tx.write(&region, &block(&region, new)).unwrap();
    let committing = std::thread::spawn(move || tx.commit());
    wait_for(|| run.faulty.blocked() == 1, "the stalled put");
    let stored = Array::open(Arc::clone(&run.inner), PATH).unwrap();
    let expected = |s: &Domain| {
        let r = region.intersect(s).unwrap();
        let mut want = block(s, old);
        let got_new = block(&r, new);
        // Place the region's new values into the shard's old ones (row by row).
        let (w, rw) = (s.shape()[1] as usize, r.shape()[1] as usize);
        for (row, y) in (r.origin()[0]..r.stop()[0]).enumerate() {
            let at =
                ((y - s.origin()[0]) as usize * w + (r.origin()[1] - s.origin()[1]) as usize) * 2;
            want[at..at + rw * 2].copy_from_slice(&got_new[row * rw * 2..(row + 1) * rw * 2]);
        }
        want
    };
    if rayon::current_num_threads() >= 2 {
        // The other three shards are stored while one put waits.
        wait_for(
            || {
                stored
                    .shards()
                    .filter(|s| stored.read(s).unwrap() == expected(s))
                    .count()
                    == 3
            },
            "the other shards' commits",
        );
    }
    // Whatever else, no shard is torn meanwhile.
    for s in stored.shards() {
        let got = stored.read(&s).unwrap();
        assert!(got == expected(&s) || got == block(&s, old));
    }
    run.faulty.release();
    let stats = committing.join().unwrap().unwrap();
    assert_eq!(stats.shards_written, 4);
    for s in stored.shards() {
        assert_eq!(stored.read(&s).unwrap(), expected(&s));
    }
}

#[test]
fn a_streaming_writer_dropped_while_its_append_stalls_leaves_nothing() {
    let g = streaming();
    let run = Run::new(Backend::Filesystem);
    let array = fill(Arc::clone(&run.inner), &g, noise);
    let key = array.shard_key(&[0, 0]);
    let before = run.inner.get(&key).unwrap().unwrap();
    run.faulty.reset();
    run.faulty.inject(FaultOp::Append, 0, Fault::Block);
    let array = Array::open(run.faulty(), PATH).unwrap();
    let job = std::thread::spawn(move || {
        let w = array.shard_writer(&array.shard(&[0, 0]).unwrap()).unwrap();
        for c in w.inner_chunks() {
            w.write_chunk(&c, &block(&c, noise_new)).unwrap();
        }
        drop(w); // abandoned before its commit, its first append stalled
    });
    wait_for(|| run.faulty.blocked() == 1, "the stalled append");
    assert_eq!(run.inner.get(&key).unwrap().unwrap(), before);
    run.faulty.release();
    job.join().unwrap();
    assert_eq!(run.inner.get(&key).unwrap().unwrap(), before);
    assert!(run.temporaries().is_empty(), "{:?}", run.temporaries());
}
