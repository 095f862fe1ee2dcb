//! The web console in a real browser (issue 15): Debian's Chromium, driven through
//! WebDriver (`chromedriver`, started here on a free port) by fantoccini, against a
//! topicd server on a temporary database.
//!
//! Why it exists: `http_console.rs` proves the console's files are served, but only a
//! browser runs them. This test does what a person does: uploads a corpus through the
//! upload form, starts an LDA and an HPC fit through the generated fit form and watches
//! their job pages reach the end, moves the FREX weight slider and checks the page's
//! word order against the API's at that weight, counts the frequency–exclusivity
//! scatter's points against the topic's words, renames a topic and sees the name after
//! a reload and in the API, predicts from pasted text, and fails on any error in the
//! browser's console, any request of the console's own that the server answers 4xx or
//! 5xx, and any breach of the console's Content-Security-Policy. The server runs with
//! the real default `--max-n` (not the tests' larger one), so a console asking for more
//! than a default server gives fails here. It saves a screenshot of each view under
//! `target/screenshots/`.
//!
//! It needs `chromium` and `chromium-driver` (Debian packages; `.ci/run` installs them).
//! Without `chromedriver` it fails saying how to install them, unless
//! `TOPICD_SKIP_BROWSER_TESTS=1`, which skips it.

mod common;

use common::{appstream_docs, TestServer};
use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{json, Value};
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Documents of the fixture corpus (the AppStream slice: 63 labels among them).
const DOCS: usize = 100;
/// How long any one thing may take to appear on the page.
const WAIT: Duration = Duration::from_secs(30);
/// How long a fit may take, from the job page's first look to "succeeded".
const FIT_WAIT: Duration = Duration::from_secs(60);
const LDA_TOPICS: usize = 4;
const TOPIC_NAME: &str = "Gamepads and input";
/// The explorer's table shows this many words per topic (`TABLE_WORDS` in topics.js).
const TABLE_WORDS: usize = 8;
/// The scatter labels this many top FREX words (`LABELLED` in topics.js).
const LABELLED: usize = 12;
/// The scatter asks for at most this many words (`SCATTER_WORDS` in topics.js).
const SCATTER_WORDS: usize = 1000;
/// The prediction plots show at most this many bars.
const MAX_BARS: usize = 12;

/// `name` on the PATH, if installed.
fn find_program(name: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths).map(|dir| dir.join(name)).find(|p| p.is_file())
}

/// A `chromedriver` child process on a free port; killed when dropped.
struct Driver {
    child: Child,
    url: String,
}

impl Driver {
    async fn start(program: &Path) -> Driver {
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port").local_addr().expect("address").port();
        let child = Command::new(program)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{} does not start: {e}", program.display()));
        let driver = Driver { child, url: format!("http://127.0.0.1:{port}") };
        let http = reqwest::Client::new();
        let t0 = Instant::now();
        loop {
            if let Ok(r) = http.get(format!("{}/status", driver.url)).send().await {
                if r.json::<Value>().await.is_ok_and(|v| v["value"]["ready"] == true) {
                    return driver;
                }
            }
            assert!(t0.elapsed() < Duration::from_secs(20), "chromedriver did not get ready on port {port}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Watches the page from inside: records in `window.__topicd.errors` every
/// `console.error`, uncaught error, unhandled rejection and Content-Security-Policy
/// violation, and in `window.__topicd.requests` every `fetch` and `XMLHttpRequest` the
/// page makes, when it is sent, with its answer's status once it has one (0: no
/// answer). Chromium runs it in every new document before the page's own scripts
/// (`Page.addScriptToEvaluateOnNewDocument`), so the page's first requests and a
/// violation while the page loads are seen too; a hook installed after the load would
/// miss them.
const PAGE_HOOK: &str = r#"
(() => {
  if (window.__topicd) return;
  const t = (window.__topicd = { errors: [], requests: [] });
  const keep = (m) => t.errors.push(String(m));
  const original = console.error.bind(console);
  console.error = (...a) => { keep(a.map(String).join(" ")); original(...a); };
  window.addEventListener("error", (e) => keep(`${e.message} at ${e.filename}:${e.lineno}`));
  window.addEventListener("unhandledrejection", (e) => keep(`unhandled rejection: ${e.reason && (e.reason.stack || e.reason)}`));
  window.addEventListener("securitypolicyviolation", (e) =>
    keep(`Content-Security-Policy violation: ${e.effectiveDirective} blocked ${e.blockedURI || "(inline)"} at ${e.sourceFile}:${e.lineNumber} ${e.sample || ""}`), true);
  const sent = (method, url) => {
    const q = { method: String(method || "GET").toUpperCase(), url: new URL(String(url), location.href).href, status: null };
    t.requests.push(q);
    return q;
  };
  const fetch0 = window.fetch;
  window.fetch = function (input, init) {
    const q = sent((init && init.method) || (input instanceof Request ? input.method : "GET"), input instanceof Request ? input.url : input);
    return fetch0.apply(this, arguments).then(
      (r) => { q.status = r.status; return r; },
      (e) => { q.status = 0; throw e; });
  };
  const open0 = XMLHttpRequest.prototype.open;
  XMLHttpRequest.prototype.open = function (method, url, ...rest) {
    const q = sent(method, url);
    this.addEventListener("loadend", () => { q.status = this.status; });
    return open0.call(this, method, url, ...rest);
  };
})();
"#;

/// The page's failed requests in the hook's list: `[{method, url, status}]` with a status
/// of 0 (no answer) or at least 400. With TAKE true, every answered request leaves the
/// list (those still waiting stay, to be judged when answered).
const FAILED_REQUESTS: &str = "(() => { const t = window.__topicd; if (!t) return null; \
     const failed = t.requests.filter((q) => q.status === 0 || q.status >= 400); \
     if (TAKE) t.requests = t.requests.filter((q) => q.status === null); return failed; })()";

/// One browser session on the console, with the server it talks to.
struct Browser<'a> {
    c: Client,
    server: &'a TestServer,
    http: reqwest::Client,
    /// chromedriver's URL for this session (`…/session/{id}`), for the log endpoint.
    session_url: String,
    /// The log endpoint answered an error: only the in-page hook is read.
    no_log: Cell<bool>,
    /// A failed request the current step expects: its status and URL prefix. Set only
    /// while a server that requires tokens answers the console's first request 401.
    expected_failure: RefCell<Option<(u64, String)>>,
    shots: PathBuf,
}

impl Browser<'_> {
    /// Navigate to a console route (`#/corpora`) with a full page load.
    async fn open(&self, route: &str) {
        self.c.goto(&format!("{}/{route}", self.server.base)).await.expect("navigate");
    }

    async fn reload(&self) {
        self.c.refresh().await.expect("reload");
    }

    /// Have Chromium run [`PAGE_HOOK`] in every document of this session before its own
    /// scripts, through chromedriver's DevTools command endpoint.
    async fn install_page_hook(&self) {
        let command = json!({"cmd": "Page.addScriptToEvaluateOnNewDocument", "params": {"source": PAGE_HOOK}});
        let r = self.http.post(format!("{}/goog/cdp/execute", self.session_url)).json(&command).send().await.expect("DevTools command");
        let status = r.status();
        assert!(status.is_success(), "chromedriver refused to install the page hook: {status} {}", r.text().await.unwrap_or_default());
    }

    /// The page's failed requests (see [`FAILED_REQUESTS`]); `take` empties the hook's
    /// list of requests. Fails when the page has no hook.
    async fn failed_requests(&self, take: bool) -> Vec<Value> {
        let v = self.js(&format!("return {};", FAILED_REQUESTS.replace("TAKE", if take { "true" } else { "false" }))).await;
        hooked_list(v, "requests")
    }

    /// Of `failed`, those the current step does not expect, as "METHOD URL -> status".
    fn unexpected_failures(&self, failed: &[Value]) -> Vec<String> {
        let expected = self.expected_failure.borrow();
        failed
            .iter()
            .filter(|q| {
                !expected.as_ref().is_some_and(|(status, prefix)| q["status"] == *status && q["url"].as_str().is_some_and(|u| u.starts_with(prefix.as_str())))
            })
            .map(|q| format!("{} {} -> {}", q["method"].as_str().unwrap_or("?"), q["url"].as_str().unwrap_or("?"), q["status"]))
            .collect()
    }

    async fn find(&self, css: &str) -> Element {
        self.c.wait().at_most(WAIT).for_element(Locator::Css(css)).await.unwrap_or_else(|e| panic!("no element {css} on the page: {e}"))
    }

    async fn click(&self, css: &str) {
        self.find(css).await.click().await.unwrap_or_else(|e| panic!("click {css}: {e}"));
    }

    async fn type_into(&self, css: &str, text: &str) {
        let input = self.find(css).await;
        input.clear().await.unwrap_or_else(|e| panic!("clear {css}: {e}"));
        input.send_keys(text).await.unwrap_or_else(|e| panic!("type into {css}: {e}"));
    }

    async fn js(&self, script: &str) -> Value {
        self.c.execute(script, vec![]).await.unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
    }

    /// Evaluate `expr` until it is truthy (not null, false, 0 or ""); returns its value.
    /// Fails at once when a request of the page fails meanwhile (unless expected), so a
    /// refused request is named rather than waited out.
    async fn until(&self, expr: &str, what: &str, timeout: Duration) -> Value {
        let t0 = Instant::now();
        let script = format!("return [({expr}), {}];", FAILED_REQUESTS.replace("TAKE", "false"));
        loop {
            let answer = self.js(&script).await;
            let failed = self.unexpected_failures(&hooked_list(answer[1].clone(), "requests"));
            assert!(failed.is_empty(), "requests of the console failed while waiting for {what}: {failed:#?}\nthe page shows: {}", self.main_text().await);
            let v = answer[0].clone();
            let truthy = match &v {
                Value::Null | Value::Bool(false) => false,
                Value::Number(n) => n.as_f64() != Some(0.0),
                Value::String(s) => !s.is_empty(),
                _ => true,
            };
            if truthy {
                return v;
            }
            assert!(t0.elapsed() < timeout, "waited {timeout:?} for {what}; the page shows: {}", self.main_text().await);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Poll `read` until it equals `expected`.
    async fn until_eq<F, Fut>(&self, what: &str, expected: &Value, read: F)
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Value>,
    {
        let t0 = Instant::now();
        loop {
            let got = read().await;
            if &got == expected {
                return;
            }
            assert!(t0.elapsed() < WAIT, "{what}: the page shows {got}, expected {expected}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// What the page says, for failure messages: its errors first, then its text.
    async fn main_text(&self) -> String {
        let script = "const errors = [...document.querySelectorAll('main .field-error, main .problem, main .error')].map(e => e.textContent).filter(Boolean);
            return (errors.length ? `errors shown: ${errors.join(' | ')}\n` : '') + document.querySelector('main').innerText;";
        let text = self.c.execute(script, vec![]).await.unwrap_or_default();
        // The start and the end of a long page (the explorer's last sections are at the end).
        let chars: Vec<char> = text.as_str().unwrap_or_default().chars().collect();
        if chars.len() <= 1500 {
            return chars.into_iter().collect();
        }
        let (head, tail): (String, String) = (chars[..700].iter().collect(), chars[chars.len() - 800..].iter().collect());
        format!("{head}\n[…]\n{tail}")
    }

    /// Fail on any error in the browser's console (a CSP violation included) and on any
    /// failed request of the page since the last look.
    async fn no_console_errors(&self, view: &str) {
        let failed = self.unexpected_failures(&self.failed_requests(true).await);
        let errors = self.console_errors().await;
        assert!(
            failed.is_empty() && errors.is_empty(),
            "on the {view} view, failed requests of the console: {failed:#?}; errors in the browser's console: {errors:#?}"
        );
    }

    /// The errors in the browser's console since the last look: the page hook's, and
    /// the browser log's where chromedriver serves it (it also has the browser's own
    /// messages, such as a resource that failed to load).
    async fn console_errors(&self) -> Vec<String> {
        let v = self.js("const t = window.__topicd; if (!t) return null; const e = t.errors; t.errors = []; return e;").await;
        let mut errors: Vec<String> = hooked_list(v, "errors").iter().map(|e| e.as_str().unwrap_or_default().to_string()).collect();
        if !self.no_log.get() {
            let r = self.http.post(format!("{}/se/log", self.session_url)).json(&json!({"type": "browser"})).send().await.expect("log request");
            if r.status().is_success() {
                let log: Value = r.json().await.expect("log JSON");
                let entries = log["value"].as_array().cloned().unwrap_or_default();
                errors.extend(entries.iter().filter(|e| e["level"] == "SEVERE").map(|e| e["message"].as_str().unwrap_or_default().to_string()));
            } else {
                eprintln!("chromedriver's log endpoint answered {}: watching errors from inside the page only", r.status());
                self.no_log.set(true);
            }
        }
        errors
    }

    /// Check, on the first page, that the watchers see what they must (so that an empty
    /// list later means nothing went wrong, not a watcher that sees nothing): the hook was
    /// in place before the page's first request, and an error the page logs, a request
    /// the server refuses and a script the policy blocks are each reported.
    async fn probe_watchers(&self) {
        let seen = self.js("return window.__topicd && window.__topicd.requests.map((q) => q.url);").await;
        let seen: Vec<&str> = seen.as_array().map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        assert!(seen.iter().any(|u| u.contains("/v1/corpora")), "the page hook did not see the page's first request (GET /v1/corpora): {seen:?}");
        self.no_console_errors("first load").await;

        let probe = "topicd browser test: probe of the console log";
        self.js(&format!("console.error('{probe}');")).await;
        let errors = self.console_errors().await;
        assert!(errors.iter().any(|e| e.contains(probe)), "the probe error did not reach the browser log: {errors:?}");

        let status = self
            .c
            .execute_async(
                "const done = arguments[arguments.length - 1]; fetch('/v1/topicd-probe').then((r) => done(r.status), (e) => done(String(e)));",
                vec![],
            )
            .await
            .expect("probe fetch");
        assert_eq!(status, 404, "the probe request");
        let failed = self.unexpected_failures(&self.failed_requests(true).await);
        assert_eq!(failed, [format!("GET {}/v1/topicd-probe -> 404", self.server.base)], "the failed probe request as the hook saw it");
        let _ = self.console_errors().await; // Chromium logs the 404 too.

        let ran = self.js("const s = document.createElement('script'); s.textContent = 'window.__topicdInline = true;'; document.head.append(s); s.remove(); return window.__topicdInline === true;").await;
        assert_eq!(ran, false, "an inline script ran: the console's Content-Security-Policy is not in force");
        let t0 = Instant::now();
        loop {
            let errors = self.console_errors().await;
            if errors.iter().any(|e| e.contains("Content-Security-Policy violation: script-src")) {
                break;
            }
            assert!(t0.elapsed() < WAIT, "the blocked inline script was not reported as a violation: {errors:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Run the axe-core accessibility audit (vendored for the tests only) on the page as
    /// it is, and fail on any serious or critical violation.
    async fn accessible(&self, view: &str) {
        const AXE: &str = include_str!("vendor/axe-core-4.14.1.min.js");
        if self.js("return typeof window.axe === 'undefined';").await == json!(true) {
            self.js(&format!("{AXE}\nreturn true;")).await;
        }
        let script = "const done = arguments[arguments.length - 1];
            axe.run(document, { resultTypes: ['violations'] })
              .then((r) => done(r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
                .map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }))))
              .catch((e) => done([{ id: 'axe failed', help: String(e) }]));";
        let violations = self.c.execute_async(script, vec![]).await.unwrap_or_else(|e| panic!("axe on the {view} view: {e}"));
        assert_eq!(violations, json!([]), "serious or critical accessibility violations on the {view} view");
    }

    async fn screenshot(&self, name: &str) {
        let png = self.c.screenshot().await.expect("screenshot");
        std::fs::write(self.shots.join(format!("{name}.png")), png).expect("write screenshot");
    }

    /// A screenshot of the window scrolled to `css` (Chromium's element screenshots cut
    /// off the plots below an element's first lines).
    async fn screenshot_at(&self, css: &str, name: &str) {
        self.find(css).await;
        self.js(&format!("document.querySelector(\"{css}\").scrollIntoView({{ block: 'start' }});")).await;
        self.screenshot(name).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_works_in_chromium() {
    if std::env::var("TOPICD_SKIP_BROWSER_TESTS").as_deref() == Ok("1") {
        eprintln!("browser test skipped: TOPICD_SKIP_BROWSER_TESTS=1");
        return;
    }
    let Some(chromedriver) = find_program("chromedriver") else {
        panic!(
            "chromedriver is not installed: the browser tests drive Debian's Chromium through it. \
             Install both with `apt-get install -y chromium chromium-driver` \
             (or set TOPICD_SKIP_BROWSER_TESTS=1 to skip these tests)"
        );
    };
    let t0 = Instant::now();
    let max_n = default_max_n();
    let mut server = TestServer { server: None, base: String::new(), client: reqwest::Client::new(), dir: tempfile::tempdir().expect("temp dir") };
    server.boot(|c| c.max_n = max_n).await;
    let driver = Driver::start(&chromedriver).await;

    let mut chrome = json!({"args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,800"]});
    if let Some(binary) = find_program("chromium") {
        chrome["binary"] = json!(binary);
    }
    let mut caps = serde_json::Map::new();
    caps.insert("goog:chromeOptions".into(), chrome);
    caps.insert("goog:loggingPrefs".into(), json!({"browser": "ALL"}));
    let c = ClientBuilder::new(HttpConnector::new()).capabilities(caps).connect(&driver.url).await.expect("a Chromium session through chromedriver");
    let session = c.session_id().await.expect("session id").expect("a session");

    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().expect("target folder").join("screenshots");
    std::fs::create_dir_all(&shots).expect("screenshot folder");
    let browser = Browser {
        c: c.clone(),
        server: &server,
        http: reqwest::Client::new(),
        session_url: format!("{}/session/{session}", driver.url),
        no_log: Cell::new(false),
        expected_failure: RefCell::new(None),
        shots,
    };
    browser.install_page_hook().await;

    // Run the scenario, then close the browser whether it passed or not.
    let outcome = futures_util::FutureExt::catch_unwind(AssertUnwindSafe(scenario(&browser))).await;
    drop(browser);
    let _ = c.close().await;
    drop(driver);
    server.stop().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
    eprintln!("browser test took {:.1} s", t0.elapsed().as_secs_f64());
}

/// A list from the page hook, or a failure saying the page has no hook.
fn hooked_list(v: Value, what: &str) -> Vec<Value> {
    match v {
        Value::Array(items) => items,
        other => panic!("the page has no hook recording its {what} (got {other}): PAGE_HOOK did not run before the page's scripts"),
    }
}

/// The default `--max-n` of `topicd serve`, read from the flag's definition: the tests'
/// configuration allows more, and the console must work with what a default server gives.
fn default_max_n() -> usize {
    use clap::Args;
    let command = topicd::config::ServeConfig::augment_args(clap::Command::new("serve"));
    let flag = command.get_arguments().find(|a| a.get_id() == "max_n").expect("a --max-n flag");
    flag.get_default_values().first().and_then(|v| v.to_str()).and_then(|v| v.parse().ok()).expect("--max-n has a numeric default")
}

async fn scenario(b: &Browser<'_>) {
    let corpus_id = upload_corpus(b).await;
    let (lda_job, lda) = fit(b, &corpus_id, "lda", &[("topics", LDA_TOPICS.to_string()), ("iterations", "30".into()), ("chains", "2".into())], "lda").await;
    let (hpc_job, hpc) = fit(b, &corpus_id, "hpc", &[("iterations", "10".into()), ("test_fraction", "0.2".into())], "hpc").await;

    // The LDA model: slider, scatter, rename, predict.
    open_explorer(b, &lda_job, &lda, LDA_TOPICS).await;
    // LDA keeps samples: the topic detail says, per word, its FREX interval and how
    // often the posterior draws put it in the topic's top n, one bar per listed word.
    let bars = b.until("document.querySelectorAll('[data-testid=topic-detail] [data-testid=in-top-n]').length", "the words' in-top-n bars", WAIT).await;
    let topic = b.js("return document.querySelector('[data-testid=topic-detail]').dataset.topic;").await;
    let (_, sure) =
        b.server.get(&format!("/v1/models/{lda}/topics/{}/frex?rank=frex&weight=0.5&comparison=siblings&n=20&with=intervals", topic.as_str().unwrap())).await;
    assert_eq!(bars.as_u64(), Some(sure["words"].as_array().expect("words").len() as u64), "{sure}");
    b.screenshot("explorer").await;
    // At 1280 px the word table, intervals and all, fits its box: no column scrolls off.
    let hidden = b.js("return [...document.querySelectorAll('[data-testid=topic-detail] .table-wrap')].map(w => w.scrollWidth - w.clientWidth);").await;
    let hidden: Vec<f64> = hidden.as_array().expect("widths").iter().map(|x| x.as_f64().expect("a width")).collect();
    assert!(!hidden.is_empty() && hidden.iter().all(|&x| x <= 1.0), "px of the topic detail's tables scrolled out of view at 1280 px: {hidden:?}");
    let weight = slider_ranks_like_the_api(b, &lda, &[0.8, 0.2, 1.0, 0.0]).await;
    scatter_has_a_point_per_word(b, &corpus_id, &lda, 1, weight).await;
    b.screenshot_at("[data-testid=topic-detail]", "topic-detail").await;
    b.no_console_errors("topic detail").await;
    rename_survives_a_reload(b, &lda, 1).await;
    predict_shows_bars(b, &lda, "lda").await;
    compare_pairs_the_topics(b, &lda, &hpc).await;
    edit_and_refit(b, &lda).await;

    // The HPC model: its topics are the corpus' labels, and prediction names labels.
    let (_, topics) = b.server.get(&format!("/v1/models/{hpc}/topics?n=1")).await;
    let k = topics["topics"].as_array().expect("topics").len();
    open_explorer(b, &hpc_job, &hpc, k).await;
    slider_ranks_like_the_api(b, &hpc, &[0.25, 0.75, 0.0, 1.0]).await;
    b.find("#h-label-evaluation ~ div table").await;
    b.screenshot("explorer-hpc").await;
    b.no_console_errors("HPC explorer").await;
    b.accessible("HPC explorer").await;
    predict_shows_bars(b, &hpc, "hpc").await;
    without_a_test_split(b, &corpus_id).await;
    a_sweep_from_the_corpus_page(b, &corpus_id, &lda).await;
    label_tree_navigates(b).await;

    effects_view(b).await;
    lists_show_inputs_and_convergence(b, &corpus_id).await;
    model_versions_timeline(b).await;

    // Phone width (390 × 844): the explorer opens, the page itself never scrolls
    // sideways (wide tables and plots scroll inside their own boxes), and it passes the
    // audit.
    b.c.set_window_size(390, 844).await.expect("phone-sized window");
    open_explorer(b, &hpc_job, &hpc, k).await;
    let overflow = b.js("return document.documentElement.scrollWidth - document.documentElement.clientWidth;").await;
    if overflow.as_f64().expect("a width") > 1.0 {
        // The outermost elements that stick out, for the message.
        let wide = b
            .js("const w = document.documentElement.clientWidth;
                 const clipped = (e) => { for (let a = e.parentElement; a; a = a.parentElement) if (getComputedStyle(a).overflowX !== 'visible') return true; return false; };
                 return [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > w + 1 && !clipped(e))
                   .slice(0, 8).map((e) => `${e.tagName.toLowerCase()}.${e.className} in ${e.parentElement.tagName.toLowerCase()}.${e.parentElement.className} (${e.parentElement.getAttribute('aria-label') || ''}) right=${Math.round(e.getBoundingClientRect().right)}`);")
            .await;
        panic!("at 390 px the page scrolls sideways by {overflow} px; sticking out: {wide}");
    }
    b.screenshot("explorer-phone").await;

    asks_for_a_token_and_uses_it(b).await;
}

/// Against a server that requires tokens, the console's first request gets a 401: it
/// asks for a token, keeps it for the tab, and the page then loads with it. A read
/// token is enough to see the corpora.
async fn asks_for_a_token_and_uses_it(b: &Browser<'_>) {
    let mut secured = TestServer::start().await;
    secured.stop().await;
    secured.boot(|c| c.auth = Some(topicd::api::auth::AuthMode::Required)).await;
    let store = topicd::store::Store::open(&secured.db()).await.expect("the secured server's database");
    let read = store.create_token("console", topicd::auth::Role::Read).await.unwrap().unwrap().1.token;
    let write = store.create_token("uploader", topicd::auth::Role::Write).await.unwrap().unwrap().1.token;
    let body = json!({"name": "behind-a-token", "documents": [{"text": "apples and pears"}, {"text": "pears and plums"}]});
    let up = b.http.post(format!("{}/v1/corpora", secured.base)).bearer_auth(&write).json(&body).send().await.unwrap();
    assert_eq!(up.status().as_u16(), 201);

    b.js("sessionStorage.clear(); return true;").await;
    // The 401 is what makes the console ask: expected here, and only for this server's API.
    let api = format!("{}/v1/", secured.base);
    *b.expected_failure.borrow_mut() = Some((401, api.clone()));
    b.c.goto(&format!("{}/#/corpora", secured.base)).await.expect("navigate");
    b.until("document.getElementById('token-dialog').open", "the token prompt", WAIT).await;
    b.type_into("#token-input", &read).await;
    b.click("#token-form button[value=ok]").await;
    b.until("document.querySelector('main').innerText.includes('behind-a-token')", "the corpora listed with the token", WAIT).await;
    let kept = b.js("return sessionStorage.getItem('topicd.token');").await;
    assert_eq!(kept, json!(read), "the console keeps the token for the tab");

    let failed = b.failed_requests(true).await;
    *b.expected_failure.borrow_mut() = None;
    assert!(!failed.is_empty(), "the console asked for a token without a 401");
    let other: Vec<&Value> = failed.iter().filter(|q| q["status"] != 401 || !q["url"].as_str().is_some_and(|u| u.starts_with(&api))).collect();
    assert!(other.is_empty(), "failed requests besides the expected 401s: {other:#?}");
    // Chromium logs each 401 as a resource that failed to load; nothing else may show.
    let errors = b.console_errors().await;
    let other: Vec<&String> = errors.iter().filter(|e| !(e.contains(&api) && e.contains("status of 401"))).collect();
    assert!(other.is_empty(), "errors in the browser's console on the token prompt: {other:#?}");
    b.no_console_errors("corpora behind a token").await;
    secured.stop().await;
}

/// The model page's "Compare" picker offers the corpus' other model and leads to the
/// comparison page, whose table has a row per pair the API gives; the LDA model against
/// itself pairs every topic with itself.
async fn compare_pairs_the_topics(b: &Browser<'_>, lda: &str, other: &str) {
    b.open(&format!("#/models/{lda}")).await;
    b.until(&format!("[...document.querySelectorAll('#compare-with option')].some(o => o.value === '{other}')"), "the compare picker", WAIT).await;
    b.find("#compare-with").await.select_by_value(other).await.expect("choose the other model");
    b.click("[data-testid=compare-with] button[type=submit]").await;
    let rows = b.until("document.querySelectorAll('[data-testid=comparison] tbody tr').length", "the comparison table", WAIT).await;
    let (_, cmp) = b.server.get(&format!("/v1/models/{lda}/compare/{other}?words=5")).await;
    assert_eq!(rows.as_u64(), Some(cmp["pairs"].as_array().expect("pairs").len() as u64), "{cmp}");
    b.no_console_errors("comparison").await;
    b.accessible("comparison").await;
    b.open(&format!("#/models/{lda}/compare/{lda}")).await;
    b.until("document.querySelectorAll('[data-testid=comparison] tbody tr').length", "the self-comparison", WAIT).await;
    let same = b.js("return [...document.querySelectorAll('[data-testid=comparison] tbody tr')].every(r => r.dataset.a === r.dataset.b);").await;
    assert_eq!(same.as_bool(), Some(true), "a model's topics pair with themselves");
}

/// The model page's edit form queues a refit (merge 0 and 1, split 2) that lands on
/// its job page; the child's page names its parent and operations, marks topic 1
/// retired in its topic table, and links to its comparison with the parent.
async fn edit_and_refit(b: &Browser<'_>, lda: &str) {
    b.open(&format!("#/models/{lda}")).await;
    b.type_into("#edit-operations", "merge 0 1\nsplit 2 into 2").await;
    b.type_into("#edit-iterations", "6").await;
    b.click("[data-testid=edit-topics] button[type=submit]").await;
    let job_id = b.until("location.hash.startsWith('#/jobs/') && location.hash.slice('#/jobs/'.length)", "the refit's job page", WAIT).await;
    let job = b.server.wait(job_id.as_str().expect("job id"), FIT_WAIT).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    assert_eq!(job["edit"]["operations"], json!([{"op": "merge", "topics": [0, 1]}, {"op": "split", "topic": 2, "into": 2}]), "the operations as typed: {job}");
    let child = job["model_id"].as_str().expect("a model").to_string();
    b.open(&format!("#/models/{child}")).await;
    b.until("document.querySelector('[data-testid=edited-from]')?.textContent.includes('merge 0 + 1')", "the parent row", WAIT).await;
    b.until("document.querySelector('[data-topic=\"1\"] [data-testid=retired]')?.textContent.includes('merged into 0')", "the retired topic", WAIT).await;
    b.no_console_errors("edited model").await;
    b.accessible("edited model").await;
    b.click("[data-testid=edited-from] a[href*='/compare/']").await;
    b.until("document.querySelectorAll('[data-testid=comparison] tbody tr').length", "the comparison with the parent", WAIT).await;
}

/// Upload the fixture as an NDJSON file through the corpora page's form; returns its id.
async fn upload_corpus(b: &Browser<'_>) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("browser-fixture.jsonl");
    let lines: Vec<String> = appstream_docs(DOCS).iter().map(Value::to_string).collect();
    std::fs::write(&file, lines.join("\n") + "\n").expect("write the fixture");

    b.open("").await;
    b.until("document.querySelector('main h1')?.textContent === 'Corpora'", "the corpora page", WAIT).await;
    b.until("document.querySelector('[data-testid=corpus-list]')", "the corpus list", WAIT).await;
    b.probe_watchers().await;
    b.find("#upload-file").await.send_keys(file.to_str().expect("UTF-8 path")).await.expect("choose the file");
    b.type_into("#upload-name", "browser-fixture").await;
    b.click("main form button[type=submit]").await;
    b.until("document.querySelector('main form .ok')", "the upload's confirmation", WAIT).await;
    let listed = b
        .until(
            "[...document.querySelectorAll('[data-testid=corpus-list] td a')].some(a => a.textContent === 'browser-fixture')",
            "the corpus in the list",
            WAIT,
        )
        .await;
    assert_eq!(listed, true);

    let (_, page) = b.server.get("/v1/corpora").await;
    let corpus = page["corpora"].as_array().expect("corpora").iter().find(|c| c["name"] == "browser-fixture").expect("the uploaded corpus").clone();
    assert_eq!(corpus["num_documents"], DOCS, "{corpus}");
    b.screenshot("corpora").await;
    b.no_console_errors("corpora").await;
    b.accessible("corpora").await;
    corpus["id"].as_str().expect("corpus id").to_string()
}

/// Start a fit through the fit form and watch its job page until it succeeds; returns
/// the job's and the model's ids.
async fn fit(b: &Browser<'_>, corpus_id: &str, family: &str, params: &[(&str, String)], shot: &str) -> (String, String) {
    b.open("#/corpora").await;
    b.click("[data-testid=corpus-list] a[aria-label='New fit on browser-fixture']").await;
    b.until("document.querySelector('main h1')?.textContent === 'New fit'", "the fit form", WAIT).await;
    b.find("#fit-family").await.select_by_value(family).await.expect("choose the family");
    // The form is generated from the family's schema: wait for a field only it has.
    let only = if family == "lda" { "params.loglik_every" } else { "params.predictor" };
    b.until(&format!("document.querySelector('[data-field=\"{only}\"]')"), "the family's parameter form", WAIT).await;
    assert_eq!(b.js("return document.getElementById('fit-input').value;").await, corpus_id, "the corpus is preselected");
    for (name, value) in params {
        b.type_into(&format!("[data-field=\"params.{name}\"] input"), value).await;
    }
    if family == "lda" {
        // Seeds, one per line as "name: word, word".
        b.type_into("[data-field=\"params.seed_words\"] textarea", "games: game, play").await;
    }
    b.type_into("#fit-seed", "7").await;
    if family == "lda" {
        b.screenshot("fit-form").await;
    }
    b.no_console_errors("fit form").await;
    b.accessible("fit form").await;
    b.click("main form button[type=submit]").await;

    let job_id = b.until("location.hash.startsWith('#/jobs/') && location.hash.slice('#/jobs/'.length)", "the job page", WAIT).await;
    let job_id = job_id.as_str().expect("job id").to_string();
    let status = b
        .until(
            "(s => ['succeeded', 'failed', 'cancelled'].includes(s) && s)(document.querySelector('[data-testid=job-summary] .badge')?.textContent)",
            "the job to finish",
            FIT_WAIT,
        )
        .await;
    assert_eq!(status, "succeeded", "{family} job: {}", b.main_text().await);
    assert_eq!(b.js("return document.getElementById('job-progress').value;").await, 1, "the progress bar is full");
    let (_, job) = b.server.get(&format!("/v1/jobs/{job_id}")).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    assert_eq!(job["model"], family);
    assert_eq!(job["corpus_id"], corpus_id);
    assert_eq!(job["seed"], 7);
    for (name, value) in params {
        assert_eq!(job["params"][name].to_string(), *value, "{name} as typed in the form: {job}");
    }
    if family == "lda" {
        assert_eq!(job["params"]["seed_words"], json!([{"name": "games", "words": ["game", "play"]}]), "the seeds as typed: {job}");
    }
    if family == "lda" {
        b.until("document.querySelector('main figure.chart svg')", "the log-likelihood trace", WAIT).await;
    }
    // The fitted model's convergence report: its table, and the API's warning (or the
    // all-clear) as the page words it.
    let report = &job["convergence"];
    assert!(report.is_object(), "an MCMC fit reports its convergence: {job}");
    b.until("document.querySelector('[data-testid=convergence] table')", "the convergence table", WAIT).await;
    let rows = b.js("return document.querySelectorAll('[data-testid=convergence] tbody tr').length;").await;
    assert_eq!(rows.as_u64(), Some(report["quantities"].as_array().unwrap().len() as u64 + 1), "a row per scalar and one for the sorted shares");
    match report["warning"].as_str() {
        Some(warning) => assert_eq!(b.js("return document.querySelector('[data-testid=convergence-warning]')?.textContent;").await, warning),
        None => assert!(b.js("return !!document.querySelector('[data-testid=convergence-ok]');").await.as_bool().unwrap()),
    }
    b.screenshot(&format!("job-{shot}")).await;
    b.no_console_errors("job").await;
    b.accessible("job").await;
    (job_id, job["model_id"].as_str().expect("model id").to_string())
}

/// Open the explorer from the job page's link; wait for it to show the model's `k` topics,
/// the first topic's scatter and the intertopic map.
async fn open_explorer(b: &Browser<'_>, job: &str, model: &str, k: usize) {
    b.open(&format!("#/jobs/{job}")).await;
    b.click("[data-testid=job-summary] a[href^='#/models/']").await;
    b.until(&format!("location.hash === '#/models/{model}'"), "the model explorer", WAIT).await;
    b.until(&format!("document.querySelectorAll('[data-testid=topic-table] tr[data-topic]').length === {k}"), "every topic in the table", WAIT).await;
    b.until("document.querySelector('[data-testid=frex-scatter] svg')", "the first topic's scatter", WAIT).await;
    b.until("document.querySelector('#h-intertopic-map ~ div svg')", "the intertopic map", WAIT).await;
    b.no_console_errors("explorer").await;
    b.accessible("explorer").await;
}

/// The table's words per topic, as the page shows them: [[id, "w1, w2, …"], …].
async fn page_words(b: &Browser<'_>) -> Value {
    b.js("return [...document.querySelectorAll('[data-testid=topic-table] tr[data-topic]')].map(tr => [Number(tr.dataset.topic), tr.querySelector('.words').textContent]);").await
}

async fn api_words(b: &Browser<'_>, model: &str, weight: f64) -> Value {
    let (st, answer) = b.server.get(&format!("/v1/models/{model}/topics?rank=frex&weight={weight}&n={TABLE_WORDS}")).await;
    assert_eq!(st, 200, "{answer}");
    let rows: Vec<Value> = answer["topics"]
        .as_array()
        .expect("topics")
        .iter()
        .map(|t| {
            let words: Vec<&str> = t["words"].as_array().expect("words").iter().map(|w| w["word"].as_str().expect("word")).collect();
            json!([t["id"], words.join(", ")])
        })
        .collect();
    Value::Array(rows)
}

/// Move the FREX weight slider to a weight (of `candidates`, the first at which the API
/// ranks some topic's top words differently than at the default 0.5): the table must then
/// list each topic's words in the API's order at that weight. Returns the weight.
async fn slider_ranks_like_the_api(b: &Browser<'_>, model: &str, candidates: &[f64]) -> f64 {
    let at_default = api_words(b, model, 0.5).await;
    b.until_eq("words at the default weight 0.5", &at_default, move || page_words(b)).await;
    let mut chosen = None;
    for &weight in candidates {
        let words = api_words(b, model, weight).await;
        if words != at_default {
            chosen = Some((weight, words));
            break;
        }
    }
    let (weight, expected) = chosen.unwrap_or_else(|| panic!("the API ranks the same top words at the weights {candidates:?} as at 0.5"));

    b.js(&format!("const s = document.getElementById('frex-weight'); s.value = '{weight}'; s.dispatchEvent(new Event('input', {{ bubbles: true }}));")).await;
    let header = format!("Top words by FREX (weight {weight:.2})");
    b.until(&format!("[...document.querySelectorAll('[data-testid=topic-table] th')].some(th => th.textContent === '{header}')"), "the re-ranked table", WAIT)
        .await;
    b.until_eq(&format!("words at weight {weight}"), &expected, move || page_words(b)).await;
    b.no_console_errors("explorer after moving the slider").await;
    weight
}

/// Select `topic`: its scatter must draw one point per word of the topic (as the API lists
/// them at this weight) up to `SCATTER_WORDS`, the top FREX words again as labelled
/// points, and say whether it shows every word.
async fn scatter_has_a_point_per_word(b: &Browser<'_>, corpus: &str, model: &str, topic: usize, weight: f64) {
    // The server refuses more words than its default limit, as a default server does.
    let max_n = default_max_n();
    let (st, refused) = b.server.get(&format!("/v1/models/{model}/topics/{topic}/frex?n={}", max_n + 1)).await;
    assert_eq!(st, 422, "the browser test's server must run with the default --max-n ({max_n}): {refused}");

    b.click(&format!("[data-testid=topic-table] button[aria-label='Show topic {topic}']")).await;
    b.until(&format!("document.querySelector('[data-testid=topic-detail] h3')?.textContent.startsWith('Topic {topic}')"), "the topic's detail", WAIT).await;
    let (_, corpus) = b.server.get(&format!("/v1/corpora/{corpus}")).await;
    let vocabulary = corpus["num_terms"].as_u64().expect("num_terms") as usize;
    let (st, all) = b.server.get(&format!("/v1/models/{model}/topics/{topic}/frex?rank=frex&weight={weight}&n={SCATTER_WORDS}")).await;
    assert_eq!(st, 200, "{all}");
    let words: Vec<&str> = all["words"].as_array().expect("words").iter().map(|w| w["word"].as_str().expect("word")).collect();
    assert_eq!(words.len(), vocabulary.min(SCATTER_WORDS), "the API lists a topic's words over the whole vocabulary ({vocabulary} words), up to n");
    assert!(words.len() > LABELLED, "topic {topic} has only {} words", words.len());
    let says = if vocabulary < SCATTER_WORDS {
        format!("The scatter shows all {vocabulary} words")
    } else {
        format!("The scatter shows the {SCATTER_WORDS} words ranked highest")
    };
    b.until(&format!("document.querySelector('[data-testid=topic-detail]').textContent.includes('{says}')"), &format!("the note \"{says}\""), WAIT).await;
    let count = |description: &'static str| {
        move || async move {
            b.js(&format!("return document.querySelectorAll('[data-testid=frex-scatter] g[aria-description=\"{description}\"] circle').length;")).await
        }
    };
    b.until_eq("points in the scatter", &json!(words.len()), count("every word")).await;
    b.until_eq("highlighted points in the scatter", &json!(LABELLED), count("top FREX words")).await;
    // Labels: only top FREX words, the first of them always (nothing is placed before
    // it), and no two overlapping (a word whose label would not fit is named on hover).
    let top = &words[..LABELLED];
    let shown = b.until("(l => l.length && l)([...document.querySelectorAll('[data-testid=frex-scatter] g[aria-description=\"top FREX word labels\"] text')].map(t => t.textContent))", "the scatter's labels", WAIT).await;
    let shown: Vec<String> = serde_json::from_value(shown).expect("labels");
    assert!(shown.iter().all(|w| top.contains(&w.as_str())), "labels {shown:?} are among the top {LABELLED} {top:?}");
    assert!(shown.iter().any(|w| w == top[0]), "the first FREX word {} is labelled: {shown:?}", top[0]);
    let overlapping = b
        .js("const r = [...document.querySelectorAll('[data-testid=frex-scatter] g[aria-description=\"top FREX word labels\"] text')].map(t => t.getBoundingClientRect());
             return r.flatMap((a, i) => r.slice(i + 1).filter(b => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1).map(() => i)).length;")
        .await;
    assert_eq!(overlapping, json!(0), "no two labels of the scatter overlap");
}

/// Rename `topic` in the table; the name must show at once, after a reload and in the API.
async fn rename_survives_a_reload(b: &Browser<'_>, model: &str, topic: usize) {
    let row = format!("[data-testid=topic-table] tr[data-topic='{topic}']");
    b.click(&format!("{row} button[aria-label='Rename topic {topic}']")).await;
    b.type_into(&format!("{row} input[aria-label='Name of topic {topic}']"), TOPIC_NAME).await;
    b.click(&format!("{row} .name-edit button:not(.secondary)")).await;
    let name_cell = format!("document.querySelector(\"{row} [data-testid=topic-name]\")?.textContent");
    b.until(&format!("{name_cell} === '{TOPIC_NAME}'"), "the new name in the table", WAIT).await;
    b.until(
        &format!("document.querySelector('[data-testid=topic-detail] h3')?.textContent.includes('{TOPIC_NAME}')"),
        "the new name in the topic's title",
        WAIT,
    )
    .await;

    b.reload().await;
    b.until(&format!("{name_cell} === '{TOPIC_NAME}'"), "the name after a reload", WAIT).await;
    let (_, topics) = b.server.get(&format!("/v1/models/{model}/topics?n=1")).await;
    assert_eq!(topics["topics"][topic]["name"], TOPIC_NAME, "{topics}");
    let (_, one) = b.server.get(&format!("/v1/models/{model}/topics/{topic}/frex?n=1")).await;
    assert_eq!(one["topic"]["name"], TOPIC_NAME, "{one}");
    b.no_console_errors("explorer after the rename and reload").await;
}

/// Paste a document the model has not seen into the predict form: the page must plot the
/// topic proportions (and for a labelling model the label probabilities) as bars.
async fn predict_shows_bars(b: &Browser<'_>, model: &str, shot: &str) {
    let docs = appstream_docs(DOCS + 1);
    // Its first 60 words: WebDriver types them one key at a time.
    let words: Vec<&str> = docs[DOCS]["text"].as_str().expect("text").split_whitespace().take(60).collect();
    let text = words.join(" ");
    let text = text.as_str();
    b.type_into("#predict-text", text).await;
    b.click("#predict-submit").await;
    b.until("document.querySelector('[data-testid=predict-result] figure svg')", "the prediction's bars", WAIT).await;

    let (st, answer) = b.server.post(&format!("/v1/models/{model}/predict"), &json!({"documents": [{"id": "pasted", "text": text}]})).await;
    assert_eq!(st, 200, "{answer}");
    let p = &answer["predictions"][0];
    let mut expected = vec![json!(["Topic proportions", p["topic_proportions"].as_array().expect("proportions").len().min(MAX_BARS)])];
    if let Some(labels) = p["labels"].as_array().filter(|l| !l.is_empty()) {
        expected.insert(0, json!(["Label probabilities", labels.len().min(MAX_BARS)]));
    }
    let figures = move || async move {
        b.js("return [...document.querySelectorAll('[data-testid=predict-result] figure')].map(f => [f.querySelector('figcaption').textContent, f.querySelectorAll('g[aria-label=bar] rect').length]);").await
    };
    b.until_eq("the prediction's plots and their bars", &json!(expected), figures).await;
    if shot == "lda" {
        // LDA predicts with intervals: a row per plotted topic.
        let rows = b.until("document.querySelectorAll('[data-testid=predict-result] table tbody tr').length", "the intervals table", WAIT).await;
        assert_eq!(rows.as_u64(), Some(p["topic_proportions"].as_array().expect("proportions").len().min(MAX_BARS) as u64));
    }
    b.screenshot_at("#h-predict", &format!("predict-{shot}")).await;
    b.no_console_errors("predict").await;
}

/// An HPC model fitted without a test split: the explorer says it has no label scores
/// and asks the API for none (no request of the page fails), and offers no evaluation.
async fn without_a_test_split(b: &Browser<'_>, corpus_id: &str) {
    let job = b.server.submit(corpus_id, "hpc", json!({"iterations": 4, "burn_in": 2, "thin": 1, "test_fraction": 0.0, "validation_fraction": 0.0}), 3).await;
    let done = b.server.wait(job["id"].as_str().expect("job id"), FIT_WAIT).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    b.open(&format!("#/models/{}", done["model_id"].as_str().expect("model id"))).await;
    b.find("[data-testid=no-evaluation]").await;
    b.until("document.querySelector('#h-intertopic-map ~ div svg')", "the intertopic map", WAIT).await;
    let offered = b.js("return [...document.querySelectorAll('main button')].some(x => /test split/i.test(x.textContent));").await;
    assert_eq!(offered, json!(false), "no evaluation is offered");
    b.no_console_errors("a model without a test split").await;
}

/// A sweep over K started from the corpus page: its page fills in its rows, marks the
/// suggested K and draws the four measures over K (stability too: two chains); the
/// two-chain LDA's topic table shows each topic's stability.
async fn a_sweep_from_the_corpus_page(b: &Browser<'_>, corpus_id: &str, lda: &str) {
    b.open(&format!("#/models/{lda}")).await;
    let stable = b.until("document.querySelectorAll('[data-testid=topic-table] [data-stable]').length", "the stability column", WAIT).await;
    assert_eq!(stable, json!(LDA_TOPICS), "a stability cell per topic of the two-chain fit");
    b.open(&format!("#/corpora/{corpus_id}")).await;
    b.find("[data-testid=sweep-panel]").await;
    b.js("document.querySelector('#sweep-topics').value = '3, 6'; document.querySelector('#sweep-iterations').value = '20'; return null;").await;
    b.click("[data-testid=sweep-panel] button[type=submit]").await;
    let sweep_page = b.until("location.hash.startsWith('#/sweeps/') && location.hash", "the sweep page", WAIT).await;
    let suggested = b.until("(e => e && e.textContent)(document.querySelector('[data-testid=sweep-suggestion]'))", "the suggestion", FIT_WAIT).await;
    assert!(suggested.as_str().unwrap_or("").contains("Suggested K:"), "{suggested}");
    let figures = b.until("(n => n === 4 && n)(document.querySelectorAll('[data-testid=sweep-plots] figure').length)", "four plots over K", WAIT).await;
    assert_eq!(figures, json!(4));
    let rows = b.js("return document.querySelectorAll('[data-testid=sweep-rows] tbody tr').length;").await;
    assert_eq!(rows, json!(2));
    // The K = 6 row links to its comparison with the K = 3 model.
    b.click("[data-testid=sweep-rows] [data-testid=compare-k]").await;
    let pairs = b.until("document.querySelectorAll('[data-testid=comparison] tbody tr').length", "the comparison of K = 3 and 6", WAIT).await;
    assert_eq!(pairs, json!(3), "K = 3 against K = 6: three pairs");
    b.open(sweep_page.as_str().expect("the sweep page's address")).await;
    b.until("document.querySelectorAll('[data-testid=sweep-rows] tbody tr').length", "the sweep page again", WAIT).await;
    b.no_console_errors("a sweep").await;
}

/// The corpus page lists a corpus' covariates; the fit form offers them as pickers: a box
/// per covariate, a reference-level picker for a chosen categorical one (its levels as
/// the corpus counts them), a spline-columns box for a chosen date.
async fn covariates_in_the_corpus_and_the_form(b: &Browser<'_>, corpus_id: &str) {
    b.open(&format!("#/corpora/{corpus_id}")).await;
    let rows = b.until("document.querySelectorAll('[data-testid=corpus-covariates] tbody tr').length", "the covariates table", WAIT).await;
    assert_eq!(rows, json!(2), "party and published");
    b.accessible("corpus").await;
    b.open(&format!("#/fit?family=dcnt&corpus={corpus_id}")).await;
    let listed = b
        .until(
            "(l => l.length && l)([...document.querySelectorAll('[data-testid=covariate-picker] input')].map(i => i.dataset.covariate))",
            "the covariate pickers",
            WAIT,
        )
        .await;
    assert_eq!(listed, json!(["party", "published"]), "the corpus' covariates, by name");
    b.click("[data-testid=covariate-picker] input[data-covariate=party]").await;
    b.click("[data-testid=covariate-picker] input[data-covariate=published]").await;
    let levels = b.js("return [...document.querySelectorAll('[data-testid=reference-picker] select[data-reference=party] option')].map(o => o.textContent.split(' (')[0]);").await;
    assert_eq!(levels, json!(["blue", "green", "red"]), "party's levels, the reference first");
    b.find("[data-testid=spline-picker] input[data-spline=published]").await;
    let folded = b.js("return !document.querySelector('[data-testid=advanced-params]').open && !!document.querySelector('[data-testid=advanced-params] [data-field=\"params.heldout_chain_length\"]');").await;
    assert_eq!(folded, json!(true), "advanced parameters start folded");
    b.screenshot("fit-form-covariates").await;
    b.no_console_errors("fit form with covariates").await;
    b.accessible("fit form with covariates").await;
}

/// A DCNT fitted with covariates (through the API). The corpus page lists them; the fit
/// form offers them as pickers; the explorer's Effects section draws small multiples
/// along the date, each panel titled with its topic's name, with the documents' values
/// as a rug and, since the reference level's documents span only part of the dates, a
/// note that the curves extrapolate; with a contrast between two levels, a row per
/// topic with a dot per level and the differences, one per topic as the API answers.
async fn effects_view(b: &Browser<'_>) {
    let docs: Vec<Value> = appstream_docs(DOCS)
        .into_iter()
        .enumerate()
        .map(|(i, mut d)| {
            // "blue", the reference level (the most frequent: 34 of 100), is dated 2010
            // to 2014 only; the others 2010 to 2019.
            let party = ["blue", "green", "red"][i % 3];
            let year = if party == "blue" { 10 + i % 5 } else { 10 + i % 10 };
            d["covariates"] = json!({"party": party, "published": format!("20{year}-06-01")});
            d
        })
        .collect();
    let corpus = b.server.upload(json!({"name": "with-covariates", "documents": docs})).await;
    let corpus_id = corpus["id"].as_str().expect("corpus id").to_string();
    covariates_in_the_corpus_and_the_form(b, &corpus_id).await;
    let params = json!({"topics": 3, "iterations": 12, "burn_in": 6, "thin": 2, "covariates": ["published", "party"], "splines": {"published": 4}});
    let job = b.server.submit(&corpus_id, "dcnt", params, 5).await;
    let done = b.server.wait(job["id"].as_str().expect("job id"), FIT_WAIT).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let model = done["model_id"].as_str().expect("model id").to_string();
    b.open(&format!("#/models/{model}")).await;
    b.until("document.querySelector('#effects-out figure svg')", "the effects along the first covariate", WAIT).await;
    let caption = b.js("return document.querySelector('#effects-out figure.chart > figcaption').textContent;").await;
    assert!(caption.as_str().is_some_and(|c| c.starts_with("Expected topic share by published (party = ")), "{caption}");
    let bands = b.js("return document.querySelectorAll('#effects-out g[aria-label=area] path').length;").await;
    assert_eq!(bands, json!(3), "a band per topic");
    // Each panel is titled with its topic's id and top words, as the API ranks them.
    let (_, named) = b.server.get(&format!("/v1/models/{model}/topics?rank=frex&weight=0.5&n=3")).await;
    let plotted = b.js("return document.querySelector('#effects-out figure.chart svg').textContent;").await;
    for t in named["topics"].as_array().expect("topics") {
        let first = t["words"][0]["word"].as_str().expect("a word");
        assert!(plotted.as_str().unwrap().contains(&format!("{} · {first}", t["id"])), "topic {} is named in the plot: {plotted}", t["id"]);
    }
    // The rug: the documents' values the API gives, drawn in every panel.
    let (_, answer) = b.server.get(&format!("/v1/models/{model}/effects?covariate=published")).await;
    let support = &answer["support"];
    let values = support["values"].as_array().unwrap_or_else(|| panic!("effects along a date carry the documents' values: {answer}")).len();
    assert!(support["max"].as_f64().unwrap() < 2015.0, "the reference level's documents end in 2014: {support}");
    let ticks = b.js("return document.querySelectorAll('#effects-out g[aria-description=\"documents\\' values (rug)\"] line').length;").await;
    assert_eq!(ticks, json!(3 * values), "a rug tick per value in each of the 3 panels");
    b.find("[data-testid=effects-extrapolation]").await;
    b.no_console_errors("effects").await;
    b.accessible("effects").await;
    b.find("#effects-covariate").await.select_by_value("party").await.expect("choose party");
    b.type_into("#effects-contrast", "green,red").await;
    b.click("#effects-show").await;
    // Plot wraps a chart with a legend in its own <figure>: count the console's.
    b.until("document.querySelectorAll('#effects-out figure.chart').length === 2", "the levels and the contrast", WAIT).await;
    let (_, answer) = b.server.get(&format!("/v1/models/{model}/effects?covariate=party&contrast=green,red")).await;
    let dots =
        b.js("return [...document.querySelectorAll('#effects-out figure.chart')].map(f => f.querySelectorAll('g[aria-label=dot] circle').length);").await;
    let topics = answer["topics"].as_array().expect("topics").len();
    assert_eq!(dots, json!([3 * topics, topics]), "a dot per level and topic, and one difference per topic: {answer}");
    let levels = b.js("return [...document.querySelectorAll('#effects-out figure.chart')][0].textContent;").await;
    for level in ["green", "blue", "red"] {
        assert!(levels.as_str().unwrap().contains(level), "the legend names level {level}: {levels}");
    }
    b.screenshot_at("#h-effects", "effects").await;
    b.no_console_errors("effects contrast").await;
}

/// The models list names each model's corpus and shows its family, K, chains and
/// convergence as the API reports them (for an LDA of two chains with 30 kept draws
/// each); the jobs list shows the same convergence flag beside each fit. Both pass the
/// audit.
async fn lists_show_inputs_and_convergence(b: &Browser<'_>, corpus_id: &str) {
    let params = json!({"topics": LDA_TOPICS, "iterations": 40, "burn_in": 10, "thin": 1, "chains": 2});
    let job = b.server.submit(corpus_id, "lda", params, 9).await;
    let done = b.server.wait(job["id"].as_str().expect("job id"), FIT_WAIT).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let lda = done["model_id"].as_str().expect("model id");
    b.open("#/models").await;
    b.until("document.querySelectorAll('[aria-label=\\'Model list\\'] tbody tr').length", "the models list", WAIT).await;
    let row = b.js(&format!("return [...document.querySelector('[aria-label=\\'Model list\\'] tbody tr a[href=\\'#/models/{lda}\\']').closest('tr').cells].map(c => c.textContent);")).await;
    let (_, model) = b.server.get(&format!("/v1/models/{lda}")).await;
    let rhat = model["diagnostics"]["convergence"]["max_rhat"].as_f64().unwrap_or_else(|| panic!("a two-chain LDA reports R̂: {}", model["diagnostics"]));
    let cells: Vec<&str> = row.as_array().expect("cells").iter().map(|c| c.as_str().expect("text")).collect();
    assert_eq!(&cells[1..5], ["lda", &LDA_TOPICS.to_string(), "browser-fixture", "2"], "family, K, corpus by name, chains: {cells:?}");
    // Printed as the console prints numbers: three decimals, trailing zeros dropped.
    let shown = format!("{rhat:.3}").trim_end_matches('0').trim_end_matches('.').to_string();
    assert!(cells[5].starts_with(&format!("R̂ {shown}")), "the largest R̂, {rhat}: {cells:?}");
    b.no_console_errors("models list").await;
    b.accessible("models list").await;
    b.open("#/jobs").await;
    let flags = b
        .until(
            "(n => n > 0 && n)([...document.querySelectorAll('main tbody td')].filter(td => td.textContent.startsWith('R̂ ')).length)",
            "the jobs' convergence",
            WAIT,
        )
        .await;
    assert!(flags.as_u64().unwrap() >= 1, "the fit with a report is flagged: {flags}");
    b.no_console_errors("jobs list").await;
    b.accessible("jobs list").await;
}

/// An HPC model over a two-level label tree: the explorer's tree opens and closes a
/// branch with its toggle (its state announced by `aria-expanded`), a label picked in it
/// selects and highlights its topic's row, and the page passes the audit (a button
/// nested in a <summary> once failed it).
async fn label_tree_navigates(b: &Browser<'_>) {
    let leaves = ["puzzle", "arcade", "editor"];
    let docs: Vec<Value> = appstream_docs(60)
        .into_iter()
        .enumerate()
        .map(|(i, mut d)| {
            d["labels"] = json!([leaves[i % 3]]);
            d
        })
        .collect();
    let tree = json!([
        {"label": "games", "parent": null}, {"label": "office", "parent": null},
        {"label": "puzzle", "parent": "games"}, {"label": "arcade", "parent": "games"}, {"label": "editor", "parent": "office"},
    ]);
    let corpus = b.server.upload(json!({"name": "two-levels", "documents": docs, "tree": tree})).await;
    let params = json!({"iterations": 4, "burn_in": 2, "thin": 1, "test_fraction": 0.0, "validation_fraction": 0.0});
    let job = b.server.submit(corpus["id"].as_str().expect("corpus id"), "hpc", params, 4).await;
    let done = b.server.wait(job["id"].as_str().expect("job id"), FIT_WAIT).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    b.open(&format!("#/models/{}", done["model_id"].as_str().expect("model id"))).await;
    b.until("document.querySelector('[aria-label=\\'Label tree\\'] button.toggle')", "the label tree", WAIT).await;
    let toggle = "[...document.querySelectorAll('[aria-label=\\'Label tree\\'] li.branch')].find(li => li.querySelector(':scope > button:not(.toggle)').textContent === 'games')";
    let state = |_: ()| async {
        b.js(&format!(
            "const li = {toggle}; return [li.querySelector(':scope > button.toggle').getAttribute('aria-expanded'), li.querySelector(':scope > ul').hidden];"
        ))
        .await
    };
    assert_eq!(state(()).await, json!(["true", false]), "the first level starts open");
    b.js(&format!("{toggle}.querySelector(':scope > button.toggle').click(); return true;")).await;
    assert_eq!(state(()).await, json!(["false", true]), "the toggle closes the branch");
    b.js(&format!("{toggle}.querySelector(':scope > button.toggle').click(); return true;")).await;
    b.js(
        "[...document.querySelectorAll('[aria-label=\\'Label tree\\'] button.link:not(.toggle)')].find(l => l.textContent === 'arcade').click(); return true;",
    )
    .await;
    let row = b
        .until("(r => r && r.classList.contains('flash') && r.textContent)(document.querySelector('tr.selected[data-topic]'))", "the picked label's row", WAIT)
        .await;
    assert!(row.as_str().expect("row text").contains("arcade"), "the row of arcade is selected: {row}");
    b.no_console_errors("label tree").await;
    b.accessible("label tree").await;
}

/// A model's versions (issue 60): an LDA model updated with a second corpus' documents
/// (`POST /v1/models/{id}/update`); the child's page lists both versions oldest first,
/// marks itself, says what the update added, names both corpora in its header, and links
/// to its comparison with its parent.
async fn model_versions_timeline(b: &Browser<'_>) {
    // Without labels: documents made like a corpus may carry only labels of its tree.
    let docs: Vec<Value> = appstream_docs(160)
        .into_iter()
        .map(|mut d| {
            d.as_object_mut().expect("a document").remove("labels");
            d
        })
        .collect();
    let first = b.server.upload(json!({"name": "versions-first", "documents": &docs[..120], "preprocess": {"min_df": 2}})).await;
    let first = first["id"].as_str().expect("corpus id").to_string();
    let (status, second) = b.server.post(&format!("/v1/corpora?like={first}"), &json!({"name": "versions-second", "documents": &docs[120..]})).await;
    assert_eq!(status, 201, "the second corpus, preprocessed like the first: {second}");
    let second = second["id"].as_str().expect("corpus id").to_string();
    let job = b.server.submit(&first, "lda", json!({"topics": LDA_TOPICS, "iterations": 30}), 3).await;
    let done = b.server.wait(job["id"].as_str().expect("job id"), FIT_WAIT).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let parent = done["model_id"].as_str().expect("model id").to_string();
    let (status, job) = b.server.post(&format!("/v1/models/{parent}/update"), &json!({"corpus_id": second, "iterations": 20, "seed": 1})).await;
    assert_eq!(status, 202, "the update: {job}");
    let done = b.server.wait(job["id"].as_str().expect("job id"), FIT_WAIT).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let child = done["model_id"].as_str().expect("model id").to_string();
    let (_, model) = b.server.get(&format!("/v1/models/{child}")).await;

    b.open(&format!("#/models/{child}")).await;
    let versions = "[...document.querySelectorAll('[data-testid=versions]:not([hidden]) li[data-version]')]";
    b.until(&format!("{versions}.length"), "the versions timeline", WAIT).await;
    assert_eq!(b.js(&format!("return {versions}.map(li => li.dataset.version);")).await, json!([parent, child]), "both versions, the parent first");
    let marked = b.js(&format!("return {versions}.filter(li => li.getAttribute('aria-current')).map(li => li.dataset.version);")).await;
    assert_eq!(marked, json!([child]), "the page's own model marked");
    let added = format!("+{} documents from corpus {}", model["update"]["new_documents"], &second[..8]);
    let line = b.js(&format!("return {versions}[1].textContent;")).await;
    assert!(line.as_str().expect("text").contains(&added), "the update's line says {added:?}: {line}");
    let corpora = b.js("return document.querySelectorAll('[data-testid=corpus-ids] a').length;").await;
    assert_eq!(corpora, 2, "the header names both corpora: {}", b.main_text().await);
    let links = b.js("return document.querySelectorAll('[data-testid=versions] a[data-testid=compare-previous]').length;").await;
    assert_eq!(links, 1, "a comparison link for the version with a parent");
    b.no_console_errors("versions").await;
    b.accessible("versions").await;
    b.screenshot_at("[data-testid=versions]", "versions").await;
    // Topics keep their ids across versions: the selected topic links to the parent's.
    b.until(
        &format!("document.querySelector('[data-testid=topic-versions] a')?.getAttribute('href').startsWith('#/models/{parent}?topic=')"),
        "the topic in the other version",
        WAIT,
    )
    .await;
    b.click(&format!("[data-testid=versions] li[data-version='{child}'] a[data-testid=compare-previous]")).await;
    b.until(&format!("location.hash === '#/models/{parent}/compare/{child}'"), "the comparison with the previous version", WAIT).await;
    b.until("document.querySelectorAll('[data-testid=comparison] tbody tr').length", "the comparison table", WAIT).await;
    b.no_console_errors("comparison of versions").await;
    update_through_the_forms(b, &first, &parent, &docs[120..]).await;
}

/// The same update through the console (issue 60): the first corpus' page uploads new
/// documents like it and opens the new corpus, which names the corpus it was made like;
/// the parent's update form offers it, marked, and queues the update (10 sweeps) on the
/// job page, which follows it to success.
async fn update_through_the_forms(b: &Browser<'_>, first: &str, parent: &str, docs: &[Value]) {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("versions-third.jsonl");
    std::fs::write(&file, docs.iter().map(|d| d.to_string() + "\n").collect::<String>()).expect("write the documents");
    b.open(&format!("#/corpora/{first}")).await;
    b.find("#like-file").await.send_keys(file.to_str().expect("UTF-8 path")).await.expect("choose the file");
    b.type_into("#like-name", "versions-third").await;
    b.click("[data-testid=add-like] button[type=submit]").await;
    b.until(
        &format!("document.querySelector('[data-testid=corpus-like] a')?.getAttribute('href') === '#/corpora/{first}'"),
        "the new corpus, made like the first",
        WAIT,
    )
    .await;
    let third = b.js("return location.hash.slice('#/corpora/'.length);").await;
    let third = third.as_str().expect("corpus id").to_string();
    b.no_console_errors("corpus made like another").await;

    b.open(&format!("#/models/{parent}")).await;
    b.until(
        &format!("document.querySelector('#update-corpus option[value=\"{third}\"]')?.textContent.includes('like corpus')"),
        "the update form's corpora",
        WAIT,
    )
    .await;
    b.find("#update-corpus").await.select_by_value(&third).await.expect("choose the new documents");
    b.type_into("#update-iterations", "10").await;
    b.accessible("update form").await;
    b.screenshot_at("[data-testid=update-model]", "update-form").await;
    b.click("[data-testid=update-model] button[type=submit]").await;
    let job_id = b.until("location.hash.startsWith('#/jobs/') && location.hash.slice('#/jobs/'.length)", "the update's job page", WAIT).await;
    let status = b
        .until(
            "(s => ['succeeded', 'failed', 'cancelled'].includes(s) && s)(document.querySelector('[data-testid=job-summary] .badge')?.textContent)",
            "the update to finish",
            FIT_WAIT,
        )
        .await;
    assert_eq!(status, "succeeded", "the update's job: {}", b.main_text().await);
    let (_, job) = b.server.get(&format!("/v1/jobs/{}", job_id.as_str().expect("job id"))).await;
    assert_eq!(
        (&job["update"]["parent_model_id"], &job["update"]["corpus_id"], &job["params"]["iterations"]),
        (&json!(parent), &json!(third), &json!(10)),
        "{job}"
    );
    b.no_console_errors("update's job").await;
}
