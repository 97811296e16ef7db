//! Where a pyramid's levels stop: with `levels = None`, at the first level that fits within
//! one inner chunk; an explicit number of levels, at most where downsampling changes
//! nothing more.

use super::plan::shape_text;
use super::PyramidError;

/// The level at which a `levels = None` pyramid stops, among the `shrinking` level shapes
/// ([`level_shapes`](super::plan::level_shapes) with `None`): the first whose every
/// downsampled axis (factor above 1) fits within one inner chunk of that level, as
/// requested (before clipping: `chunks`, one shape for every level or one per level; a
/// level past the list uses its last). The last shrinking level (downsampled axes all 1)
/// always fits.
pub(super) fn last_fitting(shrinking: &[Vec<u64>], factors: &[u64], chunks: &[Vec<u64>]) -> usize {
    let fits = |k: usize, level: &Vec<u64>| {
        let Some(chunk) = chunks.get(k).or(chunks.last()) else {
            return true;
        };
        level
            .iter()
            .zip(factors)
            .zip(chunk)
            .all(|((s, f), c)| *f <= 1 || s <= c)
    };
    shrinking
        .iter()
        .enumerate()
        .position(|(k, level)| fits(k, level))
        .unwrap_or(shrinking.len().saturating_sub(1))
}

/// The error for `levels` more than the `shrinking` level shapes of a `shape` image
/// downsampled by `factors`: the levels past them would repeat the last one.
pub(super) fn too_many(
    shape: &[u64],
    factors: &[u64],
    levels: usize,
    shrinking: &[Vec<u64>],
) -> PyramidError {
    let most = shrinking.len();
    let last: Vec<String> = shrinking
        .last()
        .map(|s| s.iter().map(u64::to_string).collect())
        .unwrap_or_default();
    PyramidError::invalid(format!(
        "levels={levels} would add levels that downsample nothing: a {} image with factors \
         {} has at most {most} level{} (the last {})",
        shape_text(shape),
        shape_text(factors),
        if most == 1 { "" } else { "s" },
        last.join("×"),
    ))
}

#[cfg(test)]
#[path = "stop_tests.rs"]
mod tests;
