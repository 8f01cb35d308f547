//! The architecture holds as ARCHITECTURE.md draws it, read from the source (test modules,
//! files compiled only for tests, and comment lines left out):
//! - every module imports only modules of its own layer or of layers below it, in the order
//!   of ARCHITECTURE.md's table, and every top-level module is in the table; the imports are
//!   read in every form (`crate::a::b` inline, `use crate::{a, b::{c, d}}`, `super::` chains
//!   that climb to the crate's root);
//! - the top-level modules depend on each other without loops, and so do the files of each
//!   folder (a folder's `mod.rs`, or the file beside it, is its face and not counted);
//! - `unsafe` is written only in `sys` and `clib`, the only modules the crate's
//!   `deny(unsafe_code)` is lifted for;
//! - the library does not use clap or indicatif (the command line is the binary's);
//! - every error type of the library says its exit code (`error::Exit`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under src/, relative to it, with its text.
fn files() -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![src()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().and_then(|x| x.to_str()) == Some("rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                out.push((p.strip_prefix(src()).unwrap().to_path_buf(), text));
            }
        }
    }
    out.sort();
    out
}

/// The folder whose modules a file declares: src/store/ for store/mod.rs, src/suite/libs/ for
/// suite/libs.rs, src/ for lib.rs and main.rs.
fn children_dir(rel: &Path) -> PathBuf {
    let stem = rel.file_stem().unwrap().to_str().unwrap();
    let parent = rel.parent().unwrap_or(Path::new("")).to_path_buf();
    if matches!(stem, "mod" | "lib" | "main") {
        parent
    } else {
        parent.join(stem)
    }
}

/// Files compiled only for tests: declared as `#[cfg(test)] mod name;`.
fn test_only(all: &[(PathBuf, String)]) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for (rel, text) in all {
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for w in lines.windows(2) {
            if w[0] == "#[cfg(test)]" {
                // Whatever its visibility: a test module another module's tests share
                // (`#[cfg(test)] pub(crate) mod tests;`) is compiled only for tests too.
                let decl = w[1].strip_prefix("pub(crate) ").unwrap_or(w[1]);
                if let Some(name) = decl.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
                    out.insert(children_dir(rel).join(format!("{name}.rs")));
                }
            }
        }
    }
    out
}

/// The code of a file that the library's build sees: without its `#[cfg(test)]` items (a
/// test module, a fixture, a `mod x;` of a test file) and without comment lines.
fn code(text: &str) -> String {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("//") {
            continue;
        }
        if t != "#[cfg(test)]" {
            out.push(line);
            continue;
        }
        // Skip the item: its attributes, then a one-line item, or up to the line at the
        // attribute's indentation that closes it (rustfmt's layout).
        let indent = &line[..line.len() - t.len()];
        for l in lines.by_ref() {
            let lt = l.trim_start();
            if lt.starts_with("#[") || lt.starts_with("//") {
                continue;
            }
            let closes = l
                .strip_prefix(indent)
                .is_some_and(|r| matches!(r, "}" | "};" | "];"));
            if closes || (l.ends_with(';') && l.len() - lt.len() == indent.len()) {
                break;
            }
        }
    }
    out.join("\n")
}

/// Top-level module of a file under src/ ("harness" for src/harness/worker.rs); None for the
/// crate roots.
fn module_of(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first).to_string();
    (name != "main" && name != "lib").then_some(name)
}

/// The binary's own modules (`main.rs` declares them); their `crate::` is not the library's.
fn binary_modules() -> BTreeSet<String> {
    let main = std::fs::read_to_string(src().join("main.rs")).unwrap();
    main.lines()
        .filter_map(|l| l.trim().strip_prefix("mod ")?.strip_suffix(';'))
        .map(str::to_string)
        .collect()
}

/// The identifier `text` starts with ("" when it starts with something else).
fn ident(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// The first name of each path a use tree or path names, from the text right after its
/// prefix (`crate::`, `super::`): `a` for `a::b(...)`, `a` and `d` for `{a::{b, c}, d}` (the
/// inner groups name items of `a`, not modules beside it), across lines.
fn heads(rest: &str) -> Vec<String> {
    let rest = rest.trim_start();
    let Some(group) = rest.strip_prefix('{') else {
        return vec![ident(rest)];
    };
    let mut out = Vec::new();
    let (mut depth, mut at_start) = (0, true);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => at_start = true,
            c if at_start && !c.is_whitespace() => {
                out.push(ident(&group[i..]));
                at_start = false;
            }
            _ => {}
        }
    }
    out.retain(|h| !h.is_empty() && h != "self");
    out
}

/// Where `prefix` starts a path in `code`: not inside a longer name (`mycrate::`), and for
/// `super::`, only the first of a chain (`super::super::`).
fn path_starts<'a>(code: &'a str, prefix: &'a str) -> impl Iterator<Item = usize> + 'a {
    code.match_indices(prefix)
        .map(|(i, _)| i)
        .filter(move |&i| {
            let before = code[..i].chars().next_back();
            !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        })
}

/// How many modules deep each line of `code` is below its file's module: 0, or more inside a
/// `mod name {` block (rustfmt's layout: its `}` at the indentation of its `mod`), as
/// (the line's byte offset, its depth).
fn inline_depths(code: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    let mut at = 0;
    for line in code.split('\n') {
        let t = line.trim_start();
        let indent = line.len() - t.len();
        if open.last() == Some(&indent) && t.starts_with('}') {
            open.pop();
        }
        out.push((at, open.len()));
        let decl = t.strip_prefix("pub ").unwrap_or(t);
        let decl = decl
            .strip_prefix("pub(crate) ")
            .or_else(|| decl.strip_prefix("pub(super) "))
            .unwrap_or(decl);
        if decl.starts_with("mod ") && t.ends_with('{') {
            open.push(indent);
        }
        at += line.len() + 1;
    }
    out
}

/// The top-level modules (or crate-root items) the code of the file `rel` names by a path
/// from the crate's root, in every form: `crate::a::b(...)` inline, `use crate::{a, b}`,
/// `use crate::{a::{b, c}, d}`, and `super::` chains that climb to the root
/// (`super::super::a` in harness/placement.rs, `super::a` in compare.rs's own code).
fn root_names(rel: &Path, code: &str) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = path_starts(code, "crate::")
        .flat_map(|i| heads(&code[i + "crate::".len()..]))
        .collect();
    // The file's module depth: compare.rs and compare/mod.rs are 1, harness/placement.rs 2.
    let stem = rel.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let depth = rel.components().count() - usize::from(stem == "mod");
    if matches!(stem, "lib" | "main") && rel.components().count() == 1 {
        return out;
    }
    for (climbs, rest) in super_paths(code) {
        if climbs == depth as isize {
            out.extend(heads(rest));
        }
    }
    out
}

/// Each `super::` chain of `code`: how many modules it climbs above the file's own module
/// (those it climbs out of `mod name {` blocks first are not counted), and the text after it.
fn super_paths(code: &str) -> Vec<(isize, &str)> {
    let lines = inline_depths(code);
    path_starts(code, "super::")
        .map(|i| {
            let mut rest = &code[i..];
            let mut climbs = 0;
            while let Some(r) = rest.strip_prefix("super::") {
                climbs += 1;
                rest = r;
            }
            let line = lines.partition_point(|&(at, _)| at <= i) - 1;
            (climbs - lines[line].1 as isize, rest)
        })
        .collect()
}

type Graph = BTreeMap<String, BTreeMap<String, String>>;

/// The `crate::` edges between the library's top-level modules, each with a file that makes it.
fn edges() -> Graph {
    edges_of(&files(), &binary_modules())
}

/// [`edges`] of the files `all` (paths under src/ with their text).
fn edges_of(all: &[(PathBuf, String)], binary: &BTreeSet<String>) -> Graph {
    let tests = test_only(all);
    let modules: BTreeSet<String> = all.iter().filter_map(|(r, _)| module_of(r)).collect();
    let mut out = Graph::new();
    for (rel, text) in all {
        let Some(from) = module_of(rel) else { continue };
        if tests.contains(rel) || binary.contains(&from) {
            continue;
        }
        for to in root_names(rel, &code(text)) {
            // `crate::exit`, `crate::VERSION`: the crate root's, in no layer.
            if to != from && modules.contains(&to) {
                out.entry(from.clone())
                    .or_default()
                    .entry(to)
                    .or_insert_with(|| rel.display().to_string());
            }
        }
    }
    out
}

/// The names a file takes from its siblings (the other modules its parent declares): by
/// `super::x` (one climb from the file's own module), `use super::{a::X, b}` or
/// `crate::parent::x`, in any of their forms.
fn sibling_uses(code: &str, siblings: &BTreeSet<String>, parent_path: &str) -> BTreeSet<String> {
    let mut names: Vec<String> = super_paths(code)
        .into_iter()
        .filter(|&(climbs, _)| climbs == 1)
        .flat_map(|(_, rest)| heads(rest))
        .collect();
    if !parent_path.is_empty() {
        let prefix = format!("crate::{parent_path}::");
        for i in path_starts(code, &prefix) {
            names.extend(heads(&code[i + prefix.len()..]));
        }
    }
    names.into_iter().filter(|n| siblings.contains(n)).collect()
}

/// The first name of each item of the groups `open` starts (`super::{`): `a` and `b` of
/// `super::{a::X, b}`.
fn grouped(code: &str, open: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (i, _) in code.match_indices(open) {
        let mut depth = 0;
        let mut item = String::new();
        let mut at_start = true;
        for c in code[i + open.len()..].chars() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => at_start = true,
                c if at_start && (c.is_ascii_alphanumeric() || c == '_') => item.push(c),
                _ if at_start && !item.is_empty() => {
                    names.push(std::mem::take(&mut item));
                    at_start = false;
                }
                _ => {}
            }
        }
        names.extend((!item.is_empty()).then_some(item));
    }
    names
}

/// The names that follow each `prefix` in `code` (`after(code, "super::")`: `run` of
/// `super::run::x`).
fn after<'a>(code: &'a str, prefix: &'a str) -> impl Iterator<Item = String> + 'a {
    code.match_indices(prefix).map(move |(i, _)| {
        code[i + prefix.len()..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    })
}

/// The subcommands: the modules of `cmd/` whose `exec` `main.rs` dispatches to.
fn commands() -> BTreeSet<String> {
    let main = std::fs::read_to_string(src().join("main.rs")).unwrap();
    after(&main, "cmd::")
        .filter(|m| main.contains(&format!("cmd::{m}::exec")))
        .collect()
}

/// The other commands' modules that the file `rel` of `cmd/` (`cmd/show.rs`, or
/// `cmd/ab/commands.rs` of the command `ab`) names, in any form: `super::run::x`,
/// `super::{run, out}`, `super::super::explain` from a command's folder, `crate::cmd::run`.
fn other_commands_used(rel: &Path, code: &str, commands: &BTreeSet<String>) -> BTreeSet<String> {
    let mut parts = rel.iter().skip(1).map(|p| p.to_str().unwrap());
    let own = parts.next().unwrap_or("").trim_end_matches(".rs");
    // `super::` once per folder below cmd/: from cmd/ab/commands.rs, `super::super::`.
    let up = "super::".repeat(parts.count() + 1);
    let mut names: Vec<String> = after(code, &up).collect();
    names.extend(grouped(code, &format!("{up}{{")));
    names.extend(after(code, "crate::cmd::"));
    names.extend(grouped(code, "crate::cmd::{"));
    names
        .into_iter()
        .filter(|n| n != own && commands.contains(n))
        .collect()
}

/// The edges between the files of each folder: "store/pg.rs" -> "store/backend.rs".
fn folder_edges() -> Graph {
    let all = files();
    let tests = test_only(&all);
    let mut out = Graph::new();
    for (rel, text) in &all {
        let stem = rel.file_stem().unwrap().to_str().unwrap();
        let Some(dir) = rel.parent().filter(|d| !d.as_os_str().is_empty()) else {
            continue;
        };
        if stem == "mod" || tests.contains(rel) {
            continue;
        }
        // The other modules of the folder: its files and its sub-folders.
        let siblings: BTreeSet<String> = std::fs::read_dir(src().join(dir))
            .unwrap()
            .filter_map(|e| {
                let p = e.ok()?.path();
                let name = p.file_stem()?.to_str()?.to_string();
                (name != "mod" && name != stem && !tests.contains(&dir.join(format!("{name}.rs"))))
                    .then_some(name)
            })
            .collect();
        let parent_path = dir.display().to_string().replace('/', "::");
        for name in sibling_uses(&code(text), &siblings, &parent_path) {
            out.entry(rel.display().to_string())
                .or_default()
                .insert(dir.join(&name).display().to_string(), name);
        }
    }
    // Nodes are modules: a file and the folder beside it (suite/net.rs, suite/net/) are one.
    let mut merged = Graph::new();
    for (from, tos) in out {
        let from = from.strip_suffix(".rs").unwrap_or(&from).to_string();
        for (to, name) in tos {
            merged.entry(from.clone()).or_default().insert(to, name);
        }
    }
    merged
}

/// A cycle through `start`, as the nodes on it, if there is one.
fn cycle_from(g: &Graph, start: &str) -> Option<Vec<String>> {
    fn walk(
        g: &Graph,
        at: &str,
        start: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        for next in g.get(at).map(|m| m.keys()).into_iter().flatten() {
            if next == start {
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(g, next, start, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_string()];
    walk(g, start, start, &mut path, &mut BTreeSet::new()).then_some(path)
}

/// Every cycle of `g`, each as "a -> b (why), b -> a (why)".
fn loops(g: &Graph) -> Vec<String> {
    g.keys()
        .filter_map(|m| cycle_from(g, m))
        .map(|c| {
            let first = c[0].clone();
            c.windows(2)
                .map(|w| format!("{} -> {} ({})", w[0], w[1], g[&w[0]][&w[1]]))
                .chain(std::iter::once(format!(
                    "{} -> {first} ({})",
                    c[c.len() - 1],
                    g[&c[c.len() - 1]][&first]
                )))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .collect()
}

/// ARCHITECTURE.md's layers, top first: each module (`main.rs` as `main`) with its layer's
/// index and name.
fn documented_layers(architecture: &str) -> BTreeMap<String, (usize, String)> {
    let mut out = BTreeMap::new();
    let rows = architecture
        .lines()
        .skip_while(|l| !l.starts_with("| layer | modules |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'));
    for (i, row) in rows.enumerate() {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (layer, modules) = (cells[1], cells[2]);
        // The modules are the backticked names before any parenthesis (its parts).
        let named: String = modules.split('(').next().unwrap_or("").to_string();
        for m in named.split('`').skip(1).step_by(2) {
            let m = m.strip_suffix(".rs").unwrap_or(m);
            out.insert(m.to_string(), (i, layer.to_string()));
        }
    }
    out
}

fn architecture() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md")).unwrap()
}

/// `module -> dep` edges that go up the documented order.
fn against_the_order(g: &Graph, layers: &BTreeMap<String, (usize, String)>) -> Vec<String> {
    let mut bad = Vec::new();
    for (from, tos) in g {
        for (to, file) in tos {
            if let (Some((a, la)), Some((b, lb))) = (layers.get(from), layers.get(to)) {
                if b < a {
                    bad.push(format!(
                        "{from} ({la}) uses {to} ({lb}, a layer above) in {file}"
                    ));
                }
            }
        }
    }
    bad
}

#[test]
fn every_module_imports_only_its_layer_and_those_below_as_documented() {
    let layers = documented_layers(&architecture());
    assert!(
        layers.len() > 20 && layers.values().map(|l| l.0).max() >= Some(8),
        "ARCHITECTURE.md's table is read: {layers:?}"
    );
    let all = files();
    let mut undocumented: BTreeSet<String> = all.iter().filter_map(|(r, _)| module_of(r)).collect();
    undocumented.insert("main".into());
    undocumented.retain(|m| !layers.contains_key(m));
    assert!(
        undocumented.is_empty(),
        "modules in no layer of ARCHITECTURE.md: {undocumented:?}"
    );
    let g = edges();
    assert!(g.len() > 10, "the scan found the modules: {g:?}");
    let bad = against_the_order(&g, &layers);
    assert!(
        bad.is_empty(),
        "imports against ARCHITECTURE.md's order:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_modules_depend_on_each_other_without_loops() {
    let bad = loops(&edges());
    assert!(bad.is_empty(), "layer loops:\n{}", bad.join("\n"));
}

#[test]
fn the_files_of_each_folder_depend_on_each_other_without_loops() {
    let g = folder_edges();
    assert!(
        g.keys().any(|f| f.starts_with("store/")) && g.keys().any(|f| f.starts_with("suite/")),
        "the scan found the folders' files: {g:?}"
    );
    let bad = loops(&g);
    assert!(bad.is_empty(), "loops inside folders:\n{}", bad.join("\n"));
}

#[test]
fn the_scans_see_loops_and_imports_against_the_order() {
    let mut g = Graph::new();
    g.entry("compare".into())
        .or_default()
        .insert("report".into(), "compare.rs".into());
    g.entry("report".into())
        .or_default()
        .insert("compare".into(), "report/mod.rs".into());
    assert_eq!(
        cycle_from(&g, "compare"),
        Some(vec!["compare".to_string(), "report".to_string()])
    );
    let layers = documented_layers(
        "| layer | modules | x |\n|---|---|---|\n| rendering | `report` | y |\n| comparison | `compare`, `catalog` (`a`) | z |\n",
    );
    assert_eq!(layers["catalog"].0, 1);
    assert!(!layers.contains_key("a"), "a module's parts are not layers");
    assert_eq!(
        against_the_order(&g, &layers),
        vec!["compare (comparison) uses report (rendering, a layer above) in compare.rs"]
    );
    g.get_mut("report").unwrap().clear();
    assert_eq!(cycle_from(&g, "compare"), None);
    let siblings: BTreeSet<String> = ["pg", "backend", "mod"].map(String::from).into();
    assert_eq!(
        sibling_uses(
            "use super::{backend::{Backend, Location}, Store};\nlet x = super::pg::connect();",
            &siblings,
            "store"
        ),
        ["backend", "pg"].map(String::from).into()
    );
    assert_eq!(
        sibling_uses("crate::store::pg::PgStore", &siblings, "store"),
        ["pg"].map(String::from).into()
    );
}

/// Every form of a path to another module is read (#46): a grouped or nested `use crate::{..}`,
/// a `super::` chain up to the root, a path written inline without `use`, a group over lines;
/// and an upward import planted in a foundation's file in one of those forms fails the order.
#[test]
fn the_scans_read_every_import_form() {
    let names = |rel: &str, code: &str| -> Vec<String> {
        root_names(Path::new(rel), code).into_iter().collect()
    };
    assert_eq!(
        names("units.rs", "use crate::{stats, sys};"),
        ["stats", "sys"]
    );
    assert_eq!(
        names(
            "units.rs",
            "use crate::{report::{html, text::Table}, model};"
        ),
        ["model", "report"]
    );
    assert_eq!(
        names(
            "units.rs",
            "use crate::{\n    model::Run,\n    engine::{self, plan},\n};"
        ),
        ["engine", "model"]
    );
    assert_eq!(
        names("units.rs", "let x = crate::engine::plan::resolve(1);"),
        ["engine"]
    );
    // From harness/placement.rs, super::super is the root; super is harness (no edge).
    assert_eq!(
        names(
            "harness/placement.rs",
            "super::super::report::text(x); super::worker::go();"
        ),
        ["report"]
    );
    assert_eq!(
        names(
            "harness/placement.rs",
            "use super::super::{report, cmd::x};"
        ),
        ["cmd", "report"]
    );
    // From compare.rs (depth 1) one super:: is the root; in its inline module, two.
    assert_eq!(names("compare.rs", "use super::report;"), ["report"]);
    assert_eq!(
        names(
            "compare.rs",
            "mod inner {\n    use super::helper;\n    use super::super::engine;\n}\nfn f() {}"
        ),
        ["engine"]
    );
    assert_eq!(
        names("report/mod.rs", "use super::engine::Sink;"),
        ["engine"]
    );
    // Not a path from the root: a longer name ending in crate, a crate-root item's `self`.
    assert!(names("units.rs", "use mycrate::engine; use crate::{self as c};").is_empty());

    // A grouped upward import planted in a foundation (units) and in a harness file is caught
    // by the same scan and order check the real source goes through.
    let layers = documented_layers(&architecture());
    let planted = [
        (
            "units.rs",
            "//! x\nuse crate::{stats, report::{html, text}};\n",
        ),
        (
            "harness/placement.rs",
            "//! x\nuse super::super::{sys, engine::Session};\n",
        ),
        ("stats.rs", "//! x\n"),
        ("report/mod.rs", "//! x\n"),
        ("engine/mod.rs", "//! x\n"),
        ("sys.rs", "//! x\n"),
    ]
    .map(|(r, t)| (PathBuf::from(r), t.to_string()));
    let g = edges_of(&planted, &BTreeSet::new());
    let bad = against_the_order(&g, &layers);
    assert_eq!(
        bad,
        [
            "harness (harness) uses engine (run engine, a layer above) in harness/placement.rs",
            "units (foundations) uses report (rendering, a layer above) in units.rs",
        ],
        "{g:?}"
    );
}

/// cargo's thin `commands/`: what two commands share lives in the library or in a helper of
/// `cmd/` that is no command (`args`, `out`, `shared`, ...), never in one command's file
/// that another calls (#46).
#[test]
fn no_command_uses_another_commands_module() {
    let commands = commands();
    assert!(
        commands.len() > 20 && commands.contains("ab") && !commands.contains("shared"),
        "the scan found the commands: {commands:?}"
    );
    let mut bad = Vec::new();
    for (rel, text) in files() {
        if rel.iter().next() != Some("cmd".as_ref()) {
            continue;
        }
        for other in other_commands_used(&rel, &code(&text), &commands) {
            bad.push(format!(
                "{} uses the command {other}'s module",
                rel.display()
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "commands calling each other:\n{}",
        bad.join("\n")
    );
    // The forms the scan reads.
    let planted = [
        ("cmd/show.rs", "use super::run::print_run;"),
        ("cmd/show.rs", "use super::{out::print, run};"),
        ("cmd/ab/commands.rs", "super::super::explain::exec(a)"),
        (
            "cmd/ab/commands.rs",
            "use super::super::{args::X, run::with_spool};",
        ),
        ("cmd/noise.rs", "crate::cmd::run::record_variance(s, o)"),
    ];
    for (rel, code) in planted {
        assert_eq!(
            other_commands_used(Path::new(rel), code, &commands).len(),
            1,
            "{rel}: {code}"
        );
    }
    // A command's own parts and the helpers are not other commands.
    for (rel, code) in [
        (
            "cmd/ab.rs",
            "use super::shared::print_comparison; mod commands;",
        ),
        (
            "cmd/ab/commands.rs",
            "use super::Args; use super::super::out::print;",
        ),
    ] {
        assert!(other_commands_used(Path::new(rel), code, &commands).is_empty());
    }
}

#[test]
fn unsafe_code_is_written_only_at_the_syscall_and_c_library_boundaries() {
    let all = files();
    let mut bad = Vec::new();
    for (rel, text) in &all {
        let name = rel.display().to_string();
        for (n, line) in text.lines().enumerate() {
            let l = line.trim_start();
            if l.starts_with("//") {
                continue;
            }
            let tokens: Vec<&str> = l
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '{'))
                .filter(|t| !t.is_empty())
                .collect();
            let unsafe_kw = tokens.windows(2).any(|w| {
                w[0] == "unsafe" && matches!(w[1], "{" | "fn" | "impl" | "extern" | "trait")
            }) || tokens.contains(&"unsafe{");
            if unsafe_kw && !matches!(name.as_str(), "sys.rs" | "clib.rs") {
                bad.push(format!("{name}:{}: {}", n + 1, line.trim()));
            }
            if l.contains("allow(unsafe_code)") && name != "lib.rs" {
                bad.push(format!("{name}:{}: lifts the crate's deny", n + 1));
            }
        }
    }
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    assert!(
        lib.contains("#![deny(unsafe_code)]"),
        "lib.rs denies unsafe_code"
    );
    let lifted: Vec<&str> = lib
        .lines()
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|w| w[0].trim() == "#[allow(unsafe_code)]")
        .map(|w| w[1].trim())
        .collect();
    assert_eq!(lifted, ["pub mod clib;", "pub mod sys;"]);
    assert!(
        bad.is_empty(),
        "unsafe outside sys and clib:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_library_uses_neither_clap_nor_indicatif() {
    let binary = binary_modules();
    let bad: Vec<String> = files()
        .into_iter()
        .filter(|(rel, _)| {
            rel != Path::new("main.rs") && !module_of(rel).is_some_and(|m| binary.contains(&m))
        })
        .filter(|(_, text)| {
            let c = code(text);
            c.contains("clap::") || c.contains("indicatif::")
        })
        .map(|(rel, _)| rel.display().to_string())
        .collect();
    assert!(
        bad.is_empty(),
        "library files using clap or indicatif: {bad:?}"
    );
}

#[test]
fn every_error_type_of_the_library_says_its_exit_code() {
    let mut errors = BTreeSet::new();
    let mut exits = BTreeSet::new();
    for (_, text) in files() {
        let c = code(&text);
        let lines: Vec<&str> = c.lines().map(str::trim).collect();
        for (i, l) in lines.iter().enumerate() {
            // `#[derive(..., Error, ...)]` (thiserror), then the type a few lines on.
            if l.starts_with("#[derive(") && (l.contains("Error,") || l.contains("Error)")) {
                if let Some(ty) = lines[i + 1..].iter().take(4).find_map(|n| {
                    let rest = n
                        .strip_prefix("pub enum ")
                        .or_else(|| n.strip_prefix("pub struct "))?;
                    Some(rest.split([' ', '{', '(', '<']).next()?.to_string())
                }) {
                    errors.insert(ty);
                }
            }
            if let Some(rest) = l.strip_prefix("impl std::error::Error for ") {
                errors.insert(rest.split([' ', '{']).next().unwrap().to_string());
            }
            for prefix in ["impl Exit for ", "impl crate::error::Exit for "] {
                if let Some(rest) = l.strip_prefix(prefix) {
                    exits.insert(rest.split([' ', '{']).next().unwrap().to_string());
                }
            }
        }
    }
    assert!(
        errors.len() > 15,
        "the scan found the error types: {errors:?}"
    );
    let missing: Vec<&String> = errors.difference(&exits).collect();
    assert!(
        missing.is_empty(),
        "error types without an exit code (impl error::Exit): {missing:?}"
    );
}
