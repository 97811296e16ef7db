//! Ctrl-C (SIGINT) or SIGTERM during `shardwright pyramid` stops it cleanly: exit status
//! 130, "interrupted: rerun with --resume" on stderr, no temporary file left behind, and
//! `--resume` then finishes the same pyramid an uninterrupted run writes.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_shardwright");

fn text(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Every file below `dir`, relative, sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.push(path.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// The destination's chunk and shard shape (one chunk a shard).
const SHARD: &str = "1,1,8,32,32";

fn pyramid(src: &Path, dst: &Path, extra: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command
        .args([
            "pyramid",
            text(src),
            text(dst),
            "--factors",
            "1,1,2,2,2",
            "--levels",
            "3",
        ])
        // Small shards: 2,336 of them (2,048 at level 0), so that when the test signals
        // after the first is stored, thousands remain and the build cannot finish before
        // the signal arrives, however loaded the machine.
        .args(["--chunks", SHARD, "--shards", SHARD, "-q"])
        .args(extra);
    command
}

/// Wait (up to 2 minutes) until level 0 of the pyramid at `dst` holds a stored shard (a
/// file that is not a hidden temporary).
fn wait_for_a_stored_shard(dst: &Path) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !files(&dst.join("0/c"))
        .iter()
        .any(|f| !f.file_name().unwrap().to_string_lossy().starts_with('.'))
    {
        assert!(Instant::now() < deadline, "no shard stored in time");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Start a pyramid, send `signal` once its first shard is stored (thousands remain), and
/// check the outcome: exit 130, the message, no temporary file, fewer shards than the whole;
/// then finish it with `--resume` and compare with `reference`.
fn interrupt_then_resume(dir: &Path, src: &Path, reference: &Path, signal: libc::c_int) {
    let dst = dir.join(format!("p{signal}.zarr"));
    let child = pyramid(src, &dst, &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_a_stored_shard(&dst);
    // SAFETY: signalling the child this test started.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "signal {signal}: {stderr}");
    assert!(
        stderr.contains("interrupted: rerun with --resume"),
        "{stderr}"
    );
    assert!(!stderr.contains("error"), "{stderr}");
    let left: Vec<_> = files(&dst)
        .into_iter()
        .filter(|f| f.to_string_lossy().contains("shardwright-tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
    let stored = files(&dst).len();
    assert!(
        stored < files(reference).len(),
        "signal {signal}: the build finished ({stored} files)"
    );

    let resumed = pyramid(src, &dst, &["--resume"]).output().unwrap();
    assert!(resumed.status.success(), "{resumed:?}");
    let summary = String::from_utf8_lossy(&resumed.stdout);
    assert!(summary.contains("already stored and skipped"), "{summary}");
    let levels = |root: &Path| -> Vec<PathBuf> {
        files(root)
            .into_iter()
            .filter(|f| !f.ends_with("zarr.json"))
            .collect()
    };
    assert_eq!(levels(&dst), levels(reference));
    for file in levels(reference) {
        let (a, b) = (
            std::fs::read(dst.join(&file)),
            std::fs::read(reference.join(&file)),
        );
        assert!(a.unwrap() == b.unwrap(), "{file:?} differs");
    }
    let checked = Command::new(BIN)
        .args(["check", "-q", text(&dst)])
        .output()
        .unwrap();
    assert!(checked.status.success(), "{checked:?}");
}

#[test]
fn sigint_and_sigterm_stop_a_pyramid_cleanly_and_resume_finishes_it() {
    let dir = std::env::temp_dir().join(format!("sw-interrupted-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let made = Command::new(BIN)
        .args([
            "demo",
            text(&dir),
            "--shape",
            "1,1,64,512,512",
            "--levels",
            "2",
            "-q",
        ])
        .args(["--shards", "1,1,32,128,128", "--chunks", "1,1,16,64,64"])
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let src = dir.join("volume.zarr");
    let reference = dir.join("reference.zarr");
    let built = pyramid(&src, &reference, &[]).output().unwrap();
    assert!(built.status.success(), "{built:?}");
    interrupt_then_resume(&dir, &src, &reference, libc::SIGINT);
    interrupt_then_resume(&dir, &src, &reference, libc::SIGTERM);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A SIGINT ignored at start (`shardwright pyramid ... &` in a non-interactive shell) stays
/// ignored: the pyramid finishes.
#[test]
fn an_ignored_sigint_stays_ignored() {
    use std::os::unix::process::CommandExt;
    let dir = std::env::temp_dir().join(format!("sw-ignored-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let made = Command::new(BIN)
        .args(["demo", text(&dir), "--shape", "1,1,64,512,512", "-q"])
        .args(["--levels", "2", "--shards", "1,1,32,128,128"])
        .args(["--chunks", "1,1,16,64,64"])
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let dst = dir.join("p.zarr");
    let mut command = pyramid(&dir.join("volume.zarr"), &dst, &[]);
    // SAFETY: only signal(2), async-signal-safe, between fork and exec.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            Ok(())
        });
    }
    let child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_a_stored_shard(&dst);
    // SAFETY: signalling the child this test started.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) },
        0
    );
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("interrupted"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}
