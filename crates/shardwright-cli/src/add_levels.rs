//! `shardwright add-levels IMAGE`: the levels above an existing level 0 (an OME-Zarr image,
//! or any group holding an array `0`), written from it in one pass; level 0 is only read.
//! After level 0 grew, the same command extends every level with what it gained.

use shardwright::pyramid::add_levels::add_levels;
use shardwright::pyramid::build::BuildOptions;
use shardwright::pyramid::plan::PlanRequest;
use shardwright::pyramid::{Method, PyramidError};
use shardwright::Compressor;

use crate::interrupt::Interrupted;
use crate::location::{self, Location};
use crate::progress::Shown;
use crate::Job;

type Failure = Box<dyn std::error::Error>;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The image: a folder or an object-store URL of a group holding level 0 as array '0'.
    image: String,
    /// Downsampling factor per axis, e.g. 1,1,1,2,2 (default: the existing levels' own,
    /// else 2 along the space axes and 1 along the others).
    #[arg(long)]
    factors: Option<String>,
    /// Levels, level 0 included (default: as many as exist, else up to the first level
    /// whose downsampled axes each fit within one inner chunk).
    #[arg(long)]
    levels: Option<usize>,
    /// mean, min, max, mode, median or stride (default: the existing levels' own, else mean).
    #[arg(long)]
    method: Option<String>,
    /// Inner chunk shape of every new level above 0 (default: level 0's, clipped); levels
    /// found keep theirs.
    #[arg(long)]
    chunks: Option<String>,
    /// Shard shape of every new level above 0 (default: level 0's, clipped).
    #[arg(long)]
    shards: Option<String>,
    /// The inner chunks' compressor: zstd, blosc, gzip or none.
    #[arg(long, default_value = "zstd")]
    compressor: String,
    /// The compressor's level (default: zstd 3, blosc 5, gzip 5).
    #[arg(long)]
    compression_level: Option<i32>,
    /// An object-store option, KEY=VALUE (repeat for several).
    #[arg(long = "storage-option")]
    storage_options: Vec<String>,
    /// No progress output (the summary is still printed).
    #[arg(long, short)]
    quiet: bool,
    /// Physical metadata (given, it replaces the group's multiscale).
    #[command(flatten)]
    physical: crate::physical::Physical,
}

fn numbers(text: &str, what: &str) -> Result<Vec<u64>, Failure> {
    text.split(',')
        .map(|p| {
            p.trim()
                .parse::<u64>()
                .map_err(|_| format!("--{what} '{text}': expected integers separated by ','"))
        })
        .collect::<Result<_, _>>()
        .map_err(Into::into)
}

pub(crate) fn run(args: &Args, job: &Job) -> Result<(), Failure> {
    let method = args
        .method
        .as_deref()
        .map(str::parse::<Method>)
        .transpose()?;
    let one = |text: &Option<String>, what| -> Result<Option<Vec<Vec<u64>>>, Failure> {
        text.as_deref()
            .map(|t| numbers(t, what).map(|s| vec![s]))
            .transpose()
    };
    let request = PlanRequest {
        factors: args
            .factors
            .as_deref()
            .map(|f| numbers(f, "factors"))
            .transpose()?
            .unwrap_or_default(),
        levels: args.levels,
        method,
        chunks: one(&args.chunks, "chunks")?,
        shards: one(&args.shards, "shards")?,
        axes: None,
    };
    let compressor = match args.compressor.as_str() {
        "none" => Compressor::None,
        other => Compressor::by_name(other, args.compression_level)?,
    };
    let mut options = BuildOptions::new(request, compressor);
    options.image = args.physical.image()?;
    let image = Location::parse(&args.image, &location::options(&args.storage_options)?)?;
    let mut shown = Shown::new(args.quiet);
    let built = add_levels(image.store.clone(), &image.path, &options, &mut |p| {
        shown.update(p);
        !job.stop()
    });
    shown.clear();
    let mut report = match built {
        Err(shardwright::Error::Pyramid(PyramidError::Stopped)) if job.stopped() => {
            return Err(Interrupted("rerun add-levels to finish").into())
        }
        Ok(_) if job.stopped() => return Err(Interrupted("rerun add-levels to finish").into()),
        Err(shardwright::Error::Pyramid(PyramidError::NoLevelZero { path, found }))
            if path.is_empty() =>
        {
            return Err(PyramidError::NoLevelZero {
                path: args.image.clone(),
                found,
            }
            .into())
        }
        built => built?,
    };
    if let Some(level0) = report.shards_skipped.first_mut() {
        *level0 = 0; // level 0 is read, not resumed
    }
    shown.finish("add-levels", &report)?;
    Ok(())
}
