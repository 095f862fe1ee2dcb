//! Memory under requests that declare more than they send: the server's peak memory,
//! measured, while a 60-byte predict declares four billion tokens and while twenty
//! 20 MB predict bodies arrive at once. One test, so that nothing else runs in this
//! process while its peak is read (the peak is the process's `VmHWM`, reset before each
//! probe through `/proc/self/clear_refs`).

mod common;

use common::{appstream_docs, streamed_body, TestServer};
use serde_json::json;
use std::time::Duration;

/// The process's peak resident memory since the last [`reset_peak`], in MB.
fn peak_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<f64>().unwrap() / 1024.0
}

/// The resident memory now, in MB.
fn resident_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<f64>().unwrap() / 1024.0
}

/// Start counting the peak from now (Linux: writing 5 to clear_refs resets VmHWM).
fn reset_peak() {
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
}

/// A predict body of `mb` megabytes, produced 64 KB at a time as it is sent (so the
/// client holds none of it), with its Content-Length declared.
fn lazy_body(mb: usize) -> (reqwest::Body, usize) {
    let head = br#"{"documents": [{"text": ""#.to_vec();
    let tail = br#""}]}"#.to_vec();
    let filler = mb * 1024 * 1024;
    let total = head.len() + filler + tail.len();
    let chunk = vec![b'z'; 64 * 1024];
    let pieces = std::iter::once(head)
        .chain((0..filler / chunk.len()).map(move |_| chunk.clone()))
        .chain(std::iter::once(vec![b'z'; filler % (64 * 1024)]))
        .chain(std::iter::once(tail))
        .map(Ok::<_, std::io::Error>);
    (streamed_body(futures_util::stream::iter(pieces)), total)
}

#[tokio::test]
async fn requests_are_admitted_by_what_they_expand_to_and_the_peak_stays_within_the_budget() {
    let mut s = TestServer::start().await;
    let cid = s.upload(json!({"documents": appstream_docs(60)})).await["id"].as_str().unwrap().to_string();
    let job = s.submit(&cid, "lda", json!({"topics": 4, "iterations": 20}), 1).await;
    let model = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await["model_id"].as_str().unwrap().to_string();
    s.stop().await;
    s.boot(|c| c.request_memory_mb = Some(256.0)).await;
    let predict = format!("{}/v1/models/{model}/predict", s.base);

    // 1. Four billion counted tokens in 60 bytes: refused before anything grows with
    // them (it used to take the process to 24 GB). 50 MB is room for the request itself
    // and the model's first load into the cache.
    reset_peak();
    let base = resident_mb();
    let r = s.client.post(&predict).json(&json!({"documents": [{"counts": {"git": 4_000_000_000u64}}]})).send().await.unwrap();
    assert_eq!(r.status(), 422);
    let grew = peak_mb() - base;
    assert!(grew < 50.0, "a refused 60-byte request grew the peak by {grew:.0} MB");

    // 2. Twenty 20 MB bodies at once against 256 MB (128 MB for bodies, each admitted
    // for three copies, 60 MB): two are read at a time, the others wait unread. Read
    // whole before admission they held 455 MB against a 64 MB budget; the bound here is
    // the budget plus 100 MB for the server's own copies of the model and answers.
    reset_peak();
    let base = resident_mb();
    let mut requests = Vec::new();
    for _ in 0..20 {
        let (body, length) = lazy_body(20);
        let request = s.client.post(&predict).header("content-type", "application/json").header("content-length", length).body(body).send();
        requests.push(tokio::spawn(request));
    }
    for r in requests {
        let status = r.await.unwrap().unwrap().status().as_u16();
        // The one long word is no word of the model's: 422, after it was read and parsed.
        assert_eq!(status, 422);
    }
    let grew = peak_mb() - base;
    assert!(grew < 356.0, "twenty 20 MB bodies grew the peak by {grew:.0} MB against a 256 MB budget");

    // 3. A body whose three copies alone exceed the body pool is refused before a byte
    // of it is read: the answer comes while the client has sent only its headers.
    s.stop().await;
    s.boot(|c| c.request_memory_mb = Some(64.0)).await;
    let addr = s.base.trim_start_matches("http://").to_string();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head =
        format!("POST /v1/models/{model}/predict HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", 20 * 1024 * 1024);
    tokio::io::AsyncWriteExt::write_all(&mut stream, head.as_bytes()).await.unwrap();
    let mut answer = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(10), tokio::io::AsyncReadExt::read(&mut stream, &mut answer)).await.unwrap().unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("\"field\":\"body\"") && answer.contains("request-memory-mb"), "{answer}");
}
