//! The real `topicd` binary as a child process, for tests that must kill the server the
//! way a crash does (SIGKILL: no shutdown code runs) and start it again on the same
//! database.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A `topicd serve` process on an ephemeral port.
pub struct ServerProcess {
    child: Child,
    pub base: String,
    pub client: reqwest::Client,
    /// Its log lines (JSON), for failure messages.
    pub log: Arc<Mutex<Vec<String>>>,
}

impl ServerProcess {
    /// Start `topicd serve` on `db` with extra flags; waits until it listens.
    pub fn start(db: &Path, flags: &[&str]) -> ServerProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_topicd"))
            .args(["serve", "--addr", "127.0.0.1:0", "--log-json", "--db"])
            .arg(db)
            .args(flags)
            .env("TOPICD_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the topicd binary starts");
        let mut lines = BufReader::new(child.stderr.take().expect("piped stderr")).lines();
        let log = Arc::new(Mutex::new(Vec::new()));
        let t0 = Instant::now();
        let addr = loop {
            let line = lines.next().and_then(Result::ok).unwrap_or_else(|| panic!("topicd exited before listening: {:?}", log.lock().unwrap()));
            log.lock().unwrap().push(line.clone());
            let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if v["fields"]["message"] == "topicd listening" {
                break v["fields"]["addr"].as_str().expect("address logged").to_string();
            }
            assert!(t0.elapsed() < Duration::from_secs(30), "topicd did not start listening");
        };
        // Keep draining stderr so the child never blocks on a full pipe.
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        ServerProcess { child, base: format!("http://{addr}"), client: reqwest::Client::new(), log }
    }

    /// SIGTERM, as an orchestrator stopping the replica: it re-queues its running jobs
    /// and exits. Waits for the exit.
    pub fn terminate(mut self) {
        let status = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().expect("kill -TERM runs");
        assert!(status.success(), "kill -TERM failed");
        let t0 = Instant::now();
        while self.child.try_wait().expect("try_wait").is_none() {
            assert!(t0.elapsed() < Duration::from_secs(60), "topicd did not exit within 60 s of SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL, as a crash or the OOM killer: no shutdown code runs.
    pub fn kill(mut self) {
        self.child.kill().expect("kill");
        self.child.wait().expect("reaped");
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let r = self.client.get(format!("{}{path}", self.base)).send().await.expect("request");
        let st = r.status().as_u16();
        (st, r.json().await.unwrap_or(Value::Null))
    }

    pub async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let r = self.client.post(format!("{}{path}", self.base)).json(body).send().await.expect("request");
        let st = r.status().as_u16();
        (st, r.json().await.unwrap_or(Value::Null))
    }

    pub async fn patch(&self, path: &str, body: &Value) -> (u16, Value) {
        let r = self.client.patch(format!("{}{path}", self.base)).json(body).send().await.expect("request");
        let st = r.status().as_u16();
        (st, r.json().await.unwrap_or(Value::Null))
    }

    /// Poll the job until `done` says so about it; panics after `timeout`.
    pub async fn wait_for(&self, job_id: &str, timeout: Duration, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let t0 = Instant::now();
        loop {
            let (st, j) = self.get(&format!("/v1/jobs/{job_id}")).await;
            assert_eq!(st, 200, "{j}");
            if done(&j) {
                return j;
            }
            assert!(t0.elapsed() < timeout, "job {job_id}: not {what} after {timeout:?}: {j}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
