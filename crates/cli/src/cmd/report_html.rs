//! The HTML page of `gpuaudit report`: sections made from the reports' CSV texts, bill texts
//! escaped, charts as inline SVG (plotters), a Content-Security-Policy without scripts.

use std::collections::BTreeMap;

use gpuaudit_core::report::money_text;
use plotters::prelude::*;
use rust_decimal::Decimal;

use crate::cmd::report::Tables;
use crate::error::{CliError, usage};

/// Text for HTML: `&`, `<`, `>`, `"` and `'` escaped, control characters made visible.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in crate::render::visible(text).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A CSV text as its header and rows.
fn parse(text: &str) -> Result<(Vec<String>, Vec<Vec<String>>), CliError> {
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let header = r.headers().map_err(|e| usage(e.to_string()))?.iter().map(str::to_owned).collect();
    let rows = r
        .records()
        .map(|rec| rec.map(|rec| rec.iter().map(str::to_owned).collect()))
        .collect::<Result<Vec<Vec<String>>, _>>()
        .map_err(|e| usage(e.to_string()))?;
    Ok((header, rows))
}

/// The names of `header` but `left_out`.
fn except(header: &[&'static str], left_out: &[&str]) -> Vec<&'static str> {
    header.iter().copied().filter(|h| !left_out.contains(h)).collect()
}

/// An HTML table of the named columns of a CSV text, each row of class `class`.
fn table(text: &str, columns: &[&str], class: &str) -> Result<String, CliError> {
    let (header, rows) = parse(text)?;
    let picked: Vec<usize> =
        columns.iter().filter_map(|c| header.iter().position(|h| h == c)).collect();
    let mut out = String::from("<table><thead><tr>");
    for &i in &picked {
        out.push_str(&format!("<th>{}</th>", escape(&header[i])));
    }
    out.push_str("</tr></thead><tbody>");
    for row in &rows {
        out.push_str(&format!("<tr class=\"{class}\">"));
        for &i in &picked {
            let cell = row.get(i).map(String::as_str).unwrap_or("");
            let numeric = cell.parse::<Decimal>().is_ok();
            let attr = if numeric { " class=\"num\"" } else { "" };
            out.push_str(&format!("<td{attr}>{}</td>", escape(cell)));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    Ok(out)
}

/// Sums of `column` per currency of a CSV text.
fn per_currency(text: &str, column: &str) -> Result<BTreeMap<String, Decimal>, CliError> {
    let (header, rows) = parse(text)?;
    let (Some(v), Some(c)) =
        (header.iter().position(|h| h == column), header.iter().position(|h| h == "currency"))
    else {
        return Ok(BTreeMap::new());
    };
    let mut out = BTreeMap::new();
    for row in rows {
        let amount: Decimal = row[v].parse().unwrap_or_default();
        let total = out.entry(row[c].clone()).or_insert(Decimal::ZERO);
        *total = gpuaudit_core::money::add(*total, amount, "the report's total")?;
    }
    Ok(out)
}

fn totals_text(totals: &BTreeMap<String, Decimal>) -> String {
    if totals.is_empty() {
        return "0.00".to_owned();
    }
    let parts: Vec<String> =
        totals.iter().map(|(c, a)| format!("{} {c}", money_text(*a))).collect();
    parts.join(" + ")
}

/// A stacked bar chart: a bar per group, a stack per series (values are pixels' heights).
fn stacked_bars(
    title: &str,
    groups: &[String],
    series: &[(String, Vec<f64>)],
) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 320)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let top = (0..groups.len())
            .map(|i| series.iter().map(|(_, v)| v[i].max(0.0)).sum::<f64>())
            .fold(1.0, f64::max)
            * 1.1;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(70)
            .build_cartesian_2d((0..groups.len()).into_segmented(), 0f64..top)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => groups.get(*i).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .draw()
            .map_err(|e| e.to_string())?;
        let mut base = vec![0.0; groups.len()];
        for (k, (name, values)) in series.iter().enumerate() {
            let color = Palette99::pick(k).mix(0.9);
            let bars: Vec<Rectangle<(SegmentValue<usize>, f64)>> = values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let (from, to) = (base[i], base[i] + v.max(0.0));
                    base[i] = to;
                    Rectangle::new(
                        [(SegmentValue::Exact(i), from), (SegmentValue::Exact(i + 1), to)],
                        color.filled(),
                    )
                })
                .collect();
            chart.draw_series(bars).map_err(|e| e.to_string())?.label(name.clone()).legend(
                move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()),
            );
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// The chart of a CSV text grouped by two keys: a bar per `group` value, stacked by `stack`.
fn chart_of(text: &str, group: &str, stack: &str, title: &str) -> Result<String, CliError> {
    let (header, rows) = parse(text)?;
    let col = |name: &str| header.iter().position(|h| h == name);
    let (Some(g), Some(s), Some(v)) = (col(group), col(stack), col("billed_cost")) else {
        return Ok(String::new());
    };
    let mut groups: Vec<String> = rows.iter().map(|r| r[g].clone()).collect();
    groups.sort();
    groups.dedup();
    let mut stacks: Vec<String> = rows.iter().map(|r| r[s].clone()).collect();
    stacks.sort();
    stacks.dedup();
    let series: Vec<(String, Vec<f64>)> = stacks
        .iter()
        .map(|name| {
            let values = groups
                .iter()
                .map(|grp| {
                    rows.iter()
                        .filter(|r| &r[g] == grp && &r[s] == name)
                        .map(|r| r[v].parse::<f64>().unwrap_or(0.0))
                        .sum()
                })
                .collect();
            (name.clone(), values)
        })
        .collect();
    if groups.is_empty() {
        return Ok(String::new());
    }
    stacked_bars(title, &groups, &series).map_err(|e| usage(format!("the chart: {e}")))
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}\
th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}td.num{text-align:right}\
th{background:#f0f0f0}dl{display:grid;grid-template-columns:max-content auto;gap:4px 16px}dt{font-weight:bold}\
ul.lines{margin:0;padding-left:1em;font-size:90%}";

/// The month at a glance: billed, wasted, discrepancies, all-in per GPU-hour.
fn glance(t: &Tables) -> Result<String, CliError> {
    let billed = per_currency(&t.spend, "billed_cost")?;
    let wasted: BTreeMap<String, Decimal> =
        t.wasted.iter().map(|(c, a)| (c.clone(), crate::render::to_cents(*a))).collect();
    let mut out = String::new();
    out.push_str("<section id=\"glance\"><h2>The month at a glance</h2><dl>");
    out.push_str(&format!(
        "<dt>Billed</dt><dd id=\"billed\">{}</dd>",
        escape(&totals_text(&billed))
    ));
    out.push_str(&format!(
        "<dt>Wasted</dt><dd id=\"wasted\">{}</dd>",
        escape(&totals_text(&wasted))
    ));
    out.push_str(&format!(
        "<dt>Discrepancies</dt><dd id=\"discrepancies\">{}</dd>",
        t.all_discrepancies
    ));
    let (header, rows) = parse(&t.cost)?;
    let col = |n: &str| header.iter().position(|h| h == n);
    if let (Some(p), Some(m), Some(v), Some(c)) =
        (col("platform"), col("gpu_model"), col("per_gpu_hour_all_in"), col("currency"))
    {
        for r in rows.iter().filter(|r| !r[v].is_empty()) {
            out.push_str(&format!(
                "<dt>All in per GPU-hour, {} {}</dt><dd class=\"per-gpu-hour\">{} {}</dd>",
                escape(&r[p]),
                escape(&r[m]),
                escape(&r[v]),
                escape(&r[c])
            ));
        }
    }
    out.push_str("</dl></section>");
    Ok(out)
}

/// The whole page.
pub fn page(t: &Tables) -> Result<String, CliError> {
    let month = t.month.to_string();
    let mut out = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\
         <title>gpuaudit report {month}</title><style>{STYLE}</style></head><body>\
         <h1>gpuaudit report: {month}</h1>"
    );
    out.push_str(&glance(t)?);
    out.push_str("<section id=\"spend\"><h2>Spend by platform and category</h2>");
    out.push_str(&chart_of(&t.spend, "platform", "category", &format!("Spend in {month}"))?);
    out.push_str(&table(
        &t.spend,
        &["platform", "category", "currency", "billed_cost", "list_cost", "charges"],
        "spend",
    )?);
    out.push_str("</section><section id=\"trend\"><h2>Spend by month</h2>");
    out.push_str(&chart_of(&t.trend, "month", "platform", "Spend by month")?);
    out.push_str(&table(
        &t.trend,
        &["month", "platform", "currency", "billed_cost", "charges"],
        "trend",
    )?);
    out.push_str("</section>");
    out.push_str(&waste_section(t)?);
    out.push_str("<section id=\"reconcile\"><h2>Reconciliation</h2>");
    out.push_str(&cut_note(t.all_discrepancies, "discrepancies", "reconcile", &month));
    out.push_str(&table(
        &t.discrepancies,
        &except(crate::cmd::reconcile::CSV_HEADER, &["account"]),
        "discrepancy",
    )?);
    out.push_str("</section><section id=\"cost\"><h2>Cost per GPU-hour</h2>");
    out.push_str(&table(
        &t.cost,
        &[
            "platform",
            "gpu_model",
            "currency",
            "compute_hours",
            "gpu_hours",
            "compute",
            "all_in",
            "per_gpu_hour_compute",
            "per_gpu_hour_all_in",
            "hidden_share",
            "line",
        ],
        "cost",
    )?);
    out.push_str("</section><section id=\"sources\"><h2>Sources</h2><table><thead><tr><th>file</th><th>sha256</th><th>profile</th><th>rows</th></tr></thead><tbody>");
    for s in &t.sources {
        out.push_str("<tr class=\"source\">");
        for cell in s {
            out.push_str(&format!("<td>{}</td>", escape(cell)));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></section></body></html>\n");
    Ok(out)
}

/// A note above a table cut to its first [`crate::cmd::report::MAX_ROWS`] rows.
fn cut_note(all: usize, what: &str, command: &str, month: &str) -> String {
    let max = crate::cmd::report::MAX_ROWS;
    if all <= max {
        return String::new();
    }
    format!(
        "<p class=\"cut\">{all} {what}: the first {max} are shown; \
         <code>gpuaudit {command} --month {month} --format csv</code> lists them all.</p>"
    )
}

/// The findings: one row each (the CSV's figures), its advice and its bill lines.
fn waste_section(t: &Tables) -> Result<String, CliError> {
    let (header, rows) = parse(&t.waste)?;
    let col = |n: &str| header.iter().position(|h| h == n);
    // The CSV's columns but the account, the charge ids and the advice (shown with the lines).
    let shown = except(crate::cmd::waste::CSV_HEADER, &["account", "charges", "recommendation"]);
    let mut out = String::from("<section id=\"waste\"><h2>Waste findings</h2>");
    out.push_str(&cut_note(t.all_findings, "findings", "waste", &t.month.to_string()));
    out.push_str("<table><thead><tr>");
    for h in shown.iter().chain(["recommendation and bill lines"].iter()) {
        out.push_str(&format!("<th>{}</th>", escape(h)));
    }
    out.push_str("</tr></thead><tbody>");
    for (row, finding) in rows.iter().zip(&t.findings) {
        out.push_str("<tr class=\"finding\">");
        for &name in &shown {
            let cell = col(name).and_then(|i| row.get(i)).map(String::as_str).unwrap_or("");
            let attr = if cell.parse::<Decimal>().is_ok() { " class=\"num\"" } else { "" };
            out.push_str(&format!("<td{attr}>{}</td>", escape(cell)));
        }
        let advice =
            col("recommendation").and_then(|i| row.get(i)).map(String::as_str).unwrap_or("");
        out.push_str(&format!("<td>{}<ul class=\"lines\">", escape(advice)));
        for e in finding.charges.iter().take(crate::cmd::report::MAX_LINES) {
            let line = crate::cmd::waste::evidence(&e, &|t| escape(t), " ");
            out.push_str(&format!("<li>{line}</li>"));
        }
        if finding.charges.len() > crate::cmd::report::MAX_LINES {
            let more = finding.charges.len() - crate::cmd::report::MAX_LINES;
            out.push_str(&format!(
                "<li class=\"more\">and {more} more bill lines (waste --explain)</li>"
            ));
        }
        out.push_str("</ul></td></tr>");
    }
    out.push_str("</tbody></table></section>");
    Ok(out)
}
