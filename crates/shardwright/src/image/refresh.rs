//! Recomputing the coarser shards under level-0 regions that changed after the levels
//! above were made from them.

use std::collections::BTreeMap;

use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::pyramid::downsample;
use crate::pyramid::plan::Plan;
use crate::pyramid::PyramidError;
use crate::Array;

/// Puts and bytes of a refresh.
#[derive(Debug, Default)]
pub(crate) struct Refreshed {
    pub(crate) puts: u64,
    pub(crate) bytes_written: u64,
}

/// Level by level from 1 up, rewrite every shard meeting what `dirty` (regions of level
/// 0) becomes there, each whole, from the level below it (already rewritten).
pub(crate) fn refresh(arrays: &[Array], plan: &Plan, dirty: &[Domain]) -> Result<Refreshed> {
    let mut out = Refreshed::default();
    let mut regions = dirty.to_vec();
    for pair in arrays.windows(2) {
        let [below, here] = pair else { continue };
        let mut touched = BTreeMap::new();
        for region in &regions {
            let down = covering(region, &plan.factors);
            for shard in here.shards_meeting(&down) {
                if let Some(index) = shard.index() {
                    touched.insert(here.shard_grid().linear_index(index), shard);
                }
            }
        }
        let bounds = Domain::from_shape(below.layout().shape().to_vec());
        for shard in touched.values() {
            let origin = shard.origin().iter().zip(&plan.factors).map(|(o, f)| o * f);
            let shape = shard.shape().iter().zip(&plan.factors).map(|(s, f)| s * f);
            let source = Domain::new(origin.collect(), shape.collect())
                .intersect(&bounds)
                .ok_or_else(|| Error::Internal(format!("shard {shard} has nothing below")))?;
            let data = below.read(&source)?;
            let values = downsample::downsample_part(
                &data,
                source.origin(),
                source.shape(),
                below.layout().shape(),
                &plan.factors,
                below.layout().data_type_name(),
                plan.method,
            )
            .map_err(PyramidError::from)?;
            let writer = here.shard_writer(shard)?;
            writer.write_region(shard, &values)?;
            let stats = writer.commit()?;
            out.puts += stats.puts;
            out.bytes_written += stats.bytes_written;
        }
        regions = touched.into_values().collect();
    }
    Ok(out)
}

/// The region of the next level whose elements `region` feeds.
fn covering(region: &Domain, factors: &[u64]) -> Domain {
    let origin = region.origin().iter().zip(factors).map(|(o, f)| o / f);
    let stop = region
        .stop()
        .into_iter()
        .zip(factors)
        .map(|(s, f)| s.div_ceil(*f));
    let origin: Vec<u64> = origin.collect();
    let shape = stop.zip(&origin).map(|(s, o)| s - o).collect();
    Domain::new(origin, shape)
}
