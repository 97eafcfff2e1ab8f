//! `gpuaudit report`: the example month's page, checked as text and in a real browser
//! (headless Chromium's DOM), and a hostile bill's page, which shows its text and runs
//! nothing.

use std::path::Path;
use std::process::Command;

use super::{gpuaudit, stderr, stdout, workdir};

/// Headless Chromium, when the machine has it (CI installs Debian's `chromium`; it is
/// required there: GPUAUDIT_REQUIRE_CHROMIUM).
fn chromium() -> Option<&'static str> {
    let found = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    if found.is_none() && std::env::var_os("GPUAUDIT_REQUIRE_CHROMIUM").is_some() {
        panic!("GPUAUDIT_REQUIRE_CHROMIUM is set and no chromium is installed");
    }
    found
}

/// Chromium's flags: headless, no network of its own, a fresh profile.
fn browse(browser: &str, profile: &Path, extra: &[String], page: &Path) -> String {
    let out = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"])
        .args(["--disable-background-networking", "--disable-component-update", "--disable-sync"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "chromium: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_example_month_s_report_renders_every_section_in_a_browser() {
    let dir = workdir();
    let d = dir.path();
    super::import_examples(d, ".gpuaudit");
    let out = gpuaudit(
        d,
        &["report", "--month", "2024-05", "-o", "report.html", "--xlsx", "report.xlsx"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "report.html: report of 2024-05 (7 findings, 673.51 CNY wasted)\n");
    let html = std::fs::read_to_string(d.join("report.html")).unwrap();
    assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none'"), "no CSP");
    // Nothing is fetched: no script, link, image source or import; the only URL is the SVG
    // namespace.
    for fetch in ["<script", "<link", " src=", "href=", "@import", "url("] {
        assert!(!html.contains(fetch), "{fetch}");
    }
    assert_eq!(html.matches("http:").count(), html.matches("http://www.w3.org/2000/svg").count());
    assert!(!html.contains("https:"));
    // The figures are the CSV outputs'.
    let waste = stdout(&gpuaudit(d, &["waste", "--month", "2024-05", "--format", "csv"]));
    for line in waste.lines().skip(1) {
        let amount = line.split(',').nth(9).unwrap();
        assert!(html.contains(&format!("<td class=\"num\">{amount}</td>")), "{amount}");
    }
    assert!(html.contains("<dd id=\"billed\">7653.73 CNY</dd>"), "the summary's total");
    assert!(html.contains("<dd id=\"wasted\">673.51 CNY</dd>"));
    assert!(html.contains(
        "All in per GPU-hour, gpushare RTX 4090</dt><dd class=\"per-gpu-hour\">2.46 CNY"
    ));
    assert!(d.join("report.xlsx").metadata().unwrap().len() > 5000);
    let Some(browser) = chromium() else { return };
    let page = d.join("report.html");
    let dom = browse(browser, &d.join("profile"), &["--dump-dom".into()], &page);
    for heading in [
        "The month at a glance",
        "Spend by platform and category",
        "Spend by month",
        "Waste findings",
        "Reconciliation",
        "Cost per GPU-hour",
        "Sources",
    ] {
        assert!(dom.contains(&format!("<h2>{heading}</h2>")), "{heading}");
    }
    assert_eq!(dom.matches("<tr class=\"finding\">").count(), 7, "one row per finding");
    assert_eq!(dom.matches("<svg").count(), 2, "two charts");
    assert!(dom.contains("7653.73 CNY") && dom.contains("673.51 CNY"));
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-2024-05.png");
    let _ = std::fs::remove_file(&shot);
    browse(
        browser,
        &d.join("profile"),
        &[format!("--screenshot={}", shot.display()), "--window-size=1280,1800".into()],
        &page,
    );
    assert!(shot.metadata().unwrap().len() > 20_000, "a screenshot of the page");
}

#[test]
fn a_hostile_bill_s_report_shows_its_text_and_runs_nothing() {
    let dir = workdir();
    let d = dir.path();
    let out = gpuaudit(d, &["import", "fixtures/aliyun/valid/hostile_texts_in_a_resource_id.csv"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = gpuaudit(d, &["report", "--month", "2024-05", "-o", "report.html"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(d.join("report.html")).unwrap();
    assert!(!html.contains("<script"), "a bill's text became markup");
    assert!(html.contains("d-bp1&lt;script&gt;alert(1)&lt;/script&gt;"), "the text is shown");
    let Some(browser) = chromium() else { return };
    let dom = browse(browser, &d.join("profile"), &["--dump-dom".into()], &d.join("report.html"));
    assert!(!dom.contains("<script"), "the DOM has no script element");
    assert!(dom.contains("d-bp1&lt;script&gt;alert(1)&lt;/script&gt;"), "shown as text in the DOM");
}
