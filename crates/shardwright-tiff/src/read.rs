//! Reading a region: the strips and tiles it meets, decoded in parallel (one decoder per
//! task, from the source's pool) and copied into the output.

use rayon::prelude::*;
use shardwright::Domain;

use crate::error::TiffError;
use crate::file::{Page, TiffFile};
use crate::layout::Kind;
use crate::TiffSource;

/// One strip or tile to decode and where it goes.
struct Task {
    file: usize,
    page: usize,
    chunk: u32,
    /// The chunk's first row and column.
    top: u64,
    left: u64,
    /// The output offset (in elements) of this page's (and plane's) first element at
    /// the region's first row and column.
    base: u64,
}

/// The bytes of `region` (inside the source's shape), C order, native endian.
pub(crate) fn read(source: &TiffSource, region: &Domain) -> Result<Vec<u8>, TiffError> {
    let axes = &source.axes;
    let shape = region.shape();
    let origin = region.origin();
    let element = source.dtype.size();
    let mut out_strides = vec![1u64; axes.len()];
    for k in (0..axes.len().saturating_sub(1)).rev() {
        out_strides[k] = out_strides[k + 1] * shape[k + 1];
    }
    let index = |kind| axes.iter().position(|a| a.kind == kind);
    let (Some(ya), Some(xa)) = (index(Kind::Y), index(Kind::X)) else {
        return Ok(Vec::new());
    };
    let sample_axis = index(Kind::Sample);
    let (y0, y1) = (origin[ya], origin[ya] + shape[ya]);
    let (x0, x1) = (origin[xa], origin[xa] + shape[xa]);
    let total = usize::try_from(region.size()).unwrap_or(usize::MAX);
    if total == 0 {
        return Ok(Vec::new());
    }
    // Every combination of the file, page and (planar) sample coordinates in the region.
    let outer: Vec<usize> = (0..axes.len())
        .filter(|k| matches!(axes[*k].kind, Kind::File | Kind::Page | Kind::Sample))
        .collect();
    let mut tasks = Vec::new();
    let mut at: Vec<u64> = outer.iter().map(|k| origin[*k]).collect();
    loop {
        let coord = |kind: Kind| {
            outer
                .iter()
                .zip(&at)
                .find(|(k, _)| axes[**k].kind == kind)
                .map(|(_, c)| *c)
        };
        let file = usize::try_from(coord(Kind::File).unwrap_or(0)).unwrap_or(usize::MAX);
        let Some((tiff, first, strides)) = source.files.get(file) else {
            return Err(TiffError::Layout {
                path: source.spec.clone(),
                message: format!("no file {file}; expected one of {}", source.files.len()),
            });
        };
        let mut page = Some(*first as u64);
        let mut base = 0;
        for (k, c) in outer.iter().zip(&at) {
            let step = strides.get(*k).and_then(|s| s.checked_mul(*c));
            page = page.zip(step).and_then(|(p, s)| p.checked_add(s));
            base += out_strides[*k] * (c - origin[*k]);
        }
        let index = page.and_then(|p| usize::try_from(p).ok());
        let Some((page, info)) = index.and_then(|p| Some((p, tiff.pages.get(p)?))) else {
            let wanted = page.map_or(u64::MAX, |p| {
                p.saturating_sub(*first as u64).saturating_add(1)
            });
            return Err(TiffError::PageCount {
                path: tiff.path.display().to_string(),
                first: tiff.pages.get(*first).map_or(0, |p| p.ifd),
                expected: usize::try_from(wanted).unwrap_or(usize::MAX),
                found: tiff.pages.len().saturating_sub(*first),
                source_name: source.source_name.into(),
            });
        };
        let sample = coord(Kind::Sample);
        // Chunky samples come whole with each chunk: take them once, at the first sample.
        let skip =
            !info.planar && sample.is_some_and(|s| Some(s) != sample_axis.map(|a| origin[a]));
        if !skip {
            let (cw, ch) = (u64::from(info.chunk.0), u64::from(info.chunk.1));
            let (across, down) = info.chunk_grid();
            let plane = if info.planar { sample } else { None };
            let first_chunk = plane.unwrap_or(0) * u64::from(across) * u64::from(down);
            for row in y0 / ch..y1.div_ceil(ch) {
                for col in x0 / cw..x1.div_ceil(cw) {
                    let chunk = first_chunk + row * u64::from(across) + col;
                    tasks.push(Task {
                        file,
                        page,
                        chunk: u32::try_from(chunk).unwrap_or(u32::MAX),
                        top: row * ch,
                        left: col * cw,
                        base,
                    });
                }
            }
        }
        // The next combination, last axis fastest.
        let mut k = outer.len();
        loop {
            if k == 0 {
                return finish(
                    source,
                    tasks,
                    region,
                    &out_strides,
                    (ya, xa, sample_axis),
                    total.saturating_mul(element),
                );
            }
            k -= 1;
            at[k] += 1;
            if at[k] < origin[outer[k]] + shape[outer[k]] {
                break;
            }
            at[k] = origin[outer[k]];
        }
    }
}

/// Decode `tasks` in parallel and copy each into the output.
fn finish(
    source: &TiffSource,
    tasks: Vec<Task>,
    region: &Domain,
    out_strides: &[u64],
    (ya, xa, sample_axis): (usize, usize, Option<usize>),
    bytes: usize,
) -> Result<Vec<u8>, TiffError> {
    let decoded: Vec<(&Page, &TiffFile, Vec<u8>)> = tasks
        .par_iter()
        .map(|t| {
            let found = source
                .files
                .get(t.file)
                .and_then(|(tiff, _, _)| Some((tiff, tiff.pages.get(t.page)?)));
            let Some((tiff, page)) = found else {
                return Err(TiffError::Layout {
                    path: source.spec.clone(),
                    message: format!("no page {} in file {}", t.page, t.file),
                });
            };
            let data = tiff.decode(&source.decoders, t.file, page, t.chunk)?;
            Ok((page, tiff, data))
        })
        .collect::<Result<_, TiffError>>()?;
    let element = source.dtype.size();
    let mut out = shardwright::buffer::zeroed(bytes).map_err(|e| TiffError::Layout {
        path: source.spec.clone(),
        message: format!("the region to read: {e}"),
    })?;
    let origin = region.origin();
    let shape = region.shape();
    let (y0, y1) = (origin[ya], origin[ya] + shape[ya]);
    let (x0, x1) = (origin[xa], origin[xa] + shape[xa]);
    let (s0, s1) = sample_axis.map_or((0, 1), |a| (origin[a], origin[a] + shape[a]));
    for (task, (info, tiff, data)) in tasks.iter().zip(&decoded) {
        let samples = info.chunk_samples() as u64;
        let width = (u64::from(info.chunk.0)).min(u64::from(info.width) - task.left);
        let height = (u64::from(info.chunk.1)).min(u64::from(info.height) - task.top);
        // `decode` checked the chunk's size against the page's: this holds.
        let want = width
            .checked_mul(height)
            .and_then(|n| n.checked_mul(samples))
            .and_then(|n| n.checked_mul(element as u64));
        if want.is_none_or(|n| (data.len() as u64) < n) {
            return Err(TiffError::Decode {
                path: tiff.path.display().to_string(),
                page: info.ifd,
                chunk: task.chunk,
                message: format!(
                    "decoded {} bytes; expected {height}x{width} pixels",
                    data.len()
                ),
                unsupported: false,
            });
        }
        let rows = (y0.max(task.top), y1.min(task.top + height));
        let cols = (x0.max(task.left), x1.min(task.left + width));
        if rows.0 >= rows.1 || cols.0 >= cols.1 {
            continue;
        }
        let run = (cols.1 - cols.0) as usize;
        for y in rows.0..rows.1 {
            let src_row = ((y - task.top) * width + (cols.0 - task.left)) * samples;
            let dst_row = task.base + (y - y0) * out_strides[ya] + (cols.0 - x0) * out_strides[xa];
            if samples == 1 {
                let from = src_row as usize * element;
                let to = dst_row as usize * element;
                out[to..to + run * element].copy_from_slice(&data[from..from + run * element]);
                continue;
            }
            let stride = sample_axis.map_or(0, |a| out_strides[a]);
            for s in s0..s1 {
                let dst = dst_row + (s - s0) * stride;
                for i in 0..run as u64 {
                    let from = ((src_row + i * samples + s) as usize) * element;
                    let to = ((dst + i * out_strides[xa]) as usize) * element;
                    out[to..to + element].copy_from_slice(&data[from..from + element]);
                }
            }
        }
    }
    Ok(out)
}
