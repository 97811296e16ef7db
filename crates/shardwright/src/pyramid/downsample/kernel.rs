//! The kernel interface: [`Kernel`] computes one segment of one output row. The kernels
//! ([`super::accumulate`], [`super::median_mode`], [`super::pick`]) implement it; the
//! driver ([`super::dispatch`]) runs them.

use super::geometry::Geom;

/// Computes one segment of one output row.
pub(super) trait Kernel: Sync {
    /// Per-task scratch space, reused across rows.
    type Scratch: Send;
    fn scratch(&self, g: &Geom) -> Self::Scratch;
    /// Compute output columns `c0..c1` of the output row whose block starts at the input
    /// rows `rows` (element offsets, C order), writing their bytes to `out`.
    #[allow(clippy::too_many_arguments)]
    fn row(
        &self,
        s: &mut Self::Scratch,
        g: &Geom,
        input: &[u8],
        rows: &[usize],
        c0: usize,
        c1: usize,
        out: &mut [u8],
    );
}
