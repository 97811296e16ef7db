//! The one async runtime of the library: every object-store request of the process runs on
//! it, and the calling thread blocks (without holding any lock of ours) until it is done.

use std::future::Future;
use std::sync::OnceLock;

/// Worker threads of the I/O runtime: requests are network-bound, so a few threads carry
/// many concurrent requests.
const IO_THREADS: usize = 4;

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(IO_THREADS)
            .thread_name("shardwright-io")
            .enable_all()
            .build()
            .expect("the I/O runtime starts (threads and a timer)")
    })
}

/// Run `future` on the library's runtime and wait for its output. Safe to call from any
/// thread, also from inside another async runtime (the future runs on ours; this thread
/// only waits).
///
/// ```
/// assert_eq!(shardwright_object_store::block_on(async { 1 + 1 }), 2);
/// ```
///
/// # Panics
/// Re-raises a panic of the future on the calling thread.
pub fn block_on<F>(future: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handle = runtime().spawn(future);
    match futures::executor::block_on(handle) {
        Ok(output) => output,
        Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
        Err(err) => panic!("an object-store request was cancelled: {err}"),
    }
}
