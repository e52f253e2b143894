//! The server's half of the action table (`protocol::action::action_table`): every row
//! becomes one arm that calls its handler with the typed parameters and encodes the
//! handler's typed reply. The compiler checks each handler against its row's
//! parameters and reply type.

use super::{Call, Session};
use crate::error::Result;
use crate::protocol::Encoded;
use crate::protocol::action::{Action, action_table};
#[allow(unused_imports)] // the table names parameter and reply types by their short names
use crate::protocol::{params::*, replies::*};

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
