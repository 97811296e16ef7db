//! `shardwright`: the command-line tool, as a library so that the binary (`src/main.rs`)
//! and the Python package's console script (through the extension) run the same code.
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
    /// Write a sharded uint16 array chunk by chunk from a built-in example, then verify it.
    Demo(demo::Args),
    /// Describe the array at PATH: shape, data type, grids, codecs, shards stored.
    Info(info::Args),
    /// Benchmark chunk-by-chunk writing against compressing the same chunks alone.
    Bench(bench::Args),
}

/// Run the command line `args` (the program name first) and return the process exit code:
/// 0 on success, 1 when the command failed (the error is printed on stderr), 2 for a
/// command line that does not parse (clap's message on stderr; `--help` and `--version`
/// print on stdout and return 0). Never exits the process.
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
        Command::Bench(args) => bench::run(&args),
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
