//! The image writer against the one-pass pyramid of the same data: every level equal, in
//! any order level 0 is written, with chunks that do or do not nest in the factors,
//! written whole, in part, twice, or not at all, and continued after an abandoned run.

use std::sync::Arc;

use super::Image;
use crate::pyramid::build::{self, BuildOptions};
use crate::pyramid::downsample::Method;
use crate::pyramid::plan::PlanRequest;
use crate::pyramid::source::BufferSource;
use crate::store::{InstrumentedStore, MemoryStore, Store};
use crate::{Array, Compressor, Domain};

fn options(chunks: &[u64], shards: &[u64], levels: usize, method: Method) -> BuildOptions {
    let request = PlanRequest {
        factors: vec![2, 2],
        levels: Some(levels),
        method: Some(method),
        chunks: Some(vec![chunks.to_vec()]),
        shards: Some(vec![shards.to_vec()]),
        axes: None,
    };
    BuildOptions::new(request, Compressor::Zstd { level: 1 })
}

/// uint16 data of `shape` (2-d) that differs everywhere.
fn data(shape: &[u64]) -> Vec<u8> {
    let n = shape.iter().product::<u64>();
    (0..n)
        .flat_map(|i| ((i * 7919 + i / 13) as u16 % 4099).to_ne_bytes())
        .collect()
}

/// The levels the one-pass pyramid makes of `values`.
fn reference(values: &[u8], shape: &[u64], options: &BuildOptions) -> Vec<Vec<u8>> {
    let source = BufferSource::new(values.to_vec(), shape.to_vec(), "uint16");
    let report = build::pyramid(
        &source,
        Arc::new(MemoryStore::new()),
        "r",
        options,
        &mut |_| true,
    )
    .unwrap();
    report
        .levels
        .iter()
        .map(|a| a.read(&a.bounds()).unwrap())
        .collect()
}

/// Write `shard` of `level0` from `values` (all of level 0) chunk by chunk.
fn write_shard(level0: &Array, shard: &Domain, values: &[u8]) {
    let writer = level0.shard_writer(shard).unwrap();
    let all = level0.bounds();
    writer.write_region_of(shard, values, &all).unwrap();
    writer.commit().unwrap();
}

fn levels_of(report: &super::ImageReport) -> Vec<Vec<u8>> {
    report
        .levels
        .iter()
        .map(|a| a.read(&a.bounds()).unwrap())
        .collect()
}

#[test]
fn every_order_and_chunking_gives_the_one_pass_pyramid() {
    let shape = [37u64, 29];
    let values = data(&shape);
    for (chunks, shards) in [([4, 4], [8, 8]), ([3, 5], [6, 10]), ([1, 4], [2, 8])] {
        for method in [Method::Mean, Method::Median, Method::Stride] {
            let options = options(&chunks, &shards, 4, method);
            let expected = reference(&values, &shape, &options);
            for order in ["nested", "c", "reversed"] {
                let image = Image::create(
                    Arc::new(MemoryStore::new()),
                    "i",
                    &shape,
                    "uint16",
                    None,
                    &options,
                )
                .unwrap();
                let level0 = image.levels()[0].clone();
                let shards: Vec<Domain> = match order {
                    "nested" => image.shards_in_order().unwrap(),
                    "c" => level0.shards().collect(),
                    _ => level0
                        .shards()
                        .collect::<Vec<_>>()
                        .into_iter()
                        .rev()
                        .collect(),
                };
                for shard in &shards {
                    write_shard(&level0, shard, &values);
                }
                let report = image.finish().unwrap();
                assert_eq!(report.rewritten, 0);
                let got = levels_of(&report);
                assert_eq!(got, expected, "chunks {chunks:?} {method:?} order {order}");
            }
        }
    }
}

#[test]
fn each_coarser_shard_is_stored_once_and_level0_is_never_read() {
    let shape = [64u64, 64];
    let values = data(&shape);
    let options = options(&[8, 8], &[16, 16], 3, Method::Mean);
    let store = Arc::new(InstrumentedStore::new(Arc::new(MemoryStore::new())));
    let image = Image::create(store.clone(), "i", &shape, "uint16", None, &options).unwrap();
    let level0 = image.levels()[0].clone();
    for shard in level0.shards() {
        write_shard(&level0, &shard, &values);
    }
    let report = image.finish().unwrap();
    let counts = store.counts();
    // 16 + 4 + 1 shards, 3 level arrays and the group twice; nothing read back
    assert_eq!(report.shards_written, vec![16, 4, 1]);
    assert_eq!(counts.puts, 16 + 4 + 1 + 3 + 2);
    let reads: Vec<_> = store
        .events()
        .into_iter()
        .enumerate()
        .filter(|(_, e)| format!("{e:?}").contains("Get"))
        .collect();
    assert_eq!((counts.gets, counts.range_gets), (0, 0), "{reads:?}");
}

#[test]
fn parts_of_chunks_twice_written_chunks_and_unwritten_shards() {
    let shape = [32u64, 32];
    let values = data(&shape);
    let options = options(&[4, 4], &[8, 8], 3, Method::Mean);
    let image = Image::create(
        Arc::new(MemoryStore::new()),
        "i",
        &shape,
        "uint16",
        None,
        &options,
    )
    .unwrap();
    let level0 = image.levels()[0].clone();
    let all = level0.bounds();
    let mut expected_values = vec![0u8; values.len()];
    let mut shards: Vec<Domain> = level0.shards().collect();
    // the last shard is never written: it reads as the fill value
    let skipped = shards.pop().unwrap();
    for shard in &shards {
        // in two unaligned halves: chunks written in part, completed at commit
        let writer = level0.shard_writer(shard).unwrap();
        let o = shard.origin();
        let top = Domain::new(o.to_vec(), vec![3, 8]);
        let rest = Domain::new(vec![o[0] + 3, o[1]], vec![5, 8]);
        writer.write_region_of(&top, &values, &all).unwrap();
        writer.commit().unwrap();
        let writer = level0.shard_writer(shard).unwrap();
        writer.write_region_of(&rest, &values, &all).unwrap();
        writer.commit().unwrap();
    }
    // the first shard again, other values: its levels are recomputed at finish
    let first = shards[0].clone();
    let doubled: Vec<u8> = values
        .chunks(2)
        .flat_map(|v| (u16::from_ne_bytes([v[0], v[1]]) / 2).to_ne_bytes())
        .collect();
    write_shard(&level0, &first, &doubled);
    for shard in &shards {
        let src = if *shard == first { &doubled } else { &values };
        let part = super::order::cut(src, &all, shard, 2).unwrap();
        let at = shard.relative_to(&all).unwrap();
        crate::domain::copy::copy_block(
            &part,
            shard.shape(),
            &[0, 0],
            &mut expected_values,
            all.shape(),
            at.origin(),
            shard.shape(),
            2,
        );
    }
    let report = image.finish().unwrap();
    assert!(report.rewritten > 0);
    let expected = reference(&expected_values, &shape, &options);
    assert_eq!(levels_of(&report), expected);
    assert!(report.levels[0]
        .stored_shards()
        .unwrap()
        .unwrap()
        .iter()
        .all(|i| i != skipped.index().unwrap()));
}

#[test]
fn an_abandoned_image_opened_again_finishes_the_same() {
    let shape = [40u64, 24];
    let values = data(&shape);
    let options = options(&[4, 4], &[8, 8], 3, Method::Mean);
    let expected = reference(&values, &shape, &options);
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let image = Image::create(Arc::clone(&store), "i", &shape, "uint16", None, &options).unwrap();
    let level0 = image.levels()[0].clone();
    let order = image.shards_in_order().unwrap();
    for shard in order.iter().take(7) {
        write_shard(&level0, shard, &values);
    }
    // a writer dropped half way: nothing of it reaches the levels
    let writer = level0.shard_writer(&order[7]).unwrap();
    writer
        .write_region_of(&order[7], &values, &level0.bounds())
        .unwrap();
    drop(writer);
    image.abandon().unwrap();
    assert!(store.get("i/zarr.json").unwrap().is_some());
    let image = Image::open(Arc::clone(&store), "i").unwrap();
    let left = image.shards_in_order().unwrap();
    assert_eq!(left.len(), order.len() - 7);
    let level0 = image.levels()[0].clone();
    for shard in &left {
        write_shard(&level0, shard, &values);
    }
    let report = image.finish().unwrap();
    assert_eq!(levels_of(&report), expected);
    let group: serde_json::Value =
        serde_json::from_slice(&store.get("i/zarr.json").unwrap().unwrap()).unwrap();
    assert_eq!(group["attributes"]["ome"]["version"], "0.5");
}
