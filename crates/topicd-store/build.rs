//! Rebuild when a migration is added or changed: `sqlx::migrate!` embeds
//! the workspace's `migrations/sqlite` and `migrations/postgres` at compile time, and cargo does not
//! otherwise notice a new file there.
fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
