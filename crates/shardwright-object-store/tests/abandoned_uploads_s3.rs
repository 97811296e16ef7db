//! Abandoned multipart uploads against an S3 server: moto on loopback, started through
//! a Python with moto and boto3 (see [`moto_python`]), with the helpers of
//! tests/python/s3_server.py. Without one the test says it is skipped and passes — unless
//! `CI=true` or `SHARDWRIGHT_REQUIRE_S3=1` (scripts/test.sh sets it), where it fails.
//!
//! A writer process streams a shard (a part sent) and is killed with SIGKILL: its upload
//! stays open on the server. A sweep with an age threshold aborts it and removes its
//! marker, while a live upload younger than the threshold survives and completes.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use shardwright::store::Store;
use shardwright_object_store::{ObjectStoreBackend, PART_BYTES};

/// The S3 server helper: prints the endpoint and a new bucket, then answers `uploads`
/// with the open multipart uploads (`key upload_id` per line, then `end`).
const SERVER: &str = r#"
import sys
sys.path.insert(0, sys.argv[1])
import s3_server as s3
server = s3.MotoServer()
client = s3.s3_client(server.endpoint)
print(server.endpoint, s3.new_bucket(client), flush=True)
bucket = None
for line in sys.stdin:
    if line.startswith("bucket "):
        bucket = line.split()[1]
    elif line.strip() == "uploads":
        answer = client.list_multipart_uploads(Bucket=bucket)
        for u in answer.get("Uploads", []):
            print(u["Key"], u["UploadId"], flush=True)
        print("end", flush=True)
server.stop()
"#;

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    endpoint: String,
    bucket: String,
}

/// Where tests/python/s3_server.py is.
const HELPERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/python");

/// The Python that runs the S3 server: `$SHARDWRIGHT_TEST_PYTHON` (which must import the
/// helpers: moto, of the version in requirements-dev.txt, and boto3), else the first of
/// the workspace's `.venv/bin/python`, `python3` and `python` on PATH that imports them;
/// `None` if there is none.
fn moto_python() -> Option<String> {
    let imports_moto = |python: &str| {
        Command::new(python)
            .args([
                "-c",
                "import sys; sys.path.insert(0, sys.argv[1]); import s3_server",
                HELPERS,
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if let Ok(python) = std::env::var("SHARDWRIGHT_TEST_PYTHON") {
        assert!(
            imports_moto(&python),
            "SHARDWRIGHT_TEST_PYTHON={python} cannot import tests/python/s3_server.py \
             (moto and boto3: pip install -r requirements-dev.txt into it)"
        );
        return Some(python);
    }
    let venv = concat!(env!("CARGO_MANIFEST_DIR"), "/../../.venv/bin/python");
    [venv, "python3", "python"]
        .into_iter()
        .find(|python| imports_moto(python))
        .map(str::to_string)
}

/// Whether a missing S3 server fails the test instead of skipping it (`CI=true`, or
/// `SHARDWRIGHT_REQUIRE_S3=1` as scripts/test.sh sets).
fn s3_required() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
        || std::env::var("SHARDWRIGHT_REQUIRE_S3").is_ok_and(|v| v == "1")
}

impl Server {
    /// The server, or `None` (the test then passes, saying it was skipped) when no Python
    /// with moto is found and none is required.
    fn start(test: &str) -> Option<Self> {
        let Some(python) = moto_python() else {
            assert!(
                !s3_required(),
                "{test}: no Python with moto and boto3 for the S3 server, and CI or \
                 SHARDWRIGHT_REQUIRE_S3=1 requires it: set SHARDWRIGHT_TEST_PYTHON to one \
                 (e.g. .venv/bin/python after scripts/test.sh made it)"
            );
            eprintln!(
                "skipped: {test}: no Python with moto (set SHARDWRIGHT_TEST_PYTHON or run \
                 scripts/test.sh)"
            );
            return None;
        };
        let mut child = Command::new(&python)
            .args(["-c", SERVER, HELPERS])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{python} (with moto and boto3) runs the S3 server: {e}"));
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        stdout.read_line(&mut first).unwrap();
        let mut words = first.split_whitespace();
        let (endpoint, bucket) = match (words.next(), words.next()) {
            (Some(e), Some(b)) => (e.to_string(), b.to_string()),
            _ => panic!("the S3 server did not start: {first:?}"),
        };
        writeln!(stdin, "bucket {bucket}").unwrap();
        Some(Self {
            child,
            stdin,
            stdout,
            endpoint,
            bucket,
        })
    }

    fn options(&self) -> Vec<(String, String)> {
        [
            ("endpoint", self.endpoint.as_str()),
            ("region", "us-east-1"),
            ("access_key_id", "testing"),
            ("secret_access_key", "testing"),
            ("allow_http", "true"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    fn store(&self) -> ObjectStoreBackend {
        store_at(&format!("s3://{}/run", self.bucket), &self.options())
    }

    /// The keys of the open multipart uploads.
    fn uploads(&mut self) -> Vec<String> {
        writeln!(self.stdin, "uploads").unwrap();
        let mut keys = Vec::new();
        loop {
            let mut line = String::new();
            self.stdout.read_line(&mut line).unwrap();
            match line.split_whitespace().next() {
                Some("end") | None => break,
                Some(key) => keys.push(key.to_string()),
            }
        }
        keys.sort();
        keys
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn store_at(url: &str, options: &[(String, String)]) -> ObjectStoreBackend {
    let pairs: Vec<(&str, &str)> = options
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    ObjectStoreBackend::from_url(url, &pairs).unwrap().0
}

const CHILD_URL: &str = "SHARDWRIGHT_TEST_S3_WRITER_URL";
const CHILD_OPTIONS: &str = "SHARDWRIGHT_TEST_S3_WRITER_OPTIONS";

#[test]
fn writer_streaming_a_shard() {
    // As a test of its own: nothing. As the child of the test below: stream more than two
    // parts of a shard (so at least one part has arrived), say so, and wait to be killed.
    let (Ok(url), Ok(options)) = (std::env::var(CHILD_URL), std::env::var(CHILD_OPTIONS)) else {
        return;
    };
    let options: Vec<(String, String)> = options
        .split('\n')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let store = store_at(&url, &options);
    let mut upload = store.begin_upload("run/a.zarr/c/0/0").unwrap().unwrap();
    upload.append(&[&vec![3u8; 2 * PART_BYTES + 1]]).unwrap();
    // Not println!: the test harness may capture that.
    let mut out = std::io::stdout();
    writeln!(out, "SENT").unwrap();
    out.flush().unwrap();
    let _ = std::io::stdin().read_line(&mut String::new());
}

#[test]
fn a_killed_writers_upload_is_aborted_by_the_sweep_and_a_young_live_one_survives() {
    let test = "a_killed_writers_upload_is_aborted_by_the_sweep_and_a_young_live_one_survives";
    let Some(mut server) = Server::start(test) else {
        return;
    };
    let options: Vec<String> = server
        .options()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let mut writer = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "writer_streaming_a_shard", "--nocapture"])
        .env(CHILD_URL, format!("s3://{}/run", server.bucket))
        .env(CHILD_OPTIONS, options.join("\n"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // The harness may print the test's name before it on the same line. Read on another
    // thread, so a writer that never says it cannot hang the test.
    let stdout = BufReader::new(writer.stdout.take().unwrap());
    let (send, said) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let sent = stdout
            .lines()
            .map_while(Result::ok)
            .any(|line| line.ends_with("SENT"));
        let _ = send.send(sent);
    });
    if said.recv_timeout(Duration::from_secs(120)) != Ok(true) {
        let _ = writer.kill();
        panic!("the writer did not stream its parts");
    }
    writer.kill().unwrap(); // SIGKILL: no abort, no clean-up
    writer.wait().unwrap();
    assert_eq!(
        server.uploads(),
        ["run/a.zarr/c/0/0"],
        "the killed writer's upload"
    );

    // A live upload, begun 3 s later: younger than the sweep's 2 s threshold.
    std::thread::sleep(Duration::from_secs(3));
    let store = server.store();
    let mut live = store.begin_upload("run/a.zarr/c/0/1").unwrap().unwrap();
    live.append(&[&vec![4u8; PART_BYTES + 1]]).unwrap();
    assert_eq!(server.uploads(), ["run/a.zarr/c/0/0", "run/a.zarr/c/0/1"]);

    let aborted = store
        .remove_abandoned_uploads("run/a.zarr", Duration::from_secs(2))
        .unwrap();
    let keys: Vec<&str> = aborted.iter().map(|u| u.key.as_str()).collect();
    assert_eq!(keys, ["run/a.zarr/c/0/0"]);
    assert_eq!(
        server.uploads(),
        ["run/a.zarr/c/0/1"],
        "the live one survives"
    );

    live.complete(None).unwrap();
    assert_eq!(server.uploads(), Vec::<String>::new());
    assert_eq!(
        store.size("run/a.zarr/c/0/1").unwrap(),
        Some(PART_BYTES as u64 + 1)
    );
    assert!(store.get("run/a.zarr/c/0/0").unwrap().is_none());
    assert!(store
        .abandoned_uploads("run", Duration::ZERO)
        .unwrap()
        .is_empty());
}
