//! Records of a perf ring buffer, parsed from the bytes [`crate::sys::PerfRing::drain`]
//! copies out. Pure: it knows the layouts the samplers ask for (sample_type IP | TID | TIME |
//! PERIOD | CALLCHAIN; comm, fork and mmap records; sample_id_all or not, said by the caller:
//! [`parse`] without, [`parse_with_ids`] with) and nothing else; records of other types are
//! skipped by their size.

/// PERF_RECORD_* types read here.
const RECORD_MMAP: u32 = 1;
const RECORD_LOST: u32 = 2;
const RECORD_COMM: u32 = 3;
const RECORD_THROTTLE: u32 = 5;
const RECORD_FORK: u32 = 7;
const RECORD_SAMPLE: u32 = 9;
const RECORD_LOST_SAMPLES: u32 = 13;
/// header.misc: the CPU mode a sample was taken in.
const MISC_CPUMODE_MASK: u16 = 7;
const MISC_USER: u16 = 2;
const MISC_COMM_EXEC: u16 = 1 << 13;
/// Callchain entries at or above this are context markers (PERF_CONTEXT_KERNEL, _USER, ...).
pub const CONTEXT_MAX: u64 = (-4095i64) as u64;
pub const CONTEXT_KERNEL: u64 = (-128i64) as u64;
pub const CONTEXT_USER: u64 = (-512i64) as u64;

/// One sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    pub ip: u64,
    pub pid: u32,
    pub tid: u32,
    /// CLOCK_MONOTONIC nanoseconds (the sampler sets use_clockid).
    pub time_ns: u64,
    /// Nanoseconds of CPU time this sample stands for.
    pub period: u64,
    /// Taken while the task ran in user mode.
    pub user: bool,
    /// Kernel return addresses, leaf first (the sampled ip first), markers removed.
    pub kernel_chain: Vec<u64>,
    /// Where the task was in user space: the sampled ip of a user-mode sample, or the first
    /// entry of the user call chain of a kernel one (the address it entered the kernel
    /// from); None when the kernel recorded no user call chain.
    pub user_ip: Option<u64>,
}

/// An executable mapping a process made (PERF_RECORD_MMAP: the kernel reports PROT_EXEC
/// mappings only unless mmap_data is set, which the sampler does not ask for).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mmap {
    pub pid: u32,
    pub start: u64,
    pub len: u64,
    /// Offset in the file of the mapping's first byte.
    pub pgoff: u64,
    /// The mapped file's path as the process saw it, or a name in brackets (`[vdso]`,
    /// `//anon` for anonymous executable memory).
    pub file: String,
    /// When it was made (CLOCK_MONOTONIC ns), with sample_id_all.
    pub time_ns: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Sample(Sample),
    /// Samples the kernel dropped because the buffer was full.
    Lost(u64),
    /// A task's name: at exec (`exec` true) or as it was when the event was set up.
    Comm {
        pid: u32,
        comm: String,
        exec: bool,
        /// When (with sample_id_all): an exec replaces the process's mappings.
        time_ns: Option<u64>,
    },
    Mmap(Mmap),
    /// The kernel throttled sampling (too many samples per second for its budget).
    Throttle,
    /// Process `pid` was created by process `ppid` (thread creations have pid == ppid).
    Fork {
        pid: u32,
        ppid: u32,
        time_ns: u64,
    },
}

/// Parses every complete record in `bytes` of events without sample_id_all; a truncated or
/// malformed tail is ignored (the ring buffer only ever holds whole records, so this only
/// happens on corrupt input).
pub fn parse(bytes: &[u8]) -> Vec<Record> {
    parse_records(bytes, false)
}

/// [`parse`] for events with sample_id_all: every record other than a sample ends in the
/// sample's TID and TIME fields (16 bytes), so comm and mmap records carry their time.
pub fn parse_with_ids(bytes: &[u8]) -> Vec<Record> {
    parse_records(bytes, true)
}

/// The bytes sample_id_all appends to a non-sample record for our sample_type: pid, tid, time.
const SAMPLE_ID_LEN: usize = 16;

fn parse_records(bytes: &[u8], ids: bool) -> Vec<Record> {
    let tail = if ids { SAMPLE_ID_LEN } else { 0 };
    // The time of a non-sample record, the last 8 bytes of its body with sample_id_all.
    let time_of = |body: &[u8]| ids.then(|| u64_at(body, body.len() - 8));
    let mut out = Vec::new();
    let mut at = 0;
    while at + 8 <= bytes.len() {
        let kind = u32_at(bytes, at);
        let misc = u16::from_ne_bytes([bytes[at + 4], bytes[at + 5]]);
        let size = u16::from_ne_bytes([bytes[at + 6], bytes[at + 7]]) as usize;
        if size < 8 || at + size > bytes.len() {
            break;
        }
        let body = &bytes[at + 8..at + size];
        match kind {
            RECORD_SAMPLE => {
                if let Some(s) = parse_sample(body, misc) {
                    out.push(Record::Sample(s));
                }
            }
            RECORD_LOST if body.len() >= 16 => out.push(Record::Lost(u64_at(body, 8))),
            RECORD_LOST_SAMPLES if body.len() >= 8 => out.push(Record::Lost(u64_at(body, 0))),
            RECORD_COMM if body.len() >= 8 + tail => {
                out.push(Record::Comm {
                    pid: u32_at(body, 0),
                    comm: c_string(&body[8..body.len() - tail]),
                    exec: misc & MISC_COMM_EXEC != 0,
                    time_ns: time_of(body),
                });
            }
            // pid, tid, addr, len, pgoff, filename (NUL-terminated, padded to 8 bytes).
            RECORD_MMAP if body.len() >= 32 + tail => out.push(Record::Mmap(Mmap {
                pid: u32_at(body, 0),
                start: u64_at(body, 8),
                len: u64_at(body, 16),
                pgoff: u64_at(body, 24),
                file: c_string(&body[32..body.len() - tail]),
                time_ns: time_of(body),
            })),
            RECORD_THROTTLE => out.push(Record::Throttle),
            RECORD_FORK if body.len() >= 24 => out.push(Record::Fork {
                pid: u32_at(body, 0),
                ppid: u32_at(body, 4),
                time_ns: u64_at(body, 16),
            }),
            _ => {}
        }
        at += size;
    }
    out
}

/// The text up to the first NUL (all of it when there is none).
fn c_string(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_ne_bytes(w)
}

fn parse_sample(b: &[u8], misc: u16) -> Option<Sample> {
    // ip, pid, tid, time, period, nr, ips[nr]
    if b.len() < 40 {
        return None;
    }
    let nr = u64_at(b, 32) as usize;
    if nr > (b.len() - 40) / 8 {
        return None;
    }
    let mut kernel_chain = Vec::new();
    let mut user_ip = None;
    let mut context = 0;
    for i in 0..nr {
        let a = u64_at(b, 40 + 8 * i);
        if a >= CONTEXT_MAX {
            context = a;
            continue;
        }
        if context == CONTEXT_KERNEL {
            kernel_chain.push(a);
        } else if context == CONTEXT_USER && user_ip.is_none() {
            user_ip = Some(a);
        }
    }
    Some(Sample {
        ip: u64_at(b, 0),
        pid: u32_at(b, 8),
        tid: u32_at(b, 12),
        time_ns: u64_at(b, 16),
        period: u64_at(b, 24),
        user: misc & MISC_CPUMODE_MASK == MISC_USER,
        kernel_chain,
        user_ip,
    })
}

/// Builders of synthetic records, for tests here and in `profile`.
#[cfg(test)]
pub(crate) mod synth {
    use super::*;

    fn header(kind: u32, misc: u16, body: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&kind.to_ne_bytes());
        v.extend_from_slice(&misc.to_ne_bytes());
        v.extend_from_slice(&((8 + body.len()) as u16).to_ne_bytes());
        v.extend_from_slice(body);
        v
    }

    /// A sample at `ip` with the kernel call chain `chain`; a user-mode one has the user
    /// call chain `ip` alone, a kernel one none.
    pub fn sample(pid: u32, time: u64, user: bool, ip: u64, chain: &[u64]) -> Vec<u8> {
        let user_chain = if user { vec![ip] } else { vec![] };
        sample_with_user_chain(pid, time, user, ip, chain, &user_chain)
    }

    /// A sample with both call chains given.
    pub fn sample_with_user_chain(
        pid: u32,
        time: u64,
        user: bool,
        ip: u64,
        chain: &[u64],
        user_chain: &[u64],
    ) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&ip.to_ne_bytes());
        b.extend_from_slice(&pid.to_ne_bytes());
        b.extend_from_slice(&pid.to_ne_bytes());
        b.extend_from_slice(&time.to_ne_bytes());
        b.extend_from_slice(&200_033u64.to_ne_bytes());
        let mut ips: Vec<u64> = Vec::new();
        if !chain.is_empty() {
            ips.push(CONTEXT_KERNEL);
            ips.extend_from_slice(chain);
        }
        if !user_chain.is_empty() {
            ips.push(CONTEXT_USER);
            ips.extend_from_slice(user_chain);
        }
        b.extend_from_slice(&(ips.len() as u64).to_ne_bytes());
        for a in ips {
            b.extend_from_slice(&a.to_ne_bytes());
        }
        header(RECORD_SAMPLE, if user { MISC_USER } else { 1 }, &b)
    }

    pub fn lost(n: u64) -> Vec<u8> {
        let mut b = 7u64.to_ne_bytes().to_vec();
        b.extend_from_slice(&n.to_ne_bytes());
        header(RECORD_LOST, 0, &b)
    }

    pub fn fork(pid: u32, ppid: u32, time: u64) -> Vec<u8> {
        let mut b = Vec::new();
        for v in [pid, ppid, pid, ppid] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        b.extend_from_slice(&time.to_ne_bytes());
        header(RECORD_FORK, 0, &b)
    }

    /// The sample_id_all tail of a non-sample record: pid, tid, time.
    pub fn ids(pid: u32, time: u64) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&pid.to_ne_bytes());
        b.extend_from_slice(&pid.to_ne_bytes());
        b.extend_from_slice(&time.to_ne_bytes());
        b
    }

    /// An mmap record, with its sample_id_all tail when `time` is given.
    pub fn mmap(
        pid: u32,
        start: u64,
        len: u64,
        pgoff: u64,
        file: &str,
        time: Option<u64>,
    ) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&pid.to_ne_bytes());
        b.extend_from_slice(&pid.to_ne_bytes());
        for v in [start, len, pgoff] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        b.extend_from_slice(file.as_bytes());
        b.push(0);
        while b.len() % 8 != 0 {
            b.push(0);
        }
        if let Some(t) = time {
            b.extend(ids(pid, t));
        }
        header(RECORD_MMAP, 0, &b)
    }

    /// A comm record with its sample_id_all tail.
    pub fn comm_at(pid: u32, name: &str, exec: bool, time: u64) -> Vec<u8> {
        let mut r = comm(pid, name, exec);
        r.extend(ids(pid, time));
        let size = r.len() as u16;
        r[6..8].copy_from_slice(&size.to_ne_bytes());
        r
    }

    pub fn comm(pid: u32, name: &str, exec: bool) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&pid.to_ne_bytes());
        b.extend_from_slice(&pid.to_ne_bytes());
        b.extend_from_slice(name.as_bytes());
        b.push(0);
        while b.len() % 8 != 0 {
            b.push(0);
        }
        header(RECORD_COMM, if exec { MISC_COMM_EXEC } else { 0 }, &b)
    }
}

#[cfg(test)]
mod tests {
    use super::synth::*;
    use super::*;

    #[test]
    fn parses_samples_lost_and_comm_records() {
        let mut bytes = Vec::new();
        bytes.extend(sample(
            42,
            1000,
            false,
            0xffff_ffff_8100_3010,
            &[0xffff_ffff_8100_3010, 0xffff_ffff_8100_1010],
        ));
        bytes.extend(lost(3));
        bytes.extend(comm(43, "nulljob", true));
        bytes.extend(sample(43, 2000, true, 0x5555_0000_1234, &[]));
        bytes.extend(fork(44, 43, 2500));
        // An unknown record type is skipped by its size.
        bytes.extend([99, 0, 0, 0, 0, 0, 16, 0, 1, 2, 3, 4, 5, 6, 7, 8]);
        let r = parse(&bytes);
        assert_eq!(r.len(), 5);
        assert_eq!(
            r[4],
            Record::Fork {
                pid: 44,
                ppid: 43,
                time_ns: 2500
            }
        );
        let Record::Sample(s) = &r[0] else { panic!() };
        assert_eq!(
            (s.pid, s.time_ns, s.period, s.user),
            (42, 1000, 200_033, false)
        );
        assert_eq!(
            s.kernel_chain,
            vec![0xffff_ffff_8100_3010, 0xffff_ffff_8100_1010]
        );
        assert_eq!(r[1], Record::Lost(3));
        assert_eq!(
            r[2],
            Record::Comm {
                pid: 43,
                comm: "nulljob".into(),
                exec: true,
                time_ns: None
            }
        );
        let Record::Sample(u) = &r[3] else { panic!() };
        assert!(u.user && u.kernel_chain.is_empty());
        assert_eq!((s.user_ip, u.user_ip), (None, Some(0x5555_0000_1234)));
    }

    #[test]
    fn a_kernel_sample_keeps_where_user_space_entered_the_kernel() {
        let chain = [0xffff_ffff_8100_3010, 0xffff_ffff_8100_1010];
        let bytes =
            sample_with_user_chain(5, 10, false, chain[0], &chain, &[0x7f00_1234, 0x55_5678]);
        let r = parse(&bytes);
        let Record::Sample(s) = &r[0] else { panic!() };
        // The first user entry, not the outer frames; the kernel chain untouched by it.
        assert_eq!(s.user_ip, Some(0x7f00_1234));
        assert_eq!(s.kernel_chain, chain.to_vec());
    }

    #[test]
    fn parses_mmap_and_timed_comm_records_with_sample_ids() {
        let mut bytes = Vec::new();
        bytes.extend(comm_at(43, "cat", true, 700));
        bytes.extend(mmap(
            43,
            0x5555_0000_0000,
            0x4000,
            0x2000,
            "/usr/bin/cat",
            Some(710),
        ));
        // A name padded with NULs to 8 bytes, then the sample id.
        bytes.extend(mmap(43, 0x7fff_0000_0000, 0x2000, 0, "[vdso]", Some(720)));
        bytes.extend(sample(43, 800, true, 0x5555_0000_2010, &[]));
        let r = parse_with_ids(&bytes);
        assert_eq!(r.len(), 4);
        assert_eq!(
            r[0],
            Record::Comm {
                pid: 43,
                comm: "cat".into(),
                exec: true,
                time_ns: Some(700)
            }
        );
        assert_eq!(
            r[1],
            Record::Mmap(Mmap {
                pid: 43,
                start: 0x5555_0000_0000,
                len: 0x4000,
                pgoff: 0x2000,
                file: "/usr/bin/cat".into(),
                time_ns: Some(710)
            })
        );
        let Record::Mmap(v) = &r[2] else { panic!() };
        assert_eq!((v.file.as_str(), v.time_ns), ("[vdso]", Some(720)));
        // Samples carry no sample id tail: their layout is the same either way.
        let Record::Sample(s) = &r[3] else { panic!() };
        assert_eq!((s.time_ns, s.user_ip), (800, Some(0x5555_0000_2010)));
        // Without sample ids the same mmap record has no time and the same name.
        let plain = parse(&mmap(43, 0x1000, 0x1000, 0, "/bin/sh", None));
        let Record::Mmap(m) = &plain[0] else { panic!() };
        assert_eq!((m.file.as_str(), m.time_ns), ("/bin/sh", None));
        // Cut short, an mmap record is dropped, never read past its end.
        let whole = mmap(1, 0x1000, 0x1000, 0, "/bin/sh", Some(5));
        for cut in 0..whole.len() {
            assert!(parse_with_ids(&whole[..cut]).is_empty(), "cut at {cut}");
        }
    }

    #[test]
    fn truncated_and_corrupt_input_never_panics() {
        let whole = sample(1, 1, false, 5, &[5, 6, 7]);
        for cut in 0..whole.len() {
            let r = parse(&whole[..cut]);
            assert!(r.is_empty(), "cut at {cut}");
        }
        // A size of zero would loop forever; a callchain longer than the record is refused.
        assert!(parse(&[9, 0, 0, 0, 0, 0, 0, 0]).is_empty());
        let mut bad = whole.clone();
        bad[8 + 32] = 200;
        assert!(parse(&bad).is_empty());
    }
}
