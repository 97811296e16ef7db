//! Tests of crash debris: stale temporary files are removed, live writers' never are.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::debris::{forget_swept, is_temp_name};
use super::{FilesystemStore, CREATED};
use crate::store::{Store, StoreError, Upload};

/// A file as a writer killed mid-upload leaves it: a temporary name, no lock held.
fn debris(dir: &Path, folder: &str, name: &str, random: &str) -> PathBuf {
    let folder = dir.join(folder);
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join(format!(".{name}.{random}.shardwright-tmp"));
    std::fs::write(&path, b"half a shard").unwrap();
    path
}

#[test]
fn temporary_names_are_recognised_and_nothing_else() {
    assert!(is_temp_name(".0.0123456789abcdef.shardwright-tmp"));
    assert!(is_temp_name(".zarr.json.fedcba9876543210.shardwright-tmp"));
    assert!(is_temp_name(&super::temp_name("17")));
    for name in [
        "0",
        ".zattrs",
        "zarr.json",
        "0.0123456789abcdef.shardwright-tmp",   // not hidden
        ".0.0123456789abcdeg.shardwright-tmp",  // not hex
        ".0.0123456789abcde.shardwright-tmp",   // 15 digits
        "..0123456789abcdef.shardwright-tmp",   // no key name
        ".0.0123456789abcdef.shardwright-tmpx", // another suffix
        ".0123456789abcdef.shardwright-tmp",    // no key name
        ".k.taken.shardwright-tmp",             // not a random part
    ] {
        assert!(!is_temp_name(name), "{name}");
    }
}

#[test]
fn the_next_upload_into_a_folder_removes_the_debris_of_dead_writers_there() {
    let dir = tempfile::tempdir().unwrap();
    let store = FilesystemStore::new(dir.path());
    let dead = debris(dir.path(), "a/c/0", "1", "00000000000000aa");
    let elsewhere = debris(dir.path(), "a/c/1", "1", "00000000000000bb");
    std::fs::write(dir.path().join("a/c/0/.zattrs"), b"{}").unwrap();
    forget_swept(); // as a new process after the crash
    store.put("a/c/0/1", &[b"shard"]).unwrap();
    assert!(!dead.exists());
    assert!(elsewhere.exists(), "only the folder written to is swept");
    assert!(dir.path().join("a/c/0/.zattrs").exists());
    assert_eq!(store.get("a/c/0/1").unwrap().unwrap(), b"shard");
    // Once per folder per process: debris appearing later stays until a sweep.
    let later = debris(dir.path(), "a/c/0", "2", "00000000000000cc");
    store.put("a/c/0/2", &[b"shard"]).unwrap();
    assert!(later.exists());
    assert_eq!(
        store.remove_stale_temporaries("").unwrap(),
        [
            "a/c/0/.2.00000000000000cc.shardwright-tmp",
            "a/c/1/.1.00000000000000bb.shardwright-tmp"
        ]
    );
}

#[test]
fn a_sweep_removes_only_stale_temporaries_never_a_live_upload_or_a_value() {
    let dir = tempfile::tempdir().unwrap();
    let store = FilesystemStore::new(dir.path());
    store.put("x.zarr/zarr.json", &[b"{}"]).unwrap();
    store.put("x.zarr/c/0/0", &[b"shard"]).unwrap();
    let mut live = store.begin_upload("x.zarr/c/0/1").unwrap().unwrap();
    live.append(&[b"in progress"]).unwrap();
    let d1 = debris(dir.path(), "x.zarr/c/0", "0", "1111111111111111");
    let d2 = debris(dir.path(), "x.zarr/c/5/7", "3", "2222222222222222");
    let other = debris(dir.path(), "y.zarr/c", "0", "3333333333333333");
    let lookalike = dir.path().join("x.zarr/c/0/.k.taken.shardwright-tmp");
    std::fs::write(&lookalike, b"not ours").unwrap();

    let listed = store.stale_temporaries("x.zarr").unwrap();
    assert_eq!(
        listed,
        [
            "x.zarr/c/0/.0.1111111111111111.shardwright-tmp",
            "x.zarr/c/5/7/.3.2222222222222222.shardwright-tmp"
        ]
    );
    assert!(d1.exists() && d2.exists(), "listing removes nothing");
    assert_eq!(store.remove_stale_temporaries("x.zarr/").unwrap(), listed);
    assert!(!d1.exists() && !d2.exists());
    assert!(other.exists() && lookalike.exists());
    assert_eq!(store.get("x.zarr/c/0/0").unwrap().unwrap(), b"shard");
    live.append(&[b", done"]).unwrap();
    live.complete(None).unwrap();
    assert_eq!(
        store.get("x.zarr/c/0/1").unwrap().unwrap(),
        b"in progress, done"
    );
    assert!(store.stale_temporaries("x.zarr").unwrap().is_empty());
    // The whole store; a prefix that does not exist; a bad prefix.
    assert_eq!(
        store.remove_stale_temporaries("").unwrap(),
        ["y.zarr/c/.0.3333333333333333.shardwright-tmp"]
    );
    assert!(store.stale_temporaries("nothing/here").unwrap().is_empty());
    assert!(store.stale_temporaries("x.zarr/c/0/0").unwrap().is_empty());
    assert!(matches!(
        store.stale_temporaries("../up"),
        Err(StoreError::InvalidKey(_))
    ));
}

#[test]
fn a_file_locked_by_another_open_file_is_live_even_in_this_process() {
    // Another process's live upload, as far as the lock tells: the file is not
    // registered here, but its lock is held through another open file.
    let dir = tempfile::tempdir().unwrap();
    let store = FilesystemStore::new(dir.path());
    let path = debris(dir.path(), "c", "0", "4444444444444444");
    let holder = std::fs::File::open(&path).unwrap();
    holder.lock().unwrap();
    assert!(store.remove_stale_temporaries("").unwrap().is_empty());
    assert!(path.exists());
    drop(holder); // its writer died
    assert_eq!(store.remove_stale_temporaries("").unwrap().len(), 1);
    assert!(!path.exists());
}

/// Install a [`CREATED`] hook acting only on temporary files under `dir` (other tests of
/// this process upload elsewhere meanwhile).
fn on_created(dir: &Path, mut hook: impl FnMut(&Path) + Send + 'static) {
    let dir = dir.to_path_buf();
    *CREATED.lock().unwrap() = Some(Box::new(move |temp: &Path| {
        if temp.starts_with(&dir) {
            hook(temp);
        }
    }));
}

#[test]
fn a_sweeper_removing_a_new_file_before_its_lock_makes_the_writer_take_another() {
    // Between its O_EXCL create and its lock, a writer's file is unlocked: a sweeper in
    // another process may take it for debris and remove it (as here, twice). The writer
    // sees its path no longer names its file and makes another; nothing is lost.
    let dir = tempfile::tempdir().unwrap();
    let store = FilesystemStore::new(dir.path());
    let mut left = 2;
    let removed = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&removed);
    on_created(dir.path(), move |temp| {
        if left > 0 {
            left -= 1;
            let file = std::fs::File::open(temp).unwrap();
            file.try_lock().unwrap(); // what a sweeper does: lock, remove, unlock
            std::fs::remove_file(temp).unwrap();
            seen.lock().unwrap().push(temp.to_path_buf());
        }
    });
    let result = store.put("c/0", &[b"value"]);
    *CREATED.lock().unwrap() = None;
    result.unwrap();
    assert_eq!(store.get("c/0").unwrap().unwrap(), b"value");
    let removed = removed.lock().unwrap();
    assert_eq!(removed.len(), 2);
    assert_ne!(removed[0], removed[1]);
}

#[test]
fn a_sweeper_that_finds_a_new_file_locked_by_nobody_yet_cannot_remove_it_later() {
    // A sweeper that locks the new file first and lets it go without removing it (it was
    // looking when the writer created it): the writer waits for the lock, then holds it,
    // and a sweep from then on sees a live file.
    let dir = tempfile::tempdir().unwrap();
    let store = FilesystemStore::new(dir.path());
    on_created(dir.path(), move |temp| {
        let file = std::fs::File::open(temp).unwrap();
        file.try_lock().unwrap();
        let _ = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            drop(file);
        });
    });
    let began = Instant::now();
    let upload = store.begin_upload("c/0");
    *CREATED.lock().unwrap() = None;
    let mut upload = upload.unwrap().unwrap();
    assert!(
        began.elapsed() >= Duration::from_millis(40),
        "waited for the lock"
    );
    upload.append(&[b"value"]).unwrap();
    let temp = std::fs::read_dir(dir.path().join("c"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .next()
        .unwrap();
    let holder = std::fs::File::open(&temp).unwrap();
    assert!(holder.try_lock().is_err(), "the writer holds its lock");
    upload.complete(None).unwrap();
    assert_eq!(store.get("c/0").unwrap().unwrap(), b"value");
}

/// The environment variable that makes [`child_holding_an_upload`] act (the test binary
/// runs itself as the other process).
const CHILD_DIR: &str = "SHARDWRIGHT_TEST_DEBRIS_CHILD_DIR";

#[test]
fn child_holding_an_upload() {
    // As a test of its own: nothing. As the child of the test below: begin an upload,
    // say where its file is, and hold it until stdin closes (or the parent kills it).
    let Ok(dir) = std::env::var(CHILD_DIR) else {
        return;
    };
    let store = FilesystemStore::new(&dir);
    let mut upload = store.upload("a.zarr/c/0/0").unwrap();
    upload.append(&[b"a live writer's bytes"]).unwrap();
    // Not println!: the test harness may capture that.
    let mut out = std::io::stdout();
    writeln!(out, "TEMP={}", upload.temp_path().display()).unwrap();
    out.flush().unwrap();
    let _ = std::io::stdin().read_line(&mut String::new());
}

#[test]
fn a_live_writer_in_another_process_survives_a_sweep_and_its_debris_goes_once_it_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let store = FilesystemStore::new(dir.path());
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "store::filesystem::debris_tests::child_holding_an_upload",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIR, dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The harness may print the test's name before it on the same line. Read on another
    // thread, so a child that never says it cannot hang the test.
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (send, said) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let temp = stdout
            .lines()
            .map_while(Result::ok)
            .find_map(|line| line.split_once("TEMP=").map(|(_, p)| PathBuf::from(p)));
        let _ = send.send(temp);
    });
    let Ok(Some(temp)) = said.recv_timeout(Duration::from_secs(60)) else {
        let _ = child.kill();
        panic!("the child did not say where its temporary file is");
    };
    assert!(temp.exists());
    // Every way of sweeping leaves the live writer's file alone.
    assert!(store.stale_temporaries("").unwrap().is_empty());
    assert!(store.remove_stale_temporaries("a.zarr").unwrap().is_empty());
    forget_swept();
    store.put("a.zarr/c/0/1", &[b"a neighbour"]).unwrap();
    assert_eq!(
        std::fs::read(&temp).unwrap(),
        b"a live writer's bytes",
        "still there, untouched"
    );
    child.kill().unwrap(); // SIGKILL: its file is debris now
    child.wait().unwrap();
    let key = temp
        .strip_prefix(dir.path())
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert_eq!(
        store.stale_temporaries("a.zarr").unwrap(),
        std::slice::from_ref(&key)
    );
    assert_eq!(store.remove_stale_temporaries("a.zarr").unwrap(), [key]);
    assert!(!temp.exists());
    assert_eq!(store.get("a.zarr/c/0/1").unwrap().unwrap(), b"a neighbour");
}
