//! [`IoDepth`] and the [`DepthController`] that finds the I/O depth of an adaptive read.
//!
//! On an object store the best number of reads in flight depends on the store's latency and
//! bandwidth, on the size of the reads, and on how hard the store is pushed by others: no fixed
//! default suits them all. An adaptive depth starts low and finds the depth where throughput
//! stops rising:
//!
//! - **Climbing** (like TCP's slow start): after each window of completed reads, if throughput
//!   rose by at least [`RISE`] over the previous window, the depth doubles (up to the maximum);
//!   otherwise the depth goes back to the previous one, which gave as much, and is *settled*.
//! - **Settled**: every [`PROBE_EVERY`] windows the depth is raised by a quarter; it is kept if
//!   throughput rose by [`RISE`], dropped back otherwise.
//! - **Throttled**: when the store asks to slow down (HTTP 429/503, `SlowDown`), the depth is
//!   halved (not below the minimum) and held for [`HOLD_WINDOWS`] windows.
//!
//! A window only counts when the depth was what limited it (reads were waiting for a slot):
//! windows where the consumer or the I/O buffer held reads back say nothing about the store.

use std::num::NonZeroUsize;
use std::time::{Duration, Instant};

/// How many reads an [`IoScheduler`](super::IoScheduler) keeps in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoDepth {
    /// Always this many.
    Fixed(NonZeroUsize),
    /// Found while reading, between `min` and `max` (see the module documentation).
    Adaptive {
        /// The lowest depth (and the first).
        min: NonZeroUsize,
        /// The highest depth.
        max: NonZeroUsize,
    },
}

impl IoDepth {
    /// The depth a read starts with.
    pub fn initial(self) -> usize {
        match self {
            Self::Fixed(n) => n.get(),
            Self::Adaptive { min, .. } => min.get(),
        }
    }

    /// The most reads this depth ever allows in flight.
    pub fn max(self) -> usize {
        match self {
            Self::Fixed(n) => n.get(),
            Self::Adaptive { min, max } => max.get().max(min.get()),
        }
    }
}

/// Relative rise of throughput that counts as rising.
pub const RISE: f64 = 0.10;
/// Windows between two probes of a settled depth.
pub const PROBE_EVERY: u32 = 8;
/// Windows a depth is held after the store throttled.
pub const HOLD_WINDOWS: u32 = 4;
/// The shortest window (fewer reads than this complete in less on a fast store).
const MIN_WINDOW: Duration = Duration::from_millis(5);

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Climbing,
    Settled {
        windows: u32,
    },
    /// Raised from `previous` to probe; `baseline` is what `previous` gave.
    Probing {
        previous: usize,
        baseline: f64,
    },
}

/// Finds the depth of an adaptive read (a fixed depth never changes).
///
/// Not thread safe by itself: the I/O scheduler keeps it under its state lock.
#[derive(Debug)]
pub struct DepthController {
    setting: IoDepth,
    depth: usize,
    phase: Phase,
    /// Throughput of the last counted window, and the depth it was measured at.
    last: Option<(f64, usize)>,
    window_start: Instant,
    window_bytes: u64,
    window_reads: usize,
    /// Whether reads waited for a slot during this window.
    depth_limited: bool,
    hold: u32,
    throttles_seen: u64,
    /// The highest depth used so far.
    peak: usize,
}

impl DepthController {
    /// A controller for `setting`.
    pub fn new(setting: IoDepth) -> Self {
        let depth = setting.initial();
        Self {
            setting,
            depth,
            phase: Phase::Climbing,
            last: None,
            window_start: Instant::now(),
            window_bytes: 0,
            window_reads: 0,
            depth_limited: false,
            hold: 0,
            throttles_seen: 0,
            peak: depth,
        }
    }

    /// The current depth.
    pub fn current(&self) -> usize {
        self.depth
    }

    /// The highest depth used so far.
    pub fn peak(&self) -> usize {
        self.peak
    }

    /// Notes that a read was ready but waited for a slot.
    pub fn note_depth_limited(&mut self) {
        self.depth_limited = true;
    }

    /// Notes a completed read of `bytes`; `throttles` is the storage's count of throttling
    /// answers so far.
    pub fn on_complete(&mut self, bytes: u64, throttles: u64, now: Instant) {
        let IoDepth::Adaptive { min, .. } = self.setting else { return };
        if throttles > self.throttles_seen {
            self.throttles_seen = throttles;
            self.depth = (self.depth / 2).max(min.get());
            self.phase = Phase::Settled { windows: 0 };
            self.hold = HOLD_WINDOWS;
            self.last = None;
            self.restart(now);
            return;
        }
        self.window_bytes += bytes;
        self.window_reads += 1;
        let elapsed = now.saturating_duration_since(self.window_start);
        if self.window_reads < self.depth.max(4) || elapsed < MIN_WINDOW {
            return;
        }
        let throughput = self.window_bytes as f64 / elapsed.as_secs_f64();
        let counted = self.depth_limited;
        self.restart(now);
        if !counted {
            return;
        }
        if self.hold > 0 {
            self.hold -= 1;
            self.last = Some((throughput, self.depth));
            return;
        }
        self.step(throughput);
        self.peak = self.peak.max(self.depth);
    }

    fn restart(&mut self, now: Instant) {
        self.window_start = now;
        self.window_bytes = 0;
        self.window_reads = 0;
        self.depth_limited = false;
    }

    fn step(&mut self, throughput: f64) {
        let max = self.setting.max();
        let rose = |than: f64| throughput > than * (1.0 + RISE);
        match self.phase {
            Phase::Climbing => match self.last {
                Some((before, depth_before)) if !rose(before) && depth_before < self.depth => {
                    self.depth = depth_before;
                    self.phase = Phase::Settled { windows: 0 };
                }
                _ => {
                    self.last = Some((throughput, self.depth));
                    if self.depth >= max {
                        self.phase = Phase::Settled { windows: 0 };
                    } else {
                        self.depth = (self.depth * 2).min(max);
                    }
                }
            },
            Phase::Settled { windows } if windows + 1 >= PROBE_EVERY && self.depth < max => {
                let previous = self.depth;
                self.depth = (self.depth + self.depth.div_ceil(4)).min(max);
                self.phase = Phase::Probing { previous, baseline: throughput };
            }
            Phase::Settled { windows } => {
                self.last = Some((throughput, self.depth));
                self.phase = Phase::Settled { windows: windows + 1 };
            }
            Phase::Probing { previous, baseline } => {
                if !rose(baseline) {
                    self.depth = previous;
                }
                self.last = Some((throughput, self.depth));
                self.phase = Phase::Settled { windows: 0 };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nz(n: usize) -> NonZeroUsize {
        NonZeroUsize::new(n).unwrap()
    }

    /// Runs the controller against a store whose throughput is `capacity(depth)` bytes/s, for
    /// `windows` windows, the depth always limiting.
    fn run(controller: &mut DepthController, capacity: impl Fn(usize) -> f64, windows: usize, throttles: u64) {
        let mut now = Instant::now();
        for _ in 0..windows {
            let depth = controller.current();
            let reads = depth.max(4);
            let window = Duration::from_millis(20);
            let bytes = (capacity(depth) * window.as_secs_f64()) as u64 / reads as u64;
            controller.note_depth_limited();
            for i in 0..reads {
                now += window / reads as u32;
                controller.on_complete(bytes, throttles, now);
                if i == 0 {
                    controller.note_depth_limited();
                }
            }
        }
    }

    #[test]
    fn climbs_to_where_throughput_stops_rising() {
        // Each read adds 10 MB/s until 48 in flight, then the link is full.
        let capacity = |d: usize| 10e6 * d.min(48) as f64;
        let mut c = DepthController::new(IoDepth::Adaptive { min: nz(4), max: nz(256) });
        run(&mut c, capacity, 40, 0);
        assert!((32..=80).contains(&c.current()), "settled at {}", c.current());
    }

    #[test]
    fn never_passes_its_bounds_and_halves_when_throttled() {
        let mut c = DepthController::new(IoDepth::Adaptive { min: nz(2), max: nz(16) });
        run(&mut c, |d| 1e6 * d as f64, 30, 0);
        assert_eq!(c.current(), 16);
        run(&mut c, |d| 1e6 * d as f64, 1, 1);
        assert_eq!(c.current(), 8);
        run(&mut c, |d| 1e6 * d as f64, 1, 5);
        assert_eq!(c.current(), 4);
        assert_eq!(c.peak(), 16);
        let mut fixed = DepthController::new(IoDepth::Fixed(nz(3)));
        run(&mut fixed, |d| 1e6 * d as f64, 20, 9);
        assert_eq!(fixed.current(), 3);
    }

    #[test]
    fn windows_not_limited_by_depth_do_not_count() {
        let mut c = DepthController::new(IoDepth::Adaptive { min: nz(4), max: nz(64) });
        let mut now = Instant::now();
        for _ in 0..200 {
            now += Duration::from_millis(5);
            c.on_complete(1 << 20, 0, now);
        }
        assert_eq!(c.current(), 4);
    }
}
