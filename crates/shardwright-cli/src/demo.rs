//! `shardwright demo`: write the example array chunk by chunk and verify every element.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use shardwright::{Array, ArraySpec, CommitStats, Compressor, FilesystemStore};

use crate::data::chunk_bytes;
use crate::parse_shape;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// Folder to write the array to (default: a new temporary folder, removed afterwards).
    #[arg(long)]
    path: Option<PathBuf>,
    /// Array shape: one value per dimension, or one value for all three.
    #[arg(long, default_value = "200,256,256")]
    shape: String,
    /// Shard shape.
    #[arg(long, default_value = "128")]
    shards: String,
    /// Inner chunk shape.
    #[arg(long, default_value = "32")]
    chunks: String,
}

pub(crate) fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let shape = parse_shape(&args.shape, args.shape.split(',').count().max(3))?;
    let rank = shape.len();
    let shards = parse_shape(&args.shards, rank)?;
    let chunks = parse_shape(&args.chunks, rank)?;
    let temp;
    let folder = match &args.path {
        Some(path) => path.clone(),
        None => {
            temp = std::env::temp_dir().join(format!("shardwright-demo-{}", std::process::id()));
            temp.clone()
        }
    };
    let spec = ArraySpec::new(shape.clone(), "uint16", chunks)
        .shards(shards)
        .compressor(Compressor::Zstd { level: 3 });
    std::fs::create_dir_all(&folder)?;
    let array = Array::create(Arc::new(FilesystemStore::new(&folder)), "", &spec)?;
    println!(
        "writing {shape:?} uint16 to {} (shards {:?}, inner chunks {:?})",
        folder.display(),
        array.layout().shard_shape(),
        array.layout().chunk_shape()
    );

    let started = Instant::now();
    let mut total = CommitStats::default();
    let mut shards_written = 0;
    for shard in array.shards() {
        let writer = array.shard_writer(&shard)?;
        for chunk in writer.inner_chunks() {
            writer.write_chunk_owned(&chunk, chunk_bytes(&chunk))?;
        }
        total += writer.commit()?;
        shards_written += 1;
    }
    let seconds = started.elapsed().as_secs_f64();
    let raw_mib = array.bounds().size() as f64 * 2.0 / (1 << 20) as f64;
    println!(
        "wrote {shards_written} shards in {seconds:.2} s ({:.0} MiB/s): {} puts, {} gets, \
         {} chunks ({} empty), {:.1} MiB stored ({:.1}× smaller)",
        raw_mib / seconds,
        total.puts,
        total.gets,
        total.chunks_written,
        total.chunks_empty,
        total.bytes_written as f64 / (1 << 20) as f64,
        raw_mib * (1 << 20) as f64 / total.bytes_written.max(1) as f64
    );

    // Verify: read every shard back and compare with the example.
    for shard in array.shards() {
        let got = array.read(&shard)?;
        if got != chunk_bytes(&shard) {
            return Err(format!("verification failed in shard {shard}").into());
        }
    }
    println!("verified: every element read back equals the example");
    if args.path.is_none() {
        std::fs::remove_dir_all(&folder)?;
    } else {
        println!(
            "the array stays at {}; open it with zarr.open_array({:?})",
            folder.display(),
            folder
        );
    }
    Ok(())
}
