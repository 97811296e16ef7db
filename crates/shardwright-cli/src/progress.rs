//! Progress of a pyramid or copy: a bar with rate and ETA on a terminal, plain lines
//! otherwise, and the one-line summary at the end.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use shardwright::pyramid::build::{Progress, Report};

use crate::memory;
use crate::output::{out, say};

const MIB: f64 = (1 << 20) as f64;

/// Shows progress events as they come.
pub(crate) struct Shown {
    bar: Option<ProgressBar>,
    quiet: bool,
    started: Instant,
    last_line: Instant,
}

impl Shown {
    /// A bar on a terminal's stderr, plain lines (every 2 s) elsewhere, nothing if `quiet`.
    pub(crate) fn new(quiet: bool) -> Self {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(0);
            bar.set_style(
                ProgressStyle::with_template(
                    "{bar:40} {pos}/{len} shards  {msg}  {elapsed_precise} ETA {eta}",
                )
                .expect("a valid template"),
            );
            bar
        });
        Self {
            bar,
            quiet,
            started: Instant::now(),
            last_line: Instant::now(),
        }
    }

    /// Show one event.
    pub(crate) fn update(&mut self, p: &Progress) {
        let done: u64 = p.shards_done.iter().sum();
        let total: u64 = p.shards_total.iter().sum();
        let seconds = self.started.elapsed().as_secs_f64().max(1e-9);
        let rate = p.bytes_read as f64 / MIB / seconds;
        if let Some(bar) = &self.bar {
            bar.set_length(total);
            bar.set_position(done);
            bar.set_message(format!("level {}  {rate:.0} MiB/s read", p.level));
        } else if !self.quiet
            && (self.last_line.elapsed() >= Duration::from_secs(2) || done == total)
        {
            self.last_line = Instant::now();
            say!(
                "{done}/{total} shards ({:.0}%), {:.1} MiB read, {rate:.0} MiB/s",
                100.0 * done as f64 / total.max(1) as f64,
                p.bytes_read as f64 / MIB
            );
        }
    }

    /// Clear the bar.
    pub(crate) fn clear(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    /// Clear the bar and print the summary.
    pub(crate) fn finish(
        &self,
        what: &str,
        report: &Report,
    ) -> Result<(), Box<dyn std::error::Error>> {
        self.clear();
        out!("{}", summary(what, report));
        Ok(())
    }
}

/// The summary line: levels, bytes read and written, MiB/s, peak memory.
pub(crate) fn summary(what: &str, report: &Report) -> String {
    let written: u64 = report.shards_written.iter().sum();
    let skipped: u64 = report.shards_skipped.iter().sum();
    let resumed = if skipped > 0 {
        format!(", {skipped} already stored and skipped")
    } else {
        String::new()
    };
    format!(
        "{what}: {} level(s), {written} shards written{resumed}, {:.1} MiB read, {:.1} MiB \
         written in {:.2} s ({:.0} MiB/s read), peak memory {:.0} MiB",
        report.levels.len(),
        report.bytes_read as f64 / MIB,
        report.bytes_written as f64 / MIB,
        report.seconds,
        report.bytes_read as f64 / MIB / report.seconds.max(1e-9),
        memory::peak_mib()
    )
}
