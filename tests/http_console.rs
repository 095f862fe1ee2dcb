//! The web console as the server serves it: `/` and every embedded asset answer with
//! the right content type and cache policy, every file of the `console/` folder is
//! embedded, every script or style the page or a module names is served, every console
//! answer carries the browser security headers (and every API answer `nosniff`), and
//! the whole console stays under its page-weight budget (500 KB compressed).

mod common;

use common::TestServer;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use topicd::api::console::{ASSETS, CONTENT_SECURITY_POLICY, INDEX};

const WEIGHT_BUDGET_BYTES: usize = 500 * 1000;

fn console_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("console")
}

/// Every file under `console/`, as a path relative to it with `/` separators.
fn files_under(dir: &Path, prefix: &str, out: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).expect("read console folder") {
        let entry = entry.expect("directory entry");
        let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
        if entry.file_type().expect("file type").is_dir() {
            files_under(&entry.path(), &format!("{name}/"), out);
        } else {
            out.insert(name);
        }
    }
}

/// The string literals following `marker` in `text` (e.g. `src="` or `from "`).
fn quoted_after(text: &str, marker: &str) -> Vec<String> {
    text.match_indices(marker).filter_map(|(i, _)| text[i + marker.len()..].split('"').next().map(str::to_string)).collect()
}

/// `./x.js` or `../x.js` relative to the module at `from` (a path under `console/`).
fn resolve(from: &str, relative: &str) -> String {
    let mut parts: Vec<&str> = from.split('/').collect();
    parts.pop();
    for segment in relative.split('/') {
        match segment {
            "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    parts.join("/")
}

#[test]
fn every_console_file_is_embedded_and_every_reference_resolves() {
    let mut on_disk = BTreeSet::new();
    files_under(&console_dir(), "", &mut on_disk);
    let embedded: BTreeSet<String> = ASSETS.iter().map(|a| a.path.to_string()).chain([INDEX.path.to_string()]).collect();
    assert_eq!(on_disk, embedded, "console/ and console::ASSETS disagree");

    let index = std::str::from_utf8(INDEX.bytes).expect("index.html is UTF-8");
    let mut missing = Vec::new();
    for reference in quoted_after(index, "src=\"").into_iter().chain(quoted_after(index, "href=\"")) {
        if let Some(path) = reference.strip_prefix("/console/") {
            if !embedded.contains(path) {
                missing.push(format!("index.html -> {reference}"));
            }
        }
    }
    for asset in ASSETS.iter().filter(|a| a.path.starts_with("js/")) {
        let text = std::str::from_utf8(asset.bytes).expect("module is UTF-8");
        for reference in quoted_after(text, "from \"").into_iter().chain(quoted_after(text, "import(\"")) {
            if !embedded.contains(&resolve(asset.path, &reference)) {
                missing.push(format!("{} -> {reference}", asset.path));
            }
        }
    }
    assert!(missing.is_empty(), "references to files that are not embedded: {missing:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_and_every_asset_are_served_with_their_type_and_cache_policy() {
    let server = TestServer::start().await;
    let page = server.client.get(format!("{}/", server.base)).send().await.expect("GET /");
    assert_eq!(page.status().as_u16(), 200);
    assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
    assert_eq!(page.headers()["cache-control"], "no-cache");
    assert_eq!(page.bytes().await.expect("body").as_ref(), INDEX.bytes);

    for asset in ASSETS {
        let response = server.client.get(format!("{}/console/{}", server.base, asset.path)).send().await.expect("GET asset");
        assert_eq!(response.status().as_u16(), 200, "{}", asset.path);
        assert_eq!(response.headers()["content-type"], asset.content_type, "{}", asset.path);
        let cache = response.headers()["cache-control"].to_str().expect("ascii").to_string();
        if asset.path.starts_with("vendor/") {
            assert!(cache.contains("immutable"), "{}: {cache}", asset.path);
        } else {
            assert_eq!(cache, "no-cache", "{}", asset.path);
        }
        assert_eq!(response.bytes().await.expect("body").as_ref(), asset.bytes, "{}", asset.path);
    }
    for js in ASSETS.iter().filter(|a| a.path.ends_with(".js")) {
        assert!(js.content_type.starts_with("text/javascript"), "{}: modules need a JavaScript type", js.path);
    }

    let missing = server.client.get(format!("{}/console/js/nope.js", server.base)).send().await.expect("GET unknown asset");
    assert_eq!(missing.status().as_u16(), 404);
    assert_eq!(missing.headers()["content-type"], "application/problem+json");
    assert!(missing.text().await.expect("body").contains("console asset"));
}

/// The directives of a Content-Security-Policy: name -> its sources.
fn directives(policy: &str) -> std::collections::BTreeMap<String, Vec<String>> {
    policy
        .split(';')
        .filter_map(|d| {
            let mut words = d.split_whitespace();
            Some((words.next()?.to_string(), words.map(str::to_string).collect()))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_answers_carry_the_browser_security_headers() {
    let server = TestServer::start().await;
    let script = ASSETS.iter().find(|a| a.path.starts_with("js/")).expect("a console script").path;
    // The page, an asset of the console's own, a vendored one, and an unknown asset's 404.
    for path in ["/".to_string(), format!("/console/{script}"), "/console/vendor/d3-7.9.2.min.js".into(), "/console/js/nope.js".into()] {
        let response = server.client.get(format!("{}{path}", server.base)).send().await.expect("GET");
        let headers = response.headers();
        let header = |name: &str| headers.get(name).map(|v| v.to_str().expect("ascii").to_string()).unwrap_or_else(|| panic!("{path}: no {name} header"));
        assert_eq!(header("content-security-policy"), CONTENT_SECURITY_POLICY, "{path}");
        assert_eq!(header("x-content-type-options"), "nosniff", "{path}");
        assert_eq!(header("referrer-policy"), "no-referrer", "{path}");
        assert_eq!(header("x-frame-options"), "DENY", "{path}");
    }

    // The policy itself: only the server's own origin, no inline or evaluated script, no
    // framing; a loosening here is a decision to make on purpose, not by an edit.
    let policy = directives(CONTENT_SECURITY_POLICY);
    let sources = |name: &str| policy.get(name).unwrap_or_else(|| panic!("no {name} in {CONTENT_SECURITY_POLICY}")).join(" ");
    assert_eq!(sources("default-src"), "'self'");
    assert_eq!(sources("script-src"), "'self'", "scripts only from the server's own files");
    assert_eq!(sources("connect-src"), "'self'");
    assert_eq!(sources("object-src"), "'none'");
    assert_eq!(sources("base-uri"), "'none'");
    assert_eq!(sources("frame-ancestors"), "'none'");
    for (name, list) in &policy {
        assert!(!list.iter().any(|s| s == "*" || (s.ends_with(':') && s != "data:") || s == "'unsafe-eval'"), "{name} allows more than its origin: {list:?}");
        assert!(name == "style-src" || !list.iter().any(|s| s == "'unsafe-inline'"), "{name} allows inline code: {list:?}");
    }

    // The page runs no inline script and sets no inline event handler (the policy would
    // block them): every <script> names a file.
    let index = std::str::from_utf8(INDEX.bytes).expect("index.html is UTF-8");
    for tag in index.split("<script").skip(1) {
        let open = tag.split('>').next().unwrap_or_default();
        assert!(open.contains("src=\"/console/"), "an inline script in index.html: <script{open}>");
    }
    assert!(!index.contains(" onclick=") && !index.contains(" onload="), "index.html has an inline event handler");

    // API answers are JSON a browser must not read as anything else.
    for path in ["/healthz", "/v1/corpora", "/v1/no-such-route"] {
        let response = server.client.get(format!("{}{path}", server.base)).send().await.expect("GET");
        assert_eq!(response.headers().get("x-content-type-options").map(|v| v.as_bytes()), Some(&b"nosniff"[..]), "{path}");
        assert!(response.headers().get("content-security-policy").is_none(), "{path}: the console's policy is for the console only");
    }
}

/// gzip -9 size of `bytes`, or None where no `gzip` program is installed (no
/// compression crate is a dependency; every Debian system has gzip).
fn gzipped_len(bytes: &[u8]) -> Option<usize> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new("gzip").args(["-9", "-c"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().ok()?;
    let mut stdin = child.stdin.take()?;
    let input = bytes.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let output = child.wait_with_output().ok()?;
    writer.join().ok()?.ok()?;
    output.status.success().then_some(output.stdout.len())
}

#[test]
fn the_console_weighs_under_500_kb_compressed() {
    let raw: usize = ASSETS.iter().chain([&INDEX]).map(|a| a.bytes.len()).sum();
    let mut compressed = 0;
    for asset in ASSETS.iter().chain([&INDEX]).filter(|a| !a.path.ends_with(".LICENSE")) {
        match gzipped_len(asset.bytes) {
            Some(n) => compressed += n,
            None => {
                eprintln!("no gzip program: checking the uncompressed size ({raw} bytes) against 4x the budget instead");
                assert!(raw <= 4 * WEIGHT_BUDGET_BYTES, "console is {raw} bytes uncompressed");
                return;
            }
        }
    }
    assert!(compressed <= WEIGHT_BUDGET_BYTES, "console weighs {compressed} bytes gzipped, over the {WEIGHT_BUDGET_BYTES} budget");
}
