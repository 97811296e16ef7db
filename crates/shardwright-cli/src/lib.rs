//! `shardwright`: the command-line tool, as a library so that the binary (`src/main.rs`)
//! and the Python package's console script (through the extension) run the same code.
//!
//! - `shardwright demo` runs the main job on a built-in example: a synthetic TCZYX volume
//!   written sharded, its pyramid built in one pass, every level verified;
//! - `shardwright info PATH` describes an array or an OME-Zarr image;
//! - `shardwright pyramid SRC DST --factors …` builds a multiscale OME-Zarr 0.5 pyramid;
//! - `shardwright copy SRC DST` re-chunks and re-shards any Zarr v2/v3 array;
//! - `shardwright convert SRC DST` turns a TIFF / OME-TIFF (or a folder of them) into an
//!   OME-Zarr 0.5 image, carrying its pixel sizes and channels;
//! - `shardwright check PATH` verifies every stored shard (and `--repair` mends them);
//! - `shardwright bench` measures chunk-by-chunk writing against the compressor alone.

mod add_levels;
mod bench;
mod build;
mod check;
mod convert;
mod data;
mod demo;
mod info;
mod interrupt;
mod location;
mod members;
mod memory;
mod output;
mod physical;
mod progress;

use std::cell::Cell;
use std::ffi::OsString;

pub use interrupt::{Interrupts, INTERRUPTED};
use output::say;

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
    /// Verify every stored shard of the array at PATH, or of every array of the group or
    /// OME-Zarr image there (index checksum, byte ranges, every inner chunk decoded) and
    /// report the damaged ones; --repair mends them. Exit status:
    /// 0 no damage, 1 the check could not run, 3 damage found, 4 all damage repaired.
    Check(check::Args),
    /// Write the levels above level 0 of the OME-Zarr image (or group holding array '0')
    /// IMAGE, from level 0 read once (never written); after level 0 grew, extend every
    /// level with what it gained, rewriting only the shards the change reaches.
    AddLevels(add_levels::Args),
    /// Convert a TIFF, BigTIFF or OME-TIFF file, a folder or glob of TIFF files, or any
    /// array SRC to an OME-Zarr 0.5 image at DST in one pass, carrying the file's axes,
    /// pixel sizes, units and channels (flags given override them); --levels 1 writes
    /// level 0 only.
    Convert(convert::Args),
}

/// Run the command line `args` (the program name first) and return the process exit code:
/// 0 on success, 1 when the command failed (the error is printed on stderr), 2 for a
/// command line that does not parse (clap's message on stderr; `--help` and `--version`
/// print on stdout and return 0; `check` adds 3 for damage found and 4 for damage found
/// and all of it repaired), 130 when interrupted (see [`run_with`]), 141 when stdout was
/// closed before the output ended (`shardwright info x.zarr | head -1`: the command stops
/// quietly). Never exits the process; catches no signal.
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
    run_with(args, Interrupts::Ignore)
}

/// [`run`], stopping `pyramid`, `copy`, `check`, `info` and `demo` cleanly when `interrupts` says
/// so: no new shard is started, uploads under way are aborted and their temporary files
/// removed, "interrupted: …" is printed on stderr and the code is [`INTERRUPTED`] (130).
///
/// ```
/// use shardwright_cli::{run_with, Interrupts};
/// assert_eq!(run_with(["shardwright", "--version"], Interrupts::Poll(&|| false)), 0);
/// ```
pub fn run_with<I, T>(args: I, interrupts: Interrupts<'_>) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) => {
            return match err.print() {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => output::CLOSED,
                _ => err.exit_code(),
            };
        }
    };
    let job = Job {
        interrupts,
        stopped: Cell::new(false),
    };
    let result = match cli.command {
        Command::Demo(args) => job.long(|| demo::run(&args, &job)).map(|()| 0),
        Command::Info(args) => job.long(|| info::run(&args, &job)).map(|()| 0),
        Command::Pyramid(args) => job.long(|| build::pyramid(&args, &job)).map(|()| 0),
        Command::Copy(args) => job.long(|| build::copy(&args, &job)).map(|()| 0),
        Command::Bench(args) => bench::run(&args).map(|()| 0),
        Command::Check(args) => job.long(|| check::run(&args, &job)),
        Command::AddLevels(args) => job.long(|| add_levels::run(&args, &job)).map(|()| 0),
        Command::Convert(args) => job.long(|| convert::run(&args, &job)).map(|()| 0),
    };
    match result {
        Ok(code) => code,
        Err(err) if output::is_closed(err.as_ref()) => output::CLOSED,
        Err(err) if err.is::<interrupt::Interrupted>() => {
            say!("{err}");
            INTERRUPTED
        }
        Err(err) => {
            say!("shardwright: error: {err}");
            check::FAILED
        }
    }
}

/// A running command's view of the interruptions.
pub(crate) struct Job<'a> {
    interrupts: Interrupts<'a>,
    /// Whether [`Job::stop`] said to stop.
    stopped: Cell<bool>,
}

impl Job<'_> {
    /// Run a long command, listening to interruptions while it runs.
    fn long<R>(&self, command: impl FnOnce() -> R) -> R {
        self.interrupts.arm();
        let result = command();
        self.interrupts.disarm();
        result
    }

    /// Whether to stop now (asked after each shard); once true, stays true.
    pub(crate) fn stop(&self) -> bool {
        if !self.stopped.get() && self.interrupts.stop() {
            self.stopped.set(true);
        }
        self.stopped.get()
    }

    /// Whether the command was told to stop.
    pub(crate) fn stopped(&self) -> bool {
        self.stopped.get()
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
