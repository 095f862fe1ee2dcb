//! Model changes announced to every replica: PostgreSQL's LISTEN/NOTIFY.
//!
//! Why it exists: replicas keep decoded models and their topic pages in memory
//! (`api::model_cache`). On a shared store another replica may delete a model or rename
//! a topic; rather than ask the database on every read, the transaction that deletes or
//! renames sends a notification (delivered when it commits), and every replica's
//! listener applies it. A listener that loses its connection may have missed some, so
//! its owner falls back to checking reads against the store until it listens again.
//! SQLite has one process, which makes every change itself: no events.

use super::{Dialect, Store, StoreResult};

/// The channel the notifications go on.
pub const CHANNEL: &str = "topicd_models";

/// A change to a stored model, as sent and as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelEvent {
    Deleted(String),
    Renamed(String),
}

impl ModelEvent {
    fn payload(&self) -> String {
        match self {
            ModelEvent::Deleted(id) => format!("deleted {id}"),
            ModelEvent::Renamed(id) => format!("renamed {id}"),
        }
    }

    /// The event a payload names (`None` for one this version does not know).
    pub fn parse(payload: &str) -> Option<ModelEvent> {
        let (what, id) = payload.split_once(' ')?;
        match what {
            "deleted" => Some(ModelEvent::Deleted(id.to_string())),
            "renamed" => Some(ModelEvent::Renamed(id.to_string())),
            _ => None,
        }
    }
}

/// What a listener heard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    Event(ModelEvent),
    /// A payload this version does not know (a newer replica's).
    Unknown,
    /// The connection was lost: events may have been missed (the listener reconnects on
    /// the next call).
    Lost,
}

/// A listener on [`CHANNEL`].
pub struct ModelEvents {
    listener: sqlx::postgres::PgListener,
}

impl ModelEvents {
    /// The next notification.
    pub async fn next(&mut self) -> StoreResult<Heard> {
        Ok(match self.listener.try_recv().await? {
            None => Heard::Lost,
            Some(n) => ModelEvent::parse(n.payload()).map_or(Heard::Unknown, Heard::Event),
        })
    }
}

impl Store {
    /// Announce `event` to every replica when `conn`'s transaction commits (PostgreSQL;
    /// nothing on SQLite).
    pub(crate) async fn announce(&self, conn: &mut sqlx::AnyConnection, event: ModelEvent) -> StoreResult<()> {
        if self.dialect == Dialect::Postgres {
            sqlx::query("SELECT 1 FROM (SELECT pg_notify($1, $2)) AS sent").bind(CHANNEL).bind(event.payload()).execute(&mut *conn).await?;
        }
        Ok(())
    }

    /// Listen for model changes (`None` on SQLite, which needs none).
    pub async fn model_events(&self) -> StoreResult<Option<ModelEvents>> {
        let Some(url) = &self.url else { return Ok(None) };
        let mut listener = sqlx::postgres::PgListener::connect(url).await?;
        listener.listen(CHANNEL).await?;
        Ok(Some(ModelEvents { listener }))
    }
}

#[cfg(test)]
mod tests {
    use super::ModelEvent;

    #[test]
    fn payloads_round_trip() {
        for e in [ModelEvent::Deleted("a-b".into()), ModelEvent::Renamed("c d".into())] {
            assert_eq!(ModelEvent::parse(&e.payload()), Some(e));
        }
        assert_eq!(ModelEvent::parse("moved x"), None);
    }
}
