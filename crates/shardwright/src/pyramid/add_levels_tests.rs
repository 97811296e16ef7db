//! `add_levels` over a level 0 written by anyone: the levels against the kernel on whole
//! levels, level 0 untouched, and levels extended after level 0 grew.

use std::sync::Arc;

use super::add_levels;
use crate::domain::Domain;
use crate::error::{Error, ErrorKind};
use crate::layout::{ArraySpec, Compressor};
use crate::pyramid::build::BuildOptions;
use crate::pyramid::downsample::{downsample, output_shape, Method};
use crate::pyramid::plan::PlanRequest;
use crate::pyramid::PyramidError;
use crate::store::{InstrumentedStore, IoEvent, MemoryStore, Store};
use crate::Array;

fn data(shape: &[u64], seed: u64) -> Vec<u8> {
    let n: u64 = shape.iter().product();
    (0..n)
        .flat_map(|i| (((i + seed) * 7919 % 4093) as u16).to_ne_bytes())
        .collect()
}

/// Level 0 at `img/0`, as another tool writes it: no shardwright record.
fn level0(store: &Arc<dyn Store>, shape: &[u64]) -> Array {
    let spec = ArraySpec::new(shape.to_vec(), "uint16", vec![1, 8, 8])
        .shards(vec![1, 16, 16])
        .dimension_names(vec!["t".into(), "y".into(), "x".into()]);
    let array = Array::create(Arc::clone(store), "img/0", &spec).unwrap();
    write(&array, &data(shape, 0), &array.bounds());
    array
}

/// Write `region` of `array` from `all` (the whole array's data).
fn write(array: &Array, all: &[u8], region: &Domain) {
    for shard in array.shards_meeting(region).collect::<Vec<_>>() {
        let part = shard.intersect(region).unwrap();
        let writer = array.shard_writer(&shard).unwrap();
        writer.write_region_of(&part, all, &array.bounds()).unwrap();
        writer.commit().unwrap();
    }
}

fn options(levels: Option<usize>) -> BuildOptions {
    let request = PlanRequest {
        levels,
        ..Default::default()
    };
    BuildOptions::new(request, Compressor::Zstd { level: 1 })
}

fn assert_levels_match(levels: &[Array], factors: &[u64]) {
    let mut shape = levels[0].layout().shape().to_vec();
    let mut want = levels[0].read(&levels[0].bounds()).unwrap();
    for (k, level) in levels.iter().enumerate().skip(1) {
        want = downsample(&want, &shape, factors, "uint16", Method::Mean).unwrap();
        shape = output_shape(&shape, factors);
        assert_eq!(level.layout().shape(), &shape[..], "level {k}");
        assert_eq!(level.read(&level.bounds()).unwrap(), want, "level {k}");
    }
}

fn level0_writes(store: &InstrumentedStore) -> Vec<IoEvent> {
    store
        .events()
        .into_iter()
        .filter(|e| match e {
            IoEvent::Put(k, _) | IoEvent::PutIf(k, _) | IoEvent::Delete(k) => {
                k.starts_with("img/0/")
            }
            _ => false,
        })
        .collect()
}

#[test]
fn levels_over_a_foreign_level0_read_it_once_and_never_write_it() {
    let store = Arc::new(InstrumentedStore::new(Arc::new(MemoryStore::new())));
    let dyn_store: Arc<dyn Store> = store.clone();
    let shape = [3, 45, 70];
    let array = level0(&dyn_store, &shape);
    let keys: Vec<String> = array
        .shards()
        .map(|s| array.shard_key(s.index().unwrap()))
        .chain(["img/0/zarr.json".to_string()])
        .collect();
    let before: Vec<_> = keys.iter().map(|k| store.get(k).unwrap()).collect();
    store.reset();
    let report = add_levels(dyn_store.clone(), "img", &options(Some(4)), &mut |_| true).unwrap();
    assert_eq!(report.levels.len(), 4);
    assert_levels_match(&report.levels, &[1, 2, 2]);
    assert_eq!(report.bytes_read, 3 * 45 * 70 * 2);
    assert_eq!(report.shards_written[0], 0);
    assert!(
        level0_writes(&store).is_empty(),
        "{:?}",
        level0_writes(&store)
    );
    let after: Vec<_> = keys.iter().map(|k| store.get(k).unwrap()).collect();
    assert_eq!(before, after);
    let group: serde_json::Value =
        serde_json::from_slice(&store.get("img/zarr.json").unwrap().unwrap()).unwrap();
    let datasets = &group["attributes"]["ome"]["multiscales"][0]["datasets"];
    assert_eq!(datasets.as_array().unwrap().len(), 4);
    assert_eq!(
        group["attributes"]["shardwright"]["level0_shape"],
        serde_json::json!(shape)
    );
    // again: nothing left to do, nothing read
    store.reset();
    let again = add_levels(dyn_store, "img", &options(None), &mut |_| true).unwrap();
    assert_eq!(again.shards_written, vec![0, 0, 0, 0]);
    assert_eq!(again.bytes_read, 0);
    assert_eq!(store.counts().puts, 1); // the group metadata
}

#[test]
fn a_level0_that_grew_in_time_rewrites_only_the_new_time_points_shards() {
    let store = Arc::new(InstrumentedStore::new(Arc::new(MemoryStore::new())));
    let dyn_store: Arc<dyn Store> = store.clone();
    let array = level0(&dyn_store, &[2, 45, 71]);
    add_levels(dyn_store.clone(), "img", &options(Some(3)), &mut |_| true).unwrap();
    let grown = array.resize(vec![4, 45, 71]).unwrap();
    let new = Domain::new(vec![2, 0, 0], vec![2, 45, 71]);
    write(&grown, &data(&[4, 45, 71], 0), &new);
    store.reset();
    let report = add_levels(dyn_store, "img", &options(None), &mut |_| true).unwrap();
    assert_levels_match(&report.levels, &[1, 2, 2]);
    // level 1 (4, 23, 36) in shards (1, 16, 16): 2 × 3 per time point; level 2 (4, 12, 18)
    // in shards (1, 12, 16): 2 per time point
    assert_eq!(report.shards_written, vec![0, 12, 4]);
    assert!(level0_writes(&store).is_empty());
}

#[test]
fn a_level0_grown_along_y_from_an_odd_length_recomputes_the_partial_edge() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let array = level0(&store, &[2, 45, 70]);
    add_levels(Arc::clone(&store), "img", &options(Some(3)), &mut |_| true).unwrap();
    let grown = array.resize(vec![2, 61, 70]).unwrap();
    let all = data(&[2, 61, 70], 5);
    write(&grown, &all, &grown.bounds());
    let report = add_levels(store, "img", &options(None), &mut |_| true).unwrap();
    // the old rows were rewritten with other values too: only what the shape change
    // implies is rewritten, so compare the rows past the old level-0 edge's block
    let level1 = &report.levels[1];
    assert_eq!(level1.layout().shape(), &[2, 31, 35]);
    let full = downsample(&all, &[2, 61, 70], &[1, 2, 2], "uint16", Method::Mean).unwrap();
    let rows = Domain::new(vec![0, 22, 0], vec![2, 9, 35]);
    let mut want = Vec::new();
    for t in 0..2u64 {
        let start = ((t * 31 + 22) * 35 * 2) as usize;
        want.extend_from_slice(&full[start..start + 9 * 35 * 2]);
    }
    assert_eq!(level1.read(&rows).unwrap(), want);
}

#[test]
fn a_group_without_level0_and_levels_made_otherwise_are_refused() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let err = add_levels(Arc::clone(&store), "img", &options(None), &mut |_| true).unwrap_err();
    assert!(
        matches!(err, Error::Pyramid(PyramidError::NoLevelZero { .. })),
        "{err}"
    );
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert!(
        err.to_string()
            .contains("no level 0 in 'img': add_levels needs"),
        "{err}"
    );
    level0(&store, &[2, 45, 70]);
    add_levels(Arc::clone(&store), "img", &options(Some(3)), &mut |_| true).unwrap();
    let mut other = options(None);
    other.request.method = Some(Method::Max);
    let err = add_levels(store, "img", &other, &mut |_| true).unwrap_err();
    assert!(
        err.to_string().contains("delete the arrays above level 0"),
        "{err}"
    );
}

#[test]
fn factors_of_the_wrong_length_are_refused() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    level0(&store, &[2, 45, 70]);
    let mut bad = options(None);
    bad.request.factors = vec![2, 2];
    let err = add_levels(store, "img", &bad, &mut |_| true).unwrap_err();
    assert!(
        err.to_string()
            .contains("factors (2, 2) must have 3 values"),
        "{err}"
    );
}

#[test]
fn update_levels_rewrites_the_shards_a_rewritten_region_reaches_and_follows_a_shrink() {
    use crate::pyramid::update::{changed_regions, update_levels};
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let array = level0(&store, &[2, 45, 70]);
    let made = add_levels(Arc::clone(&store), "img", &options(Some(3)), &mut |_| true).unwrap();
    let region = Domain::new(vec![1, 10, 30], vec![1, 10, 10]);
    write(&array, &data(&[2, 45, 70], 9), &region);
    let report = update_levels(&made.levels, &[1, 2, 2], Method::Mean, &[region]).unwrap();
    assert_levels_match(&report.levels, &[1, 2, 2]);
    // level 1: x 15..20 meets two shards of 16; level 2: x 7..10, one
    assert_eq!(report.shards_written, vec![0, 2, 1]);
    assert_eq!(report.puts, 3);
    let small = array.resize(vec![2, 41, 69]).unwrap();
    let mut levels = report.levels;
    levels[0] = small;
    let dirty = changed_regions(&[2, 45, 70], &[2, 41, 69], &[1, 2, 2]);
    let shrunk = update_levels(&levels, &[1, 2, 2], Method::Mean, &dirty).unwrap();
    assert_eq!(shrunk.levels[1].layout().shape(), &[2, 21, 35]);
    assert_levels_match(&shrunk.levels, &[1, 2, 2]);
}

#[test]
fn level0_shards_written_after_the_levels_were_made_are_brought_up() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let spec = ArraySpec::new(vec![2, 45, 70], "uint16", vec![1, 8, 8])
        .shards(vec![1, 16, 16])
        .dimension_names(vec!["t".into(), "y".into(), "x".into()]);
    let array = Array::create(Arc::clone(&store), "img/0", &spec).unwrap();
    let all = data(&[2, 45, 70], 0);
    let hole = Domain::new(vec![0, 0, 0], vec![1, 16, 16]); // level 0's shard (0, 0, 0)
    for shard in array.shards().collect::<Vec<_>>() {
        if shard.index() != Some(&[0, 0, 0][..]) {
            write(&array, &all, &shard);
        }
    }
    add_levels(Arc::clone(&store), "img", &options(Some(3)), &mut |_| true).unwrap();
    // the shard was all fill value, its upper shards were not (they hold its neighbours'
    // data): written now, shape unchanged, only the group's record tells it is new
    write(&array, &all, &hole);
    let report = add_levels(store, "img", &options(None), &mut |_| true).unwrap();
    assert_levels_match(&report.levels, &[1, 2, 2]);
    assert_eq!(report.shards_written, vec![0, 1, 1]);
}

#[test]
fn levels_whose_chunks_were_clipped_to_a_small_shape_keep_them_when_level0_grows() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let array = level0(&store, &[1, 20, 20]);
    let made = add_levels(Arc::clone(&store), "img", &options(Some(3)), &mut |_| true).unwrap();
    // level 2 is (1, 5, 5): its chunks were clipped to (1, 5, 5)
    assert_eq!(made.levels[2].layout().chunk_shape(), &[1, 5, 5]);
    let grown = array.resize(vec![1, 36, 20]).unwrap();
    write(&grown, &data(&[1, 36, 20], 0), &grown.bounds());
    let report = add_levels(store, "img", &options(None), &mut |_| true).unwrap();
    assert_eq!(report.levels[2].layout().shape(), &[1, 9, 5]);
    assert_eq!(report.levels[2].layout().chunk_shape(), &[1, 5, 5]);
    assert_levels_match(&report.levels, &[1, 2, 2]);
}
