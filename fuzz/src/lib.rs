//! The checks behind shardwright's fuzz targets (`fuzz_targets/`), shared with the replay
//! of the committed corpus in `crates/shardwright/tests/fuzz_regressions.rs`.

pub mod checks;
