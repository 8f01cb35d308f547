//! What one traced run shows: counts and samples accumulated from its text trace, for the
//! processes that descend from sysperf (the worker and its children), line by line.
//!
//! Pure: fed lines, it never touches the system. It keeps counts and latency samples, not the
//! events, so a trace of millions of lines needs little memory. Which processes are traced is
//! learned from the trace itself: every `sched_process_fork` whose parent is sysperf or one of
//! its descendants adds the child, so a line is attributed when its task (or, for scheduler
//! events, its subject) is in that tree. The fork is recorded before the child can run, so a
//! single pass in time order suffices.

use super::parse::{self, Event, FileId, Line};
use std::collections::{BTreeMap, HashMap, HashSet};

/// The counts of one run. Every counter is a total over the run.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// sysperf's own pid: the root of the traced tree, itself not counted.
    root: i32,
    tree: HashSet<i32>,
    /// Every process counts (`trace --system`), not only sysperf's descendants.
    everyone: bool,
    page_size: u64,
    /// Lines read, and lines attributed to the traced processes, by event name.
    pub lines: u64,
    pub events: BTreeMap<String, u64>,
    /// `[LOST N EVENTS]` markers in the text.
    pub lost_events: u64,
    /// System calls entered, by number.
    pub syscalls: BTreeMap<i64, u64>,
    pub sched: Sched,
    pub pagecache: PageCache,
    pub block: Block,
}

/// Scheduler events of the traced processes.
#[derive(Debug, Clone, Default)]
pub struct Sched {
    /// sched_switch with a traced process switched out (as rusage counts ru_nvcsw + ru_nivcsw).
    pub switches: u64,
    /// ... of which the process was still runnable (state R: preempted, involuntary).
    pub involuntary: u64,
    /// sched_wakeup and sched_wakeup_new of a traced process.
    pub wakeups: u64,
    pub migrations: u64,
    /// Processes (and threads) created by traced processes.
    pub forks: u64,
    /// Wake-up latency samples: wakeup to the switch that runs the woken process.
    pub wakeup_latency_ns: Vec<u64>,
    pending_wakeup: HashMap<i32, u64>,
}

/// Page-cache activity of the traced processes (see docs/trace.md for the method).
#[derive(Debug, Clone, Default)]
pub struct PageCache {
    /// Pages asked for by reads (mm_filemap_get_pages ranges) and faults (mm_filemap_fault).
    pub requested_pages: u64,
    /// Requested pages the cache did not hold: added by the read-ahead their own request
    /// started, inside the request (the demanded part of a synchronous read-ahead).
    pub missed_pages: u64,
    /// All pages added to the page cache (mm_filemap_add_to_page_cache, 2^order each).
    pub added_pages: u64,
    /// Added pages that no request had asked for yet: read ahead.
    pub readahead_pages: u64,
    /// Read-ahead pages later requested or mapped by a traced process (claimed).
    pub readahead_used: u64,
    /// ... of which claimed by a request (a read or a fault), not by fault-around mapping:
    /// requested pages that were not in the cache when the trace began.
    pub readahead_requested: u64,
    /// Pages added while [`PageCache::MAX_PAGES`] pages were already remembered: not followed,
    /// so their later use is not seen (a system trace's memory stays bounded).
    pub untracked_pages: u64,
    /// Read-ahead pages removed from the cache before anyone used them.
    pub readahead_evicted_unused: u64,
    pub deleted_pages: u64,
    pub faults: u64,
    /// Pages mapped around faults (mm_filemap_map_pages), hits by construction.
    pub mapped_pages: u64,
    pub sync_readaheads: u64,
    pub async_readaheads: u64,
    pages: HashMap<(FileId, u64), PageState>,
    /// The read-ahead each task is inside, if any: its file and the demanded page range.
    readahead: HashMap<i32, Readahead>,
    /// The last read range of each task, to count a read's retry loop once.
    last_read: HashMap<i32, parse::PageRange>,
    last_fault: HashMap<i32, (FileId, u64)>,
}

impl PageCache {
    /// Pages remembered at most (about 40 MB of map), whatever the duration of the trace.
    pub const MAX_PAGES: usize = 1 << 20;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PageState {
    Demanded,
    ReadAhead { used: bool },
}

#[derive(Debug, Clone, Copy)]
struct Readahead {
    file: FileId,
    /// Demanded pages [first, end): misses when added.
    first: u64,
    end: u64,
}

/// Block requests: those issued from a traced process's context, and all of them.
#[derive(Debug, Clone, Default)]
pub struct Block {
    pub ours: BlockCounts,
    pub all: BlockCounts,
    issued: HashMap<((u32, u32), u64), (u64, bool)>,
}

#[derive(Debug, Clone, Default)]
pub struct BlockCounts {
    pub requests: u64,
    pub bytes: u64,
    pub read_requests: u64,
    pub write_requests: u64,
    pub errors: u64,
    /// Issue to completion, for requests whose issue and completion were both traced.
    pub latency_ns: Vec<u64>,
}

impl Tally {
    pub fn new(root: i32, page_size: u64) -> Tally {
        Tally {
            root,
            page_size: page_size.max(1),
            ..Tally::default()
        }
    }

    /// A tally of every process on the machine (`sysperf trace --system`): nothing is left
    /// out for not descending from sysperf.
    pub fn everyone(page_size: u64) -> Tally {
        Tally {
            everyone: true,
            ..Tally::new(0, page_size)
        }
    }

    /// The traced processes seen so far (the root excluded).
    pub fn tree(&self) -> &HashSet<i32> {
        &self.tree
    }

    pub fn traced(&self, pid: i32) -> bool {
        self.everyone || self.tree.contains(&pid)
    }

    /// Feeds one line of the main instance's trace (filtered to sysperf's process tree).
    pub fn feed(&mut self, text: &str) {
        match parse::line(text) {
            Line::Lost { events, .. } => self.lost_events += events,
            Line::Other => {}
            Line::Event(e) => {
                self.lines += 1;
                self.event(&e);
            }
        }
    }

    fn event(&mut self, e: &Event) {
        // The scheduler's events concern a subject other than the current task.
        let subject = match e.name {
            "sched_switch" => self.switch(e),
            "sched_wakeup" | "sched_wakeup_new" => self.wakeup(e),
            "sched_migrate_task" => parse::int_field(e.body, "pid")
                .map(|p| p as i32)
                .filter(|p| self.traced(*p))
                .inspect(|_| self.sched.migrations += 1),
            "sched_process_fork" => self.fork(e),
            _ => None,
        };
        let current = self.traced(e.pid);
        if current {
            // A task that runs is not waiting to run: a wakeup that found it still on its
            // CPU (woken before it slept) has no latency to measure.
            self.sched.pending_wakeup.remove(&e.pid);
        }
        if !(current || subject.is_some()) {
            return;
        }
        *self.events.entry(e.name.to_string()).or_insert(0) += 1;
        if !current {
            return;
        }
        match e.name {
            "sys_enter" => {
                if let Some(nr) = parse::syscall_nr(e.body) {
                    *self.syscalls.entry(nr).or_insert(0) += 1;
                }
            }
            "mm_filemap_add_to_page_cache" => self.page_added(e),
            "mm_filemap_delete_from_page_cache" => self.page_deleted(e),
            "mm_filemap_get_pages" => self.pages_read(e),
            "mm_filemap_fault" => self.page_fault(e),
            "mm_filemap_map_pages" => self.pages_mapped(e),
            "page_cache_sync_ra"
            | "page_cache_async_ra"
            | "page_cache_ra_order"
            | "page_cache_ra_unbounded" => self.readahead(e),
            _ => {}
        }
    }

    /// Returns the traced process the switch concerns, if any.
    fn switch(&mut self, e: &Event) -> Option<i32> {
        let prev = parse::int_field(e.body, "prev_pid").map(|p| p as i32);
        let next = parse::int_field(e.body, "next_pid").map(|p| p as i32);
        let mut subject = None;
        if let Some(p) = prev.filter(|p| self.traced(*p)) {
            self.sched.switches += 1;
            // "R" or "R+": still runnable, so it was preempted.
            if parse::field(e.body, "prev_state").is_some_and(|s| s.starts_with('R')) {
                self.sched.involuntary += 1;
            }
            subject = Some(p);
        }
        if let Some(n) = next.filter(|n| self.traced(*n)) {
            if let Some(t) = self.sched.pending_wakeup.remove(&n) {
                self.sched.wakeup_latency_ns.push(e.ts_ns.saturating_sub(t));
            }
            subject = subject.or(Some(n));
        }
        subject
    }

    fn wakeup(&mut self, e: &Event) -> Option<i32> {
        let p = parse::int_field(e.body, "pid").map(|p| p as i32)?;
        if !self.traced(p) {
            return None;
        }
        self.sched.wakeups += 1;
        self.sched.pending_wakeup.entry(p).or_insert(e.ts_ns);
        Some(p)
    }

    fn fork(&mut self, e: &Event) -> Option<i32> {
        let parent = parse::int_field(e.body, "pid").map(|p| p as i32)?;
        let child = parse::int_field(e.body, "child_pid").map(|p| p as i32)?;
        if parent == self.root || self.traced(parent) {
            if self.traced(parent) {
                self.sched.forks += 1;
            }
            self.tree.insert(child);
            return self.traced(parent).then_some(parent);
        }
        None
    }

    fn readahead(&mut self, e: &Event) {
        let Some(r) = parse::page_range(e.body, self.page_size) else {
            return;
        };
        let pc = &mut self.pagecache;
        let ra = match e.name {
            "page_cache_sync_ra" => {
                // A read found page `index` missing: the request's pages from there on are
                // demanded, the rest of the window is read ahead.
                pc.sync_readaheads += 1;
                let req = parse::uint_field(e.body, "req_count").unwrap_or(1).max(1);
                Readahead {
                    file: r.file,
                    first: r.first,
                    end: r.first.saturating_add(req),
                }
            }
            "page_cache_async_ra" => {
                pc.async_readaheads += 1;
                Readahead {
                    file: r.file,
                    first: 0,
                    end: 0,
                }
            }
            _ => {
                // The page-level steps of a read-ahead already announced keep its context;
                // otherwise this is a fault's read-around, which demands the faulting page.
                if pc.readahead.get(&e.pid).is_some_and(|c| c.file == r.file) {
                    return;
                }
                match pc.last_fault.get(&e.pid) {
                    Some(&(file, idx)) if file == r.file => Readahead {
                        file,
                        first: idx,
                        end: idx + 1,
                    },
                    _ => Readahead {
                        file: r.file,
                        first: 0,
                        end: 0,
                    },
                }
            }
        };
        pc.readahead.insert(e.pid, ra);
    }

    fn page_added(&mut self, e: &Event) {
        let Some(r) = parse::page_range(e.body, self.page_size) else {
            return;
        };
        let pc = &mut self.pagecache;
        let ctx = pc
            .readahead
            .get(&e.pid)
            .copied()
            .filter(|c| c.file == r.file);
        for idx in r.first..=r.last {
            pc.added_pages += 1;
            // Pages added outside any read-ahead (writes, for one) are neither.
            let Some(c) = ctx else { continue };
            let state = if (c.first..c.end).contains(&idx) {
                pc.missed_pages += 1;
                PageState::Demanded
            } else {
                pc.readahead_pages += 1;
                PageState::ReadAhead { used: false }
            };
            if pc.pages.len() >= PageCache::MAX_PAGES && !pc.pages.contains_key(&(r.file, idx)) {
                pc.untracked_pages += 1;
                continue;
            }
            pc.pages.insert((r.file, idx), state);
        }
    }

    fn page_deleted(&mut self, e: &Event) {
        let Some(r) = parse::page_range(e.body, self.page_size) else {
            return;
        };
        let pc = &mut self.pagecache;
        for idx in r.first..=r.last {
            pc.deleted_pages += 1;
            if let Some(PageState::ReadAhead { used: false }) = pc.pages.remove(&(r.file, idx)) {
                pc.readahead_evicted_unused += 1;
            }
        }
    }

    /// Marks the read-ahead pages of `file` in [first, last] as used; `requested` when a read
    /// or a fault asked for them (not mapped around a fault).
    fn claim(&mut self, file: FileId, first: u64, last: u64, requested: bool) {
        let pc = &mut self.pagecache;
        let mut used_now = 0;
        let mut mark = |state: &mut PageState| {
            if let PageState::ReadAhead { used } = state {
                if !*used {
                    *used = true;
                    used_now += 1;
                }
            }
        };
        // Walk whichever is smaller: the range or the pages known.
        let span = last.saturating_sub(first).saturating_add(1);
        if span > pc.pages.len() as u64 {
            for ((f, idx), state) in pc.pages.iter_mut() {
                if *f == file && (first..=last).contains(idx) {
                    mark(state);
                }
            }
        } else {
            for idx in first..=last {
                if let Some(state) = pc.pages.get_mut(&(file, idx)) {
                    mark(state);
                }
            }
        }
        pc.readahead_used += used_now;
        if requested {
            pc.readahead_requested += used_now;
        }
    }

    fn pages_read(&mut self, e: &Event) {
        let Some(r) = parse::page_range(e.body, self.page_size) else {
            return;
        };
        let pc = &mut self.pagecache;
        pc.readahead.remove(&e.pid);
        // filemap_read asks again for the tail of a range it could not get at once; that is
        // the same request, so only pages beyond the previous range are new.
        let (first, consumed) = match pc.last_read.get(&e.pid) {
            Some(p) if p.file == r.file && r.first > p.first && r.last == p.last => {
                // The previous batch consumed [p.first, r.first): pages read ahead into it
                // since are claimed now (a long read's asynchronous read-ahead).
                (r.last + 1, Some((p.first, r.first - 1)))
            }
            _ => (r.first, None),
        };
        pc.last_read.insert(e.pid, r);
        if let Some((a, b)) = consumed {
            self.claim(r.file, a, b, true);
        }
        if first > r.last {
            return;
        }
        self.pagecache.requested_pages += r.last - first + 1;
        self.claim(r.file, first, r.last, true);
    }

    fn page_fault(&mut self, e: &Event) {
        let Some(r) = parse::page_range(e.body, self.page_size) else {
            return;
        };
        let pc = &mut self.pagecache;
        pc.readahead.remove(&e.pid);
        pc.faults += 1;
        pc.requested_pages += 1;
        pc.last_fault.insert(e.pid, (r.file, r.first));
        self.claim(r.file, r.first, r.first, true);
    }

    fn pages_mapped(&mut self, e: &Event) {
        let Some(r) = parse::page_range(e.body, self.page_size) else {
            return;
        };
        self.pagecache.mapped_pages += r.last - r.first + 1;
        self.claim(r.file, r.first, r.last, false);
    }

    /// Feeds one line of the block instance's trace, which is not filtered by process
    /// (completions run in interrupt context, whoever is on the CPU). Call after the main
    /// trace, so that the process tree is complete.
    pub fn feed_block(&mut self, text: &str) {
        match parse::line(text) {
            Line::Lost { events, .. } => self.lost_events += events,
            Line::Other => {}
            Line::Event(e) => {
                self.lines += 1;
                let ours = self.traced(e.pid);
                if self.block_event(&e, ours) {
                    *self.events.entry(e.name.to_string()).or_insert(0) += 1;
                }
            }
        }
    }

    /// Counts a block event; true when it belongs to a traced process: an issue from its
    /// context, or the completion of such an issue (wherever the interrupt landed).
    fn block_event(&mut self, e: &Event, ours: bool) -> bool {
        let Some(rq) = parse::block_rq(e.body) else {
            return false;
        };
        let b = &mut self.block;
        let key = (rq.dev, rq.sector);
        match e.name {
            "block_rq_issue" => {
                let bytes = rq.bytes.unwrap_or(rq.nr_sector * 512);
                let is_read = rq.rwbs.contains('R');
                let is_write = rq.rwbs.contains('W');
                for (c, yes) in [(&mut b.all, true), (&mut b.ours, ours)] {
                    if yes {
                        c.requests += 1;
                        c.bytes += bytes;
                        c.read_requests += u64::from(is_read);
                        c.write_requests += u64::from(is_write);
                    }
                }
                b.issued.insert(key, (e.ts_ns, ours));
                ours
            }
            "block_rq_complete" => match b.issued.remove(&key) {
                Some((t, was_ours)) => {
                    let lat = e.ts_ns.saturating_sub(t);
                    let failed = rq.tail.parse::<i64>().is_ok_and(|x| x != 0);
                    b.all.latency_ns.push(lat);
                    b.all.errors += u64::from(failed);
                    if was_ours {
                        b.ours.latency_ns.push(lat);
                        b.ours.errors += u64::from(failed);
                    }
                    was_ours
                }
                None => false,
            },
            _ => ours,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(root: i32, lines: &str) -> Tally {
        let mut t = Tally::new(root, 4096);
        for l in lines.lines() {
            t.feed(l);
        }
        t
    }

    /// A pipe round trip on one CPU, as the kernel traced it (pids shortened): sysperf (100)
    /// starts the worker (200), which forks its child (201); then two round trips.
    const PIPEBACK: &str = "\
 sysperf-100 [001] ..... 10.000000: sched_process_fork: comm=sysperf pid=100 child_comm=sysperf child_pid=200
 sysperf-100 [001] ..... 10.000001: sys_enter: NR 61 (0, 0, 0, 0, 0, 0)
 sysperf:pipebac-200 [001] ..... 10.000010: sched_process_fork: comm=sysperf:pipebac pid=200 child_comm=sysperf:pipebac child_pid=201
 sysperf:pipebac-200 [001] ..... 10.000011: sys_enter: NR 1 (4, 0, 4, 0, 0, 0)
 sysperf:pipebac-200 [001] d..4. 10.000012: sched_wakeup: comm=sysperf:pipebac pid=201 prio=120 target_cpu=001
 sysperf:pipebac-200 [001] ..... 10.000013: sys_enter: NR 0 (5, 0, 4, 0, 0, 0)
 sysperf:pipebac-200 [001] d..2. 10.000014: sched_switch: prev_comm=sysperf:pipebac prev_pid=200 prev_prio=120 prev_state=S ==> next_comm=sysperf:pipebac next_pid=201 next_prio=120
 sysperf:pipebac-201 [001] ..... 10.000015: sys_enter: NR 0 (3, 0, 4, 0, 0, 0)
 sysperf:pipebac-201 [001] ..... 10.000016: sys_enter: NR 1 (6, 0, 4, 0, 0, 0)
 sysperf:pipebac-201 [001] dN.4. 10.000017: sched_wakeup: comm=sysperf:pipebac pid=200 prio=120 target_cpu=001
 sysperf:pipebac-201 [001] d..2. 10.000020: sched_switch: prev_comm=sysperf:pipebac prev_pid=201 prev_prio=120 prev_state=R ==> next_comm=sysperf:pipebac next_pid=200 next_prio=120
 sysperf:pipebac-200 [001] ..... 10.000021: sys_enter: NR 1 (4, 0, 4, 0, 0, 0)
 sysperf:pipebac-200 [001] ..... 10.000022: sys_enter: NR 0 (5, 0, 4, 0, 0, 0)
 sysperf:pipebac-200 [001] d..2. 10.000023: sched_switch: prev_comm=sysperf:pipebac prev_pid=200 prev_prio=120 prev_state=S ==> next_comm=sysperf:pipebac next_pid=201 next_prio=120
 sysperf:pipebac-201 [001] ..... 10.000024: sys_enter: NR 0 (3, 0, 4, 0, 0, 0)
 sysperf:pipebac-201 [001] ..... 10.000025: sys_enter: NR 1 (6, 0, 4, 0, 0, 0)
 sysperf:pipebac-201 [001] dN.4. 10.000026: sched_wakeup: comm=sysperf:pipebac pid=200 prio=120 target_cpu=001
 sysperf:pipebac-201 [001] d..2. 10.000030: sched_switch: prev_comm=sysperf:pipebac prev_pid=201 prev_prio=120 prev_state=R ==> next_comm=sysperf:pipebac next_pid=200 next_prio=120
           <...>-7 [000] d..2. 10.000031: sched_switch: prev_comm=other prev_pid=7 prev_prio=120 prev_state=S ==> next_comm=x next_pid=8 next_prio=120
 sysperf-100 [001] ..... 10.000032: sys_enter: NR 7 (0, 0, 0, 0, 0, 0)
";

    #[test]
    fn attributes_to_sysperfs_descendants_only() {
        let t = tally(100, PIPEBACK);
        assert_eq!(t.tree().len(), 2);
        if cfg!(target_arch = "x86_64") {
            // Both of sysperf's own calls (61, 7) are left out.
            assert_eq!(t.syscalls.get(&0), Some(&4));
            assert_eq!(t.syscalls.get(&1), Some(&4));
            assert_eq!(t.syscalls.len(), 2);
        }
        assert_eq!(t.syscalls.values().sum::<u64>(), 8);
        assert_eq!(t.sched.switches, 4);
        assert_eq!(t.sched.involuntary, 2);
        assert_eq!(t.sched.wakeups, 3);
        assert_eq!(t.sched.forks, 1);
        // Wakeup at 12 -> run at 14; 17 -> 20; 26 -> 30 (microseconds).
        assert_eq!(t.sched.wakeup_latency_ns, vec![2_000, 3_000, 4_000]);
        assert_eq!(t.events.get("sched_switch"), Some(&4));
        assert_eq!(t.events.get("sys_enter"), Some(&8));
        // The first fork is sysperf's: counted as an event of nobody traced.
        assert_eq!(t.events.get("sched_process_fork"), Some(&1));
    }

    #[test]
    fn a_wakeup_of_a_task_still_running_has_no_latency() {
        let t = tally(
            1,
            "\
 a-1 [000] ..... 1.000000: sched_process_fork: comm=a pid=1 child_comm=b child_pid=2
 b-2 [000] d..4. 1.000001: sched_wakeup: comm=b pid=2 prio=120 target_cpu=000
 b-2 [000] ..... 1.000002: sys_enter: NR 0 (0, 0, 0, 0, 0, 0)
 b-2 [000] d..2. 1.000009: sched_switch: prev_comm=b prev_pid=2 prev_prio=120 prev_state=S ==> next_comm=c next_pid=3 next_prio=120
 c-3 [000] d..2. 1.000020: sched_switch: prev_comm=c prev_pid=3 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120
CPU:0 [LOST 5 EVENTS]
",
        );
        assert_eq!(t.sched.wakeups, 1);
        assert!(t.sched.wakeup_latency_ns.is_empty());
        assert_eq!(t.sched.switches, 1);
        assert_eq!(t.lost_events, 5);
    }

    /// dd reading a cold 2 MB file 16 KB at a time, as this kernel traced it (trimmed): a
    /// synchronous read-ahead on the first miss, then asynchronous ones on the markers.
    const DD: &str = "\
 sh-1 [001] ..... 1.000000: sched_process_fork: comm=sh pid=1 child_comm=dd child_pid=2
 dd-2 [001] ..... 1.000001: page_cache_sync_ra: dev=254:0 ino=98c098 index=0 req_count=4 order=0 size=0 async_size=0 ra_pages=2048 mmap_miss=0 prev_pos=-1
 dd-2 [001] ..... 1.000002: page_cache_ra_order: dev=254:0 ino=98c098 index=0 order=0 size=16 async_size=12 ra_pages=2048
 dd-2 [001] ..... 1.000003: mm_filemap_add_to_page_cache: dev 254:0 ino 98c098 pfn=0x11437d ofs=0 order=0
 dd-2 [001] ..... 1.000003: mm_filemap_add_to_page_cache: dev 254:0 ino 98c098 pfn=0x1cbc96 ofs=4096 order=0
 dd-2 [001] ..... 1.000003: mm_filemap_add_to_page_cache: dev 254:0 ino 98c098 pfn=0x20755e ofs=8192 order=0
 dd-2 [001] ..... 1.000003: mm_filemap_add_to_page_cache: dev 254:0 ino 98c098 pfn=0x22f9bc ofs=12288 order=0
 dd-2 [001] ..... 1.000003: mm_filemap_add_to_page_cache: dev 254:0 ino 98c098 pfn=0x16a717 ofs=16384 order=2
 dd-2 [001] ..... 1.000003: mm_filemap_add_to_page_cache: dev 254:0 ino 98c098 pfn=0x16a717 ofs=32768 order=3
 dd-2 [001] ..... 1.000010: mm_filemap_get_pages: dev=254:0 ino=98c098 ofs=0-16383
 dd-2 [001] ..... 1.000011: page_cache_async_ra: dev=254:0 ino=98c098 index=4 req_count=4 order=0 size=16 async_size=12 ra_pages=2048 mmap_miss=0 prev_pos=16384
 dd-2 [001] ..... 1.000012: page_cache_ra_order: dev=254:0 ino=98c098 index=16 order=2 size=64 async_size=64 ra_pages=2048
 dd-2 [001] ..... 1.000013: mm_filemap_add_to_page_cache: dev 254:0 ino 98c098 pfn=0x163128 ofs=65536 order=2
 dd-2 [001] ..... 1.000014: mm_filemap_get_pages: dev=254:0 ino=98c098 ofs=16384-32767
 dd-2 [001] ..... 1.000015: mm_filemap_get_pages: dev=254:0 ino=98c098 ofs=20480-32767
 dd-2 [001] ..... 1.000016: mm_filemap_get_pages: dev=254:0 ino=98c098 ofs=32768-49151
 dd-2 [001] ..... 1.000017: mm_filemap_delete_from_page_cache: dev 254:0 ino 98c098 pfn=0x163128 ofs=65536 order=2
 dd-2 [001] ..... 1.000018: mm_filemap_fault: dev=254:0 ino=4f8d3 ofs=212992
 dd-2 [001] ..... 1.000019: mm_filemap_map_pages: dev=254:0 ino=98c098 ofs=49152-65535
";

    #[test]
    fn page_cache_hits_misses_and_read_ahead_use() {
        let t = tally(1, DD);
        let pc = &t.pagecache;
        assert_eq!(pc.sync_readaheads, 1);
        assert_eq!(pc.async_readaheads, 1);
        // 4 + 4 + 8 pages in the first batch, 4 in the async one.
        assert_eq!(pc.added_pages, 20);
        // The first read's 4 pages were demanded: misses.
        assert_eq!(pc.missed_pages, 4);
        assert_eq!(pc.readahead_pages, 16);
        // Reads: 4 + 4 (its retry adds nothing) + 4 pages, and one fault elsewhere.
        assert_eq!(pc.requested_pages, 13);
        assert_eq!(pc.faults, 1);
        // Claimed: pages 4-11 by reads, 12-15 by the mapping; 16-19 were evicted unused.
        assert_eq!(pc.readahead_used, 12);
        // 8 of them by reads, the other 4 mapped around a fault.
        assert_eq!(pc.readahead_requested, 8);
        assert_eq!(pc.readahead_evicted_unused, 4);
        assert_eq!(pc.deleted_pages, 4);
        assert_eq!(pc.mapped_pages, 4);
    }

    #[test]
    fn block_requests_match_issue_to_completion_across_processes() {
        let mut t = tally(1, DD);
        for l in "\
 dd-2 [001] ...1. 1.000004: block_rq_issue: 254,0 RA 65536 () 324463944 + 128 be,0,4 [dd]
 kworker-9 [000] ...1. 1.000005: block_rq_issue: 254,0 W 4096 () 100 + 8 be,0,4 [kworker]
 rustc-50 [001] ..s.. 1.000154: block_rq_complete: 254,0 RA () 324463944 + 128 be,0,4 [0]
 rustc-50 [001] ..s.. 1.000205: block_rq_complete: 254,0 W () 100 + 8 be,0,4 [-5]
"
        .lines()
        {
            t.feed_block(l);
        }
        let b = &t.block;
        assert_eq!(
            (b.ours.requests, b.ours.bytes, b.ours.read_requests),
            (1, 65536, 1)
        );
        assert_eq!(b.ours.latency_ns, vec![150_000]);
        assert_eq!(
            (b.all.requests, b.all.bytes, b.all.write_requests),
            (2, 69632, 1)
        );
        assert_eq!(b.all.latency_ns, vec![150_000, 200_000]);
        assert_eq!((b.all.errors, b.ours.errors), (1, 0));
        // Only dd's request and its completion are dd's events.
        assert_eq!(t.events.get("block_rq_issue"), Some(&1));
        assert_eq!(t.events.get("block_rq_complete"), Some(&1));
    }

    #[test]
    fn garbage_never_panics() {
        let mut t = Tally::new(1, 0);
        for l in [
            " a-1 [000] ..... 1.000000: sched_switch: prev_pid=x",
            " a-1 [000] ..... 1.000000: mm_filemap_add_to_page_cache: dev 1:1 ino zz",
            " a-1 [000] ..... 1.000000: sched_process_fork: pid=1 child_pid=2",
            " b-2 [000] ..... 1.000000: mm_filemap_get_pages: dev=1:1 ino=1 ofs=0-99999999999",
            " b-2 [000] ..... 1.000000: mm_filemap_add_to_page_cache: dev 1:1 ino 1 pfn=0 ofs=0 order=255",
            " b-2 [000] ..... 1.000000: page_cache_sync_ra: dev=1:1 ino=1 index=18446744073709551615 req_count=18446744073709551615",
            " b-2 [000] ..... 1.000000: block_rq_complete: 1,1 R () 5 + 1 x [z]",
        ] {
            t.feed(l);
            t.feed_block(l);
        }
        assert_eq!(t.tree().len(), 1);
    }
}
