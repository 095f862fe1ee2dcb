//! `topicd token create | list | revoke`: the operator's API tokens.
//!
//! Why it exists: tokens are managed against the database file, with or without the
//! server running (a new or revoked token counts from the server's next request), so
//! the first admin token can be made before the first start. Output is one JSON object
//! per line, for scripts; a created token is printed once and never again.

use crate::auth::Role;
use crate::store::tokens::TokenRow;
use crate::store::Store;
use clap::{Args, Subcommand};
use serde_json::json;

#[derive(Debug, Clone, Args)]
pub struct TokenArgs {
    /// SQLite database file of the server (created with its schema if missing).
    #[arg(long, env = "TOPICD_DB", default_value = "topicd.db", global = true, value_parser = crate::config::DbLocationParser)]
    pub db: crate::store::DbLocation,
    #[command(subcommand)]
    pub action: TokenAction,
}

#[derive(Debug, Clone, Subcommand)]
pub enum TokenAction {
    /// Issue a token and print it (shown this once: only its hash is stored).
    Create {
        /// A name to recognise the token by (one live token per name).
        #[arg(long)]
        name: String,
        /// read: every GET; write: also upload, fit, predict, evaluate, cancel,
        /// rename; admin: also delete.
        #[arg(long, value_parser = parse_role)]
        role: Role,
    },
    /// Every token, live and revoked (never a secret).
    List,
    /// Revoke the live token with this name or key.
    Revoke {
        /// The token's name or its key (the 12 hex digits after `tpd_`).
        name_or_key: String,
    },
}

fn parse_role(s: &str) -> Result<Role, String> {
    s.parse()
}

fn row_json(row: &TokenRow) -> serde_json::Value {
    json!({"key": row.key, "name": row.name, "role": row.role.as_str(), "created_at": row.created_at, "revoked_at": row.revoked_at})
}

/// Run the command; `Err` is a message for the operator.
pub fn run(args: TokenArgs) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let store = Store::connect(&args.db, &Default::default()).await.map_err(|e| format!("{}: {e}", args.db))?;
        match args.action {
            TokenAction::Create { name, role } => {
                let name = name.trim();
                if name.is_empty() || name.len() > 100 {
                    return Err("--name must be 1 to 100 characters".into());
                }
                let (row, issued) = store
                    .create_token(name, role)
                    .await
                    .map_err(|e| e.to_string())?
                    .ok_or_else(|| format!("a live token is already named {name:?}: revoke it first or choose another name"))?;
                let mut out = row_json(&row);
                out["token"] = json!(issued.token);
                println!("{out}");
                eprintln!("topicd token: store this token now, it is not shown again; send it as `Authorization: Bearer <token>`");
            }
            TokenAction::List => {
                for row in store.list_tokens().await.map_err(|e| e.to_string())? {
                    println!("{}", row_json(&row));
                }
            }
            TokenAction::Revoke { name_or_key } => {
                let row = store
                    .revoke_token(&name_or_key)
                    .await
                    .map_err(|e| e.to_string())?
                    .ok_or_else(|| format!("no live token has the name or key {name_or_key:?} (`topicd token list` shows them)"))?;
                println!("{}", row_json(&row));
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Command;

    #[test]
    fn a_refused_db_url_is_not_repeated_with_its_password() {
        let parse = |db: &str| TokenArgs::augment_args(Command::new("token")).try_get_matches_from(["token", "--db", db, "list"]);
        let text = parse("postgress://u:secret@h/db").unwrap_err().to_string();
        assert!(text.contains("postgress://u:***@h/db") && !text.contains("secret"), "{text}");
        assert!(parse("postgres://u:secret@h/db").is_ok());
    }
}
