//! The states the index keeps as text (a document's status, a queue row's state, a
//! message's role), as enums. The stored values and the wire format are the
//! snake_case names, as before they were types, so existing databases open unchanged;
//! both databases read and write them directly.

use std::error::Error as StdError;

use postgres::types::{FromSql, IsNull, ToSql, Type};
use rusqlite::types::{FromSqlError, FromSqlResult, ToSqlOutput, ValueRef};

use crate::Error;

macro_rules! text_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $var:ident = $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $($(#[$vmeta])* $var,)+
        }

        impl $name {
            /// The stored (and wire) name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$var => $text,)+
                }
            }
        }

        impl std::str::FromStr for $name {
            type Err = Error;
            fn from_str(s: &str) -> crate::Result<Self> {
                match s {
                    $($text => Ok(Self::$var),)+
                    other => Err(Error::Invalid(format!(
                        concat!("{:?} is not a ", stringify!($name)),
                        other
                    ))),
                }
            }
        }

        /// Compared with its stored name (as tests and shells read them).
        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl rusqlite::types::ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                Ok(ToSqlOutput::from(self.as_str()))
            }
        }

        impl rusqlite::types::FromSql for $name {
            fn column_result(v: ValueRef<'_>) -> FromSqlResult<Self> {
                v.as_str()?.parse().map_err(|e| FromSqlError::Other(Box::new(e)))
            }
        }

        impl ToSql for $name {
            fn to_sql(
                &self,
                ty: &Type,
                out: &mut postgres::types::private::BytesMut,
            ) -> Result<IsNull, Box<dyn StdError + Sync + Send>> {
                self.as_str().to_sql(ty, out)
            }
            fn accepts(ty: &Type) -> bool {
                <&str as ToSql>::accepts(ty)
            }
            postgres::types::to_sql_checked!();
        }

        impl<'a> FromSql<'a> for $name {
            fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn StdError + Sync + Send>> {
                Ok(<&str as FromSql>::from_sql(ty, raw)?.parse::<$name>()?)
            }
            fn accepts(ty: &Type) -> bool {
                <&str as FromSql>::accepts(ty)
            }
        }
    };
}

text_enum! {
    /// How indexing a document ended.
    DocStatus {
        /// Indexed: its chunks are searchable.
        Done = "done",
        /// It could not be indexed; the reason is kept.
        Failed = "failed",
    }
}

text_enum! {
    /// Where a file of the indexing queue is.
    QueueState {
        /// Waiting its turn.
        Queued = "queued",
        /// Being indexed.
        Running = "running",
        /// Indexed.
        Done = "done",
        /// It could not be indexed.
        Failed = "failed",
        /// The person cancelled it.
        Cancelled = "cancelled",
    }
}

impl QueueState {
    /// Waiting or running: not finished.
    pub fn pending(self) -> bool {
        matches!(self, Self::Queued | Self::Running)
    }
}

text_enum! {
    /// Who wrote a message of a conversation.
    Role {
        /// The person's question.
        User = "user",
        /// Quire's answer.
        Assistant = "assistant",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stored_names_are_the_serde_names() {
        for s in [
            QueueState::Queued,
            QueueState::Running,
            QueueState::Done,
            QueueState::Failed,
            QueueState::Cancelled,
        ] {
            let json = serde_json::to_value(s).unwrap_or_default();
            assert_eq!(json, serde_json::Value::String(s.as_str().into()));
            assert_eq!(s.as_str().parse::<QueueState>().ok(), Some(s));
        }
        assert_eq!(
            serde_json::to_value(DocStatus::Failed).ok(),
            Some("failed".into())
        );
        assert_eq!(
            serde_json::to_value(Role::Assistant).ok(),
            Some("assistant".into())
        );
        assert!("paused".parse::<QueueState>().is_err());
    }
}
