//! A folder of more files than the process may open at once reads: the source keeps a
//! few decoders (file descriptors) open across all of its files, not one or more per file.

mod common;

use std::path::Path;
use std::process::Command;

use common::{data, expected};
use shardwright::pyramid::source::Source;
use shardwright::Domain;
use shardwright_tiff::TiffSource;

/// Set in the child process that reads the folder under a lowered descriptor limit.
const CHILD: &str = "SHARDWRIGHT_TIFF_OPEN_FILES_CHILD";

/// A folder of `count` copies of a 20×30 uint16 slice.
fn folder(count: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let slice = std::fs::read(data("folder2d/slice_000.tif")).unwrap();
    for i in 0..count {
        std::fs::write(dir.path().join(format!("s{i:05}.tif")), &slice).unwrap();
    }
    dir
}

/// Open and read the whole folder at `dir`, checking one slice's pixels.
fn read_folder(dir: &Path, count: u64) {
    let source = TiffSource::open(dir.to_str().unwrap()).unwrap();
    assert_eq!(source.shape(), [count, 20, 30]);
    let all = source
        .read(&Domain::from_shape(vec![count, 20, 30]))
        .unwrap();
    let plane = 20 * 30 * 2;
    let axes = ["y".to_string(), "x".to_string()];
    let first = expected(&axes, &Domain::from_shape(vec![20, 30]), "uint16");
    let last = count as usize - 1;
    assert!(all[last * plane..] == first[..]);
    // A second read finds the decoders the first left open.
    let again = source
        .read(&Domain::new(vec![0, 0, 0], vec![count, 1, 1]))
        .unwrap();
    assert_eq!(again.len(), count as usize * 2);
}

/// Descriptors this process has open (Linux).
fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

#[cfg(unix)]
#[test]
fn a_folder_of_more_files_than_the_descriptor_limit_reads() {
    if let Ok(dir) = std::env::var(CHILD) {
        read_folder(Path::new(&dir), 1100);
        return;
    }
    let dir = folder(1100);
    // This test binary again, running only this test, under a limit of 256 descriptors
    // (`ulimit -n`, in a shell, so that this process keeps its own).
    let exe = std::env::current_exe().unwrap();
    let output = Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 256 && exec \"$0\" \"$@\"")
        .arg(exe)
        .args([
            "a_folder_of_more_files_than_the_descriptor_limit_reads",
            "--exact",
            "--test-threads=1",
        ])
        .env(CHILD, dir.path())
        .env("RAYON_NUM_THREADS", "4")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("1 passed"));
}

#[cfg(target_os = "linux")]
#[test]
fn descriptors_open_after_reading_a_folder_stay_few() {
    let dir = folder(300);
    let before = open_descriptors();
    let source = TiffSource::open(dir.path().to_str().unwrap()).unwrap();
    read_folder(dir.path(), 300);
    source.read(&Domain::from_shape(vec![300, 20, 30])).unwrap();
    let open = open_descriptors().saturating_sub(before);
    // At most 2 × threads + 4 decoders, and slack for the other test of this binary.
    let bound = 2 * rayon::current_num_threads() + 4 + 8;
    assert!(
        open <= bound,
        "{open} descriptors open; expected at most {bound}"
    );
}
