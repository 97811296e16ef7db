//! `shardwright convert SRC DST`: a TIFF, BigTIFF or OME-TIFF file, a folder or glob of
//! TIFF files, or any array `pyramid` reads, to an OME-Zarr 0.5 image in one pass, with
//! the file's axes, pixel sizes, units and channels carried (each flag given overrides
//! what the file says).

use shardwright::pyramid::convert::{default_factors, merged, FileImage};
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

/// The source `common` names, and what its file says of the image (a TIFF's axes, pixel
/// sizes, units and channels; nothing for other sources).
fn open(common: &Common) -> Result<(Box<dyn Source>, Option<FileImage>), Failure> {
    build::refuse_overwriting_the_source(common)?;
    if reads_as_tiff(&common.src) {
        let tiff = shardwright_tiff::TiffSource::open(&common.src)?;
        let file = FileImage {
            axes: tiff.axes(),
            image: tiff.image_metadata(),
            pixel_sizes: tiff.pixel_sizes(),
        };
        return Ok((Box::new(tiff), Some(file)));
    }
    Ok((build::open_source(common)?, None))
}

/// Whether `convert` reads `text` as TIFF: a local path that is no Zarr array (a TIFF
/// file, a folder or glob of TIFF files; for a file that is not a TIFF or a folder or
/// pattern without TIFF files, the TIFF reader's error says what was found).
fn reads_as_tiff(text: &str) -> bool {
    if text.contains("://") {
        return false;
    }
    let path = std::path::Path::new(text);
    let zarr = [".zarray", ".zgroup", "zarr.json"]
        .iter()
        .any(|name| path.join(name).exists());
    let pattern = text.contains(['*', '?', '[']) && !path.exists();
    let missing_tiff = !path.exists()
        && path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
            ["tif", "tiff", "btf", "tf8"].contains(&e.to_ascii_lowercase().as_str())
        });
    shardwright_tiff::is_tiff_spec(text)
        || path.is_file()
        || pattern
        || missing_tiff
        || (path.is_dir() && !zarr)
}

/// The last `ndim` of t, c, z, y, x (`dim_i` past five axes).
fn default_axes(ndim: usize) -> Vec<String> {
    let names = ["t", "c", "z", "y", "x"];
    if ndim > names.len() {
        return (0..ndim).map(|i| format!("dim_{i}")).collect();
    }
    names[names.len() - ndim..]
        .iter()
        .map(|s| (*s).to_string())
        .collect()
}

pub(crate) fn run(args: &Args, job: &Job) -> Result<(), Failure> {
    let method: Method = args.method.parse()?;
    let (source, file) = open(&args.common)?;
    let ndim = source.shape().len();
    let axes: Vec<String> = match (&args.common.axes, &file) {
        (Some(given), _) => given.split(',').map(|s| s.trim().to_string()).collect(),
        (None, Some(file)) => file.axes.clone(),
        (None, None) => default_axes(ndim),
    };
    if axes.len() != ndim {
        return Err(format!(
            "--axes '{}' names {} axes; the source has {ndim} (shape {:?})",
            axes.join(","),
            axes.len(),
            source.shape()
        )
        .into());
    }
    let said = file.map(|f| f.for_axes(&axes)).unwrap_or_default();
    let given = args.physical.image()?;
    let sizes = match &given.scale {
        Some(scale) => scale.iter().map(|s| Some(*s)).collect(),
        None => said.pixel_sizes.clone(),
    };
    let image = merged(given, said.image);
    let factors = match &args.factors {
        Some(text) => build::numbers(text, "factors")?,
        None => default_factors(&axes, &sizes),
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
