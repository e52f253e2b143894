//! The server's half of the action table (`protocol::action::action_table`): every row
//! becomes one arm that calls its handler with the typed parameters and encodes the
//! handler's typed reply. The compiler checks each handler against its row's
//! parameters and reply type.

use super::{Ctx, Session};
use crate::error::Result;
use crate::protocol::Encoded;
use crate::protocol::action::{Action, action_table};
#[allow(unused_imports)] // the table names parameter and reply types by their short names
use crate::protocol::{params::*, replies::*};

/// What a handler that answers later (a `send` stream, a model list being fetched)
/// needs: where to send its messages, and the request id they must carry.
#[derive(Clone, Copy)]
pub struct Call<'a> {
    /// The outbox and the channel for background results.
    pub ctx: &'a Ctx,
    /// The request's id, echoed on every message of the answer.
    pub request_id: Option<&'a str>,
}

macro_rules! dispatch_rows {
    ($( $(#[$doc:meta])* $variant:ident($params:ty) = $name:literal -> $reply:ty => $handler:ident $(($call:ident))?, )*) => {
        impl Session {
            /// Runs the handler of `action`'s row. `Ok(None)`: the answer comes later,
            /// from background work, with `call.request_id`.
            pub(super) fn dispatch(&mut self, action: Action, call: &Call<'_>) -> Result<Option<Encoded>> {
                match action {
                    $(
                        Action::$variant(params) => {
                            $( let $call = call; )?
                            let reply: Result<$reply> = self.$handler(params, $($call)?);
                            reply?.answer()
                        }
                    )*
                }
            }
        }
    };
}

action_table!(dispatch_rows);
