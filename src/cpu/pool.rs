//! Thread pools as wide as the CPUs this process actually gets.
//!
//! The forward pass and the embedder split each step across a pool and wait for every
//! part: when the scheduler takes a core away from one worker (another program is
//! busy), every step waits for it, and on two cores one busy process cost ~88% of the
//! generation speed instead of half. [`run`] therefore watches the pool's workers:
//! the time each spent runnable but waiting for a CPU (Linux's per-thread
//! `schedstat`), over windows of runs of at least [`WINDOW`]. After [`STRIKES`]
//! windows in a row in which the workers waited more than [`CONTENDED`] of their time,
//! the next window is a trial on as many workers as got a CPU; the trial's speed (the
//! caller's units of work, tokens or rows, per second) decides: the narrower pool
//! stays if it was faster. Generation (one token: ~200 short steps) gains most from
//! fewer workers; a long prompt's large products often keep more of their speed on a
//! wider pool that shares the cores, and then the trial says so. Now and then (every
//! [`PROBE_FIRST`], doubling to [`PROBE_MAX`] while it fails) a window runs one worker
//! wider, and that width stays if it was faster: the machine is free again.
//! Each kind of [`Work`] keeps its own width and speed.
//!
//! The widest pool follows the CPUs this process may use: the affinity mask and the
//! cgroup CPU quota (what [`std::thread::available_parallelism`] reads on Linux), or
//! `RAYON_NUM_THREADS`. Where `schedstat` cannot be read (another OS, a kernel
//! without it), or with `QUIRE_POOL=fixed` (to measure what adapting buys), the width
//! stays at the widest.
//!
//! The split of a step never changes its result: every output element is computed by
//! one task in the same order whatever the width (the forward pass's and the
//! embedder's tests compare widths 1, 2 and 3 bit for bit).

use std::cell::Cell;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use rayon::ThreadPool;

/// Runs are summed into windows at least this long before the width changes: one
/// scheduler time slice is a few milliseconds, and a generated token ~4 ms.
pub const WINDOW: Duration = Duration::from_millis(40);
/// The workers waited this share of a window for a CPU: the pool may be too wide
/// (after [`STRIKES`] such windows in a row: a daemon waking for a moment is not a
/// busy machine).
pub const CONTENDED: f64 = 0.15;
pub const STRIKES: u32 = 2;
/// A window this long is one strike enough (a prompt's pass: a second each).
pub const LONG_WINDOW: Duration = Duration::from_millis(200);
/// A trial width stays when it was this much faster than the width before.
pub const GAIN: f64 = 0.03;
/// The first probe after a change, and the longest interval between failed trials.
pub const PROBE_FIRST: Duration = Duration::from_millis(500);
pub const PROBE_MAX: Duration = Duration::from_secs(8);

/// Kinds of work, each with its own width: their steps differ in length, and so does
/// what a shared core costs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// Generation: a few rows (tokens) per forward pass.
    Decode,
    /// A prompt's many rows at once.
    Prompt,
    /// Embedding batches.
    Embed,
}

impl Work {
    const ALL: [Work; 3] = [Work::Decode, Work::Prompt, Work::Embed];

    fn index(self) -> usize {
        self as usize
    }
}

thread_local! {
    /// A width [`with_width`] imposes on this thread's runs.
    static FORCED: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Run `f` (which does `units` of `work`: tokens, rows) on the pool [`run`] chose for
/// that kind of work, its parallel steps (rayon's `par_iter`, `scope`, `join`) spread
/// over the pool's workers; learn from how long they waited for a CPU and how fast
/// the work went.
pub fn run<R: Send>(work: Work, units: usize, f: impl FnOnce() -> R + Send) -> R {
    governor().run(work, units, f)
}

/// Run `f` on a pool of exactly `width` workers (tests, benchmarks, a fixed setting):
/// every [`run`] inside `f` on this thread uses it too.
pub fn with_width<R>(width: usize, f: impl FnOnce() -> R) -> R {
    let width = width.max(1);
    let prev = FORCED.with(|c| c.replace(Some(width)));
    struct Restore(Option<usize>);
    impl Drop for Restore {
        fn drop(&mut self) {
            FORCED.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(prev);
    f()
}

/// The width [`with_width`] imposes on this thread now, if any: for a thread that
/// runs part of this one's work (`with_width` it there too).
pub fn forced_width() -> Option<usize> {
    FORCED.with(Cell::get)
}

/// The widest pool: `RAYON_NUM_THREADS`, else the CPUs the affinity mask and the
/// cgroup quota allow.
pub fn max_threads() -> usize {
    governor().max
}

/// The machine just got quieter: background work of this process paused for a
/// question. What was learnt while it ran says nothing about the time after: windows
/// open now are not counted, pending narrowing trials and strikes are dropped, and
/// every kind of work probes one wider at its next window.
pub fn quieter() {
    let g = governor();
    let mut s = g.lock();
    s.epoch += 1;
    let now = Instant::now();
    for c in &mut s.classes {
        c.quieter(now);
    }
}

/// How [`run`] sees the machine now, for a status line or a benchmark.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PoolState {
    pub max: usize,
    /// Whether the widths follow the machine (`schedstat` readable, not fixed).
    pub adaptive: bool,
    /// Workers the next run of each kind uses (not counting a trial).
    pub decode: usize,
    pub prompt: usize,
    pub embed: usize,
    /// Trials that narrowed a pool, and that widened one, since the start.
    pub narrowed: u64,
    pub widened: u64,
}

pub fn state() -> PoolState {
    let g = governor();
    let s = g.lock();
    let c = |w: Work| &s.classes[w.index()];
    PoolState {
        max: g.max,
        adaptive: g.adaptive,
        decode: c(Work::Decode).width,
        prompt: c(Work::Prompt).width,
        embed: c(Work::Embed).width,
        narrowed: s.classes.iter().map(|c| c.narrowed).sum(),
        widened: s.classes.iter().map(|c| c.widened).sum(),
    }
}

fn governor() -> &'static Governor {
    static G: OnceLock<Governor> = OnceLock::new();
    G.get_or_init(Governor::new)
}

/// One pool and its workers' thread ids.
struct Pool {
    pool: ThreadPool,
    tids: Vec<i32>,
}

struct Governor {
    max: usize,
    adaptive: bool,
    pools: Mutex<Vec<Option<Arc<Pool>>>>,
    state: Mutex<State>,
}

struct State {
    classes: Vec<Class>,
    /// Moves on at each [`quieter`]: a window from before is not counted.
    epoch: u64,
}

/// One kind of work's width, speed and open window.
struct Class {
    width: usize,
    /// Units per second at `width`, from its last window.
    rate: Option<f64>,
    /// The width being tried, and the width and speed it is compared with.
    trial: Option<Trial>,
    window: Option<Window>,
    next_probe: Instant,
    probe_every: Duration,
    /// No narrowing trial before this (after one failed).
    next_narrow: Instant,
    narrow_every: Duration,
    /// Contended windows in a row at this width.
    strikes: u32,
    narrowed: u64,
    widened: u64,
}

#[derive(Debug, Clone, Copy)]
struct Trial {
    width: usize,
    from: usize,
    from_rate: f64,
}

/// Runs at one width, measured together.
struct Window {
    width: usize,
    pool: Arc<Pool>,
    /// The workers' summed wait for a CPU (ns) when the window opened.
    wait0: u64,
    /// The runs' summed wall time and units of work.
    wall: Duration,
    units: usize,
    /// Runs in flight in this window.
    running: usize,
    /// [`State::epoch`] when it opened.
    epoch: u64,
}

impl Class {
    fn new(width: usize, now: Instant) -> Self {
        Self {
            width,
            rate: None,
            trial: None,
            window: None,
            next_probe: now,
            probe_every: PROBE_FIRST,
            next_narrow: now,
            narrow_every: PROBE_FIRST,
            strikes: 0,
            narrowed: 0,
            widened: 0,
        }
    }

    /// See [`quieter`].
    fn quieter(&mut self, now: Instant) {
        self.strikes = 0;
        if self.trial.is_some_and(|t| t.width < t.from) {
            self.trial = None;
        }
        self.next_probe = now;
        self.probe_every = PROBE_FIRST;
        self.next_narrow = now;
        self.narrow_every = PROBE_FIRST;
    }

    /// The width of the next window.
    fn next_width(&mut self, max: usize, now: Instant) -> usize {
        if let Some(t) = self.trial {
            return t.width;
        }
        if self.width < max && now >= self.next_probe {
            if let Some(rate) = self.rate {
                self.trial = Some(Trial {
                    width: self.width + 1,
                    from: self.width,
                    from_rate: rate,
                });
                return self.width + 1;
            }
        }
        self.width
    }

    /// A window of `width` workers did work at `rate` units/s, its workers waiting
    /// `share` of their time for a CPU; `long`: it lasted [`LONG_WINDOW`] or more.
    fn closed(&mut self, width: usize, rate: f64, share: f64, long: bool, now: Instant) {
        if let Some(t) = self.trial.filter(|t| t.width == width) {
            self.trial = None;
            let better = rate > t.from_rate * (1.0 + GAIN);
            if better {
                if width > t.from {
                    self.widened += 1;
                } else {
                    self.narrowed += 1;
                }
                self.width = width;
                self.rate = Some(rate);
                self.probe_every = PROBE_FIRST;
                self.narrow_every = PROBE_FIRST;
            } else if width > t.from {
                self.probe_every = (self.probe_every * 2).min(PROBE_MAX);
            } else {
                self.narrow_every = (self.narrow_every * 2).min(PROBE_MAX);
                self.next_narrow = now + self.narrow_every;
            }
            self.next_probe = now + self.probe_every;
            self.strikes = 0;
            return;
        }
        if width != self.width {
            return;
        }
        self.rate = Some(rate);
        if share > CONTENDED && width > 1 {
            self.strikes += 1;
            let strikes = if long { 1 } else { STRIKES };
            if self.strikes >= strikes && now >= self.next_narrow {
                // As many workers as got a CPU: on two cores beside one busy
                // process, each of two waited about a third of the time: one.
                let keep = (width as f64 * (1.0 - share)).floor() as usize;
                self.trial = Some(Trial {
                    width: keep.clamp(1, width - 1),
                    from: width,
                    from_rate: rate,
                });
                self.strikes = 0;
            }
        } else {
            self.strikes = 0;
        }
    }
}

impl Governor {
    fn new() -> Self {
        let max = std::env::var("RAYON_NUM_THREADS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let fixed = std::env::var("QUIRE_POOL").is_ok_and(|v| v == "fixed");
        let adaptive = max > 1 && !fixed && thread_wait_ns(own_tid()).is_some();
        let now = Instant::now();
        Self {
            max,
            adaptive,
            pools: Mutex::new(vec![None; max]),
            state: Mutex::new(State {
                classes: Work::ALL.iter().map(|_| Class::new(max, now)).collect(),
                epoch: 0,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn pool(&self, width: usize) -> Arc<Pool> {
        let mut pools = self.pools.lock().unwrap_or_else(|e| e.into_inner());
        let width = width.max(1);
        if pools.len() < width {
            pools.resize(width, None);
        }
        pools[width - 1]
            .get_or_insert_with(|| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(width)
                    .thread_name(move |i| format!("quire-cpu{width}.{i}"))
                    .build()
                    .expect("a thread pool");
                let tids = pool.broadcast(|_| own_tid());
                Arc::new(Pool { pool, tids })
            })
            .clone()
    }

    fn run<R: Send>(&self, work: Work, units: usize, f: impl FnOnce() -> R + Send) -> R {
        if let Some(width) = FORCED.with(Cell::get) {
            return self.pool(width).pool.install(f);
        }
        if !self.adaptive {
            return self.pool(self.max).pool.install(f);
        }
        let pool = {
            let mut s = self.lock();
            let epoch = s.epoch;
            let c = &mut s.classes[work.index()];
            match &mut c.window {
                Some(w) => {
                    w.running += 1;
                    w.pool.clone()
                }
                None => {
                    let width = c.next_width(self.max, Instant::now());
                    let pool = self.pool(width);
                    c.window = Some(Window {
                        width,
                        wait0: pool_wait_ns(&pool),
                        pool: pool.clone(),
                        wall: Duration::ZERO,
                        units: 0,
                        running: 1,
                        epoch,
                    });
                    pool
                }
            }
        };
        let start = Instant::now();
        let r = pool.pool.install(f);
        self.ran(work, units, start.elapsed());
        r
    }

    /// Account one run; close the window and decide once it is long enough.
    fn ran(&self, work: Work, units: usize, wall: Duration) {
        let mut s = self.lock();
        let epoch = s.epoch;
        let c = &mut s.classes[work.index()];
        let Some(w) = &mut c.window else { return };
        w.wall += wall;
        w.units += units;
        w.running -= 1;
        if w.running > 0 || w.wall < WINDOW {
            return;
        }
        let w = c.window.take().expect("an open window");
        if w.epoch != epoch {
            // It ran partly beside our own background work, which has paused since.
            if c.trial.is_some_and(|t| t.width == w.width) {
                c.trial = None;
            }
            return;
        }
        let waited = pool_wait_ns(&w.pool).saturating_sub(w.wait0) as f64;
        let secs = w.wall.as_secs_f64().max(1e-9);
        let share = waited / (w.width as f64 * secs * 1e9);
        let long = w.wall >= LONG_WINDOW;
        c.closed(w.width, w.units as f64 / secs, share, long, Instant::now());
    }
}

fn pool_wait_ns(pool: &Pool) -> u64 {
    pool.tids.iter().filter_map(|&t| thread_wait_ns(t)).sum()
}

#[cfg(target_os = "linux")]
fn own_tid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

#[cfg(not(target_os = "linux"))]
fn own_tid() -> i32 {
    0
}

/// Nanoseconds thread `tid` of this process has spent runnable, waiting for a CPU
/// (the second field of `/proc/self/task/<tid>/schedstat`).
#[cfg(target_os = "linux")]
fn thread_wait_ns(tid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(not(target_os = "linux"))]
fn thread_wait_ns(_tid: i32) -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Close windows at `class`'s next width: `rate(width)` units/s, `share(width)`
    /// waited; `n` of them.
    fn windows(
        c: &mut Class,
        max: usize,
        n: usize,
        rate: impl Fn(usize) -> f64,
        share: impl Fn(usize) -> f64,
        now: Instant,
    ) {
        for _ in 0..n {
            let w = c.next_width(max, now);
            c.closed(w, rate(w), share(w), false, now);
        }
    }

    #[test]
    fn generation_on_a_busy_machine_narrows_when_the_trial_is_faster() {
        let now = Instant::now();
        let mut c = Class::new(2, now);
        // Two workers beside a busy process: each waited a third; one is 3x faster.
        windows(
            &mut c,
            2,
            3,
            |w| if w == 1 { 90.0 } else { 30.0 },
            |w| if w == 1 { 0.0 } else { 0.33 },
            now,
        );
        assert_eq!((c.width, c.narrowed), (1, 1));
        // Probes while still busy fail and back off.
        let later = now + PROBE_MAX;
        windows(
            &mut c,
            2,
            4,
            |w| if w == 1 { 90.0 } else { 30.0 },
            |_| 0.3,
            later,
        );
        assert_eq!(c.width, 1);
        assert!(c.probe_every > PROBE_FIRST);
        // The machine is free: the probe is faster, the width comes back.
        let free = later + PROBE_MAX * 2;
        windows(&mut c, 2, 1, |w| 100.0 * w as f64, |_| 0.0, free);
        assert_eq!((c.width, c.widened), (2, 1));
    }

    #[test]
    fn a_prompt_that_keeps_more_speed_on_the_shared_cores_stays_wide() {
        let now = Instant::now();
        let mut c = Class::new(2, now);
        // Contended, but two workers on shared cores still beat one.
        windows(
            &mut c,
            2,
            3,
            |w| if w == 1 { 70.0 } else { 80.0 },
            |w| if w == 1 { 0.0 } else { 0.33 },
            now,
        );
        assert_eq!((c.width, c.narrowed), (2, 0));
        // No new narrowing trial until the back-off has passed.
        assert!(c.next_narrow > now);
        windows(&mut c, 2, 4, |_| 80.0, |_| 0.33, now);
        assert!(c.trial.is_none());
        assert_eq!(c.width, 2);
    }

    #[test]
    fn one_contended_window_or_a_quiet_one_changes_nothing() {
        let now = Instant::now();
        let mut c = Class::new(8, now);
        c.closed(8, 100.0, 0.5, false, now);
        c.closed(8, 100.0, 0.01, false, now);
        c.closed(8, 100.0, 0.5, false, now);
        assert!(c.trial.is_none());
        assert_eq!(c.width, 8);
        // A long window (a prompt's pass) is one strike enough.
        c.closed(8, 100.0, 0.5, true, now);
        assert_eq!(c.trial.map(|t| t.width), Some(4));
        // Sixteen workers waiting a fifth: the trial keeps twelve.
        let mut c = Class::new(16, now);
        c.closed(16, 100.0, 0.2, false, now);
        c.closed(16, 100.0, 0.2, false, now);
        assert_eq!(c.trial.map(|t| t.width), Some(12));
    }

    #[test]
    fn our_own_background_pausing_drops_what_was_learnt_beside_it() {
        let now = Instant::now();
        let mut c = Class::new(2, now);
        // Contended beside our indexing: a narrowing trial is pending.
        c.closed(2, 50.0, 0.4, true, now);
        assert!(c.trial.is_some());
        c.quieter(now);
        assert!(c.trial.is_none());
        assert_eq!(c.width, 2);
        // Narrowed already: the next window probes one wider at once.
        let mut c = Class::new(2, now);
        windows(
            &mut c,
            2,
            3,
            |w| 40.0 * (3 - w) as f64,
            |w| if w == 2 { 0.4 } else { 0.0 },
            now,
        );
        assert_eq!(c.width, 1);
        c.quieter(now);
        assert_eq!(c.next_width(2, now), 2);
    }

    #[test]
    fn forced_widths_run_on_pools_of_that_width() {
        for w in [1, 2, 3] {
            assert_eq!(
                with_width(w, || run(Work::Decode, 1, rayon::current_num_threads)),
                w
            );
        }
        // Nested: the innermost wins, and the outer comes back.
        with_width(3, || {
            assert_eq!(
                with_width(1, || run(Work::Embed, 1, rayon::current_num_threads)),
                1
            );
            assert_eq!(run(Work::Prompt, 1, rayon::current_num_threads), 3);
        });
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn schedstat_is_read_for_a_worker() {
        // Where the kernel keeps schedstat (this machine's and CI's do), the pools
        // adapt; a worker's wait reads as a number.
        let pool = governor().pool(2);
        assert_eq!(pool.tids.len(), 2);
        for &t in &pool.tids {
            assert!(thread_wait_ns(t).is_some(), "no schedstat for worker {t}");
        }
    }
}
