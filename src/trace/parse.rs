//! Parsing the text trace of a tracefs instance (its `trace` file), one line at a time.
//!
//! A line is `COMM-PID [CPU] FLAGS SECONDS.MICROS: EVENT: FIELDS`, the kernel's own format
//! (`trace_print_context` plus the event's print format). This module splits the context and
//! reads the few fields sysperf interprets; it does not interpret events (see `tally`). It is
//! pure, and tolerant: a line it cannot read is reported as [`Line::Other`], never a panic.
//! The text format carries microsecond timestamps, which bounds the resolution of every
//! latency sysperf derives from it.

/// One line of a text trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line<'a> {
    Event(Event<'a>),
    /// `CPU:N [LOST M EVENTS]`: the ring buffer overwrote events before they were read.
    Lost {
        cpu: u32,
        events: u64,
    },
    /// Headers (`# ...`), blank lines and anything unreadable.
    Other,
}

/// The context and payload of one event line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event<'a> {
    /// The task that was current when the event fired (not necessarily the event's subject).
    pub pid: i32,
    /// Its command name (`<...>` when the trace no longer knew it).
    pub comm: &'a str,
    pub cpu: u32,
    pub ts_ns: u64,
    /// The event's name without its system (`sys_enter`, `sched_switch`).
    pub name: &'a str,
    /// Everything after `NAME: `.
    pub body: &'a str,
}

pub fn line(text: &str) -> Line<'_> {
    let t = text.trim_end();
    if t.is_empty() || t.starts_with('#') {
        return Line::Other;
    }
    if let Some(l) = lost(t) {
        return l;
    }
    event(t).map(Line::Event).unwrap_or(Line::Other)
}

fn lost(t: &str) -> Option<Line<'_>> {
    let rest = t.trim_start().strip_prefix("CPU:")?;
    let (cpu, rest) = rest.split_once(' ')?;
    let n = rest
        .trim()
        .strip_prefix("[LOST ")?
        .strip_suffix(" EVENTS]")?;
    Some(Line::Lost {
        cpu: cpu.parse().ok()?,
        events: n.parse().ok()?,
    })
}

/// Finds the `[CPU]` column: the first `[digits]` followed by a space. Everything before it
/// is `COMM-PID`; the command name may itself contain dashes or spaces.
fn cpu_column(t: &str) -> Option<(usize, usize, u32)> {
    let b = t.as_bytes();
    let mut i = 0;
    while let Some(off) = t[i..].find('[') {
        let open = i + off;
        let digits = b[open + 1..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        let close = open + 1 + digits;
        if digits > 0 && b.get(close) == Some(&b']') && b.get(close + 1) == Some(&b' ') {
            let cpu = t[open + 1..close].parse().ok()?;
            return Some((open, close + 1, cpu));
        }
        i = open + 1;
    }
    None
}

fn event(t: &str) -> Option<Event<'_>> {
    let (open, after, cpu) = cpu_column(t)?;
    let task = t[..open].trim();
    let (comm, pid) = task.rsplit_once('-')?;
    let pid: i32 = pid.parse().ok()?;
    // After the CPU: optional irq-info flags, then "SECONDS.MICROS: NAME: BODY".
    let mut rest = t[after..].trim_start();
    let mut ts_ns = None;
    for _ in 0..2 {
        let (tok, more) = rest.split_once(' ').unwrap_or((rest, ""));
        if let Some(ts) = tok.strip_suffix(':').and_then(timestamp_ns) {
            ts_ns = Some(ts);
            rest = more.trim_start();
            break;
        }
        rest = more.trim_start();
    }
    let ts_ns = ts_ns?;
    let (name, body) = match rest.split_once(": ") {
        Some((n, b)) => (n, b),
        None => (rest.strip_suffix(':')?, ""),
    };
    if name.is_empty() || name.contains(' ') {
        return None;
    }
    Some(Event {
        pid,
        comm,
        cpu,
        ts_ns,
        name,
        body,
    })
}

/// `1854.646012` (seconds, a fraction of up to 9 digits) in nanoseconds, without floats.
pub fn timestamp_ns(s: &str) -> Option<u64> {
    let (secs, frac) = s.split_once('.')?;
    if secs.is_empty() || frac.is_empty() || frac.len() > 9 {
        return None;
    }
    if !secs.bytes().all(|c| c.is_ascii_digit()) || !frac.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let secs: u64 = secs.parse().ok()?;
    let frac_ns: u64 = frac.parse::<u64>().ok()? * 10u64.pow(9 - frac.len() as u32);
    secs.checked_mul(1_000_000_000)?.checked_add(frac_ns)
}

/// The value of `key=` in a body of space-separated `key=value` pairs, matched at the start
/// or after a space so that `pid=` does not match inside `prev_pid=`.
pub fn field<'a>(body: &'a str, key: &str) -> Option<&'a str> {
    let mut from = 0;
    while let Some(off) = body[from..].find(key) {
        let at = from + off;
        let after = at + key.len();
        let starts_word = at == 0 || body.as_bytes()[at - 1] == b' ';
        if starts_word && body.as_bytes().get(after) == Some(&b'=') {
            let v = &body[after + 1..];
            return Some(v.split(' ').next().unwrap_or(""));
        }
        from = at + 1;
    }
    None
}

pub fn int_field(body: &str, key: &str) -> Option<i64> {
    field(body, key)?.parse().ok()
}

pub fn uint_field(body: &str, key: &str) -> Option<u64> {
    field(body, key)?.parse().ok()
}

/// raw_syscalls:sys_enter: `NR 39 (0, 0, ...)` gives 39.
pub fn syscall_nr(body: &str) -> Option<i64> {
    body.strip_prefix("NR ")?.split(' ').next()?.parse().ok()
}

/// A file's identity in the filemap and readahead events: device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId {
    pub dev: (u32, u32),
    pub ino: u64,
}

fn dev_pair(s: &str, sep: char) -> Option<(u32, u32)> {
    let (a, b) = s.split_once(sep)?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// A page-cache event's file and page range (in pages, inclusive), from either layout:
/// `dev 254:0 ino 9a803b pfn=0x1 ofs=0 order=0` (add/delete: one folio of 2^order pages) or
/// `dev=254:0 ino=98c098 ofs=0-16383` (get_pages/map_pages: a byte range) or
/// `dev=254:0 ino=98c098 ofs=86016` (fault: one page) or `... index=4 ...` (readahead).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRange {
    pub file: FileId,
    pub first: u64,
    pub last: u64,
}

pub fn page_range(body: &str, page_size: u64) -> Option<PageRange> {
    let page_size = page_size.max(1);
    let (file, rest) = if let Some(r) = body.strip_prefix("dev ") {
        // "254:0 ino 9a803b pfn=... ofs=N order=K"
        let mut it = r.split(' ');
        let dev = dev_pair(it.next()?, ':')?;
        if it.next()? != "ino" {
            return None;
        }
        let ino = u64::from_str_radix(it.next()?, 16).ok()?;
        (FileId { dev, ino }, r)
    } else {
        let dev = dev_pair(field(body, "dev")?, ':')?;
        let ino = u64::from_str_radix(field(body, "ino")?, 16).ok()?;
        (FileId { dev, ino }, body)
    };
    if let Some(index) = uint_field(rest, "index") {
        return Some(PageRange {
            file,
            first: index,
            last: index,
        });
    }
    let ofs = field(rest, "ofs")?;
    let (first, last) = match ofs.split_once('-') {
        Some((a, b)) => {
            let a: u64 = a.parse().ok()?;
            let b: u64 = b.parse().ok()?;
            (a / page_size, b / page_size)
        }
        None => {
            let a: u64 = ofs.parse::<u64>().ok()? / page_size;
            // No folio is 2^20 pages; a larger order is a garbled line, kept small.
            let order = uint_field(rest, "order").unwrap_or(0).min(20);
            (a, a + (1u64 << order) - 1)
        }
    };
    (last >= first).then_some(PageRange { file, first, last })
}

/// A block request from block_rq_issue / block_rq_complete:
/// `254,0 RA 65536 () 324463944 + 128 be,0,4 [dd]` (issue: with bytes) or
/// `254,0 RA () 324463944 + 128 be,0,4 [0]` (complete: the error code last).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockRq<'a> {
    pub dev: (u32, u32),
    pub rwbs: &'a str,
    pub bytes: Option<u64>,
    pub sector: u64,
    pub nr_sector: u64,
    /// The bracketed last field: the command name on issue, the error on completion.
    pub tail: &'a str,
}

pub fn block_rq(body: &str) -> Option<BlockRq<'_>> {
    let mut it = body.splitn(3, ' ');
    let dev = dev_pair(it.next()?, ',')?;
    let rwbs = it.next()?;
    let rest = it.next()?;
    // An optional byte count before the parenthesized command (which may hold spaces).
    let open = rest.find('(')?;
    let bytes = rest[..open].trim();
    let bytes = if bytes.is_empty() {
        None
    } else {
        Some(bytes.parse().ok()?)
    };
    let close = open + rest[open..].find(')')?;
    let mut after = rest[close + 1..].split_whitespace();
    let sector = after.next()?.parse().ok()?;
    if after.next()? != "+" {
        return None;
    }
    let nr_sector = after.next()?.parse().ok()?;
    let tail = rest
        .rsplit_once('[')
        .and_then(|(_, t)| t.strip_suffix(']'))
        .unwrap_or("");
    Some(BlockRq {
        dev,
        rwbs,
        bytes,
        sector,
        nr_sector,
        tail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_the_context_of_event_lines() {
        let l = " sysperf:pipebac-16329   [001] dN.4.  1854.646025: sched_wakeup: comm=sysperf:pipebac pid=16328 prio=120 target_cpu=001";
        let Line::Event(e) = line(l) else {
            panic!("{l}")
        };
        assert_eq!(e.pid, 16329);
        assert_eq!(e.comm, "sysperf:pipebac");
        assert_eq!(e.cpu, 1);
        assert_eq!(e.ts_ns, 1_854_646_025_000);
        assert_eq!(e.name, "sched_wakeup");
        assert_eq!(int_field(e.body, "pid"), Some(16328));
        assert_eq!(field(e.body, "comm"), Some("sysperf:pipebac"));
    }

    #[test]
    fn command_names_with_dashes_spaces_and_brackets() {
        let l = " memfd:sealed-91-5501    [001] d..2.  1854.645907: sched_switch: prev_comm=memfd:sealed-91 prev_pid=5501 prev_prio=120 prev_state=S ==> next_comm=sysperf:pipebac next_pid=16328 next_prio=120";
        let Line::Event(e) = line(l) else { panic!() };
        assert_eq!((e.pid, e.comm), (5501, "memfd:sealed-91"));
        assert_eq!(int_field(e.body, "prev_pid"), Some(5501));
        assert_eq!(int_field(e.body, "next_pid"), Some(16328));
        assert_eq!(int_field(e.body, "pid"), None);
        assert_eq!(field(e.body, "prev_state"), Some("S"));
        let l = "   my [x] prog-42 [000] .....  10.000001: sys_enter: NR 39 (0, 0, 0, 0, 0, 0)";
        let Line::Event(e) = line(l) else { panic!() };
        assert_eq!((e.pid, e.cpu, e.ts_ns), (42, 0, 10_000_001_000));
        assert_eq!(syscall_nr(e.body), Some(39));
        // Unknown command names print as <...>; without irq-info there are no flags.
        let l = "           <...>-15      [001]  1854.645277: sched_switch: prev_comm=rcu_preempt prev_pid=15";
        assert!(matches!(line(l), Line::Event(Event { pid: 15, .. })));
    }

    #[test]
    fn headers_lost_markers_and_garbage() {
        assert_eq!(line("# tracer: nop"), Line::Other);
        assert_eq!(line(""), Line::Other);
        assert_eq!(
            line("CPU:1 [LOST 1234 EVENTS]"),
            Line::Lost {
                cpu: 1,
                events: 1234
            }
        );
        for bad in [
            "no brackets here",
            "x-1 [001] ..... notatime: e: b",
            "x-y [001] ..... 1.000001: e: b",
            "x-1 [001] ..... 1.0000000001: e: b",
            "x-1 [] 1.0: e",
            "[",
            "-1 [9999999999999] 1.1: e: b",
            "\u{0}\u{ffff}-[1] ",
        ] {
            assert_eq!(line(bad), Line::Other, "{bad}");
        }
    }

    #[test]
    fn timestamps_are_exact() {
        assert_eq!(timestamp_ns("0.000001"), Some(1_000));
        assert_eq!(timestamp_ns("12.5"), Some(12_500_000_000));
        assert_eq!(timestamp_ns("1.123456789"), Some(1_123_456_789));
        assert_eq!(timestamp_ns("1."), None);
        assert_eq!(timestamp_ns("-1.0"), None);
        assert_eq!(timestamp_ns("99999999999999999999.0"), None);
    }

    #[test]
    fn page_ranges_of_every_filemap_layout() {
        let f = FileId {
            dev: (254, 0),
            ino: 0x98c098,
        };
        let add = "dev 254:0 ino 98c098 pfn=0x163128 ofs=65536 order=2";
        assert_eq!(
            page_range(add, 4096),
            Some(PageRange {
                file: f,
                first: 16,
                last: 19
            })
        );
        let get = "dev=254:0 ino=98c098 ofs=16384-32767";
        assert_eq!(
            page_range(get, 4096),
            Some(PageRange {
                file: f,
                first: 4,
                last: 7
            })
        );
        let fault = "dev=254:0 ino=98c098 ofs=86016";
        assert_eq!(
            page_range(fault, 4096).map(|r| (r.first, r.last)),
            Some((21, 21))
        );
        let ra = "dev=254:0 ino=98c098 index=4 req_count=4 order=0 size=16 async_size=12 ra_pages=2048 mmap_miss=0 prev_pos=16384";
        assert_eq!(
            page_range(ra, 4096).map(|r| (r.first, r.last)),
            Some((4, 4))
        );
        assert_eq!(page_range("dev=x ino=1 ofs=0-1", 4096), None);
        assert_eq!(page_range("dev=1:2 ino=1 ofs=8192-4095", 4096), None);
    }

    #[test]
    fn block_requests_on_issue_and_completion() {
        let i = block_rq("254,0 RA 65536 () 324463944 + 128 be,0,4 [dd]").unwrap();
        assert_eq!(i.dev, (254, 0));
        assert_eq!(i.rwbs, "RA");
        assert_eq!(i.bytes, Some(65536));
        assert_eq!((i.sector, i.nr_sector), (324463944, 128));
        assert_eq!(i.tail, "dd");
        let c = block_rq("254,0 RA () 324463944 + 128 be,0,4 [0]").unwrap();
        assert_eq!(c.bytes, None);
        assert_eq!(c.tail, "0");
        let scsi = block_rq("8,0 R 4096 (28 00 00 00) 2048 + 8 none,0,0 [cat]").unwrap();
        assert_eq!(scsi.sector, 2048);
        assert!(block_rq("254,0 RA").is_none());
        assert!(block_rq("254,0 RA x () 1 + 2 [a]").is_none());
    }
}
