//! `shardwright pyramid SRC DST` and `shardwright copy SRC DST`: one pass over the source,
//! every level (or the one copy) written shard by shard.

use std::path::Path;

use shardwright_object_store::redact;

use shardwright::pyramid::build::{self, BuildOptions, Report};
use shardwright::pyramid::image_metadata::ImageMetadata;
use shardwright::pyramid::plan::PlanRequest;
use shardwright::pyramid::{Method, PyramidError};
use shardwright::Compressor;

use crate::interrupt::Interrupted;
use crate::location::{self, Location};
use crate::progress::Shown;
use crate::Job;

type Failure = Box<dyn std::error::Error>;

/// What `pyramid` and `copy` share.
#[derive(clap::Args)]
pub(crate) struct Common {
    /// The source: a Zarr v2 or v3 array (a folder or an object-store URL), or a TIFF,
    /// BigTIFF or OME-TIFF file, a folder of TIFF files or a glob pattern of them.
    pub(crate) src: String,
    /// The destination (a folder or an object-store URL).
    dst: String,
    /// Inner chunk shape, e.g. 1,1,32,128,128 (default: 64 along z, y, x for 3-d images,
    /// 256 along y, x for 2-d ones, 1 along the other axes); one shape per level separated
    /// by ';' for a pyramid.
    #[arg(long)]
    chunks: Option<String>,
    /// Shard shape (default: 4 inner chunks along each of z, y, x); as --chunks.
    #[arg(long)]
    shards: Option<String>,
    /// The inner chunks' compressor: zstd, blosc, gzip or none.
    #[arg(long, default_value = "zstd")]
    compressor: String,
    /// The compressor's level (default: zstd 3, blosc 5, gzip 6).
    #[arg(long)]
    compression_level: Option<i32>,
    /// Axis names, e.g. t,c,z,y,x (default: the last ndim of t, c, z, y, x).
    #[arg(long)]
    pub(crate) axes: Option<String>,
    /// Continue a job that stopped: keep the shards already stored, write the others.
    #[arg(long)]
    resume: bool,
    /// Delete whatever is at the destination first.
    #[arg(long, conflicts_with = "resume")]
    overwrite: bool,
    /// An object-store option, KEY=VALUE (repeat for several), for both source and
    /// destination URLs (e.g. aws_region=eu-west-1).
    #[arg(long = "storage-option")]
    pub(crate) storage_options: Vec<String>,
    /// No progress output (the summary is still printed).
    #[arg(long, short)]
    quiet: bool,
}

#[derive(clap::Args)]
pub(crate) struct PyramidArgs {
    #[command(flatten)]
    common: Common,
    /// Downsampling factor per axis, e.g. 1,1,2,2,2.
    #[arg(long, required = true)]
    factors: String,
    /// Levels, level 0 included, at most the one whose downsampled axes are all 1
    /// (default: up to the first level whose downsampled axes each fit within one inner
    /// chunk).
    #[arg(long)]
    levels: Option<usize>,
    /// mean, min, max, mode, median or stride.
    #[arg(long, default_value = "mean")]
    method: String,
    #[command(flatten)]
    physical: crate::physical::Physical,
}

#[derive(clap::Args)]
pub(crate) struct CopyArgs {
    #[command(flatten)]
    common: Common,
}

pub(crate) fn numbers(text: &str, what: &str) -> Result<Vec<u64>, Failure> {
    text.split(',')
        .map(|p| {
            p.trim()
                .parse::<u64>()
                .map_err(|_| format!("--{what} '{text}': expected integers separated by ','"))
        })
        .collect::<Result<_, _>>()
        .map_err(Into::into)
}

fn shapes(text: &Option<String>, what: &str) -> Result<Option<Vec<Vec<u64>>>, Failure> {
    text.as_ref()
        .map(|t| t.split(';').map(|s| numbers(s, what)).collect())
        .transpose()
}

/// With `--overwrite`, refuse a destination that is, holds or lies inside the source
/// (before the source is even opened: a source that is missing is no licence to delete).
pub(crate) fn refuse_overwriting_the_source(common: &Common) -> Result<(), Failure> {
    if !common.overwrite {
        return Ok(());
    }
    if is_local_pattern(&common.src) {
        return refuse_overwriting_matches(&common.src, &common.dst);
    }
    refuse_overlap(&common.src, &common.dst)
}

/// Whether `text` is a local glob pattern (a wildcard in a path that does not exist).
fn is_local_pattern(text: &str) -> bool {
    !text.contains("://") && text.contains(['*', '?', '[']) && !Path::new(text).exists()
}

/// For a glob `pattern` source: refuse a destination that is or holds a file the pattern
/// matches or the folder all matches lie in (a destination beside them is fine).
fn refuse_overwriting_matches(pattern: &str, dst: &str) -> Result<(), Failure> {
    let dest = place(dst);
    let matches = glob::glob(pattern)
        .map(|paths| {
            paths
                .filter_map(Result::ok)
                .map(|p| p.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    let root = pattern_root(pattern).to_string();
    for target in std::iter::once(root).chain(matches) {
        if place(&target).starts_with(&dest) {
            return Err(format!(
                "the source pattern '{pattern}' and the destination '{}' overlap: the \
                 destination holds '{target}', which the pattern reads; --overwrite would \
                 delete it before it is read; write to another place",
                redact(dst)
            )
            .into());
        }
    }
    Ok(())
}

/// The source `common` names, opened (after [`refuse_overwriting_the_source`]).
pub(crate) fn open_source(
    common: &Common,
) -> Result<Box<dyn shardwright::pyramid::source::Source>, Failure> {
    refuse_overwriting_the_source(common)?;
    let storage = location::options(&common.storage_options)?;
    location::open_source(&common.src, &storage)
}

fn prepare(
    common: &Common,
    source: Box<dyn shardwright::pyramid::source::Source>,
    request: PlanRequest,
    image: ImageMetadata,
    as_pyramid: bool,
) -> Result<
    (
        Box<dyn shardwright::pyramid::source::Source>,
        Location,
        BuildOptions,
    ),
    Failure,
> {
    let storage = location::options(&common.storage_options)?;
    let compressor = match common.compressor.as_str() {
        "none" => Compressor::None,
        name => Compressor::by_name(name, common.compression_level)?,
    };
    let mut request = request;
    request.chunks = shapes(&common.chunks, "chunks")?;
    request.shards = shapes(&common.shards, "shards")?;
    if let Some(axes) = &common.axes {
        request.axes = Some(axes.split(',').map(|s| s.trim().to_string()).collect());
    }
    let mut options = BuildOptions::new(request, compressor);
    options.resume = common.resume;
    options.image = image;
    build::check(source.as_ref(), &options, as_pyramid)?;
    let dest = Location::parse(&common.dst, &storage)?;
    options.image.name = last_part(&common.dst);
    if common.overwrite {
        dest.clear()?;
    } else if !common.resume && dest.exists()? {
        return Err(format!(
            "the destination '{}' exists; pass --overwrite to replace it or --resume to \
             finish a job that stopped",
            dest.text
        )
        .into());
    }
    Ok((source, dest, options))
}

/// `--overwrite` must not delete the source: refuse a destination that is, holds or lies
/// inside the source (compared part by part, so `/` holds every folder and `s3://b` every
/// key of its bucket).
fn refuse_overlap(src: &str, dst: &str) -> Result<(), Failure> {
    if overlap(&place(src), &place(dst)) {
        let (src, dst) = (redact(src), redact(dst));
        return Err(format!(
            "the source '{src}' and the destination '{dst}' overlap: --overwrite would delete \
             the source before it is read; write to another place"
        )
        .into());
    }
    Ok(())
}

/// The folder a glob pattern's matches all lie in (the part before the first part with a
/// wildcard), or `text` itself when it is no pattern: what `--overwrite` must not touch.
fn pattern_root(text: &str) -> &str {
    let Some(first) = text.find(['*', '?', '[']) else {
        return text;
    };
    match text[..first].rfind('/') {
        Some(0) => "/",
        Some(slash) => &text[..slash],
        None => ".",
    }
}

/// Where `text` is, as parts: a URL's scheme (one spelling per service), bucket and key
/// parts (percent-decoded; `abfs://container@account…` as its container), or a local
/// path's components (absolute, links resolved as far as the path exists).
fn place(text: &str) -> Vec<String> {
    if text.contains("://") && !text.starts_with("file://") {
        let (scheme, rest) = text.split_once("://").unwrap_or(("", text));
        let scheme = match scheme.to_ascii_lowercase().as_str() {
            "s3a" => "s3".to_string(),
            "gcs" => "gs".to_string(),
            "abfs" | "abfss" | "adl" | "azure" => "az".to_string(),
            other => other.to_string(),
        };
        let rest = rest.split(['?', '#']).next().unwrap_or_default();
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let authority = match authority.split_once('@') {
            Some((container, _)) if scheme == "az" => container,
            Some((_, host)) => host,
            None => authority,
        };
        return std::iter::once(scheme)
            .chain(std::iter::once(authority.to_string()))
            .chain(
                path.split('/')
                    .filter(|p| !p.is_empty())
                    .map(percent_decoded),
            )
            .collect();
    }
    let path = Path::new(text.strip_prefix("file://").unwrap_or(text));
    let mut absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    // Resolve links through the nearest existing ancestor.
    let mut rest = Vec::new();
    while !absolute.exists() {
        match (absolute.file_name(), absolute.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_os_string());
                absolute = parent.to_path_buf();
            }
            _ => break,
        }
    }
    let mut real = std::fs::canonicalize(&absolute).unwrap_or(absolute);
    real.extend(rest.iter().rev());
    std::iter::once("file".to_string())
        .chain(real.components().filter_map(|c| match c {
            std::path::Component::Normal(p) => Some(p.to_string_lossy().into_owned()),
            std::path::Component::ParentDir => Some("..".into()),
            _ => None,
        }))
        .collect()
}

/// `part` with its `%XX` escapes decoded (an invalid escape is kept as written).
fn percent_decoded(part: &str) -> String {
    let bytes = part.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b, hex) {
            (b'%', Some(value)) => {
                out.push(value);
                i += 3;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether one of two places holds the other (or they are one).
fn overlap(a: &[String], b: &[String]) -> bool {
    a.iter().zip(b).all(|(x, y)| x == y)
}

/// The last part of a path or URL (the image's default name).
pub(crate) fn last_part(text: &str) -> Option<String> {
    text.trim_end_matches('/')
        .rsplit('/')
        .next()
        .filter(|s| !s.is_empty())
        .map(String::from)
}

pub(crate) fn pyramid(args: &PyramidArgs, job: &Job) -> Result<(), Failure> {
    let method: Method = args.method.parse()?;
    let request = PlanRequest {
        factors: numbers(&args.factors, "factors")?,
        levels: args.levels,
        method: Some(method),
        ..Default::default()
    };
    let source = open_source(&args.common)?;
    run(
        &args.common,
        source,
        request,
        args.physical.image()?,
        true,
        job,
    )
}

pub(crate) fn copy(args: &CopyArgs, job: &Job) -> Result<(), Failure> {
    run(
        &args.common,
        open_source(&args.common)?,
        PlanRequest::default(),
        ImageMetadata::default(),
        false,
        job,
    )
}

/// Build a pyramid (`as_pyramid`) or a copy with `request`, showing progress; stop when
/// `job` says so (the build's writers abort their uploads and remove their temporary files).
pub(crate) fn run(
    common: &Common,
    source: Box<dyn shardwright::pyramid::source::Source>,
    request: PlanRequest,
    image: ImageMetadata,
    as_pyramid: bool,
    job: &Job,
) -> Result<(), Failure> {
    let (source, dest, options) = prepare(common, source, request, image, as_pyramid)?;
    let mut shown = Shown::new(common.quiet);
    let (what, build): (&str, BuildFn) = if as_pyramid {
        ("pyramid", build::pyramid)
    } else {
        ("copy", build::copy)
    };
    let built = build(
        source.as_ref(),
        dest.store.clone(),
        &dest.path,
        &options,
        &mut |p| {
            shown.update(p);
            !job.stop()
        },
    );
    shown.clear();
    // Only a build that stopped because it was told to is "interrupted": one that failed
    // for another reason (a storage error), even after the signal, reports that error.
    let report = match built {
        Err(shardwright::Error::Pyramid(PyramidError::Stopped)) if job.stopped() => {
            return Err(Interrupted("rerun with --resume").into())
        }
        Ok(_) if job.stopped() => return Err(Interrupted("rerun with --resume").into()),
        built => built?,
    };
    shown.finish(what, &report)?;
    Ok(())
}

/// [`build::pyramid`] or [`build::copy`].
type BuildFn = fn(
    &dyn shardwright::pyramid::source::Source,
    std::sync::Arc<dyn shardwright::store::Store>,
    &str,
    &BuildOptions,
    &mut dyn FnMut(&build::Progress) -> bool,
) -> shardwright::Result<Report>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_compares_part_by_part_and_the_root_holds_everything() {
        // Places that need not exist: nothing is read or removed.
        let dir = std::env::temp_dir().join(format!("sw-overlap-{}", std::process::id()));
        let src = dir.join("img.zarr/raw");
        let src = src.to_str().unwrap();
        let parent = dir.to_str().unwrap();
        for dst in [
            "/",
            parent,
            &format!("{parent}/img.zarr"),
            src,
            &format!("{src}/x"),
        ] {
            assert!(refuse_overlap(src, dst).is_err(), "{dst}");
        }
        for dst in [&format!("{parent}/img.zarr-2"), &format!("{parent}/other")] {
            assert!(refuse_overlap(src, dst).is_ok(), "{dst}");
        }
        assert!(refuse_overlap("s3://b/img/raw", "s3a://b/").is_err());
        // a glob's matches lie anywhere under the folder before its first wildcard
        assert_eq!(pattern_root("acq/pos*/img.tif"), "acq");
        assert_eq!(pattern_root("/data/slices/*.tif"), "/data/slices");
        assert_eq!(pattern_root("*.tif"), ".");
        assert_eq!(pattern_root("/*.tif"), "/");
        assert_eq!(pattern_root("plain.tif"), "plain.tif");
        let pos1 = format!("{parent}/acq/pos1");
        assert!(
            refuse_overlap(pattern_root(&format!("{parent}/acq/pos*/img.tif")), &pos1).is_err()
        );
        assert!(refuse_overlap("s3://b/img/raw", "s3://b/img-2").is_ok());
        assert!(refuse_overlap("s3://b/img/raw", "gs://b/img").is_ok());
        assert!(
            refuse_overlap("az://c/img/raw", "abfs://c@acct.dfs.core.windows.net/img").is_err()
        );
        assert!(refuse_overlap("gs://b/my%20img/raw", "gcs://b/my img").is_err());
        let err = refuse_overlap("az://c/img/0", "az://c/img?sv=1&sig=SUPERSECRET").unwrap_err();
        assert!(!err.to_string().contains("SUPERSECRET"), "{err}");
    }
}
