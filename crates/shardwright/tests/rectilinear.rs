//! Rectilinear grids across layers: shards of several shapes written once each through the
//! writers, read back by shardwright and by zarrs, checked, with the I/O counted.

use std::sync::Arc;

use shardwright::domain::AxisCells;
use shardwright::store::{InstrumentedStore, MemoryStore};
use shardwright::{Array, ArraySpec, Domain, FilesystemStore};

/// The value stored at `(y, x)`.
fn value(y: u64, x: u64) -> u16 {
    (y * 100 + x) as u16 + 1
}

fn block(d: &Domain) -> Vec<u8> {
    let mut out = Vec::new();
    for y in d.origin()[0]..d.stop()[0] {
        for x in d.origin()[1]..d.stop()[1] {
            out.extend_from_slice(&value(y, x).to_ne_bytes());
        }
    }
    out
}

fn spec(sharded: bool) -> ArraySpec {
    let cells = vec![AxisCells::Edges(vec![4, 8, 2, 6]), AxisCells::Regular(6)];
    let spec = ArraySpec::new(vec![20, 15], "uint16", vec![2, 3]);
    if sharded {
        spec.shard_cells(cells)
    } else {
        spec.chunk_cells(cells)
    }
}

fn write_all(array: &Array) {
    for shard in array.shards() {
        let writer = array.shard_writer(&shard).unwrap();
        for chunk in writer.inner_chunks() {
            writer.write_chunk(&chunk, &block(&chunk)).unwrap();
        }
        let stats = writer.commit().unwrap();
        assert_eq!((stats.puts, stats.gets), (1, 0), "{shard}");
    }
}

#[test]
fn every_shard_is_stored_once_and_reads_back() {
    for sharded in [true, false] {
        let store = Arc::new(InstrumentedStore::new(Arc::new(MemoryStore::new())));
        let array = Array::create(store.clone(), "a", &spec(sharded)).unwrap();
        let shards: Vec<Domain> = array.shards().collect();
        assert_eq!(shards.len(), 4 * 3);
        assert_eq!(
            shards[2],
            Domain::new(vec![0, 12], vec![4, 3]).with_index(vec![0, 2])
        );
        assert_eq!(
            shards[3],
            Domain::new(vec![4, 0], vec![8, 6]).with_index(vec![1, 0])
        );
        assert_eq!(
            shards[9],
            Domain::new(vec![14, 0], vec![6, 6]).with_index(vec![3, 0])
        );
        store.reset();
        write_all(&array);
        assert_eq!((store.counts().puts, store.counts().gets), (12, 0));
        let whole = array.read(&array.bounds()).unwrap();
        assert_eq!(whole, block(&array.bounds()));
        let part = Domain::new(vec![3, 5], vec![10, 7]);
        assert_eq!(array.read(&part).unwrap(), block(&part));
        let report = shardwright::check::check(&array, &Default::default(), &mut |_| true).unwrap();
        assert!(report.damaged.is_empty(), "{report:?}");
        assert_eq!(report.shards_stored, 12);
        // a region across shards of three shapes, merged with what is stored
        let region = Domain::new(vec![2, 4], vec![12, 9]);
        let writer_count = array.shards_meeting(&region).count();
        let mut expected = block(&array.bounds());
        for shard in array.shards_meeting(&region) {
            let writer = array.shard_writer(&shard).unwrap();
            let piece = shard.intersect(&region).unwrap();
            writer
                .write_region(&piece, &vec![0xab; piece.size() as usize * 2])
                .unwrap();
            writer.commit().unwrap();
        }
        for y in 2..14u64 {
            for x in 4..13u64 {
                let at = ((y * 15 + x) * 2) as usize;
                expected[at..at + 2].copy_from_slice(&[0xab, 0xab]);
            }
        }
        assert_eq!(writer_count, 3 * 3);
        assert_eq!(array.read(&array.bounds()).unwrap(), expected);
    }
}

#[test]
fn zarrs_reads_what_shardwright_writes() {
    for sharded in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(FilesystemStore::new(dir.path()));
        let array = Array::create(store, "a.zarr", &spec(sharded)).unwrap();
        write_all(&array);
        let zstore = Arc::new(zarrs::filesystem::FilesystemStore::new(dir.path()).unwrap());
        let theirs = zarrs::array::Array::open(zstore, "/a.zarr").unwrap();
        let subset = zarrs::array::ArraySubset::new_with_shape(vec![20, 15]);
        let elements: Vec<u16> = theirs.retrieve_array_subset::<Vec<u16>>(&subset).unwrap();
        let ours: Vec<u16> = block(&array.bounds())
            .chunks(2)
            .map(|b| u16::from_ne_bytes([b[0], b[1]]))
            .collect();
        assert_eq!(elements, ours, "sharded: {sharded}");
    }
}
