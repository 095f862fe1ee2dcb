//! The web console as the server serves it: `/` and every embedded asset answer with
//! the right content type and cache policy, every file of the `console/` folder is
//! embedded, every script or style the page or a module names is served, and the whole
//! console stays under its page-weight budget (500 KB compressed).

mod common;

use common::TestServer;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use topicd::api::console::{ASSETS, INDEX};

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
