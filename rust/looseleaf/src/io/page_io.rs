//! [`PageIo`]: the I/O handle a page scheduler uses, which gathers everything one page needs
//! into a single request.
//!
//! The encodings of a page each ask for their own buffers (validity, values, offsets...). Sent
//! one by one these would be several requests per page; `PageIo` collects them while the page
//! is being scheduled and submits them as one request when the page scheduler returns, so the
//! I/O scheduler can coalesce them into as few reads as their layout allows. Follow-up requests
//! of indirect steps go through [`FollowUpIo`], which submits at once.

use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use futures::future::{BoxFuture, FutureExt, Shared};

use super::{
    BufferChecks, EncodingsIo, IndirectHint, IoFuture, IoRequest, Priority, RequestKind, ReservationHolder, Urgency,
};
use crate::error::{Error, Result};

type SharedBuffers = Shared<BoxFuture<'static, Result<Arc<Vec<Bytes>>>>>;

/// Collects the requests of one page (see the module documentation).
pub struct PageIo {
    io: Arc<dyn EncodingsIo>,
    priority: Priority,
    column: u32,
    urgency: Urgency,
    /// The reservations of the page's requests, held as long as the page is in use.
    holder: ReservationHolder,
    /// Ranges asked for so far; guarded because `submit` takes `&self`.
    ranges: Mutex<Vec<Range<u64>>>,
    /// The combined request, set by [`PageIo::finish`].
    combined: Arc<OnceLock<SharedBuffers>>,
    /// Indirect steps, started by [`PageIo::finish`] once the combined request exists (their
    /// first action is usually to await part of it).
    indirect: Mutex<Vec<(IndirectHint, BoxFuture<'static, ()>)>>,
    /// The checksums of the page's buffers, passed with its requests (and its follow-ups'):
    /// every buffer read whole is verified.
    checks: Option<Arc<BufferChecks>>,
}

impl PageIo {
    /// A handle for scheduling one page of `column` at `priority`.
    pub fn new(io: Arc<dyn EncodingsIo>, priority: Priority, column: u32) -> Self {
        Self {
            io,
            priority,
            column,
            urgency: Urgency::new(),
            holder: ReservationHolder::new(),
            ranges: Mutex::new(Vec::new()),
            combined: Arc::new(OnceLock::new()),
            indirect: Mutex::new(Vec::new()),
            checks: None,
        }
    }

    /// Verifies the buffers read for the page (by this handle and its follow-ups) with `checks`.
    pub fn with_checks(self, checks: Option<Arc<BufferChecks>>) -> Self {
        Self { checks, ..self }
    }

    /// The priority of the page's requests: the lowest top-level row the page serves.
    pub fn priority(&self) -> Priority {
        self.priority
    }

    /// The column being scheduled.
    pub fn column(&self) -> u32 {
        self.column
    }

    /// The page's urgency flag, shared by all its requests; the decoder sets it when it waits
    /// for the page.
    pub fn urgency(&self) -> &Urgency {
        &self.urgency
    }

    /// The holder of the page's reservations of the I/O buffer (see
    /// [`IoScheduler`](super::IoScheduler)): whoever uses the page's bytes keeps a clone.
    pub fn holder(&self) -> &ReservationHolder {
        &self.holder
    }

    /// Asks for `ranges`; the future resolves to one buffer per range once the page's combined
    /// request has been read. The future must only be polled after [`PageIo::finish`] (decoders
    /// and indirect steps are only started after it).
    pub fn submit(&self, ranges: Vec<Range<u64>>) -> IoFuture {
        let mut all = self.ranges.lock().unwrap_or_else(|p| p.into_inner());
        let slots = all.len()..all.len() + ranges.len();
        all.extend(ranges);
        let combined = self.combined.clone();
        Box::pin(async move {
            let shared = combined
                .get()
                .cloned()
                .ok_or_else(|| Error::internal("a page's buffers were awaited before the page was scheduled"))?;
            let buffers = shared.await?;
            Ok(buffers[slots].to_vec())
        })
    }

    /// Ranges at most this many bytes apart are read as one (see [`EncodingsIo::coalesce_gap`]).
    pub fn coalesce_gap(&self) -> u64 {
        self.io.coalesce_gap()
    }

    /// A handle for the follow-up requests of an indirect step of this page.
    pub fn follow_up(&self) -> FollowUpIo {
        FollowUpIo {
            io: self.io.clone(),
            priority: self.priority,
            column: self.column,
            urgency: self.urgency.clone(),
            holder: self.holder.clone(),
            checks: self.checks.clone(),
        }
    }

    /// Runs an indirect step apart from the scheduling loop (see [`EncodingsIo::spawn_indirect`])
    /// once the page's combined request has been submitted; `max_bytes` bounds what its
    /// follow-up will read.
    pub fn spawn_indirect(&self, max_bytes: u64, step: BoxFuture<'static, ()>) {
        let hint = IndirectHint { column: self.column, priority: self.priority, max_bytes };
        self.indirect.lock().unwrap_or_else(|p| p.into_inner()).push((hint, step));
    }

    /// Submits the combined request of the page. Called once, by the scheduling loop, after the
    /// page scheduler returned.
    pub fn finish(self) {
        let ranges = std::mem::take(&mut *self.ranges.lock().unwrap_or_else(|p| p.into_inner()));
        // A page without buffers (all null, say) makes no request at all.
        let future = if ranges.is_empty() {
            futures::future::ready(Ok(Arc::new(Vec::new()))).boxed().shared()
        } else {
            let request = IoRequest {
                ranges,
                priority: self.priority,
                column: self.column,
                kind: RequestKind::Direct,
                urgency: Some(self.urgency.clone()),
                holder: Some(self.holder.clone()),
                checks: self.checks.clone(),
            };
            self.io.submit(request).map(|read| read.map(Arc::new)).boxed().shared()
        };
        // `finish` consumes the handle, so the cell is set exactly once.
        let _ = self.combined.set(future);
        for (hint, step) in std::mem::take(&mut *self.indirect.lock().unwrap_or_else(|p| p.into_inner())) {
            self.io.spawn_indirect(hint, step);
        }
    }
}

/// Submits follow-up requests of an indirect step directly, at the priority of the page that
/// started the step.
#[derive(Clone)]
pub struct FollowUpIo {
    io: Arc<dyn EncodingsIo>,
    priority: Priority,
    column: u32,
    urgency: Urgency,
    holder: ReservationHolder,
    checks: Option<Arc<BufferChecks>>,
}

impl FollowUpIo {
    /// Submits `ranges` as one indirect request.
    pub fn submit(&self, ranges: Vec<Range<u64>>) -> IoFuture {
        self.io.submit(IoRequest {
            ranges,
            priority: self.priority,
            column: self.column,
            kind: RequestKind::Indirect,
            urgency: Some(self.urgency.clone()),
            holder: Some(self.holder.clone()),
            checks: self.checks.clone(),
        })
    }
}

/// Marks every request it passes on as indirect and as part of the page that started the
/// indirect step (the items of lists whose offsets were read earlier): each request becomes
/// urgent when that page's [`Urgency`] is set, like the page's own follow-ups (see
/// [`FollowUpIo`]), since a decoder waiting for the page waits for them too.
pub struct IndirectIo {
    io: Arc<dyn EncodingsIo>,
    urgency: Urgency,
}

impl IndirectIo {
    /// Passes requests on to `io`, tying them to `urgency`, the flag of the page whose indirect
    /// step makes them.
    pub fn new(io: Arc<dyn EncodingsIo>, urgency: Urgency) -> Self {
        Self { io, urgency }
    }
}

impl EncodingsIo for IndirectIo {
    fn submit(&self, request: IoRequest) -> IoFuture {
        let urgency = match request.urgency {
            Some(own) => {
                // Set before the request is queued if the page is already awaited.
                let linked = own.clone();
                self.urgency.on_set(move || linked.set());
                own
            }
            None => self.urgency.clone(),
        };
        self.io.submit(IoRequest { kind: RequestKind::Indirect, urgency: Some(urgency), ..request })
    }

    fn spawn_indirect(&self, hint: IndirectHint, step: BoxFuture<'static, ()>) {
        self.io.spawn_indirect(hint, step);
    }

    fn coalesce_gap(&self) -> u64 {
        self.io.coalesce_gap()
    }
}
