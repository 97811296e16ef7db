//! Every command whose reader goes away (`shardwright info x.zarr | head -1`) stops quietly
//! with status 141 (128 + SIGPIPE), never a panic.

use std::path::Path;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_shardwright");

/// Run `shardwright args…` with stdout a pipe whose reading end is already closed, so
/// that its first write fails with a broken pipe.
fn with_closed_stdout(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    Command::new(BIN)
        .args(args)
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

fn quiet_exit(args: &[&str]) {
    let out = with_closed_stdout(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    assert!(!stderr.contains("error"), "{args:?}: {stderr}");
    assert_eq!(out.status.code(), Some(141), "{args:?}: {stderr}");
}

fn text(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn every_command_exits_141_quietly_when_stdout_is_closed() {
    let dir = std::env::temp_dir().join(format!("sw-closed-stdout-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let demo = [
        "--shape",
        "1,1,8,64,64",
        "--shards",
        "1,1,8,32,32",
        "--chunks",
        "1,1,8,16,16",
        "--levels",
        "2",
        "-q",
    ];
    let made = Command::new(BIN)
        .args(["demo", text(&dir)])
        .args(demo)
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let image = dir.join("pyramid.zarr");
    let volume = dir.join("volume.zarr");
    quiet_exit(&["info", text(&image)]);
    quiet_exit(&["info", text(&volume)]);
    quiet_exit(&["check", "-q", text(&volume)]);
    quiet_exit(&["check", "-q", "--json", text(&image)]);
    let copy = dir.join("copy.zarr");
    quiet_exit(&["copy", "-q", text(&volume), text(&copy)]);
    let pyramid = dir.join("p.zarr");
    quiet_exit(&[
        "pyramid",
        "-q",
        text(&volume),
        text(&pyramid),
        "--factors",
        "1,1,2,2,2",
    ]);
    let scratch = dir.join("demo");
    quiet_exit(&[
        "demo",
        text(&scratch),
        "--shape",
        "1,1,8,64,64",
        "--levels",
        "2",
        "-q",
    ]);
    let bench = [
        "--size",
        "32",
        "--shards",
        "32",
        "--chunks",
        "16",
        "--repeat",
        "1",
        "--dir",
        text(&dir),
    ];
    quiet_exit(&[&["bench"][..], &bench].concat());
    quiet_exit(&["--help"]);
    quiet_exit(&["--version"]);
    quiet_exit(&["info", "--help"]);
    std::fs::remove_dir_all(&dir).unwrap();
}
