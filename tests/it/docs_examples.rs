//! The documentation's examples run: every ```console block of README.md and docs/*.md is a
//! session that trycmd replays against the built `sysperf`, checking each command's exit code
//! (`? N`) and the lines of output the text shows (`...` and `[..]` stand for the rest).
//!
//! Each file runs in a scratch directory of its own with its own store (`SYSPERF_DB`), its
//! blocks in order, so a later example finds the runs an earlier one made. A block marked
//! ```console,root needs root (tracing, kernel profiles): as root it runs like any other,
//! otherwise it is left out and the test prints why. A block that is not run at all (it needs
//! minutes, or builds sysperf) is a ```sh or ```text block that says why in a comment; every
//! such block is listed in [`NOT_RUN`], so that none is skipped silently.

use std::path::{Path, PathBuf};

/// The Markdown files whose examples must run.
fn doc_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ is readable")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// Blocks of commands that the test does not run, by file and first line, each with why.
const NOT_RUN: &[(&str, &str, &str)] = &[
    (
        "README.md",
        "cargo run --release -- run",
        "builds sysperf and measures for about a minute",
    ),
    (
        "README.md",
        "sysperf noise",
        "an A/A timing experiment of about a minute",
    ),
    (
        "README.md",
        "sudo -u postgres createuser",
        "needs a PostgreSQL server; tests/it/fleet.rs runs sysperf on a private cluster",
    ),
    (
        "README.md",
        "sudo apt-get install ansible-core",
        "needs ssh hosts and a PostgreSQL server; tests/it/deploy.rs runs the playbook on 3 network namespaces",
    ),
    (
        "README.md",
        "sysperf sync ~/.local",
        "needs a PostgreSQL server; tests/it/fleet.rs syncs through a private cluster",
    ),
    (
        "docs/compare.md",
        "sysperf noise",
        "an A/A timing experiment of about a minute",
    ),
    (
        "README.md",
        "sysperf profile --system 10m --label busy",
        "samples the whole machine for ten minutes, as root; tests/it/system_profile.rs runs each command",
    ),
    (
        "docs/report.md",
        "sysperf report RUN... -o FILE.html",
        "a synopsis, not a command; the examples below it run",
    ),
];

/// A fenced block: its file (relative), its info string, its first line that is not a
/// comment, and whether a comment says why it is not run.
struct Block {
    file: String,
    info: String,
    first: String,
    says_not_run: bool,
}

fn blocks(path: &Path, rel: &str) -> Vec<Block> {
    let text = std::fs::read_to_string(path).expect("doc readable");
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(info) = line.strip_prefix("```") else {
            continue;
        };
        let info = info.trim().to_string();
        let mut first = String::new();
        let mut says_not_run = false;
        for l in lines.by_ref() {
            let l = l.trim();
            if l.starts_with("```") {
                break;
            }
            if l.starts_with('#') {
                says_not_run |= l.contains("not run");
            } else if first.is_empty() && !l.is_empty() {
                first = l.to_string();
            }
        }
        out.push(Block {
            file: rel.to_string(),
            info,
            first,
            says_not_run,
        });
    }
    out
}

fn rel(path: &Path) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn every_block_of_commands_runs_or_is_listed_as_not_run() {
    let mut unlisted = Vec::new();
    let mut listed_seen = vec![false; NOT_RUN.len()];
    for path in doc_files() {
        let rel = rel(&path);
        for b in blocks(&path, &rel) {
            let lang = b.info.split(',').next().unwrap_or("");
            match lang {
                "console" => assert!(
                    b.first.starts_with("$ "),
                    "{}: a console block must start with a '$ ' command line: {}",
                    b.file,
                    b.first
                ),
                // A bare fence would be taken for a trycmd session: say what the block is.
                "" => unlisted.push(format!(
                    "{}: a block without a language: {}",
                    b.file, b.first
                )),
                _ => {
                    let hit = NOT_RUN.iter().position(|(f, first, _)| {
                        *f == b.file && b.first.trim_start_matches("$ ").starts_with(first)
                    });
                    match hit {
                        Some(i) => {
                            listed_seen[i] = true;
                            if !b.says_not_run {
                                unlisted.push(format!(
                                    "{}: a block not run needs a '# not run: why' comment: {}",
                                    b.file, b.first
                                ));
                            }
                        }
                        None if b.first.contains("sysperf") => unlisted.push(format!(
                            "{}: a '{}' block of commands that does not run: {}",
                            b.file, b.info, b.first
                        )),
                        None => {}
                    }
                }
            }
        }
    }
    assert!(
        unlisted.is_empty(),
        "write these as ```console sessions, or list them in NOT_RUN with the reason:\n{}",
        unlisted.join("\n")
    );
    for (seen, (file, first, _)) in listed_seen.iter().zip(NOT_RUN) {
        assert!(seen, "NOT_RUN lists a block that is gone: {file}: {first}");
    }
    for (file, first, why) in NOT_RUN {
        println!("not run: {file}: {first} ({why})");
    }
}

/// The session trycmd replays for one Markdown file: the same text with a blank line after
/// each command's output. trycmd drops the last line break before the next `$` line or the
/// closing fence, which would leave a final literal line of output (`removed run ...`)
/// unmatched; the blank line keeps the docs free of that artefact. Blocks marked
/// `console,root` are left out when not root.
fn session(text: &str, root: bool) -> String {
    let mut out = String::new();
    let mut in_console = false;
    let mut first_line = false;
    for line in text.lines() {
        if let Some(info) = line.strip_prefix("```") {
            if in_console {
                out.push('\n');
                in_console = false;
            } else {
                let lang = info.trim();
                in_console = lang == "console" || lang == "console,root";
                first_line = true;
                if lang == "console,root" && !root {
                    out.push_str("```console,ignore\n");
                    continue;
                }
            }
        } else if in_console && line.starts_with("$ ") && !first_line {
            out.push('\n');
        } else {
            first_line = false;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[test]
fn the_documented_examples_run_as_shown() {
    let root = sysperf::sys::is_root();
    // Kept after the test, so that a failure's FILE:LINE can be looked at.
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("docs-examples");
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(scratch.join("xdg")).expect("scratch directory");
    let cases = trycmd::TestCases::new();
    cases
        .register_bin("sysperf", Path::new(env!("CARGO_BIN_EXE_sysperf")))
        // Relative: each file's session has its own store, in its own directory.
        .env("SYSPERF_DB", "sysperf.db")
        .env("XDG_DATA_HOME", scratch.join("xdg").to_string_lossy())
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .timeout(std::time::Duration::from_secs(300));
    for path in doc_files() {
        let rel = rel(&path);
        let text = std::fs::read_to_string(&path).expect("doc readable");
        let n = text.matches("```console,root").count();
        if !root && n > 0 {
            println!("{rel}: {n} example block(s) not run: they need root (run the tests as root to run them)");
        }
        let copy = scratch.join(rel.replace('/', "-"));
        std::fs::write(&copy, session(&text, root)).expect("copy written");
        // trycmd runs a file's commands in NAME.in/ when it exists.
        std::fs::create_dir(copy.with_extension("in")).expect("work directory");
        cases.case(&copy);
    }
    cases.run();
}

#[test]
fn root_blocks_are_left_out_without_root_and_each_output_ends_in_a_blank_line() {
    let md = "```console,root\n$ sysperf trace syscall\n...\n```\n\n```console\n$ sysperf list\nid [..]\n$ sysperf job null -o j\n```\n";
    let not_root = session(md, false);
    assert!(not_root.starts_with("```console,ignore\n$ sysperf trace syscall\n"));
    assert!(not_root.contains("$ sysperf list\nid [..]\n\n$ sysperf job null -o j\n\n```\n"));
    let root = session(md, true);
    assert!(root.starts_with("```console,root\n$ sysperf trace syscall\n...\n\n```\n"));
}

/// Every `--suite VALUE` the docs write, wherever they write it: in a command, in a shell
/// comment after one (`# or one point: --suite X`), in prose. trycmd runs a console line's
/// command and never its comment, so an alternative offered in a comment went untried: README's
/// `--suite bbn.pipe@65536` beside `--quick` exited 2 (#33 item 4). Each value written on a
/// line that says `--quick` is tried with `--quick` (the point must be one a quick run keeps).
fn suite_values(text: &str) -> Vec<(String, bool, usize)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let quick = line.starts_with("$ ") && line.contains("--quick");
        for (i, _) in line.match_indices("--suite ") {
            let value: String = line[i + "--suite ".len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "._@*-".contains(*c))
                .collect();
            let value = value.trim_end_matches(['.', '-']).to_string();
            // NAME, ID and the like are placeholders, not values.
            if value.is_empty() || value.chars().all(|c| c.is_ascii_uppercase()) {
                continue;
            }
            out.push((value, quick, n + 1));
        }
    }
    out
}

#[test]
fn a_suite_value_in_a_comment_is_found_with_the_quick_of_its_line() {
    let md = "$ sysperf run --suite scaling.poll --quick   # or one point: --suite bbn.pipe@65536; globs\nprose `--suite bbn.pipe@65536`, and `--suite NAME`.\n";
    assert_eq!(
        suite_values(md),
        [
            ("scaling.poll".to_string(), true, 1),
            ("bbn.pipe@65536".to_string(), true, 1),
            ("bbn.pipe@65536".to_string(), false, 2)
        ]
    );
}

#[test]
fn every_suite_value_the_docs_write_is_one_sysperf_accepts() {
    let tmp = tempfile::tempdir().expect("scratch directory");
    let mut bad = Vec::new();
    for path in doc_files() {
        let rel = rel(&path);
        let text = std::fs::read_to_string(&path).expect("doc readable");
        for (value, quick, line) in suite_values(&text) {
            let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_sysperf"));
            cmd.args(["run", "--suite", &value, "--dry-run"])
                .env("SYSPERF_DB", tmp.path().join("s.db"));
            if quick {
                cmd.arg("--quick");
            }
            let out = cmd.output().expect("sysperf runs");
            if !out.status.success() {
                bad.push(format!(
                    "{rel}:{line}: --suite {value}{}: {}",
                    if quick { " --quick" } else { "" },
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
