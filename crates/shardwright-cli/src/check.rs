//! `shardwright check PATH`: verify every stored shard of an array (index checksum, byte
//! ranges, every inner chunk decoded), report the damaged ones, and with `--repair` mend
//! them. Exit status: 0 no damage, 1 the check could not run (no array, storage failing:
//! as every command's failure; for a group, a member not checked and no damage found), 2
//! bad usage (as every command), 3 damage found and left (or some of it not repaired; for a
//! group, a member whose zarr.json does not parse or a listed level missing, which check
//! cannot repair), 4 damage found and all of it repaired.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use shardwright::check::{self, CheckOptions, CheckProgress, CheckReport};
use shardwright::{Array, ErrorKind};

use crate::interrupt::Interrupted;
use crate::location::{self, Location};
use crate::members::{self, Member};
use crate::memory;
use crate::output::{out, say};
use crate::Job;

type Failure = Box<dyn std::error::Error>;

const MIB: f64 = (1 << 20) as f64;

/// No damage found.
pub(crate) const CLEAN: i32 = 0;
/// The check could not run (the status of every command's failure).
pub(crate) const FAILED: i32 = 1;
/// Damage found and left (without `--repair`, or some repair skipped or failed); 2 is
/// clap's, for a command line that does not parse.
pub(crate) const DAMAGED: i32 = 3;
/// Damage found, and every damaged shard repaired.
pub(crate) const REPAIRED: i32 = 4;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The array's folder (holding zarr.json) or an object-store URL; for a Zarr group or
    /// an OME-Zarr image, every array in it is checked: a member whose zarr.json does not
    /// parse, or a level the image lists that is missing, is damage (exit 3, never
    /// repaired); an array check cannot read (Zarr v2, an unsupported codec) is reported
    /// "not checked" and makes the check incomplete (exit 1 unless damage is found).
    path: String,
    /// Check the shard indexes only (length, checksum, byte ranges): read each shard's
    /// index, decode no chunk.
    #[arg(long)]
    quick: bool,
    /// Rewrite each damaged shard keeping every chunk that still decodes (the rest become
    /// the fill value, listed), conditionally: a shard changed since it was checked is
    /// skipped, never overwritten.
    #[arg(long)]
    repair: bool,
    /// Print the report as JSON on stdout (no progress, no text).
    #[arg(long)]
    json: bool,
    /// An object-store option, KEY=VALUE (repeat for several).
    #[arg(long = "storage-option")]
    storage_options: Vec<String>,
    /// No progress output (the report and summary are still printed).
    #[arg(long, short)]
    quiet: bool,
}

/// Run the check; returns the exit status ([`FAILED`] is the caller's, for an error).
pub(crate) fn run(args: &Args, job: &Job) -> Result<i32, Failure> {
    checked(args, job)
}

/// The exit status for `report`.
fn status(report: &CheckReport) -> i32 {
    if report.is_clean() {
        CLEAN
    } else if report.repair && report.all_repaired() {
        REPAIRED
    } else {
        DAMAGED
    }
}

/// The array at `path` in `location`'s store (`text` names it in messages).
fn open(location: &Location, path: &str, text: &str) -> Result<Array, Failure> {
    if location
        .folder
        .as_ref()
        .is_some_and(|f| f.join(path).join(".zarray").exists())
    {
        return Err(format!(
            "'{text}' is a Zarr v2 array; check reads Zarr v3 arrays (copy it with `shardwright \
             copy` to make one)"
        )
        .into());
    }
    Array::open(Arc::clone(&location.store), path).map_err(|e| match e.kind() {
        ErrorKind::NotFound => format!("no Zarr array at '{text}' (no zarr.json there)").into(),
        _ => Failure::from(e),
    })
}

/// Check the array at `args.path`, or every array of the group (an OME-Zarr image's
/// levels, nested groups) there; print the reports; return the exit status (damage left
/// anywhere: [`DAMAGED`]; else repaired anywhere: [`REPAIRED`]).
fn checked(args: &Args, job: &Job) -> Result<i32, Failure> {
    let options = location::options(&args.storage_options)?;
    let location = Location::parse(&args.path, &options)?;
    if let Some(err) = location.not_an_array() {
        return Err(err);
    }
    let Some(members) = members::members(&location, &args.path)? else {
        let array = open(&location, &location.path, &args.path)?;
        let report = check_one(&array, args, job)?;
        if args.json {
            out!("{}", serde_json::to_string_pretty(&report.to_json())?);
        } else {
            for line in describe(&report) {
                out!("{line}");
            }
            out!("{}", summary(&report));
        }
        return Ok(status(&report));
    };
    if members.is_empty() {
        return Err(format!("'{}' is a Zarr group holding no arrays to check", args.path).into());
    }
    let mut statuses = Vec::new();
    let mut json = Vec::new();
    let mut not_checked = 0;
    for member in &members {
        let (name, entry, lines) = match member {
            Member::Array(name) => {
                let text = format!("{}/{name}", args.path.trim_end_matches('/'));
                let path = shardwright::store::join(&location.path, name);
                match open(&location, &path, &text) {
                    Ok(array) => {
                        let report = check_one(&array, args, job)?;
                        statuses.push(status(&report));
                        let mut lines = describe(&report);
                        lines.push(summary(&report));
                        (name, report.to_json(), lines)
                    }
                    Err(e) => {
                        not_checked += 1;
                        let why = e.to_string();
                        let entry = serde_json::json!({ "checked": false, "reason": why });
                        (name, entry, vec![format!("not checked: {why}")])
                    }
                }
            }
            Member::NotChecked(name, why) => {
                not_checked += 1;
                let entry = serde_json::json!({ "checked": false, "reason": why });
                (name, entry, vec![format!("not checked: {why}")])
            }
            Member::Damaged(name, what) => {
                statuses.push(DAMAGED);
                let left = if args.repair {
                    "; --repair cannot mend it: restore it, or write it again"
                } else {
                    "; check cannot repair it: restore it, or write it again"
                };
                let entry = serde_json::json!({ "ok": false, "damage": what });
                (name, entry, vec![format!("damaged: {what}{left}")])
            }
        };
        if args.json {
            let mut entry = entry;
            entry["path"] = name.as_str().into();
            json.push(entry);
        } else {
            out!("array '{name}':");
            for line in lines {
                out!("  {line}");
            }
        }
    }
    let damaged = statuses.iter().filter(|&&s| s != CLEAN).count();
    let status = group_status(&statuses, not_checked);
    if args.json {
        let group = serde_json::json!({
            "ok": damaged == 0 && not_checked == 0,
            "complete": not_checked == 0,
            "arrays": json,
        });
        out!("{}", serde_json::to_string_pretty(&group)?);
    } else {
        let what = match status {
            CLEAN => "no damage",
            REPAIRED => "all damage repaired",
            FAILED => "incomplete (no damage in the arrays checked)",
            _ => "damage left",
        };
        let skipped = if not_checked > 0 {
            format!(", {not_checked} not checked")
        } else {
            String::new()
        };
        out!(
            "check: {} arrays in '{}', {damaged} with damage{skipped}: {what}",
            members.len(),
            args.path
        );
    }
    Ok(status)
}

/// A group's exit status from its checked members' `statuses` and the number of members
/// `not_checked`: damage left anywhere: [`DAMAGED`]; else a member not checked: [`FAILED`]
/// (the check is incomplete); else repaired anywhere: [`REPAIRED`]; else [`CLEAN`].
fn group_status(statuses: &[i32], not_checked: usize) -> i32 {
    if statuses.contains(&DAMAGED) {
        DAMAGED
    } else if not_checked > 0 {
        FAILED
    } else if statuses.contains(&REPAIRED) {
        REPAIRED
    } else {
        CLEAN
    }
}

/// Check one array, showing progress; an interruption is [`Interrupted`].
fn check_one(array: &Array, args: &Args, job: &Job) -> Result<CheckReport, Failure> {
    let options = CheckOptions {
        quick: args.quick,
        repair: args.repair,
    };
    let mut shown = Shown::new(args.quiet || args.json);
    let report = check::check(array, &options, &mut |p| {
        shown.update(p);
        !job.stop()
    })?;
    shown.clear();
    if !report.complete {
        return Err(Interrupted(if args.repair {
            "the check stopped part way (the shards repaired so far stay repaired); run it \
             again"
        } else {
            "the check stopped part way; run it again"
        })
        .into());
    }
    Ok(report)
}

/// One block of lines per damaged shard: its key and size, each problem, the repair; then
/// one line per piece of crash debris.
fn describe(report: &CheckReport) -> Vec<String> {
    let what = if report.sharded { "shard" } else { "chunk" };
    let mut lines = Vec::new();
    for d in &report.damaged {
        lines.push(format!("damaged {what} {} ({} bytes):", d.key, d.size));
        lines.extend(d.problems.iter().map(|p| format!("  {p}")));
        if let Some(repair) = &d.repair {
            lines.push(format!("  {repair}"));
        }
    }
    let done = if report.repair {
        "removed"
    } else {
        "left (--repair removes it)"
    };
    lines.extend(report.debris.iter().map(|d| format!("debris {d}: {done}")));
    lines
}

/// The summary line: shards checked, chunks decoded, bytes read, damage, time.
fn summary(report: &CheckReport) -> String {
    let missing = report.shards_total - report.shards_stored;
    let unit = if report.sharded { "shards" } else { "chunks" };
    let decoded = if report.quick {
        format!(
            "indexes only, {} inner chunks listed",
            report.chunks_checked
        )
    } else if report.sharded {
        format!("{} inner chunks decoded", report.chunks_decoded)
    } else {
        "each decoded".to_string()
    };
    let damage = if report.is_clean() {
        "no damage".to_string()
    } else {
        let repaired = report
            .damaged
            .iter()
            .filter(|d| d.repair.as_ref().is_some_and(check::Repair::is_done))
            .count();
        let mut text = format!("{} damaged", report.damaged.len());
        if report.repair {
            let left = report.damaged.len() - repaired;
            text.push_str(&format!(
                ", {repaired} repaired ({} chunks lost, now the fill value), {left} left",
                report.lost_chunks().len()
            ));
        }
        text
    };
    format!(
        "check: {} of {} {unit} stored ({missing} missing: the fill value), {decoded}, {:.1} \
         MiB read in {:.2} s ({:.0} MiB/s), peak memory {:.0} MiB: {damage}",
        report.shards_stored,
        report.shards_total,
        report.bytes_read as f64 / MIB,
        report.seconds,
        report.bytes_read as f64 / MIB / report.seconds.max(1e-9),
        memory::peak_mib()
    )
}

/// Progress: a bar on a terminal's stderr, plain lines (every 2 s) elsewhere.
struct Shown {
    bar: Option<ProgressBar>,
    quiet: bool,
    started: Instant,
    last_line: Instant,
}

impl Shown {
    fn new(quiet: bool) -> Self {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(0);
            if let Ok(style) = ProgressStyle::with_template(
                "{bar:40} {pos}/{len} shards  {msg}  {elapsed_precise} ETA {eta}",
            ) {
                bar.set_style(style);
            }
            bar
        });
        Self {
            bar,
            quiet,
            started: Instant::now(),
            last_line: Instant::now(),
        }
    }

    fn update(&mut self, p: &CheckProgress) {
        let rate = p.bytes_read as f64 / MIB / self.started.elapsed().as_secs_f64().max(1e-9);
        if let Some(bar) = &self.bar {
            bar.set_length(p.shards_total);
            bar.set_position(p.shards_done);
            bar.set_message(format!("{} damaged  {rate:.0} MiB/s read", p.damaged));
        } else if !self.quiet
            && (self.last_line.elapsed() >= Duration::from_secs(2)
                || p.shards_done == p.shards_total)
        {
            self.last_line = Instant::now();
            say!(
                "{}/{} shards ({:.0}%), {} damaged, {:.1} MiB read, {rate:.0} MiB/s",
                p.shards_done,
                p.shards_total,
                100.0 * p.shards_done as f64 / p.shards_total.max(1) as f64,
                p.damaged,
                p.bytes_read as f64 / MIB
            );
        }
    }

    fn clear(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use shardwright::{Array, ArraySpec, FilesystemStore};

    fn run(args: &[&str]) -> i32 {
        let mut argv = vec!["shardwright", "check", "--quiet"];
        argv.extend(args);
        crate::run(argv)
    }

    #[test]
    fn exit_status_clean_damaged_repaired_and_failed() {
        let dir = std::env::temp_dir().join(format!("shardwright-check-{}", std::process::id()));
        let path = dir.join("a.zarr");
        let store = Arc::new(FilesystemStore::new(&path));
        let spec = ArraySpec::new(vec![8], "uint8", vec![2]).shards(vec![4]);
        let array = Array::create(store, "", &spec).unwrap();
        for shard in array.shards().collect::<Vec<_>>() {
            let writer = array.shard_writer(&shard).unwrap();
            writer.write_region_value(&shard, &[5]).unwrap();
            writer.commit().unwrap();
        }
        let text = path.to_str().unwrap();
        assert_eq!(run(&[text]), super::CLEAN);
        std::fs::write(path.join("c/1"), b"torn").unwrap();
        assert_eq!(run(&[text, "--quick"]), super::DAMAGED);
        assert_eq!(run(&[text, "--json"]), super::DAMAGED);
        assert_eq!(run(&[text, "--repair"]), super::REPAIRED);
        assert!(!path.join("c/1").exists());
        assert_eq!(run(&[text]), super::CLEAN);
        let missing = dir.join("nothing.zarr");
        assert_eq!(run(&[missing.to_str().unwrap()]), super::FAILED);
        assert_eq!(run(&[text, "--no-such-flag"]), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_group_member_broken_missing_or_unreadable_is_reported() {
        let dir = std::env::temp_dir().join(format!("shardwright-group-{}", std::process::id()));
        let group = r#"{"zarr_format": 3, "node_type": "group", "attributes": {"ome":
            {"multiscales": [{"datasets": [{"path": "0"}, {"path": "1"}, {"path": "2"}]}]}}}"#;
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("zarr.json"), group).unwrap();
        for level in ["0", "1", "2"] {
            let store = Arc::new(FilesystemStore::new(dir.join(level)));
            Array::create(store, "", &ArraySpec::new(vec![4], "uint8", vec![2])).unwrap();
        }
        let text = dir.to_str().unwrap();
        assert_eq!(run(&[text]), super::CLEAN);
        std::fs::write(dir.join("1/zarr.json"), b"{\"zarr_format\": 3, \"node").unwrap();
        assert_eq!(run(&[text]), super::DAMAGED);
        assert_eq!(run(&[text, "--repair"]), super::DAMAGED);
        std::fs::remove_dir_all(dir.join("1")).unwrap();
        assert_eq!(run(&[text, "--json"]), super::DAMAGED);
        let v2 = dir.join("1");
        std::fs::create_dir_all(&v2).unwrap();
        std::fs::write(
            dir.join("zarr.json"),
            r#"{"zarr_format": 3, "node_type": "group"}"#,
        )
        .unwrap();
        std::fs::write(v2.join(".zarray"), b"{}").unwrap();
        assert_eq!(run(&[text]), super::FAILED);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
