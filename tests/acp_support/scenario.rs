//! The openings the ACP tests share: what the fake model is scripted to answer, and
//! the session requests a scenario starts with.

use std::path::Path;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ListSessionsRequest, LoadSessionRequest, SetSessionConfigOptionRequest,
};
use agent_client_protocol::{Agent, Error};
use serde_json::json;

use crate::common::fake_model::{FakeModel, Step, done, finish, response, role, tool_call};

/// Scripts the model to answer "Done." with a `write_file` of `content` to `path`.
pub fn writes(fake: &FakeModel, path: &str, content: &str) {
    fake.push_sse(response(
        "",
        "Done.",
        vec![("write_file", json!({"path": path, "content": content}))],
    ));
}

/// Scripts a turn of two requests: a `read_file` of `path` (its usage reported by
/// `usage`, when given), then `answer`.
pub fn reads_then_answers(fake: &FakeModel, path: &str, usage: Option<Step>, answer: &str) {
    let mut steps = vec![role()];
    steps.extend(tool_call(0, "read_file", json!({"path": path}), 2));
    steps.push(finish("tool_calls"));
    steps.extend(usage);
    steps.push(done());
    fake.push_sse(steps);
    fake.push_sse(response("", answer, vec![]));
}

/// Sets session `sid`'s `tools` option (`off`, `ask` or `auto`: docs/PROTOCOL.md,
/// `session/set_config_option`).
pub async fn set_tools(cx: &ConnectionTo<Agent>, sid: &str, mode: &str) -> Result<(), Error> {
    cx.send_request(SetSessionConfigOptionRequest::new(
        sid.to_owned(),
        "tools",
        mode,
    ))
    .block_task()
    .await?;
    Ok(())
}

/// `session/load` of the project's newest chat (the first that `session/list` gives);
/// its session id.
pub async fn load_latest(cx: &ConnectionTo<Agent>, cwd: &Path) -> Result<String, Error> {
    let list = cx
        .send_request(ListSessionsRequest::new())
        .block_task()
        .await?;
    let sid = list.sessions[0].session_id.clone();
    cx.send_request(LoadSessionRequest::new(sid.clone(), cwd))
        .block_task()
        .await?;
    Ok(sid.0.to_string())
}
