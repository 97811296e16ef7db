//! `shardwright bench`: write an array chunk by chunk and compare with compressing the same
//! chunks alone on the same threads (the compressor-only limit).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;
use shardwright::format::chunk;
use shardwright::{Array, ArraySpec, Compressor, Domain, FilesystemStore};

use crate::data::chunk_bytes;
use crate::memory;
use crate::output::out;
use crate::parse_shape;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// Array size per dimension (3-D uint16), or a shape.
    #[arg(long, default_value = "512")]
    size: String,
    /// Shard shape.
    #[arg(long, default_value = "256")]
    shards: String,
    /// Inner chunk shape.
    #[arg(long, default_value = "32")]
    chunks: String,
    /// zstd level.
    #[arg(long, default_value_t = 3)]
    level: i32,
    /// Encoder threads (default: every core).
    #[arg(long)]
    threads: Option<usize>,
    /// Runs of each case; medians are reported.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Folder for the arrays written (default: the system's temporary folder).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

struct Sample {
    seconds: f64,
    peak_growth_mib: f64,
    stored_bytes: u64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The chunk-by-chunk loop a user writes: compute each inner chunk, hand it over, commit
/// (in the background when `background`, so the next shard starts at once).
fn shardwright_loop(
    spec: &ArraySpec,
    folder: &std::path::Path,
    background: bool,
) -> Result<Sample, Box<dyn std::error::Error>> {
    let _ = std::fs::remove_dir_all(folder);
    std::fs::create_dir_all(folder)?;
    let array = Array::create(Arc::new(FilesystemStore::new(folder)), "", spec)?;
    memory::reset_peak();
    let before = memory::current_mib();
    let started = Instant::now();
    let mut stored = 0;
    let mut pending: Option<shardwright::PendingCommit> = None;
    for shard in array.shards() {
        let writer = array.shard_writer(&shard)?;
        for c in writer.inner_chunks() {
            writer.write_chunk_owned(&c, chunk_bytes(&c))?;
        }
        if background {
            // At most one commit in flight: two shards' encoded bytes at most.
            if let Some(previous) = pending.replace(writer.commit_background()) {
                stored += previous.wait()?.bytes_written;
            }
        } else {
            stored += writer.commit()?.bytes_written;
        }
    }
    if let Some(last) = pending {
        stored += last.wait()?.bytes_written;
    }
    let seconds = started.elapsed().as_secs_f64();
    let peak = memory::peak_mib() - before;
    std::fs::remove_dir_all(folder)?;
    Ok(Sample {
        seconds,
        peak_growth_mib: peak,
        stored_bytes: stored,
    })
}

/// The limit: compute and compress every chunk on the pool, store nothing.
fn compressor_alone(array: &Array, chunks: &[Domain]) -> Sample {
    let layout = array.layout();
    memory::reset_peak();
    let before = memory::current_mib();
    let started = Instant::now();
    let stored: u64 = chunks
        .par_iter()
        .map(|c| {
            let mut raw = chunk_bytes(c);
            raw.resize(layout.raw_chunk_bytes(), 0);
            chunk::encode(layout, raw)
                .expect("encodes")
                .map_or(0, |b| b.len() as u64)
        })
        .sum();
    Sample {
        seconds: started.elapsed().as_secs_f64(),
        peak_growth_mib: memory::peak_mib() - before,
        stored_bytes: stored,
    }
}

pub(crate) fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(threads) = args.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build_global()?;
    }
    let shape = parse_shape(&args.size, 3)?;
    let spec = ArraySpec::new(
        shape.clone(),
        "uint16",
        parse_shape(&args.chunks, shape.len())?,
    )
    .shards(parse_shape(&args.shards, shape.len())?)
    .compressor(Compressor::Zstd { level: args.level });
    let base = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let folder = base.join(format!("shardwright-bench-{}", std::process::id()));
    let scratch = Array::create(Arc::new(shardwright::MemoryStore::new()), "", &spec)?;
    let chunks: Vec<Domain> = scratch.chunk_grid().cells().collect();
    let raw_mib = scratch.bounds().size() as f64 * 2.0 / (1 << 20) as f64;
    let threads = rayon::current_num_threads();
    out!(
        "workload: uint16 {shape:?} = {raw_mib:.0} MiB, shards {:?}, inner chunks {:?}, zstd {}, \
         {threads} encoder threads, data computed per chunk; medians of {}",
        scratch.layout().shard_shape(),
        scratch.layout().chunk_shape(),
        args.level,
        args.repeat
    );

    let mut ours = Vec::new();
    let mut ours_bg = Vec::new();
    let mut limit = Vec::new();
    for _ in 0..args.repeat.max(1) {
        limit.push(compressor_alone(&scratch, &chunks));
        ours.push(shardwright_loop(&spec, &folder, false)?);
        ours_bg.push(shardwright_loop(&spec, &folder, true)?);
    }
    let seconds = |v: &[Sample]| median(v.iter().map(|s| s.seconds).collect());
    let growth = |v: &[Sample]| median(v.iter().map(|s| s.peak_growth_mib).collect());
    let (ours_s, ours_bg_s, limit_s) = (seconds(&ours), seconds(&ours_bg), seconds(&limit));
    let (ours_mem, ours_bg_mem, limit_mem) = (growth(&ours), growth(&ours_bg), growth(&limit));
    let ratio = limit_s / ours_s;
    let ratio_bg = limit_s / ours_bg_s;
    let stored_mib = ours[0].stored_bytes as f64 / (1 << 20) as f64;
    out!("| case | wall s | MiB/s | % of compressor-alone | peak RSS growth MiB |");
    out!("|---|---|---|---|---|");
    out!("| compute + zstd alone, {threads} threads (the limit) | {limit_s:.2} | {:.0} | 100% | {limit_mem:.0} |", raw_mib / limit_s);
    out!(
        "| shardwright loop, `commit()` | {ours_s:.2} | {:.0} | {:.0}% | {ours_mem:.0} |",
        raw_mib / ours_s,
        100.0 * ratio
    );
    out!("| shardwright loop, `commit_background()` | {ours_bg_s:.2} | {:.0} | {:.0}% | {ours_bg_mem:.0} |", raw_mib / ours_bg_s, 100.0 * ratio_bg);
    out!(
        "stored {stored_mib:.1} MiB ({:.2}× compression); one encoded shard ≈ {:.1} MiB",
        raw_mib / stored_mib,
        stored_mib / scratch.shard_grid().len() as f64
    );
    if let Some(path) = &args.json {
        let json = serde_json::json!({
            "shape": shape, "threads": threads, "repeat": args.repeat,
            "raw_mib": raw_mib, "stored_mib": stored_mib,
            "shardwright_s": ours_s, "limit_s": limit_s, "ratio_to_limit": ratio,
            "shardwright_background_s": ours_bg_s, "ratio_background_to_limit": ratio_bg,
            "shardwright_peak_growth_mib": ours_mem, "limit_peak_growth_mib": limit_mem,
            "shardwright_background_peak_growth_mib": ours_bg_mem,
            "shardwright_runs_s": ours.iter().map(|s| s.seconds).collect::<Vec<_>>(),
            "limit_runs_s": limit.iter().map(|s| s.seconds).collect::<Vec<_>>(),
        });
        std::fs::write(path, serde_json::to_string_pretty(&json)?)?;
    }
    Ok(())
}
