//! The library's layers have no loops: the `use crate::` (and `crate::` path) edges between
//! top-level modules of `src/`, read from the source (test modules and comments left out),
//! form a graph without cycles. This keeps the harness below the registries, statistics and
//! errors below everything, and rendering above comparison (ARCHITECTURE.md lists the layers).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level module of a file under src/ ("harness" for src/harness/worker.rs).
fn module_of(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first).to_string();
    (name != "main" && name != "lib").then_some(name)
}

fn edges() -> BTreeMap<String, BTreeMap<String, String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().and_then(|x| x.to_str()) != Some("rs") {
                continue;
            }
            let rel = p.strip_prefix(&src).unwrap().to_path_buf();
            let Some(from) = module_of(&rel) else {
                continue;
            };
            let text = std::fs::read_to_string(&p).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
                for (i, _) in line.match_indices("crate::") {
                    let to: String = line[i + 7..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if !to.is_empty() && to != from {
                        out.entry(from.clone())
                            .or_default()
                            .entry(to)
                            .or_insert_with(|| rel.display().to_string());
                    }
                }
            }
        }
    }
    out
}

/// A cycle through `start`, as the modules on it, if there is one.
fn cycle_from(g: &BTreeMap<String, BTreeMap<String, String>>, start: &str) -> Option<Vec<String>> {
    fn walk(
        g: &BTreeMap<String, BTreeMap<String, String>>,
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

#[test]
fn the_modules_depend_on_each_other_without_loops() {
    let g = edges();
    assert!(g.len() > 10, "the scan found the modules: {g:?}");
    let loops: Vec<String> = g
        .keys()
        .filter_map(|m| cycle_from(&g, m))
        .map(|c| {
            let first = c[0].clone();
            let hops: Vec<String> = c
                .windows(2)
                .map(|w| format!("{} -> {} ({})", w[0], w[1], g[&w[0]][&w[1]]))
                .chain(std::iter::once(format!(
                    "{} -> {first} ({})",
                    c[c.len() - 1],
                    g[&c[c.len() - 1]][&first]
                )))
                .collect();
            hops.join(", ")
        })
        .collect();
    assert!(loops.is_empty(), "layer loops:\n{}", loops.join("\n"));
}

#[test]
fn the_scan_sees_a_loop_when_there_is_one() {
    let mut g: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
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
    g.get_mut("report").unwrap().clear();
    assert_eq!(cycle_from(&g, "compare"), None);
}

#[test]
fn the_harness_and_statistics_sit_below_the_registries_and_rendering() {
    let g = edges();
    let deps = |m: &str| {
        g.get(m)
            .map(|e| e.keys().cloned().collect::<Vec<_>>())
            .unwrap_or_default()
    };
    for low in ["harness", "stats", "error", "model"] {
        for high in ["suite", "engine", "report", "compare", "cli", "catalog"] {
            assert!(!deps(low).contains(&high.to_string()), "{low} uses {high}");
        }
    }
    assert!(!deps("compare").contains(&"report".to_string()));
}
