//! Connection limits of `topicd serve` (src/api/listener.rs): a connection that trickles
//! its request head is closed after `--header-read-timeout-s`, and at
//! `--max-connections` open connections the server accepts no more until one closes.

mod common;

use common::TestServer;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const HEALTHZ: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";

fn addr(server: &TestServer) -> SocketAddr {
    server.server.as_ref().expect("server running").addr
}

/// Read a whole answer (the request asked the server to close afterwards).
async fn read_answer(stream: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.expect("answer read");
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn a_trickled_request_head_is_cut_off_at_the_header_read_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = TestServer { server: None, base: String::new(), client: reqwest::Client::new(), dir };
    server.boot(|config| config.header_read_timeout_s = 1.0).await;
    let addr = addr(&server);

    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let t0 = Instant::now();
    writer.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap();
    // One byte of a header every 300 ms, never ending the head, until the server hangs up.
    let trickle = tokio::spawn(async move {
        for byte in b"X-Slow: ".iter().chain(std::iter::repeat(&b'a')) {
            tokio::time::sleep(Duration::from_millis(300)).await;
            if writer.write_all(&[*byte]).await.is_err() {
                return;
            }
        }
    });

    // Meanwhile a normal request on another connection is answered.
    let (status, body) = server.get("/healthz").await;
    assert_eq!(status, 200, "{body}");

    let mut buf = [0u8; 256];
    let read = tokio::time::timeout(Duration::from_secs(5), reader.read(&mut buf)).await;
    let elapsed = t0.elapsed();
    match read {
        Err(_) => panic!("the trickling connection was still open after {elapsed:?}"),
        Ok(Ok(0)) | Ok(Err(_)) => {}
        Ok(Ok(n)) => panic!("the server answered a head it never got: {:?}", String::from_utf8_lossy(&buf[..n])),
    }
    assert!(elapsed >= Duration::from_millis(900) && elapsed <= Duration::from_secs(3), "closed after {elapsed:?}, not about 1 s");
    trickle.abort();
    server.stop().await;
}

#[tokio::test]
async fn at_max_connections_a_new_connection_waits_until_one_closes() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = TestServer { server: None, base: String::new(), client: reqwest::Client::new(), dir };
    // A long header-read timeout, so the idle connections stay open for the whole test.
    server
        .boot(|config| {
            config.max_connections = 4;
            config.header_read_timeout_s = 60.0;
        })
        .await;
    let addr = addr(&server);

    let mut idle = Vec::new();
    for _ in 0..4 {
        idle.push(TcpStream::connect(addr).await.unwrap());
    }
    // The fifth connects (the kernel completes the handshake into the listen backlog)
    // but is not accepted, so its request is not answered while the four are open.
    let mut fifth = TcpStream::connect(addr).await.unwrap();
    fifth.write_all(HEALTHZ).await.unwrap();
    let mut buf = [0u8; 256];
    let early = tokio::time::timeout(Duration::from_millis(500), fifth.read(&mut buf)).await;
    assert!(early.is_err(), "answered with 4 of 4 connections open: {early:?}");

    // One idle connection closes: its place goes to the fifth, which is answered.
    drop(idle.pop());
    let answer = tokio::time::timeout(Duration::from_secs(5), read_answer(&mut fifth)).await.expect("answered once a connection closed");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    drop(idle);
    server.stop().await;
}
