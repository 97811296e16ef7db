//! The one-pass driver: reads the source once, block by block, and writes every level of
//! the pyramid (or the one level of a copy) through shard writers, one put per shard.
//!
//! How it goes: each level is cut into *blocks* of `lcm(inner chunk, factors)`. A reader
//! thread reads level 0's blocks from the source in an order that nests them under the
//! coarser levels' shards and blocks (so each level's shards and blocks complete soon
//! after they start). A complete block of level `k` is written into the level's shard
//! writers (a shard commits in the background once all its elements are written) and,
//! downsampled, into the blocks of level `k + 1` being assembled; a block of level
//! `k + 1` that is complete goes the same way. Memory holds, per level, the blocks being
//! assembled (one when blocks nest, as they do with one chunk shape for every level) and
//! the shard writers' encoders' in-flight chunks: see [`Plan::raw_bytes_bound`].
//!
//! Resume: shards already stored are whole (a commit is atomic), so a resumed run skips
//! them, and reads only the source blocks some missing shard needs.

use std::collections::HashSet;

use super::driver::Driver;
use super::grain::GrainReader;
use super::walk::Walk;
use super::window::{ChannelWindows, Window};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Instant;

use super::downsample;
use super::levels::{group_document, level_arrays, level_paths, stored_shards};
pub use super::options::{BuildOptions, Progress, Report};
use super::plan::{Plan, PlanRequest};
use super::source::{element_size, Source};
use super::PyramidError;
use crate::array::METADATA_KEY;
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::store::{join, Store};

/// Check `options` against `source` without reading or writing anything, and return the
/// plan: what [`pyramid`] (`as_pyramid`) or [`copy`] would refuse, it refuses here, so a
/// caller can validate before clearing a destination.
///
/// ```
/// use shardwright::pyramid::{build, plan::PlanRequest, source::BufferSource};
/// use shardwright::Compressor;
/// let source = BufferSource::new(vec![0; 64], vec![8, 8], "uint8");
/// let bad = PlanRequest { factors: vec![2], ..Default::default() };
/// let err = build::check(&source, &build::BuildOptions::new(bad, Compressor::None), true).unwrap_err();
/// assert!(err.to_string().contains("factors (2) must have 2 values"));
/// ```
///
/// # Errors
/// [`Error::Pyramid`] naming what does not fit.
pub fn check(source: &dyn Source, options: &BuildOptions, as_pyramid: bool) -> Result<Plan> {
    let shape = source.shape();
    let plan = if as_pyramid {
        let plan = options.request.plan(&shape, &source.data_type())?;
        super::ome::group_metadata(&plan, "image", &options.image, &[])?;
        plan
    } else {
        copy_request(&options.request, shape.len()).plan(&shape, &source.data_type())?
    };
    // A source that cannot be read fails here, before anything is written or removed.
    let first = Domain::new(vec![0; shape.len()], vec![1; shape.len()]);
    let element = element_size(&source.data_type()).unwrap_or(0);
    let probe = source.read(&first)?;
    if probe.len() != element {
        return Err(super::source::source_error(
            &first,
            format!("it gave {} bytes, expected {element}", probe.len()),
        )
        .into());
    }
    Ok(plan)
}

/// A copy's plan request: one level, no downsampling.
fn copy_request(request: &PlanRequest, ndim: usize) -> PlanRequest {
    let mut request = request.clone();
    request.factors = vec![1; ndim];
    request.levels = Some(1);
    request.method = Some(downsample::Method::Stride);
    if request.axes.is_none() && ndim > 5 {
        request.axes = Some((0..ndim).map(|d| format!("dim_{d}")).collect());
    }
    request
}

/// Build the multiscale pyramid of `source` as an OME-Zarr 0.5 image at `path` in `store`:
/// level arrays at `path/0`, `path/1`, …, and the group's `zarr.json` (written last, so a
/// group with metadata is complete). `progress` is called after each shard is stored; it
/// returns `false` to stop the build (an [`PyramidError::Stopped`] error).
///
/// # Errors
/// [`Error::Pyramid`] for settings that do not fit the source or a source that fails,
/// [`Error::AlreadyExists`] if something is at `path` already (unless resuming),
/// [`Error::Store`] and the writers' errors otherwise. Shards stored before an error stay
/// (each one whole): rerun with `resume` to finish.
pub fn pyramid(
    source: &dyn Source,
    store: Arc<dyn Store>,
    path: &str,
    options: &BuildOptions,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Report> {
    let path = path.trim_matches('/').to_string();
    let plan = options.request.plan(&source.shape(), &source.data_type())?;
    // the metadata is checked before anything is written
    group_document(&plan, options, &path, &[])?;
    let group_key = join(&path, METADATA_KEY);
    if !options.resume && store.size(&group_key)?.is_some() {
        return Err(Error::AlreadyExists(path));
    }
    // the windows are computed only for an image with `omero` channels
    let observe = options.image.channels(&plan)?.is_some();
    let (mut report, windows) = run(
        source,
        &store,
        level_paths(&path, &plan),
        &plan,
        observe,
        options,
        progress,
    )?;
    let text = group_document(&plan, options, &path, &windows)?;
    // level 0's shape, for a later add_levels to see what it gained (its shards absent
    // then are not known without a listing)
    let text = super::add_levels_group::with_level0_record(&text, &plan, None)?;
    store.put(&group_key, &[&text])?;
    report.bytes_written += text.len() as u64;
    Ok(report)
}

/// Copy `source` into one sharded array at `path` (re-chunked and re-sharded as
/// `options.request` says; its factors and levels are ignored).
///
/// ```
/// use std::sync::Arc;
/// use shardwright::pyramid::{build, plan::PlanRequest, source::BufferSource};
/// use shardwright::{Compressor, MemoryStore};
/// let source = BufferSource::new((0..100u8).collect(), vec![10, 10], "uint8");
/// let request = PlanRequest { chunks: Some(vec![vec![4, 4]]), shards: Some(vec![vec![8, 8]]), ..Default::default() };
/// let options = build::BuildOptions::new(request, Compressor::None);
/// let report = build::copy(&source, Arc::new(MemoryStore::new()), "c", &options, &mut |_| true).unwrap();
/// assert_eq!(report.shards_written, vec![4]);
/// assert_eq!(report.levels[0].read(&report.levels[0].bounds()).unwrap(), (0..100u8).collect::<Vec<_>>());
/// ```
///
/// # Errors
/// As [`pyramid`].
pub fn copy(
    source: &dyn Source,
    store: Arc<dyn Store>,
    path: &str,
    options: &BuildOptions,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Report> {
    let plan = check(source, options, false)?;
    let path = path.trim_matches('/').to_string();
    Ok(run(source, &store, vec![path], &plan, false, options, progress)?.0)
}

/// Write the levels at `paths`; with `observe`, also the top level's channel windows
/// (read back from the top level when a resumed run finds some of it stored).
fn run(
    source: &dyn Source,
    store: &Arc<dyn Store>,
    paths: Vec<String>,
    plan: &Plan,
    observe: bool,
    options: &BuildOptions,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<(Report, Vec<Window>)> {
    let started = Instant::now();
    let arrays = level_arrays(
        (&source.data_type(), source.fill_value()),
        store,
        &paths,
        plan,
        options,
    )?;
    let stored = if options.resume {
        stored_shards(&arrays)?
    } else {
        vec![HashSet::new(); arrays.len()]
    };
    run_arrays(
        source, arrays, stored, plan, observe, options, progress, started,
    )
}

/// [`run`] into `arrays` (level 0 first), whose shards `stored` (linear indices per level)
/// are skipped when `options.resume`: `add_levels` passes the existing level 0 with all of
/// its shards as stored, so level 0 is only read.
#[allow(clippy::too_many_arguments)]
pub(super) fn run_arrays(
    source: &dyn Source,
    arrays: Vec<crate::Array>,
    stored: Vec<HashSet<u64>>,
    plan: &Plan,
    observe: bool,
    options: &BuildOptions,
    progress: &mut dyn FnMut(&Progress) -> bool,
    started: Instant,
) -> Result<(Report, Vec<Window>)> {
    let data_type = source.data_type();
    let element = element_size(&data_type).ok_or_else(|| {
        PyramidError::Downsample(downsample::DownsampleError::UnsupportedDataType {
            data_type: data_type.clone(),
            method: plan.method,
        })
    })?;
    let walk = Arc::new(Walk {
        plan: plan.clone(),
        stored,
        resume: options.resume,
    });
    let mut driver = Driver::new(
        Arc::clone(&walk),
        arrays,
        data_type,
        element,
        options.commits_in_flight,
    );
    if !observe {
        driver.windows = ChannelWindows::ignoring();
    }
    let plan = &walk.plan;
    let grains = GrainReader::new(source, plan, element);
    let cache_bound = grains.as_ref().map_or(0, |g| g.budget);
    let outcome = std::thread::scope(|scope| {
        let (send, receive) = mpsc::sync_channel::<std::result::Result<_, PyramidError>>(2);
        let reader = scope.spawn(|| {
            let send = send;
            let top = plan.levels.len().saturating_sub(1);
            let top_shape = plan
                .levels
                .last()
                .map(|l| l.shape.clone())
                .unwrap_or_default();
            let mut grains = grains;
            let walked = walk.visit(top, &Domain::from_shape(top_shape), &mut |block| {
                let read = match grains.as_mut() {
                    Some(reader) => {
                        let before = reader.bytes_read;
                        reader
                            .read(&block, &walk)
                            .map(|data| (block, data, reader.bytes_read - before))
                    }
                    None => source.read(&block).map(|data| {
                        let read = data.len() as u64;
                        (block, data, read)
                    }),
                };
                let failed = read.is_err();
                send.send(read).is_ok() && !failed
            });
            if let Err(e) = walked {
                let _ = send.send(Err(e));
            }
        });
        let result = (|| -> Result<()> {
            for item in receive.iter() {
                let (block, data, read) = item?;
                let expected = block.size() * element as u64;
                if data.len() as u64 != expected {
                    return Err(super::source::source_error(
                        &block,
                        format!("it gave {} bytes, expected {expected}", data.len()),
                    )
                    .into());
                }
                driver.progress.bytes_read += read;
                driver.process(0, block, data, progress)?;
            }
            Ok(())
        })();
        drop(receive);
        let joined = reader.join().map_err(|panic| {
            Error::Pyramid(PyramidError::Source {
                region: "(the reader)".into(),
                message: crate::error::panic_message(&*panic),
            })
        });
        result.and(joined)
    });
    let finish = driver.finish(progress);
    outcome?;
    finish?;
    let incomplete = driver
        .arrays
        .iter()
        .zip(&walk.stored)
        .zip(&driver.progress.shards_done)
        .any(|((array, skipped), done)| done + skipped.len() as u64 != array.shard_grid().len());
    if incomplete
        || driver.writers.iter().any(|w| !w.is_empty())
        || driver.blocks.iter().any(|b| !b.is_empty())
    {
        return Err(Error::Pyramid(PyramidError::invalid(
            "internal error: the source's blocks did not complete every shard",
        )));
    }
    // The top level's windows: seen as its blocks were written, unless a resumed run
    // skipped some of them; then read back (the top level is the smallest).
    let windows = match driver.arrays.last() {
        Some(top) if observe && walk.stored.last().is_some_and(|s| !s.is_empty()) => {
            let mut windows = ChannelWindows::for_array(top);
            windows.observe_array(top)?;
            windows.windows()
        }
        _ => driver.windows.windows(),
    };
    let report = Report {
        bytes_read: driver.progress.bytes_read,
        bytes_written: driver.progress.bytes_written,
        shards_written: driver.progress.shards_done.clone(),
        shards_skipped: walk.stored.iter().map(|s| s.len() as u64).collect(),
        puts: driver.puts,
        gets: driver.gets,
        seconds: started.elapsed().as_secs_f64(),
        memory_bound: plan.memory_bound(
            element,
            rayon::current_num_threads(),
            options.commits_in_flight.max(1),
        ) + cache_bound,
        levels: driver.arrays,
    };
    Ok((report, windows))
}

#[cfg(test)]
#[path = "build_tests.rs"]
pub(super) mod tests;
