//! What the library has to tell the person running sysperf while it works, outside any
//! command's result: a lost connection and its reconnection, a run spooled to a local file,
//! a setting that could not be put back, a trace instance that could not be removed. One line
//! at a time (without the `sysperf: ` the program puts before it), to the sink the program
//! installed at its start ([`install`]).
//!
//! The library never prints: without a sink (its own tests, another program using the crate)
//! the lines are dropped. It is not for a command's output or errors, which the library
//! returns, nor for progress, which the engine gives its caller as events.

use std::sync::OnceLock;

type Sink = Box<dyn Fn(&str) + Send + Sync>;

static SINK: OnceLock<Sink> = OnceLock::new();

/// Installs where the lines go; the first sink installed stays (the program installs one,
/// before anything else runs).
pub fn install(sink: impl Fn(&str) + Send + Sync + 'static) {
    let _ = SINK.set(Box::new(sink));
}

/// Hands `line` to the sink, if there is one.
pub fn tell(line: &str) {
    if let Some(sink) = SINK.get() {
        sink(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn lines_reach_the_installed_sink_and_only_it() {
        static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());
        install(|l| SEEN.lock().unwrap().push(l.to_string()));
        // A second sink does not replace the first.
        install(|_| panic!("the first sink stays"));
        tell("reconnected to postgres://db/x");
        assert!(SEEN
            .lock()
            .unwrap()
            .contains(&"reconnected to postgres://db/x".to_string()));
    }
}
