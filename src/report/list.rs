//! `sysperf list` and `sysperf list --suites`: the registries of benchmarks and suites as a
//! table or JSON. Pure functions from the registries to text; nothing is measured.

use crate::bench;
use crate::suite;

fn processes(shape: bench::Shape) -> u32 {
    match shape {
        bench::Shape::Single => 1,
        bench::Shape::Pair => 2,
    }
}

/// The benchmarks: id, group, the paper's count and description, today's equivalent.
pub fn benchmarks(json: bool) -> String {
    let specs = bench::all();
    if json {
        let v: Vec<serde_json::Value> = specs
            .iter()
            .map(|s| {
                serde_json::json!({
                    "id": s.id, "label": s.label, "group": s.group.as_str(), "paper": s.paper,
                    "paper_count": s.paper_count, "unit": s.unit, "ops_per_iteration": s.ops_per_iteration,
                    "today": s.today, "processes": processes(s.shape),
                    "cpu_charged": s.charge.describe(),
                })
            })
            .collect();
        return json_text(&v);
    }
    let mut out = format!(
        "{:<18} {:<7} {:>7} {:<11}  the paper / today\n",
        "id", "group", "count", "unit"
    );
    for s in specs {
        out.push_str(&format!(
            "{:<18} {:<7} {:>7} {:<11}  {}\n",
            s.id,
            s.group.as_str(),
            s.paper_count,
            s.unit,
            s.paper
        ));
        out.push_str(&format!("{:<46}  today: {}\n", "", s.today));
        if s.charge == bench::Charge::Waited {
            out.push_str(&format!(
                "{:<46}  User/System: {}\n",
                "",
                s.charge.describe()
            ));
        }
    }
    out.push_str(
        "\nCPU columns: User and System are what time charged the paper's program (Appendix A): the \
         test process and the children it waited for, which only the forks, vforks, execs and vexecs \
         programs did (4.2BSD's exit() adds a reaped child's time to its parent's); the second \
         process of csw and of the discard and back tests was never reaped, so it is not in them. \
         All CPU counts every process the test forked.\n",
    );
    out
}

/// The x labels of a series' points, full or quick.
fn xs(s: &suite::SeriesSpec, quick: bool) -> Vec<String> {
    (s.points)(quick)
        .iter()
        .map(|p| p.label.clone().unwrap_or_else(|| suite::fmt_x(p.x)))
        .collect()
}

/// The suites of `run --suite` and their series.
pub fn suites(json: bool) -> String {
    if json {
        let v: Vec<serde_json::Value> = suite::suites()
            .iter()
            .map(|suite| {
                let series: Vec<serde_json::Value> = (suite.series)()
                    .iter()
                    .map(|s| {
                        serde_json::json!({
                            "id": s.id, "figure": s.figure, "figure_title": s.figure_title,
                            "curve": s.curve, "paper": s.paper, "today": s.today,
                            "x_name": s.x.name, "x_unit": s.x.unit, "x_log": s.x.log,
                            "y_kind": s.y, "y_unit": s.y.unit(), "unit": s.unit,
                            "points": xs(s, false), "quick_points": xs(s, true),
                            "processes": processes(s.shape),
                        })
                    })
                    .collect();
                serde_json::json!({
                    "name": suite.name, "title": suite.title, "paper": suite.paper,
                    "figures": suite::figure_ids(suite), "series": series,
                })
            })
            .collect();
        return json_text(&v);
    }
    let mut out = String::new();
    for suite in suite::suites() {
        out.push_str(&format!(
            "{}: {}  (sysperf run --suite {})\n",
            suite.name, suite.title, suite.name
        ));
        out.push_str(&format!("  {}\n", suite.paper));
        out.push_str(&format!(
            "  figures (sysperf plot --figure ID): {}\n",
            suite::figure_ids(suite).join(", ")
        ));
        for s in (suite.series)() {
            out.push_str(&format!(
                "  {:<26} {} against {} ({}): {}\n",
                s.id,
                s.y.unit(),
                s.x.name,
                s.curve,
                s.paper
            ));
            out.push_str(&format!("  {:<26} today: {}\n", "", s.today));
            out.push_str(&format!(
                "  {:<26} points: {}\n",
                "",
                xs(s, false).join(", ")
            ));
            out.push_str(&format!(
                "  {:<26} --quick keeps: {}\n",
                "",
                xs(s, true).join(", ")
            ));
        }
        out.push('\n');
    }
    out
}

fn json_text(v: &[serde_json::Value]) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_else(|_| "[]".into());
    s.push('\n');
    s
}
