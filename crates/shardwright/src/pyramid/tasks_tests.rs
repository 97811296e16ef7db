//! The pyramid as per-shard tasks against the one-pass driver: the same stored bytes
//! element for element, one put per shard, tasks in any order and run twice.

use std::sync::Arc;

use super::LevelTasks;
use crate::array::METADATA_KEY;
use crate::error::Error;
use crate::layout::Compressor;
use crate::pyramid::build::{pyramid, BuildOptions};
use crate::pyramid::downsample::Method;
use crate::pyramid::plan::PlanRequest;
use crate::pyramid::source::BufferSource;
use crate::store::{join, InstrumentedStore, MemoryStore, Store};

fn values(n: u64, element: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|i| {
            let v = (i * 7919 % 4093) as u32;
            v.to_ne_bytes()[..element].to_vec()
        })
        .collect()
}

fn request(
    factors: Vec<u64>,
    method: Method,
    chunks: Vec<Vec<u64>>,
    shards: Vec<Vec<u64>>,
) -> PlanRequest {
    PlanRequest {
        factors,
        levels: (chunks.len() > 1).then_some(chunks.len()),
        method: Some(method),
        chunks: Some(chunks),
        shards: Some(shards),
        axes: None,
    }
}

/// Build with the driver and with the tasks (level 0 written whole from the source, the
/// others shard by shard in reverse order, each twice), then compare every level.
fn same_as_the_driver(shape: &[u64], dtype: &str, element: usize, request: PlanRequest) {
    let data = values(shape.iter().product(), element);
    let source = BufferSource::new(data.clone(), shape.to_vec(), dtype);
    let options = BuildOptions::new(request, Compressor::Zstd { level: 1 });
    let driver = pyramid(
        &source,
        Arc::new(MemoryStore::new()),
        "p",
        &options,
        &mut |_| true,
    )
    .unwrap();

    let store = Arc::new(InstrumentedStore::new(Arc::new(MemoryStore::new())));
    let tasks = LevelTasks::prepare(&source, store.clone(), "/p/", &options).unwrap();
    assert_eq!(tasks.levels().len(), driver.levels.len());
    let level0 = &tasks.levels()[0];
    for shard in level0.shards() {
        let writer = level0.shard_writer(&shard).unwrap();
        writer
            .write_region_of(&shard, &data, &level0.bounds())
            .unwrap();
        writer.commit().unwrap();
    }
    // a worker opens the tasks again from what was shipped to it
    let shipped = LevelTasks::open(
        store.clone(),
        "p",
        tasks.levels().len(),
        tasks.group_document().to_vec(),
    )
    .unwrap();
    for k in 1..tasks.levels().len() {
        let shards: Vec<_> = tasks.levels()[k].shards().collect();
        for shard in shards.iter().rev() {
            let index = shard.index().unwrap();
            let before = store.counts();
            let stats = shipped.write_shard(k, index).unwrap();
            // one put, or none for a shard of the fill value only; never a read of it
            assert_eq!(stats.gets, 0, "level {k} shard {shard}");
            assert_eq!(
                stats.puts,
                u64::from(stats.chunks_empty < stats.chunks_written)
            );
            assert_eq!(store.counts().puts - before.puts, stats.puts);
            shipped.write_shard(k, index).unwrap(); // a retry: the same shard again
        }
    }
    assert_eq!(store.get(&join("p", METADATA_KEY)).unwrap(), None);
    tasks.finish().unwrap();
    let group = store.get(&join("p", METADATA_KEY)).unwrap().unwrap();
    let driver_group = driver.levels[0]
        .store()
        .get(&join("p", METADATA_KEY))
        .unwrap()
        .unwrap();
    assert_eq!(group, driver_group);
    for (k, (a, b)) in tasks.levels().iter().zip(&driver.levels).enumerate() {
        assert_eq!(
            a.layout().metadata(),
            b.layout().metadata(),
            "level {k} metadata"
        );
        assert_eq!(
            a.read(&a.bounds()).unwrap(),
            b.read(&b.bounds()).unwrap(),
            "level {k} of {shape:?}"
        );
    }
}

#[test]
fn every_level_equals_the_drivers_for_aligned_and_misaligned_geometries() {
    // one chunk shape, shards of 2×2 chunks
    same_as_the_driver(
        &[40, 52],
        "uint16",
        2,
        request(vec![2, 2], Method::Mean, vec![vec![4, 4]], vec![vec![8, 8]]),
    );
    // factors 3 against chunks of 4 (blocks of 12), edge shards, per-level chunks and shards
    same_as_the_driver(
        &[2, 37, 61],
        "uint8",
        1,
        request(
            vec![1, 3, 3],
            Method::Median,
            vec![vec![1, 4, 4], vec![1, 5, 3]],
            vec![vec![1, 8, 8], vec![1, 5, 9]],
        ),
    );
    for method in Method::ALL {
        same_as_the_driver(
            &[9, 10, 11],
            "int32",
            4,
            request(
                vec![2, 2, 2],
                method,
                vec![vec![2, 3, 2]],
                vec![vec![4, 3, 4]],
            ),
        );
    }
}

#[test]
fn level_zero_and_levels_past_the_top_are_refused_by_name() {
    let source = BufferSource::new(vec![0; 64], vec![8, 8], "uint8");
    let options = BuildOptions::new(
        request(vec![2, 2], Method::Mean, vec![vec![2, 2]], vec![vec![4, 4]]),
        Compressor::None,
    );
    let tasks = LevelTasks::prepare(&source, Arc::new(MemoryStore::new()), "p", &options).unwrap();
    let top = tasks.levels().len();
    for level in [0, top] {
        let err = tasks.write_shard(level, &[0, 0]).unwrap_err().to_string();
        assert!(
            err.contains(&format!("level {level} is not downsampled")),
            "{err}"
        );
    }
    let err = tasks.inputs(1, &[9, 0]).unwrap_err();
    assert!(matches!(err, Error::Domain(_)), "{err:?}");
}

#[test]
fn a_complete_pyramid_is_not_prepared_over_unless_resuming() {
    let source = BufferSource::new(vec![1; 64], vec![8, 8], "uint8");
    let mut options = BuildOptions::new(
        request(vec![2, 2], Method::Mean, vec![vec![2, 2]], vec![vec![4, 4]]),
        Compressor::None,
    );
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    pyramid(&source, Arc::clone(&store), "p", &options, &mut |_| true).unwrap();
    let err = LevelTasks::prepare(&source, Arc::clone(&store), "p", &options).unwrap_err();
    assert!(matches!(err, Error::AlreadyExists(_)), "{err:?}");
    options.resume = true;
    let tasks = LevelTasks::prepare(&source, Arc::clone(&store), "p", &options).unwrap();
    let stored = tasks.stored().unwrap();
    for (level, array) in stored.iter().zip(tasks.levels()) {
        assert_eq!(level.len() as u64, array.shard_grid().len());
    }
}

#[test]
fn arrays_without_the_record_are_refused_on_open() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let spec = crate::layout::ArraySpec::new(vec![4], "uint8", vec![2]);
    crate::Array::create(Arc::clone(&store), "p/0", &spec).unwrap();
    let err = LevelTasks::open(store, "p", 1, Vec::new())
        .unwrap_err()
        .to_string();
    assert!(err.contains("no record of how a pyramid makes it"), "{err}");
}

#[test]
fn edge_blocks_written_shard_by_shard_equal_tensorstore_on_the_whole_level() {
    use crate::pyramid::build::tests::{bits, edge_block_cases, f32_bytes, f32_values};
    let mut failures = Vec::new();
    for (shape, values, method, want) in edge_block_cases() {
        let data = f32_bytes(&values);
        let source = BufferSource::new(data.clone(), shape.clone(), "float32");
        let blocks = vec![2; shape.len()];
        let options = BuildOptions::new(
            request(
                vec![2; shape.len()],
                method,
                vec![blocks.clone(); 2],
                vec![blocks; 2],
            ),
            Compressor::None,
        );
        let store = Arc::new(MemoryStore::new());
        let tasks = LevelTasks::prepare(&source, store, "p", &options).unwrap();
        let level0 = &tasks.levels()[0];
        for shard in level0.shards() {
            let writer = level0.shard_writer(&shard).unwrap();
            writer
                .write_region_of(&shard, &data, &level0.bounds())
                .unwrap();
            writer.commit().unwrap();
        }
        let shards: Vec<_> = tasks.levels()[1].shards().collect();
        for shard in shards {
            tasks.write_shard(1, shard.index().unwrap()).unwrap();
        }
        let level = &tasks.levels()[1];
        let got = f32_values(&level.read(&level.bounds()).unwrap());
        if bits(&got) != bits(&want) {
            failures.push(format!("{method} of {shape:?}: {got:?}, want {want:?}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
