//! Memory bounds seen by a counting allocator: a constant region never holds the raw
//! region, an oversized read or chunk is an error (not an abort), and the memory limit of
//! a transaction holds for shard writers absorbed into it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use shardwright::store::MemoryStore;
use shardwright::{Array, ArraySpec, Domain, Error, ErrorKind, Transaction, TransactionOptions};

/// The system allocator, counting the bytes live now and the peak since the last reset.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; the counters only
// observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            count(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            count(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            count(new_size);
        }
        new
    }
}

fn count(size: usize) {
    let live = LIVE.fetch_add(size, Ordering::Relaxed) + size;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Tests here measure the allocator one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Run `f`; returns its result and the peak of live bytes above the start while it ran.
fn peak_growth<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let start = LIVE.load(Ordering::Relaxed);
    PEAK.store(start, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed).saturating_sub(start))
}

/// 128³ uint8 (2 MiB), inner chunks 16³ (4 KiB), one shard, zstd.
fn cube(store: Arc<MemoryStore>) -> Array {
    let spec = ArraySpec::new(vec![128; 3], "uint8", vec![16; 3]).shards(vec![128; 3]);
    Array::create(store, "a", &spec).unwrap()
}

/// The region of one value over the cube minus its last plane: 448 chunks covered whole,
/// 64 in part.
fn almost_all() -> Domain {
    Domain::new(vec![0, 0, 0], vec![127, 128, 128])
}

#[test]
fn a_constant_region_in_a_shard_writer_never_holds_the_raw_region() {
    let _serial = ONE_AT_A_TIME.lock().unwrap();
    let array = cube(Arc::new(MemoryStore::new()));
    let writer = array
        .shard_writer(&array.shard(&[0, 0, 0]).unwrap())
        .unwrap();
    let region = almost_all();
    let ((), peak) = peak_growth(|| writer.write_region_value(&region, &[5]).unwrap());
    // The raw region is 2,080,768 bytes; the 64 partial chunks hold 4 KiB + 512 B each.
    let partials = 64 * (4096 + 512);
    assert!(
        peak < partials + 256 * 1024,
        "writing one value over {region} peaked at {peak} bytes"
    );
    writer.commit().unwrap();
    let data = array.read(&array.bounds()).unwrap();
    let plane = 128 * 128;
    assert!(data[..127 * plane].iter().all(|&v| v == 5));
    assert!(data[127 * plane..].iter().all(|&v| v == 0));
}

#[test]
fn a_constant_region_in_a_transaction_never_holds_the_raw_region() {
    let _serial = ONE_AT_A_TIME.lock().unwrap();
    let spec = ArraySpec::new(vec![128; 3], "uint8", vec![16; 3]).shards(vec![64; 3]);
    let array = Array::create(Arc::new(MemoryStore::new()), "t", &spec).unwrap();
    let tx = Transaction::new(array.clone(), TransactionOptions::default());
    let region = Domain::new(vec![0, 8, 0], vec![128, 112, 128]); // 8 shards, unaligned
    let ((), peak) = peak_growth(|| tx.write_value(&region, &[9]).unwrap());
    assert!(
        peak < 1 << 20,
        "peaked at {peak} bytes for a {} byte region",
        region.size()
    );
    tx.commit().unwrap();
    let data = array.read(&array.bounds()).unwrap();
    for (i, &v) in data.iter().enumerate() {
        let y = (i / 128) % 128;
        assert_eq!(v, u8::from((8..120).contains(&y)) * 9, "element {i}");
    }
}

#[test]
fn reading_a_region_larger_than_memory_is_an_error_naming_its_size() {
    let _serial = ONE_AT_A_TIME.lock().unwrap();
    let spec = ArraySpec::new(vec![1 << 44], "uint8", vec![1 << 20]).shards(vec![1 << 30]);
    let array = Array::create(Arc::new(MemoryStore::new()), "huge", &spec).unwrap();
    let err = array.read(&array.bounds()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::OutOfMemory);
    assert!(
        err.to_string().contains("17592186044416 bytes (16.0 TiB)"),
        "{err}"
    );
    // The same through a transaction's read-your-writes.
    let tx = Transaction::new(array.clone(), TransactionOptions::default());
    assert!(matches!(
        tx.read(&array.bounds()),
        Err(Error::OutOfMemory(_))
    ));
}

#[test]
fn a_shard_writer_absorbed_into_a_transaction_counts_against_its_memory_limit() {
    let _serial = ONE_AT_A_TIME.lock().unwrap();
    let spec = ArraySpec::new(vec![64, 1024], "uint8", vec![8, 1024]).shards(vec![64, 1024]);
    let array = Array::create(Arc::new(MemoryStore::new()), "m", &spec).unwrap();
    let tx = Transaction::new(
        array.clone(),
        TransactionOptions::default().memory_limit(16 * 1024),
    );
    let writer = tx.shard_writer(&array.shard(&[0, 0]).unwrap()).unwrap();
    let mut state = 1u32;
    for chunk in writer.inner_chunks() {
        // Incompressible: 8 KiB encoded per chunk, 64 KiB in all.
        let data: Vec<u8> = (0..chunk.size())
            .map(|_| {
                state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                (state >> 24) as u8
            })
            .collect();
        writer.write_chunk(&chunk, &data).unwrap();
    }
    let err = tx.absorb(writer).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TooLarge, "{err}");
    // Failed for good: later writes and the commit fail too, and nothing is stored.
    assert!(tx
        .write_value(&Domain::new(vec![0, 0], vec![1, 1]), &[1])
        .is_err());
    assert_eq!(tx.commit().unwrap_err().kind(), ErrorKind::TooLarge);
    assert!(array.read(&array.bounds()).unwrap().iter().all(|&v| v == 0));
}
