//! The one async runtime of the library: every object-store request of the process runs on
//! it (its I/O driver and timers on the runtime's threads), and the calling thread waits.

use std::future::Future;
use std::sync::OnceLock;

/// Worker threads of the I/O runtime: requests are network-bound, so a few threads carry
/// many concurrent requests.
const IO_THREADS: usize = 4;

/// The runtime, made on first use. A process forked after that (Python's `multiprocessing`
/// with the "fork" start method) has the runtime's memory but none of its threads, and its
/// connections belong to the parent: a request would wait forever, so it panics with what
/// to do instead (the binding turns the panic into an error).
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<(u32, tokio::runtime::Runtime)> = OnceLock::new();
    let (pid, runtime) = RUNTIME.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(IO_THREADS)
            .thread_name("shardwright-io")
            .enable_all()
            .build()
            .expect("the I/O runtime starts (threads and a timer)");
        (std::process::id(), runtime)
    });
    assert!(
        *pid == std::process::id(),
        "this process was forked after it used an object store: the I/O threads and \
         connections stayed in the parent; start worker processes with the 'spawn' or \
         'forkserver' method (multiprocessing.get_context('spawn')), or open the array only \
         in the workers"
    );
    runtime
}

/// Run `future` on the library's runtime and wait for its output. Safe to call from any
/// thread, also from inside another async runtime (the future then runs on a helper
/// thread, so that runtime's worker is only blocked, never re-entered).
///
/// ```
/// assert_eq!(shardwright_object_store::block_on(async { 1 + 1 }), 2);
/// ```
pub fn block_on<F>(future: F) -> F::Output
where
    F: Future + Send,
    F::Output: Send,
{
    if tokio::runtime::Handle::try_current().is_ok() {
        std::thread::scope(|scope| {
            scope
                .spawn(|| runtime().block_on(future))
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    } else {
        runtime().block_on(future)
    }
}

/// Enter the runtime's context on this thread (for synchronous calls that spawn tasks,
/// such as `WriteMultipart::write`), for as long as the guard lives.
pub(crate) fn enter() -> tokio::runtime::EnterGuard<'static> {
    runtime().enter()
}
