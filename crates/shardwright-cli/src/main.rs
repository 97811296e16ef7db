//! `shardwright`: the command-line tool.
//!
//! - `shardwright demo` writes a sharded array chunk by chunk from a built-in example and
//!   verifies it;
//! - `shardwright info PATH` describes an array;
//! - `shardwright bench` measures chunk-by-chunk writing against the compressor alone.

mod bench;
mod data;
mod demo;
mod info;
mod memory;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "shardwright",
    version,
    about = "Write sharded Zarr v3 arrays piece by piece"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write a sharded uint16 array chunk by chunk from a built-in example, then verify it.
    Demo(demo::Args),
    /// Describe the array at PATH: shape, data type, grids, codecs, shards stored.
    Info(info::Args),
    /// Benchmark chunk-by-chunk writing against compressing the same chunks alone.
    Bench(bench::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(&args),
        Command::Info(args) => info::run(&args),
        Command::Bench(args) => bench::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("shardwright: error: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Parse `"64,64,64"` or `"64"` (repeated to `rank`) into a shape.
pub(crate) fn parse_shape(text: &str, rank: usize) -> Result<Vec<u64>, String> {
    let parts: Result<Vec<u64>, _> = text.split(',').map(|p| p.trim().parse::<u64>()).collect();
    let parts = parts.map_err(|e| format!("'{text}' is not a list of integers: {e}"))?;
    match parts.len() {
        1 => Ok(vec![parts[0]; rank]),
        n if n == rank => Ok(parts),
        n => Err(format!("'{text}' has {n} values, expected 1 or {rank}")),
    }
}
