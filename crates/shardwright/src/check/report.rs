//! What a check found: damaged shards, their problems and repairs, and the totals.

use std::fmt;

use serde_json::{json, Value};

use crate::store::Debris;

/// One thing wrong with a stored shard: in one of its inner chunks (`chunk`: its global
/// chunk grid coordinates) or in the shard as a whole (`chunk: None`, e.g. its index).
///
/// ```
/// use shardwright::check::Problem;
/// let p = Problem { chunk: Some(vec![3, 1]), message: "does not decode".into() };
/// assert_eq!(p.to_string(), "chunk 3,1: does not decode");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The inner chunk's coordinates in the array's chunk grid, if the problem is one
    /// chunk's.
    pub chunk: Option<Vec<u64>>,
    /// What is wrong.
    pub message: String,
}

/// Chunk coordinates as `3,1`.
#[must_use]
pub fn coordinates(chunk: &[u64]) -> String {
    chunk
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.chunk {
            Some(chunk) => write!(f, "chunk {}: {}", coordinates(chunk), self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// What `--repair` did with a damaged shard.
///
/// ```
/// use shardwright::check::Repair;
/// let r = Repair::Rewritten { kept: 3, lost: vec![vec![0, 1]] };
/// assert_eq!(r.to_string(), "repaired: 3 chunk(s) kept, 1 lost (now the fill value): 0,1");
/// assert!(r.is_done());
/// assert_eq!(Repair::Skipped.to_string(), "skipped: changed since checked");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repair {
    /// Rewritten with the `kept` chunks that decode (their bytes copied verbatim); the
    /// `lost` chunks (coordinates) are the fill value now.
    Rewritten {
        /// Chunks kept.
        kept: u64,
        /// Chunks lost, now the fill value.
        lost: Vec<Vec<u64>>,
    },
    /// Removed: no chunk could be kept; the `lost` chunks are the fill value now (for a
    /// shard whose index was lost: every chunk of the shard, stored or not).
    Removed {
        /// Chunks lost, now the fill value.
        lost: Vec<Vec<u64>>,
    },
    /// Not rewritten: the stored value changed after it was checked (a live writer).
    Skipped,
    /// Rewriting failed (the message says why); the damaged value is still there.
    Failed(String),
}

impl Repair {
    /// Whether the damage is gone (rewritten or removed).
    #[must_use]
    pub fn is_done(&self) -> bool {
        matches!(self, Repair::Rewritten { .. } | Repair::Removed { .. })
    }

    /// The chunks lost (now the fill value).
    #[must_use]
    pub fn lost(&self) -> &[Vec<u64>] {
        match self {
            Repair::Rewritten { lost, .. } | Repair::Removed { lost } => lost,
            Repair::Skipped | Repair::Failed(_) => &[],
        }
    }

    fn to_json(&self) -> Value {
        match self {
            Repair::Rewritten { kept, lost } => {
                json!({"status": "rewritten", "kept": kept, "lost": lost})
            }
            Repair::Removed { lost } => json!({"status": "removed", "kept": 0, "lost": lost}),
            Repair::Skipped => json!({"status": "skipped", "message": "changed since checked"}),
            Repair::Failed(why) => json!({"status": "failed", "message": why}),
        }
    }
}

impl fmt::Display for Repair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |lost: &[Vec<u64>]| {
            lost.iter()
                .map(|c| coordinates(c))
                .collect::<Vec<_>>()
                .join(" ")
        };
        match self {
            Repair::Rewritten { kept, lost } if lost.is_empty() => {
                write!(f, "repaired: {kept} chunk(s) kept, none lost")
            }
            Repair::Rewritten { kept, lost } => write!(
                f,
                "repaired: {kept} chunk(s) kept, {} lost (now the fill value): {}",
                lost.len(),
                list(lost)
            ),
            Repair::Removed { lost } => write!(
                f,
                "removed: no chunk could be kept, {} lost (now the fill value): {}",
                lost.len(),
                list(lost)
            ),
            Repair::Skipped => f.write_str("skipped: changed since checked"),
            Repair::Failed(why) => write!(f, "repair failed: {why}"),
        }
    }
}

/// A damaged stored shard (or, in an unsharded array, a damaged chunk).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DamagedShard {
    /// Its storage key (in the store, the array's folder included).
    pub key: String,
    /// Its grid index (for an unsharded array: the chunk's coordinates).
    pub shard: Vec<u64>,
    /// Its stored size in bytes.
    pub size: u64,
    /// What is wrong, shard-wide problems first, then by chunk.
    pub problems: Vec<Problem>,
    /// Whether no entry of its index could be read.
    pub index_unreadable: bool,
    /// What a repair did (`None` without [`repair`](super::CheckOptions::repair)).
    pub repair: Option<Repair>,
}

impl DamagedShard {
    fn to_json(&self) -> Value {
        let problems: Vec<Value> = self
            .problems
            .iter()
            .map(|p| json!({"chunk": p.chunk, "message": p.message, "text": p.to_string()}))
            .collect();
        json!({
            "key": self.key,
            "shard": self.shard,
            "size": self.size,
            "problems": problems,
            "index_unreadable": self.index_unreadable,
            "repair": self.repair.as_ref().map(Repair::to_json),
        })
    }
}

/// What [`check`](super::check) found and did. New kinds of findings may be added (e.g.
/// crash debris), so the struct is `non_exhaustive`.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct CheckReport {
    /// Whether the array is sharded (otherwise its "shards" are its chunks).
    pub sharded: bool,
    /// Whether only indexes were checked.
    pub quick: bool,
    /// Whether damaged shards were repaired.
    pub repair: bool,
    /// Shards in the grid (stored or not).
    pub shards_total: u64,
    /// Shards found stored (and checked).
    pub shards_stored: u64,
    /// Inner chunks the indexes list as stored.
    pub chunks_checked: u64,
    /// Inner chunks decoded.
    pub chunks_decoded: u64,
    /// Bytes read from the store.
    pub bytes_read: u64,
    /// The damaged shards, in grid order.
    pub damaged: Vec<DamagedShard>,
    /// Seconds the check took.
    pub seconds: f64,
    /// Whether every shard was checked (false: stopped by the progress callback).
    pub complete: bool,
    /// Crash debris under the array (stale temporary files of dead writers, abandoned
    /// multipart uploads; see [`Store::debris`](crate::store::Store::debris)), removed
    /// when [`repair`](CheckReport::repair) is set. Debris is not damage: the stored data
    /// is unaffected by it.
    pub debris: Vec<Debris>,
}

impl CheckReport {
    /// Whether no damage was found.
    #[must_use]
    pub fn is_clean(&self) -> bool {
        self.damaged.is_empty()
    }

    /// Whether every damaged shard was repaired (true when none is damaged).
    #[must_use]
    pub fn all_repaired(&self) -> bool {
        self.damaged
            .iter()
            .all(|d| d.repair.as_ref().is_some_and(Repair::is_done))
    }

    /// Every chunk a repair lost (now the fill value), with its shard's key.
    #[must_use]
    pub fn lost_chunks(&self) -> Vec<(&str, &[u64])> {
        self.damaged
            .iter()
            .flat_map(|d| {
                let lost = d.repair.as_ref().map_or(&[][..], Repair::lost);
                lost.iter().map(move |c| (d.key.as_str(), c.as_slice()))
            })
            .collect()
    }

    /// The report as JSON (what `shardwright check --json` prints).
    ///
    /// ```
    /// let report = shardwright::check::CheckReport::default();
    /// assert_eq!(report.to_json()["ok"], true);
    /// ```
    #[must_use]
    pub fn to_json(&self) -> Value {
        json!({
            "ok": self.is_clean(),
            "complete": self.complete,
            "sharded": self.sharded,
            "quick": self.quick,
            "repair": self.repair,
            "shards_total": self.shards_total,
            "shards_stored": self.shards_stored,
            "chunks_checked": self.chunks_checked,
            "chunks_decoded": self.chunks_decoded,
            "bytes_read": self.bytes_read,
            "seconds": self.seconds,
            "damaged": self.damaged.iter().map(DamagedShard::to_json).collect::<Vec<_>>(),
            "debris": self
                .debris
                .iter()
                .map(|d| json!({"key": d.key, "what": d.what, "removed": self.repair}))
                .collect::<Vec<_>>(),
        })
    }
}

/// Progress of a check, after each batch of shards.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckProgress {
    /// Shards visited: grid cells, or, where the store lists, listed shards.
    pub shards_done: u64,
    /// Shards to visit: the grid's cells, or, where the store lists, the listed shards.
    pub shards_total: u64,
    /// Stored shards found so far.
    pub shards_stored: u64,
    /// Inner chunks decoded so far.
    pub chunks_decoded: u64,
    /// Bytes read so far.
    pub bytes_read: u64,
    /// Damaged shards found so far.
    pub damaged: u64,
}
