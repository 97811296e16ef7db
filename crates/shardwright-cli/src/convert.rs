//! `shardwright convert SRC DST`: a TIFF, BigTIFF or OME-TIFF file, a folder or glob of
//! TIFF files, or any array `pyramid` reads, to an OME-Zarr 0.5 image in one pass, with
//! the file's axes, pixel sizes, units and channels carried (each flag given overrides
//! what the file says).

use shardwright::pyramid::convert::{default_factors, merged};
use shardwright::pyramid::image_metadata::ImageMetadata;
use shardwright::pyramid::plan::PlanRequest;
use shardwright::pyramid::source::Source;
use shardwright::pyramid::Method;

use crate::build::{self, Common};
use crate::output::out;
use crate::Job;

type Failure = Box<dyn std::error::Error>;

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    common: Common,
    /// Downsampling factor per axis, e.g. 1,1,2,2,2 (default: 2 along y and x, and along
    /// z unless its pixel size is more than twice that of x; 1 along t and c).
    #[arg(long)]
    factors: Option<String>,
    /// Levels, level 0 included (1: a plain conversion; default: up to the first level
    /// whose downsampled axes each fit within one inner chunk).
    #[arg(long)]
    levels: Option<usize>,
    /// mean, min, max, mode, median or stride.
    #[arg(long, default_value = "mean")]
    method: String,
    #[command(flatten)]
    physical: crate::physical::Physical,
}

/// A source opened, with what its file says of the image: its axes (where the file names
/// them) and the physical metadata.
type Opened = (Box<dyn Source>, Option<Vec<String>>, ImageMetadata);

/// The source `common` names, and what its file says of the image.
fn open(common: &Common) -> Result<Opened, Failure> {
    if !common.src.contains("://") && shardwright_tiff::is_tiff_spec(&common.src) {
        let tiff = shardwright_tiff::TiffSource::open(&common.src)?;
        let (axes, image) = (tiff.axes(), tiff.image_metadata());
        return Ok((Box::new(tiff), Some(axes), image));
    }
    Ok((build::open_source(common)?, None, ImageMetadata::default()))
}

pub(crate) fn run(args: &Args, job: &Job) -> Result<(), Failure> {
    let method: Method = args.method.parse()?;
    let (source, file_axes, said) = open(&args.common)?;
    let image = merged(args.physical.image()?, said);
    let axes: Vec<String> = match (&args.common.axes, file_axes) {
        (Some(given), _) => given.split(',').map(|s| s.trim().to_string()).collect(),
        (None, Some(axes)) => axes,
        (None, None) => {
            let ndim = source.shape().len();
            let names = ["t", "c", "z", "y", "x"];
            if ndim > names.len() {
                (0..ndim).map(|i| format!("dim_{i}")).collect()
            } else {
                names[names.len() - ndim..]
                    .iter()
                    .map(|s| (*s).to_string())
                    .collect()
            }
        }
    };
    let factors = match &args.factors {
        Some(text) => build::numbers(text, "factors")?,
        None => default_factors(&axes, image.scale.as_deref()),
    };
    let request = PlanRequest {
        factors,
        levels: args.levels,
        method: Some(method),
        axes: Some(axes),
        ..Default::default()
    };
    build::run(&args.common, source, request, image, true, job)
}

/// `shardwright info` of a TIFF file, folder or glob: what `convert` would read.
pub(crate) fn describe(text: &str) -> Result<(), Failure> {
    let tiff = shardwright_tiff::TiffSource::open(text)?;
    let image = tiff.image_metadata();
    out!("path:          {text} (TIFF)");
    out!("shape:         {:?}", tiff.shape());
    out!("dtype:         {}", tiff.data_type());
    out!("axes:          {:?}", tiff.axes());
    if let Some(grain) = tiff.read_grain() {
        out!("read grain:    {grain:?} (a strip or tile, decoded whole)");
    }
    if let Some(scale) = &image.scale {
        out!("pixel size:    {scale:?}");
    }
    if let Some(units) = &image.units {
        let units: Vec<&str> = units.iter().map(|u| u.as_deref().unwrap_or("-")).collect();
        out!("units:         {units:?}");
    }
    if let Some(channels) = &image.channels {
        let labels: Vec<&str> = channels
            .iter()
            .map(|c| c.label.as_deref().unwrap_or("-"))
            .collect();
        out!("channels:      {labels:?}");
    }
    Ok(())
}
