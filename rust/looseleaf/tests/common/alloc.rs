//! A global allocator for the test binaries that watch memory: it records the largest single
//! allocation, refuses (returns null for) any larger than its cap, and counts the bytes live at
//! each moment and the most live since the last [`reset_peak`].
//!
//! The cap makes a read sizing its memory by a count a file merely claims fail its test (an
//! error, or an abort of the test binary) instead of taking the machine's memory; the live
//! counters let a test compare the memory a read holds with the bound it promises, counted by
//! the allocator itself rather than by the reader's own bookkeeping (`VmHWM` would count the
//! test harness, the allocator's caches and freed pages not returned yet; this counts exactly
//! the bytes allocated and not freed).
//!
//! A binary installs it with
//! `#[global_allocator] static ALLOCATOR: GuardedAllocator = GuardedAllocator::new(1 << 30);`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, with a cap on single allocations, a record of the largest, and
/// counters of the bytes live.
pub struct GuardedAllocator {
    cap: usize,
}

static LARGEST_ALLOCATION: AtomicUsize = AtomicUsize::new(0);
static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);
static PEAK_LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);

impl GuardedAllocator {
    /// An allocator refusing single allocations of more than `cap` bytes.
    pub const fn new(cap: usize) -> Self {
        Self { cap }
    }
}

/// The largest single allocation (or reallocation) asked for so far by the process, refused
/// ones included.
pub fn largest_allocation() -> usize {
    LARGEST_ALLOCATION.load(Ordering::Relaxed)
}

/// Bytes allocated and not yet freed, by every thread of the process (0 unless the binary
/// installed [`GuardedAllocator`]).
pub fn live_bytes() -> usize {
    LIVE_BYTES.load(Ordering::Relaxed)
}

/// The most bytes live at any moment since the last [`reset_peak`] (or the start).
pub fn peak_live_bytes() -> usize {
    PEAK_LIVE_BYTES.load(Ordering::Relaxed)
}

/// Starts a new peak from the bytes live now, and returns them.
pub fn reset_peak() -> usize {
    let live = live_bytes();
    PEAK_LIVE_BYTES.store(live, Ordering::Relaxed);
    live
}

fn allocated(size: usize) {
    let live = LIVE_BYTES.fetch_add(size, Ordering::Relaxed) + size;
    PEAK_LIVE_BYTES.fetch_max(live, Ordering::Relaxed);
}

fn freed(size: usize) {
    LIVE_BYTES.fetch_sub(size, Ordering::Relaxed);
}

// SAFETY: every call is forwarded unchanged to the system allocator, except those over the cap,
// which return null as an allocator may when it cannot allocate. The counters only observe.
unsafe impl GlobalAlloc for GuardedAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST_ALLOCATION.fetch_max(layout.size(), Ordering::Relaxed);
        if layout.size() > self.cap {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which `System` shares.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            allocated(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LARGEST_ALLOCATION.fetch_max(layout.size(), Ordering::Relaxed);
        if layout.size() > self.cap {
            return std::ptr::null_mut();
        }
        // SAFETY: as for `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            allocated(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout` (every allocation goes there).
        unsafe { System.dealloc(ptr, layout) };
        freed(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST_ALLOCATION.fetch_max(new_size, Ordering::Relaxed);
        if new_size > self.cap {
            return std::ptr::null_mut();
        }
        // SAFETY: as for `dealloc`; the caller upholds `realloc`'s contract.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            // Counted as the new block taken before the old one is given back (a realloc that
            // moves holds both for a moment).
            allocated(new_size);
            freed(layout.size());
        }
        new
    }
}
