//! A store wrapper that injects faults: the Nth call of an operation fails, returns
//! truncated or bit-flipped bytes, or stalls; and counts every call, so a test can run a
//! job once to count its calls and then inject a fault at each of them in turn.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::{Debris, Store, StoreError, Upload, Version};

/// An operation of the [`Store`] and [`Upload`] traits that a [`FaultyStore`] counts and
/// can make fail. [`Store::get_versioned`] counts as a [`Get`](FaultOp::Get).
///
/// ```
/// use shardwright::store::FaultOp;
/// assert_eq!(FaultOp::PutIf.name(), "put_if");
/// assert_eq!(FaultOp::ALL.len(), 12);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultOp {
    /// [`Store::get`] and [`Store::get_versioned`].
    Get,
    /// [`Store::get_range`].
    GetRange,
    /// [`Store::size`].
    Size,
    /// [`Store::put`].
    Put,
    /// [`Store::put_if`].
    PutIf,
    /// [`Store::delete`].
    Delete,
    /// [`Store::delete_if`].
    DeleteIf,
    /// [`Store::begin_upload`].
    BeginUpload,
    /// [`Upload::append`].
    Append,
    /// [`Upload::read`].
    UploadRead,
    /// [`Upload::truncate`].
    Truncate,
    /// [`Upload::complete`].
    Complete,
}

impl FaultOp {
    /// Every operation.
    pub const ALL: [FaultOp; 12] = [
        FaultOp::Get,
        FaultOp::GetRange,
        FaultOp::Size,
        FaultOp::Put,
        FaultOp::PutIf,
        FaultOp::Delete,
        FaultOp::DeleteIf,
        FaultOp::BeginUpload,
        FaultOp::Append,
        FaultOp::UploadRead,
        FaultOp::Truncate,
        FaultOp::Complete,
    ];

    /// The operation's name, as the trait method's (`get`, `put_if`, `append`, …).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            FaultOp::Get => "get",
            FaultOp::GetRange => "get_range",
            FaultOp::Size => "size",
            FaultOp::Put => "put",
            FaultOp::PutIf => "put_if",
            FaultOp::Delete => "delete",
            FaultOp::DeleteIf => "delete_if",
            FaultOp::BeginUpload => "begin_upload",
            FaultOp::Append => "append",
            FaultOp::UploadRead => "upload_read",
            FaultOp::Truncate => "truncate",
            FaultOp::Complete => "complete",
        }
    }

    /// The operation named `name` (as [`name`](Self::name) gives it).
    ///
    /// ```
    /// use shardwright::store::FaultOp;
    /// assert_eq!(FaultOp::by_name("complete"), Some(FaultOp::Complete));
    /// assert_eq!(FaultOp::by_name("nope"), None);
    /// ```
    #[must_use]
    pub fn by_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|op| op.name() == name)
    }

    /// Whether the operation returns bytes (so [`Fault::Truncate`] and [`Fault::FlipBit`]
    /// apply to it).
    ///
    /// ```
    /// use shardwright::store::FaultOp;
    /// assert!(FaultOp::GetRange.reads() && !FaultOp::Put.reads());
    /// ```
    #[must_use]
    pub fn reads(self) -> bool {
        matches!(self, FaultOp::Get | FaultOp::GetRange | FaultOp::UploadRead)
    }
}

impl fmt::Display for FaultOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What happens to the call a fault is planned for.
///
/// ```
/// use std::time::Duration;
/// use shardwright::store::Fault;
/// let faults = [Fault::Fail, Fault::FailAfter, Fault::Truncate(10), Fault::FlipBit(3),
///               Fault::Stall(Duration::from_millis(5)), Fault::Block];
/// assert_eq!(faults.len(), 6);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The call fails with a [`StoreError::Io`] naming the key; the inner store is not
    /// called (nothing changes).
    Fail,
    /// The inner store is called (a put stores its value), then the call fails anyway, as
    /// when a reply is lost after the work was done.
    FailAfter,
    /// A read returns only its first `n` bytes (a value shorter than `n` is unchanged).
    /// Other operations fail as with [`Fail`](Fault::Fail).
    Truncate(u64),
    /// A read returns its bytes with bit `n` (modulo the number of bits) flipped; an empty
    /// value is unchanged. Other operations fail as with [`Fail`](Fault::Fail).
    FlipBit(u64),
    /// The call sleeps this long, then proceeds.
    Stall(Duration),
    /// The call waits until [`FaultyStore::release`], then proceeds.
    Block,
}

#[derive(Debug, Default)]
struct Plan {
    /// (operation, 0-based call number) → fault.
    faults: BTreeMap<(FaultOp, u64), Fault>,
    /// Calls so far, per operation.
    calls: BTreeMap<FaultOp, u64>,
    /// Faults that fired: operation, call number, key.
    fired: Vec<(FaultOp, u64, String)>,
    /// Calls blocked now.
    blocked: u64,
    /// Set by `release`: blocked calls (and later `Block` faults) proceed.
    released: bool,
}

#[derive(Debug, Default)]
struct Shared {
    plan: Mutex<Plan>,
    gate: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Plan> {
        self.plan.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Count a call of `op` and take the fault planned for it, if any.
    fn next(&self, op: FaultOp, key: &str) -> Option<Fault> {
        let mut plan = self.lock();
        let n = plan.calls.entry(op).or_insert(0);
        let this = *n;
        *n += 1;
        let fault = plan.faults.remove(&(op, this));
        if fault.is_some() {
            plan.fired.push((op, this, key.to_string()));
        }
        fault
    }

    /// Run the call `op` on `key` with its planned fault: `call` is the inner call, `bytes`
    /// gets at a read's bytes to damage.
    fn run<T>(
        &self,
        op: FaultOp,
        key: &str,
        call: impl FnOnce() -> Result<T, StoreError>,
        bytes: impl FnOnce(&mut T) -> Option<&mut Vec<u8>>,
    ) -> Result<T, StoreError> {
        let Some(fault) = self.next(op, key) else {
            return call();
        };
        let injected = |what: &str| StoreError::Io {
            key: key.to_string(),
            message: format!("injected fault: {what} of {op}"),
        };
        match fault {
            Fault::Fail => Err(injected("failure")),
            Fault::FailAfter => {
                call()?;
                Err(injected("failure after the call"))
            }
            Fault::Truncate(_) | Fault::FlipBit(_) if !op.reads() => Err(injected("failure")),
            Fault::Truncate(n) => {
                let mut value = call()?;
                if let Some(b) = bytes(&mut value) {
                    b.truncate(usize::try_from(n).unwrap_or(usize::MAX));
                }
                Ok(value)
            }
            Fault::FlipBit(bit) => {
                let mut value = call()?;
                if let Some(b) = bytes(&mut value) {
                    flip(b, bit);
                }
                Ok(value)
            }
            Fault::Stall(pause) => {
                std::thread::sleep(pause);
                call()
            }
            Fault::Block => {
                let mut plan = self.lock();
                plan.blocked += 1;
                let mut plan = self
                    .gate
                    .wait_while(plan, |p| !p.released)
                    .unwrap_or_else(PoisonError::into_inner);
                plan.blocked -= 1;
                drop(plan);
                call()
            }
        }
    }
}

/// The bytes of a read that returns bytes.
fn whole(bytes: &mut Vec<u8>) -> Option<&mut Vec<u8>> {
    Some(bytes)
}

/// Flip bit `bit` (modulo the bits there are) of `bytes`.
fn flip(bytes: &mut [u8], bit: u64) {
    let bits = bytes.len() as u64 * 8;
    if bits == 0 {
        return;
    }
    let bit = bit % bits;
    if let Some(byte) = usize::try_from(bit / 8).ok().and_then(|i| bytes.get_mut(i)) {
        *byte ^= 1 << (bit % 8);
    }
}

/// Wraps a store and injects planned faults into its calls (and its uploads' calls),
/// counting every call per [`FaultOp`]. Calls are numbered from 0 per operation, counting
/// from the wrapper's creation or the last [`reset`](FaultyStore::reset). Injected
/// failures are [`StoreError::Io`] errors naming the key, with a message starting
/// `injected fault:`.
///
/// ```
/// use std::sync::Arc;
/// use shardwright::store::{Fault, FaultOp, FaultyStore, MemoryStore, Store, StoreError};
///
/// let store = FaultyStore::new(Arc::new(MemoryStore::new()));
/// store.put("k", &[b"old"]).unwrap();                 // put #0
/// store.inject(FaultOp::Put, 1, Fault::Fail);
/// let err = store.put("k", &[b"new"]).unwrap_err();    // put #1 fails
/// assert!(matches!(&err, StoreError::Io { key, .. } if key == "k"));
/// assert_eq!(store.get("k").unwrap().unwrap(), b"old"); // nothing changed
/// store.inject(FaultOp::Get, 1, Fault::Truncate(1));
/// assert_eq!(store.get("k").unwrap().unwrap(), b"o");
/// assert_eq!((store.calls(FaultOp::Put), store.calls(FaultOp::Get), store.fired()), (2, 2, 2));
/// ```
#[derive(Debug, Clone)]
pub struct FaultyStore {
    inner: Arc<dyn Store>,
    shared: Arc<Shared>,
}

impl FaultyStore {
    /// Wrap `inner`, with no fault planned.
    pub fn new(inner: Arc<dyn Store>) -> Self {
        Self {
            inner,
            shared: Arc::new(Shared::default()),
        }
    }

    /// The wrapped store.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use shardwright::store::{FaultyStore, MemoryStore, Store};
    /// let store = FaultyStore::new(Arc::new(MemoryStore::new()));
    /// assert!(store.inner().get("k").unwrap().is_none());
    /// ```
    #[must_use]
    pub fn inner(&self) -> &Arc<dyn Store> {
        &self.inner
    }

    /// Plan `fault` for call number `nth` (0-based, counted since creation or the last
    /// [`reset`](Self::reset)) of `op`; replaces a fault planned for the same call.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use shardwright::store::{Fault, FaultOp, FaultyStore, MemoryStore, Store};
    /// let store = FaultyStore::new(Arc::new(MemoryStore::new()));
    /// store.inject(FaultOp::Delete, 0, Fault::Fail);
    /// assert!(store.delete("k").is_err());
    /// assert!(store.delete("k").is_ok());
    /// ```
    pub fn inject(&self, op: FaultOp, nth: u64, fault: Fault) {
        self.shared.lock().faults.insert((op, nth), fault);
    }

    /// Forget planned faults and counts; blocked calls stay blocked until
    /// [`release`](Self::release), which stays in force.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use shardwright::store::{Fault, FaultOp, FaultyStore, MemoryStore, Store};
    /// let store = FaultyStore::new(Arc::new(MemoryStore::new()));
    /// store.inject(FaultOp::Get, 0, Fault::Fail);
    /// store.reset();
    /// assert!(store.get("k").is_ok());
    /// assert_eq!(store.calls(FaultOp::Get), 1);
    /// ```
    pub fn reset(&self) {
        let mut plan = self.shared.lock();
        plan.faults.clear();
        plan.calls.clear();
        plan.fired.clear();
    }

    /// How many calls of `op` were made.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use shardwright::store::{FaultOp, FaultyStore, MemoryStore, Store};
    /// let store = FaultyStore::new(Arc::new(MemoryStore::new()));
    /// store.size("k").unwrap();
    /// assert_eq!(store.calls(FaultOp::Size), 1);
    /// ```
    #[must_use]
    pub fn calls(&self, op: FaultOp) -> u64 {
        self.shared.lock().calls.get(&op).copied().unwrap_or(0)
    }

    /// Every operation called at least once, with its count, in [`FaultOp`] order: the
    /// fault points of a job run once without faults.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use shardwright::store::{FaultOp, FaultyStore, MemoryStore, Store};
    /// let store = FaultyStore::new(Arc::new(MemoryStore::new()));
    /// store.put("k", &[b"v"]).unwrap();
    /// store.get("k").unwrap();
    /// assert_eq!(store.counts(), vec![(FaultOp::Get, 1), (FaultOp::Put, 1)]);
    /// ```
    #[must_use]
    pub fn counts(&self) -> Vec<(FaultOp, u64)> {
        let plan = self.shared.lock();
        plan.calls
            .iter()
            .filter(|(_, &n)| n > 0)
            .map(|(&op, &n)| (op, n))
            .collect()
    }

    /// How many planned faults fired.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use shardwright::store::{Fault, FaultOp, FaultyStore, MemoryStore, Store};
    /// let store = FaultyStore::new(Arc::new(MemoryStore::new()));
    /// store.inject(FaultOp::Get, 5, Fault::Fail);
    /// store.get("k").unwrap();
    /// assert_eq!(store.fired(), 0);
    /// ```
    #[must_use]
    pub fn fired(&self) -> u64 {
        self.shared.lock().fired.len() as u64
    }

    /// The faults that fired, in order: operation, call number and key.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use shardwright::store::{Fault, FaultOp, FaultyStore, MemoryStore, Store};
    /// let store = FaultyStore::new(Arc::new(MemoryStore::new()));
    /// store.inject(FaultOp::Put, 0, Fault::Fail);
    /// assert!(store.put("a/b", &[b"v"]).is_err());
    /// assert_eq!(store.fired_at(), vec![(FaultOp::Put, 0, "a/b".to_string())]);
    /// ```
    #[must_use]
    pub fn fired_at(&self) -> Vec<(FaultOp, u64, String)> {
        self.shared.lock().fired.clone()
    }

    /// How many calls wait in a [`Fault::Block`] now.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use shardwright::store::{FaultyStore, MemoryStore};
    /// let store = FaultyStore::new(Arc::new(MemoryStore::new()));
    /// assert_eq!(store.blocked(), 0);
    /// ```
    #[must_use]
    pub fn blocked(&self) -> u64 {
        self.shared.lock().blocked
    }

    /// Let every call blocked by [`Fault::Block`] proceed, and every later one too.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use shardwright::store::{Fault, FaultOp, FaultyStore, MemoryStore, Store};
    /// let store = FaultyStore::new(Arc::new(MemoryStore::new()));
    /// store.inject(FaultOp::Put, 0, Fault::Block);
    /// let writer = { let s = store.clone(); std::thread::spawn(move || s.put("k", &[b"v"])) };
    /// while store.blocked() == 0 { std::thread::yield_now(); }
    /// assert!(store.get("k").unwrap().is_none()); // the put waits
    /// store.release();
    /// writer.join().unwrap().unwrap();
    /// assert_eq!(store.get("k").unwrap().unwrap(), b"v");
    /// ```
    pub fn release(&self) {
        self.shared.lock().released = true;
        self.shared.gate.notify_all();
    }
}

/// An upload through a [`FaultyStore`]: its appends, reads, truncations and completion
/// are counted and can fail.
#[derive(Debug)]
struct FaultyUpload {
    inner: Box<dyn Upload>,
    key: String,
    shared: Arc<Shared>,
}

impl Upload for FaultyUpload {
    fn append(&mut self, parts: &[&[u8]]) -> Result<(), StoreError> {
        let inner = &mut self.inner;
        self.shared
            .run(FaultOp::Append, &self.key, || inner.append(parts), |_| None)
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn read(&mut self, range: Range<u64>) -> Result<Vec<u8>, StoreError> {
        let inner = &mut self.inner;
        self.shared
            .run(FaultOp::UploadRead, &self.key, || inner.read(range), whole)
    }

    fn truncate(&mut self, len: u64) -> Result<(), StoreError> {
        let inner = &mut self.inner;
        self.shared.run(
            FaultOp::Truncate,
            &self.key,
            || inner.truncate(len),
            |_| None,
        )
    }

    fn completes_conditionally(&self) -> bool {
        self.inner.completes_conditionally()
    }

    fn complete(&mut self, condition: Option<Option<&Version>>) -> Result<(), StoreError> {
        let inner = &mut self.inner;
        self.shared.run(
            FaultOp::Complete,
            &self.key,
            || inner.complete(condition),
            |_| None,
        )
    }
}

impl Store for FaultyStore {
    fn begin_upload(&self, key: &str) -> Result<Option<Box<dyn Upload>>, StoreError> {
        let upload = self.shared.run(
            FaultOp::BeginUpload,
            key,
            || self.inner.begin_upload(key),
            |_| None,
        )?;
        Ok(upload.map(|inner| {
            Box::new(FaultyUpload {
                inner,
                key: key.to_string(),
                shared: Arc::clone(&self.shared),
            }) as Box<dyn Upload>
        }))
    }

    fn streams(&self) -> bool {
        self.inner.streams()
    }

    fn deletes_conditionally(&self) -> bool {
        self.inner.deletes_conditionally()
    }

    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.shared
            .run(FaultOp::Get, key, || self.inner.get(key), Option::as_mut)
    }

    fn get_versioned(&self, key: &str) -> Result<Option<(Vec<u8>, Version)>, StoreError> {
        self.shared.run(
            FaultOp::Get,
            key,
            || self.inner.get_versioned(key),
            |v| v.as_mut().map(|(b, _)| b),
        )
    }

    fn get_range(&self, key: &str, range: Range<u64>) -> Result<Option<Vec<u8>>, StoreError> {
        self.shared.run(
            FaultOp::GetRange,
            key,
            || self.inner.get_range(key, range),
            Option::as_mut,
        )
    }

    fn size(&self, key: &str) -> Result<Option<u64>, StoreError> {
        self.shared
            .run(FaultOp::Size, key, || self.inner.size(key), |_| None)
    }

    fn put(&self, key: &str, parts: &[&[u8]]) -> Result<(), StoreError> {
        self.shared
            .run(FaultOp::Put, key, || self.inner.put(key, parts), |_| None)
    }

    fn put_if(
        &self,
        key: &str,
        parts: &[&[u8]],
        expected: Option<&Version>,
    ) -> Result<(), StoreError> {
        self.shared.run(
            FaultOp::PutIf,
            key,
            || self.inner.put_if(key, parts, expected),
            |_| None,
        )
    }

    fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.shared
            .run(FaultOp::Delete, key, || self.inner.delete(key), |_| None)
    }

    fn delete_if(&self, key: &str, expected: Option<&Version>) -> Result<(), StoreError> {
        self.shared.run(
            FaultOp::DeleteIf,
            key,
            || self.inner.delete_if(key, expected),
            |_| None,
        )
    }

    fn list_prefix(&self, prefix: &str) -> Result<Option<Vec<String>>, StoreError> {
        self.inner.list_prefix(prefix)
    }

    fn debris(&self, prefix: &str, remove: bool) -> Result<Vec<Debris>, StoreError> {
        self.inner.debris(prefix, remove)
    }
}
