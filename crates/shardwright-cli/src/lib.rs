//! `shardwright`: the command-line tool, as a library so that the binary (`src/main.rs`)
//! and the Python package's console script (through the extension) run the same code.
//!
//! - `shardwright demo` runs the main job on a built-in example: a synthetic TCZYX volume
//!   written sharded, its pyramid built in one pass, every level verified;
//! - `shardwright info PATH` describes an array or an OME-Zarr image;
//! - `shardwright pyramid SRC DST --factors …` builds a multiscale OME-Zarr 0.5 pyramid;
//! - `shardwright copy SRC DST` re-chunks and re-shards any Zarr v2/v3 array;
//! - `shardwright check PATH` verifies every stored shard (and `--repair` mends them);
//! - `shardwright bench` measures chunk-by-chunk writing against the compressor alone.

mod bench;
mod build;
mod check;
mod data;
mod demo;
mod info;
mod location;
mod memory;
mod progress;

use std::ffi::OsString;

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
    /// The main job on a built-in example: write a synthetic TCZYX volume sharded, build
    /// its pyramid in one pass, verify every level against an independent reference.
    Demo(demo::Args),
    /// Describe the array or OME-Zarr image at PATH: shape, data type, grids, codecs,
    /// shards stored and empty inner chunks (every level of an image).
    Info(info::Args),
    /// Build a multiscale OME-Zarr 0.5 pyramid of SRC at DST in one pass over SRC.
    Pyramid(build::PyramidArgs),
    /// Re-chunk and re-shard any Zarr v2/v3 array SRC into a sharded Zarr v3 array DST.
    Copy(build::CopyArgs),
    /// Benchmark chunk-by-chunk writing against compressing the same chunks alone.
    Bench(bench::Args),
    /// Verify every stored shard of the array at PATH (index checksum, byte ranges, every
    /// inner chunk decoded) and report the damaged ones; --repair mends them. Exit status:
    /// 0 no damage, 1 the check could not run, 3 damage found, 4 all damage repaired.
    Check(check::Args),
}

/// Run the command line `args` (the program name first) and return the process exit code:
/// 0 on success, 1 when the command failed (the error is printed on stderr), 2 for a
/// command line that does not parse (clap's message on stderr; `--help` and `--version`
/// print on stdout and return 0; `check` adds 3 for damage found and 4 for damage found
/// and all of it repaired). Never exits the process.
///
/// ```
/// assert_eq!(shardwright_cli::run(["shardwright", "--version"]), 0);
/// assert_eq!(shardwright_cli::run(["shardwright", "no-such-command"]), 2);
/// ```
pub fn run<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return err.exit_code();
        }
    };
    let result = match cli.command {
        Command::Demo(args) => demo::run(&args),
        Command::Info(args) => info::run(&args),
        Command::Pyramid(args) => build::pyramid(&args),
        Command::Copy(args) => build::copy(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Check(args) => return check::run(&args),
    };
    match result {
        Ok(()) => 0,
        Err(err) => {
            eprintln!("shardwright: error: {err}");
            1
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
