//! `sysperf jitter`: how a spinning CPU is interrupted, from a spin on the clock on each CPU.

use super::failure::Context;
use super::out::{print, print_json};
use super::Result;
use clap::Args as ClapArgs;
use sysperf::error::InputError;
use sysperf::observe::jitter;
use sysperf::report;

pub(crate) const JITTER_HELP: &str = "\
One thread per CPU, pinned to it, reads the monotonic clock in a loop for --seconds and records
every gap between two reads longer than --threshold-ns: time taken from it by interrupts,
softirqs, the timer tick, other tasks or the hypervisor. Per CPU: microseconds lost per second
(the sum of the gaps), the number of gaps and the largest, the timer ticks (/proc/interrupts LOC),
the times other tasks preempted the spin and its time off the CPU, and the hypervisor's steal
ticks (/proc/stat) meanwhile, with a line saying who took the time (steal is the hypervisor's
alone); the gap histogram, and every interrupt and softirq source that fired on the CPU, a
numbered interrupt with its device. It keeps those CPUs busy: do not run it beside
measurements. Nothing is stored.";

#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Seconds to spin on each CPU.
    #[arg(long, value_name = "S", default_value_t = 1.0, allow_negative_numbers = true, value_parser = super::args::parse_seconds)]
    pub(crate) seconds: f64,
    /// Gaps longer than this many nanoseconds count as lost time.
    #[arg(long, value_name = "NS", default_value_t = jitter::DEFAULT_THRESHOLD_NS, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub(crate) threshold_ns: u64,
    /// CPUs to spin on (comma-separated; default: every CPU this process may use).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub(crate) cpu: Vec<u32>,
    /// One JSON document instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    let allowed = sysperf::sys::get_affinity().context("reading this process's CPU affinity")?;
    let cpus = if a.cpu.is_empty() {
        allowed
    } else {
        if let Some(bad) = a.cpu.iter().find(|c| !allowed.contains(c)) {
            return Err(InputError::InvalidValue {
                what: "--cpu",
                value: bad.to_string(),
                why: format!(
                    "this process may run on CPUs {}; choose among them",
                    allowed
                        .iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(",")
                ),
            }
            .into());
        }
        a.cpu.clone()
    };
    let report = jitter::measure(&cpus, a.seconds, a.threshold_ns)
        .context("spinning on the clock (pinning a thread to each CPU)")?;
    let fp = sysperf::fingerprint::collect();
    if a.json {
        return print_json(&report::json::jitter_document(&fp, &report));
    }
    print(&jitter::render(&report, fp.hz))
}
