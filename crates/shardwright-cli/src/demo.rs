//! `shardwright demo [DIR]`: the main job on a built-in example. A synthetic TCZYX uint16
//! volume (a pure function of the coordinates, made chunk by chunk, never held whole) is
//! written sharded, its multiscale pyramid is built in one pass over it, and every level is
//! checked against a reference computed independently (a plain per-element mean with
//! TensorStore's rounding, straight from the function).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use shardwright::pyramid::build::{self, BuildOptions};
use shardwright::pyramid::plan::PlanRequest;
use shardwright::pyramid::source::ArraySource;
use shardwright::pyramid::Method;
use shardwright::{Array, ArraySpec, CommitStats, Compressor, Domain, FilesystemStore};

use crate::data::chunk_bytes;
use crate::interrupt::Interrupted;
use crate::output::out;
use crate::parse_shape;
use crate::progress::Shown;
use crate::Job;

const MIB: f64 = (1 << 20) as f64;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// Folder to write to (default: a new temporary folder, removed afterwards).
    dir: Option<PathBuf>,
    /// Volume shape (t, c, z, y, x).
    #[arg(long, default_value = "2,2,45,1000,1001")]
    shape: String,
    /// Shard shape.
    #[arg(long, default_value = "1,1,64,512,512")]
    shards: String,
    /// Inner chunk shape.
    #[arg(long, default_value = "1,1,32,128,128")]
    chunks: String,
    /// Pyramid levels, level 0 included.
    #[arg(long, default_value_t = 4)]
    levels: usize,
    /// No progress output.
    #[arg(long, short)]
    quiet: bool,
}

const FACTORS: [u64; 5] = [1, 1, 2, 2, 2];

/// Run the demo; the temporary folder (no DIR given) is removed however it ends.
pub(crate) fn run(args: &Args, job: &Job) -> Result<(), Box<dyn std::error::Error>> {
    let shape = parse_shape(&args.shape, 5)?;
    let shards = parse_shape(&args.shards, 5)?;
    let chunks = parse_shape(&args.chunks, 5)?;
    let folder = match &args.dir {
        Some(dir) => dir.clone(),
        None => std::env::temp_dir().join(format!("shardwright-demo-{}", std::process::id())),
    };
    if folder.join("volume.zarr").exists() || folder.join("pyramid.zarr").exists() {
        return Err(format!(
            "'{}' holds a demo already (volume.zarr, pyramid.zarr); remove it or name another \
             folder",
            folder.display()
        )
        .into());
    }
    let result = demo(args, job, &folder, [&shape, &shards, &chunks]);
    if args.dir.is_none() && folder.exists() {
        std::fs::remove_dir_all(&folder)?;
    }
    if job.stopped() {
        return Err(Interrupted("the demo stopped").into());
    }
    result
}

/// Write the volume of `shapes` (shape, shards, chunks) in `folder`, build its pyramid,
/// verify it.
fn demo(
    args: &Args,
    job: &Job,
    folder: &std::path::Path,
    [shape, shards, chunks]: [&Vec<u64>; 3],
) -> Result<(), Box<dyn std::error::Error>> {
    let store = Arc::new(FilesystemStore::new(folder));
    let volume = write_volume(&store, shape, shards, chunks, job)?;

    let request = PlanRequest {
        factors: FACTORS.to_vec(),
        levels: Some(args.levels),
        method: Some(Method::Mean),
        chunks: Some(vec![chunks.clone()]),
        shards: Some(vec![shards.clone()]),
        axes: None,
    };
    let options = BuildOptions::new(request, Compressor::Zstd { level: 3 });
    let mut shown = Shown::new(args.quiet);
    let report = build::pyramid(
        &ArraySource::new(volume),
        store.clone(),
        "pyramid.zarr",
        &options,
        &mut |p| {
            shown.update(p);
            !job.stop()
        },
    );
    shown.clear();
    let report = report?;
    shown.finish("pyramid", &report)?;

    let started = Instant::now();
    for k in 0..report.levels.len() {
        verify_level(&report.levels, k)?;
    }
    out!(
        "verified: every element of the {} levels equals the reference ({:.1} s)",
        report.levels.len(),
        started.elapsed().as_secs_f64()
    );
    if args.dir.is_some() {
        out!(
            "the image stays at {}; open it with zarr.open_group({:?}) or `shardwright info`",
            folder.join("pyramid.zarr").display(),
            folder.join("pyramid.zarr")
        );
    }
    Ok(())
}

/// Write the volume shard by shard, inner chunk by inner chunk.
fn write_volume(
    store: &Arc<FilesystemStore>,
    shape: &[u64],
    shards: &[u64],
    chunks: &[u64],
    job: &Job,
) -> Result<Array, Box<dyn std::error::Error>> {
    let names = ["t", "c", "z", "y", "x"].map(String::from).to_vec();
    let spec = ArraySpec::new(shape.to_vec(), "uint16", chunks.to_vec())
        .shards(shards.to_vec())
        .compressor(Compressor::Zstd { level: 3 })
        .dimension_names(names);
    let array = Array::create(store.clone(), "volume.zarr", &spec)?;
    let started = Instant::now();
    let mut total = CommitStats::default();
    for shard in array.shards() {
        if job.stop() {
            return Err(Interrupted("the demo stopped").into());
        }
        let writer = array.shard_writer(&shard)?;
        for chunk in writer.inner_chunks() {
            writer.write_chunk_owned(&chunk, chunk_bytes(&chunk))?;
        }
        total += writer.commit()?;
    }
    let raw = array.bounds().size() as f64 * 2.0 / MIB;
    out!(
        "volume: {shape:?} uint16 ({raw:.0} MiB) written in {:.2} s: {} shards, {} puts, {} \
         gets, {:.1} MiB stored",
        started.elapsed().as_secs_f64(),
        array.shard_grid().len(),
        total.puts,
        total.gets,
        total.bytes_written as f64 / MIB
    );
    Ok(array)
}

/// The plain mean of each block of `FACTORS` of `below` (elements of shape `below_shape`),
/// over the elements present at the edges, rounded to nearest with ties to even: an
/// output of `shape` elements. Written for clarity, apart from the kernels it checks.
fn naive_mean(below: &[u16], below_shape: &[u64], shape: &[u64]) -> Vec<u16> {
    let b: Vec<usize> = below_shape.iter().map(|&n| n as usize).collect();
    let f: Vec<usize> = FACTORS.iter().map(|&n| n as usize).collect();
    let s: Vec<usize> = shape.iter().map(|&n| n as usize).collect();
    let mut out = Vec::with_capacity(s.iter().product());
    for t in 0..s[0] {
        for c in 0..s[1] {
            for z in 0..s[2] {
                for y in 0..s[3] {
                    for x in 0..s[4] {
                        let (mut sum, mut n) = (0u64, 0u64);
                        for bz in z * f[2]..((z + 1) * f[2]).min(b[2]) {
                            for by in y * f[3]..((y + 1) * f[3]).min(b[3]) {
                                for bx in x * f[4]..((x + 1) * f[4]).min(b[4]) {
                                    let i = (((t * b[1] + c) * b[2] + bz) * b[3] + by) * b[4] + bx;
                                    sum += u64::from(below[i]);
                                    n += 1;
                                }
                            }
                        }
                        let (q, r) = (sum / n, sum % n);
                        let up = 2 * r > n || (2 * r == n && q % 2 == 1);
                        out.push((q + u64::from(up)) as u16);
                    }
                }
            }
        }
    }
    out
}

fn as_u16(bytes: &[u8]) -> Vec<u16> {
    bytes
        .chunks_exact(2)
        .map(|b| u16::from_ne_bytes([b[0], b[1]]))
        .collect()
}

/// Compare level `k` with the reference, piece by piece (a level-0 footprint of 8 MiB):
/// level 0 with the function itself, each next level with the plain mean of the level
/// below as stored (so each level is checked on its own).
fn verify_level(levels: &[Array], k: usize) -> Result<(), Box<dyn std::error::Error>> {
    assert!(
        FACTORS[..2].iter().all(|f| *f == 1),
        "the reference keeps t and c"
    );
    let level = &levels[k];
    let piece: Vec<u64> = [1, 1, 64u64, 256, 256]
        .iter()
        .zip(FACTORS)
        .map(|(p, f)| (p / f.pow(k as u32)).max(1))
        .collect();
    let grid = shardwright::Grid::new(level.layout().shape().to_vec(), piece)?;
    for region in grid.cells() {
        let got = level.read(&region)?;
        let want: Vec<u16> = if k == 0 {
            as_u16(&chunk_bytes(&region))
        } else {
            let below_array = &levels[k - 1];
            let origin: Vec<u64> = region
                .origin()
                .iter()
                .zip(FACTORS)
                .map(|(o, f)| o * f)
                .collect();
            let stop: Vec<u64> = region
                .stop()
                .iter()
                .zip(FACTORS)
                .zip(below_array.layout().shape())
                .map(|((s, f), n)| (s * f).min(*n))
                .collect();
            let below_region = Domain::new(
                origin.clone(),
                stop.iter().zip(&origin).map(|(s, o)| s - o).collect(),
            );
            let below = as_u16(&below_array.read(&below_region)?);
            naive_mean(&below, below_region.shape(), region.shape())
        };
        if as_u16(&got) != want {
            return Err(format!(
                "verification failed: level {k} differs from the reference in {region}"
            )
            .into());
        }
    }
    Ok(())
}
