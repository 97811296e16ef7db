//! The one-pass driver against the kernels run on whole levels, its I/O, resume and errors.

use std::sync::Arc;

use super::{copy, pyramid, BuildOptions};
use crate::domain::Domain;
use crate::error::Error;
use crate::layout::Compressor;
use crate::pyramid::downsample::{downsample, output_shape, Method};
use crate::pyramid::plan::PlanRequest;
use crate::pyramid::source::{source_error, BufferSource, Source};
use crate::pyramid::PyramidError;
use crate::store::{InstrumentedStore, MemoryStore, Store};

fn data(shape: &[u64]) -> Vec<u8> {
    let n: u64 = shape.iter().product();
    (0..n)
        .flat_map(|i| ((i * 7919 % 4093) as u16).to_ne_bytes())
        .collect()
}

fn options(factors: Vec<u64>, levels: usize, chunks: Vec<u64>, shards: Vec<u64>) -> BuildOptions {
    let request = PlanRequest {
        factors,
        levels: Some(levels),
        method: Some(Method::Mean),
        chunks: Some(vec![chunks]),
        shards: Some(vec![shards]),
        axes: Some(vec!["c".into(), "y".into(), "x".into()]),
    };
    BuildOptions::new(request, Compressor::Zstd { level: 1 })
}

/// Each level, computed from the whole level before with the kernel.
fn whole_levels(input: &[u8], shape: &[u64], factors: &[u64], levels: usize) -> Vec<Vec<u8>> {
    let mut out = vec![input.to_vec()];
    let mut shape = shape.to_vec();
    for _ in 1..levels {
        let next =
            downsample(out.last().unwrap(), &shape, factors, "uint16", Method::Mean).unwrap();
        shape = output_shape(&shape, factors);
        out.push(next);
    }
    out
}

#[test]
fn levels_equal_the_kernel_on_whole_levels_with_one_put_per_shard() {
    let shape = vec![3, 45, 70];
    let source = BufferSource::new(data(&shape), shape.clone(), "uint16");
    let store = Arc::new(InstrumentedStore::new(Arc::new(MemoryStore::new())));
    let opts = options(vec![1, 2, 3], 4, vec![1, 4, 6], vec![1, 8, 12]);
    let report = pyramid(&source, store.clone(), "p", &opts, &mut |_| true).unwrap();
    let want = whole_levels(&data(&shape), &shape, &[1, 2, 3], 4);
    for (k, level) in report.levels.iter().enumerate() {
        assert_eq!(level.read(&level.bounds()).unwrap(), want[k], "level {k}");
    }
    let shards: u64 = report.levels.iter().map(|a| a.shard_grid().len()).sum();
    assert_eq!(report.shards_written.iter().sum::<u64>(), shards);
    assert_eq!(report.bytes_read, data(&shape).len() as u64);
    let counts = store.counts();
    // one put per shard, one zarr.json per level and the group's; no gets of shards
    assert_eq!(report.puts, shards);
    assert_eq!(report.gets, 0);
    assert!(counts.puts >= shards);
    assert!(store.get("p/zarr.json").unwrap().is_some());
}

#[test]
fn a_stopped_build_resumes_writing_only_the_missing_shards() {
    let shape = vec![2, 64, 64];
    let source = BufferSource::new(data(&shape), shape.clone(), "uint16");
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let mut opts = options(vec![1, 2, 2], 3, vec![1, 8, 8], vec![1, 16, 16]);
    opts.commits_in_flight = 1;
    let mut seen = 0;
    let err = pyramid(&source, store.clone(), "p", &opts, &mut |_| {
        seen += 1;
        seen < 5
    })
    .unwrap_err();
    assert_eq!(err, Error::Pyramid(PyramidError::Stopped));
    assert!(
        store.get("p/zarr.json").unwrap().is_none(),
        "the group comes last"
    );
    let again = pyramid(&source, store.clone(), "p", &opts, &mut |_| true).unwrap_err();
    assert!(matches!(again, Error::AlreadyExists(_)) || again.to_string().contains("exists"));
    opts.resume = true;
    let report = pyramid(&source, store.clone(), "p", &opts, &mut |_| true).unwrap();
    let skipped: u64 = report.shards_skipped.iter().sum();
    let total: u64 = report.levels.iter().map(|a| a.shard_grid().len()).sum();
    assert!(skipped >= 5, "{skipped}");
    assert_eq!(report.shards_written.iter().sum::<u64>() + skipped, total);
    assert_eq!(report.puts + skipped, total);
    let want = whole_levels(&data(&shape), &shape, &[1, 2, 2], 3);
    for (k, level) in report.levels.iter().enumerate() {
        assert_eq!(level.read(&level.bounds()).unwrap(), want[k], "level {k}");
    }
    // resuming a finished job reads nothing
    let done = pyramid(&source, store.clone(), "p", &opts, &mut |_| true).unwrap();
    assert_eq!((done.bytes_read, done.puts), (0, 0));
}

#[test]
fn resume_finds_the_stored_shards_by_listing_each_level_once() {
    let shape = vec![2, 64, 64];
    let source = BufferSource::new(data(&shape), shape.clone(), "uint16");
    let store = Arc::new(InstrumentedStore::new(Arc::new(MemoryStore::new())));
    let mut opts = options(vec![1, 2, 2], 3, vec![1, 4, 4], vec![1, 4, 4]);
    opts.commits_in_flight = 1;
    let mut seen = 0;
    let stopped = pyramid(&source, store.clone(), "p", &opts, &mut |_| {
        seen += 1;
        seen < 5
    });
    assert_eq!(stopped.unwrap_err(), Error::Pyramid(PyramidError::Stopped));
    store.reset();
    opts.resume = true;
    let report = pyramid(&source, store.clone(), "p", &opts, &mut |_| true).unwrap();
    assert!(report.shards_skipped.iter().sum::<u64>() >= 5);
    let counts = store.counts();
    // one listing per level, no size query per grid cell (2×16×16 + 2×8×8 + 2×4×4 cells)
    assert_eq!((counts.lists, counts.sizes), (3, 0), "{counts:?}");
}

#[test]
fn resume_refuses_other_settings() {
    let shape = vec![1, 16, 16];
    let source = BufferSource::new(data(&shape), shape.clone(), "uint16");
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let opts = options(vec![1, 2, 2], 2, vec![1, 4, 4], vec![1, 8, 8]);
    pyramid(&source, store.clone(), "p", &opts, &mut |_| true).unwrap();
    let mut other = options(vec![1, 2, 2], 2, vec![1, 2, 2], vec![1, 8, 8]);
    other.resume = true;
    let err = pyramid(&source, store.clone(), "p", &other, &mut |_| true).unwrap_err();
    assert!(
        err.to_string().contains("cannot resume into 'p/0'"),
        "{err}"
    );
    // the same shapes made another way: another method, other axes
    let mut other = opts.clone();
    other.resume = true;
    other.request.method = Some(Method::Max);
    let err = pyramid(&source, store.clone(), "p", &other, &mut |_| true).unwrap_err();
    assert!(err.to_string().contains(r#""method":"mean""#), "{err}");
    assert!(err.to_string().contains(r#""method":"max""#), "{err}");
    let mut other = opts.clone();
    other.resume = true;
    other.request.axes = Some(vec!["z".into(), "y".into(), "x".into()]);
    let err = pyramid(&source, store.clone(), "p", &other, &mut |_| true).unwrap_err();
    assert!(err.to_string().contains("its axes are"), "{err}");
    // the same settings resume (a finished job: nothing to do)
    let mut same = opts.clone();
    same.resume = true;
    let done = pyramid(&source, store.clone(), "p", &same, &mut |_| true).unwrap();
    assert_eq!(done.puts, 0);
    // an array made by something else has no record of how: refused
    let spec = crate::ArraySpec::new(vec![1, 8, 8], "uint16", vec![1, 4, 4])
        .shards(vec![1, 8, 8])
        .dimension_names(vec!["c".into(), "y".into(), "x".into()]);
    crate::Array::create(store.clone(), "q/0", &spec).unwrap();
    let mut one = options(vec![1, 2, 2], 1, vec![1, 4, 4], vec![1, 8, 8]);
    one.resume = true;
    let small = BufferSource::new(data(&[1, 8, 8]), vec![1, 8, 8], "uint16");
    let err = pyramid(&small, store, "q", &one, &mut |_| true).unwrap_err();
    assert!(
        err.to_string().contains("no record of how it was made"),
        "{err}"
    );
}

struct Failing;

impl Source for Failing {
    fn shape(&self) -> Vec<u64> {
        vec![8, 8]
    }
    fn data_type(&self) -> String {
        "uint8".into()
    }
    fn read(&self, region: &Domain) -> Result<Vec<u8>, PyramidError> {
        Err(source_error(region, "the disk is on fire"))
    }
}

#[test]
fn a_failing_source_is_an_error_naming_the_region() {
    let request = PlanRequest {
        factors: vec![2, 2],
        ..Default::default()
    };
    let opts = BuildOptions::new(request, Compressor::None);
    let err = pyramid(
        &Failing,
        Arc::new(MemoryStore::new()),
        "p",
        &opts,
        &mut |_| true,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "reading the source failed at [0:8, 0:8]: the disk is on fire"
    );
}

#[test]
fn copy_rechunks_and_reshards() {
    let shape = vec![3, 10, 11];
    let source = BufferSource::new(data(&shape), shape.clone(), "uint16");
    let mut opts = options(vec![], 1, vec![1, 3, 4], vec![1, 6, 8]);
    opts.request.axes = None;
    let report = copy(
        &source,
        Arc::new(MemoryStore::new()),
        "c",
        &opts,
        &mut |_| true,
    )
    .unwrap();
    let array = &report.levels[0];
    assert_eq!(array.layout().shard_shape(), &[1, 6, 8]);
    assert_eq!(array.read(&array.bounds()).unwrap(), data(&shape));
}

/// A source that decodes whole chunks of `grain`, and records each region it is asked for.
struct Chunked {
    inner: BufferSource,
    grain: Vec<u64>,
    reads: std::sync::Mutex<Vec<Domain>>,
}

impl Chunked {
    fn new(shape: &[u64], grain: &[u64]) -> Self {
        Self {
            inner: BufferSource::new(data(shape), shape.to_vec(), "uint16"),
            grain: grain.to_vec(),
            reads: std::sync::Mutex::default(),
        }
    }

    /// How many times each region was read, most first.
    fn read_counts(&self) -> Vec<usize> {
        let reads = self.reads.lock().unwrap();
        let mut counts: std::collections::HashMap<&Domain, usize> = Default::default();
        for r in reads.iter() {
            *counts.entry(r).or_default() += 1;
        }
        let mut out: Vec<usize> = counts.into_values().collect();
        out.sort_unstable_by(|a, b| b.cmp(a));
        out
    }
}

impl Source for Chunked {
    fn shape(&self) -> Vec<u64> {
        self.inner.shape()
    }
    fn data_type(&self) -> String {
        self.inner.data_type()
    }
    fn read(&self, region: &Domain) -> Result<Vec<u8>, PyramidError> {
        self.reads.lock().unwrap().push(region.clone());
        self.inner.read(region)
    }
    fn read_grain(&self) -> Option<Vec<u64>> {
        Some(self.grain.clone())
    }
}

fn cells(shape: &[u64], grain: &[u64]) -> usize {
    shape
        .iter()
        .zip(grain)
        .map(|(s, g)| s.div_ceil(*g))
        .product::<u64>() as usize
}

#[test]
fn source_chunks_larger_than_the_blocks_are_each_read_once() {
    // like a Zarr v2 volume chunked (64, 512, 512) written as chunks of (32, 128, 128)
    let shape = vec![32, 96, 128];
    let grain = vec![16, 64, 64];
    let source = Chunked::new(&shape, &grain);
    let opts = options(vec![2, 2, 2], 3, vec![8, 16, 16], vec![16, 32, 32]);
    let store = Arc::new(MemoryStore::new());
    let report = pyramid(&source, store, "p", &opts, &mut |_| true).unwrap();
    let want = whole_levels(&data(&shape), &shape, &[2, 2, 2], 3);
    for (k, level) in report.levels.iter().enumerate() {
        assert_eq!(level.read(&level.bounds()).unwrap(), want[k], "level {k}");
    }
    // one read per source chunk, each one whole chunk
    let reads = source.reads.lock().unwrap().clone();
    assert_eq!(reads.len(), cells(&shape, &grain), "{reads:?}");
    assert!(reads
        .iter()
        .all(|r| r.origin().iter().zip(&grain).all(|(o, g)| o % g == 0)));
    assert_eq!(source.read_counts()[0], 1);
    assert_eq!(report.bytes_read, data(&shape).len() as u64);
    // the chunks held are in the memory bound: the cells meeting one level-2 block seen at
    // level 0, (32, 64, 64) → 2 × 1 × 1 cells of 16·64·64 uint16
    let plan = opts.request.plan(&shape, "uint16").unwrap();
    let writers = plan.memory_bound(2, rayon::current_num_threads(), 4);
    assert_eq!(report.memory_bound - writers, 2 * 16 * 64 * 64 * 2);
}

#[test]
fn a_copy_reads_each_source_chunk_once_and_chunks_that_do_not_tile_a_bounded_number_of_times() {
    let shape = vec![20, 50, 64];
    let grain = vec![10, 64, 64];
    let source = Chunked::new(&shape, &grain);
    let opts = options(vec![1, 1, 1], 1, vec![5, 8, 8], vec![10, 32, 64]);
    let report = copy(
        &source,
        Arc::new(MemoryStore::new()),
        "c",
        &opts,
        &mut |_| true,
    )
    .unwrap();
    assert_eq!(
        report.levels[0].read(&report.levels[0].bounds()).unwrap(),
        data(&shape)
    );
    assert_eq!(source.read_counts()[0], 1);
    assert_eq!(
        source.reads.lock().unwrap().len(),
        cells(&shape, &grain) + 1
    );

    // cells straddling the blocks' stretches: still exact, each cell read a few times at most
    // (block by block it would be 5·8·8 = 320 times for the biggest)
    let odd = Chunked::new(&shape, &[7, 30, 30]);
    let report = pyramid(
        &odd,
        Arc::new(MemoryStore::new()),
        "p",
        &options(vec![1, 2, 2], 2, vec![5, 8, 8], vec![10, 16, 16]),
        &mut |_| true,
    )
    .unwrap();
    let want = whole_levels(&data(&shape), &shape, &[1, 2, 2], 2);
    for (k, level) in report.levels.iter().enumerate() {
        assert_eq!(level.read(&level.bounds()).unwrap(), want[k], "level {k}");
    }
    let most = odd.read_counts()[0];
    assert!(most <= 4, "a cell read {most} times");
}

#[test]
fn a_resumed_build_reads_only_the_source_chunks_missing_shards_need() {
    let shape = vec![16, 64, 64];
    let grain = vec![16, 32, 64];
    let source = Chunked::new(&shape, &grain);
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let mut opts = options(vec![1, 2, 2], 2, vec![4, 8, 8], vec![8, 16, 16]);
    opts.commits_in_flight = 1;
    let mut seen = 0;
    let stopped = pyramid(&source, store.clone(), "p", &opts, &mut |_| {
        seen += 1;
        seen < 3
    });
    assert_eq!(stopped.unwrap_err(), Error::Pyramid(PyramidError::Stopped));
    opts.resume = true;
    let again = Chunked::new(&shape, &grain);
    let report = pyramid(&again, store, "p", &opts, &mut |_| true).unwrap();
    let want = whole_levels(&data(&shape), &shape, &[1, 2, 2], 2);
    for (k, level) in report.levels.iter().enumerate() {
        assert_eq!(level.read(&level.bounds()).unwrap(), want[k], "level {k}");
    }
    assert_eq!(again.read_counts()[0], 1);
    assert!(again.reads.lock().unwrap().len() <= cells(&shape, &grain) + 1);
}

/// A float32 array's shape and values, a method, and level 1 as TensorStore makes it.
pub(in crate::pyramid) type EdgeCase = (Vec<u64>, Vec<f32>, Method, Vec<f32>);

/// Float32 arrays whose level 1, built from blocks of 2 per axis, has edge blocks that are
/// blocks of their own (issue 22, item 9).
pub(in crate::pyramid) fn edge_block_cases() -> Vec<EdgeCase> {
    let nan = f32::NAN;
    let mut corner = vec![0.0; 9];
    corner[8] = nan;
    // (2, 2, 3): the blocks at x = 2 are (2, 2, 1); TensorStore gathers them in C order
    let column = |c: [f32; 4]| -> Vec<f32> {
        let mut v = vec![0.0; 12];
        for (i, x) in c.into_iter().enumerate() {
            v[i * 3 + 2] = x;
        }
        v
    };
    vec![
        // one NaN alone in its block: skipped, the block's min and max are ±inf
        (
            vec![3, 3],
            corner.clone(),
            Method::Min,
            vec![0.0, 0.0, 0.0, f32::INFINITY],
        ),
        (
            vec![3, 3],
            corner,
            Method::Max,
            vec![0.0, 0.0, 0.0, f32::NEG_INFINITY],
        ),
        // libstdc++'s sort of [-1, nan, -1, -3] (not of [-1, -1, nan, -3]) ends -3 first
        (
            vec![2, 2, 3],
            column([-1.0, nan, -1.0, -3.0]),
            Method::Mode,
            vec![0.0, -3.0],
        ),
        // nth_element of [-1, -1, nan, 2] (not of [-1, nan, -1, 2]) picks the NaN
        (
            vec![2, 2, 3],
            column([-1.0, -1.0, nan, 2.0]),
            Method::Median,
            vec![0.0, nan],
        ),
    ]
}

/// Bits of float32s, so that NaNs compare by position.
pub(in crate::pyramid) fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

pub(in crate::pyramid) fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

pub(in crate::pyramid) fn f32_values(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[test]
fn edge_blocks_built_block_by_block_equal_tensorstore_on_the_whole_level() {
    let mut failures = Vec::new();
    for (shape, values, method, want) in edge_block_cases() {
        let source = BufferSource::new(f32_bytes(&values), shape.clone(), "float32");
        let blocks = vec![2; shape.len()];
        let request = PlanRequest {
            factors: vec![2; shape.len()],
            levels: Some(2),
            method: Some(method),
            chunks: Some(vec![blocks.clone()]),
            shards: Some(vec![blocks]),
            axes: None,
        };
        let opts = BuildOptions::new(request, Compressor::None);
        let store = Arc::new(MemoryStore::new());
        let report = pyramid(&source, store, "p", &opts, &mut |_| true).unwrap();
        let level = &report.levels[1];
        let got = f32_values(&level.read(&level.bounds()).unwrap());
        if bits(&got) != bits(&want) {
            failures.push(format!("{method} of {shape:?}: {got:?}, want {want:?}"));
        }
        // and the kernel on the whole level agrees
        let whole = downsample(
            &f32_bytes(&values),
            &shape,
            &[2; 3][..shape.len()],
            "float32",
            method,
        );
        assert_eq!(bits(&f32_values(&whole.unwrap())), bits(&want), "{method}");
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
