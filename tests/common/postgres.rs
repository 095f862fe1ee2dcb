//! A fresh PostgreSQL database per test, on the server `TOPICD_TEST_PG` names (an admin
//! URL; default `postgres://postgres@127.0.0.1:5432/postgres`, trust authentication as
//! on this project's machines). `.ci/run` starts a server where none runs
//! (`ci/postgres.sh`), so these tests never skip: a missing server fails them with
//! the reason.

use sqlx::Connection;

/// The admin URL tests create their databases through.
pub fn admin_url() -> String {
    std::env::var("TOPICD_TEST_PG").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string())
}

/// A database created for one test and dropped (with its connections) when this is.
pub struct PgDatabase {
    pub name: String,
    pub url: String,
}

impl PgDatabase {
    pub async fn create() -> PgDatabase {
        let admin = admin_url();
        let name = format!("topicd_test_{}", uuid::Uuid::new_v4().simple());
        let mut conn = sqlx::PgConnection::connect(&admin)
            .await
            .unwrap_or_else(|e| panic!("no PostgreSQL at TOPICD_TEST_PG={admin} ({e}); start one with `ci/postgres.sh ensure 5432`"));
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&mut conn).await.expect("create the test database");
        conn.close().await.ok();
        let url = match admin.rfind('/') {
            Some(slash) if admin[..slash].contains("://") && slash > admin.find("://").unwrap() + 2 => format!("{}/{name}", &admin[..slash]),
            _ => format!("{admin}/{name}"),
        };
        PgDatabase { name, url }
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        let (admin, name) = (admin_url(), self.name.clone());
        // Drop may run inside a runtime: do the async work on a thread of its own.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            rt.block_on(async move {
                if let Ok(mut conn) = sqlx::PgConnection::connect(&admin).await {
                    let _ = sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))).execute(&mut conn).await;
                }
            })
        })
        .join();
    }
}
