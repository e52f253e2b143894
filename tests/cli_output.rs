//! How the command line speaks: colour only when wanted, bare rows when piped, human
//! names in `show`, warnings for misspelled config keys and unknown models, and
//! messages that say there was nothing to act on.

mod cli_support;
mod common;

use cli_support::*;
use common::fake_env;
use common::fake_model::*;
use serde_json::json;

const TEN: &str = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\n";

fn with_pending_edit(fake: &FakeModel, env: &common::Env) {
    project_with(env, &[("f.txt", TEN)]);
    fake.push_sse(response(
        "",
        "Done.",
        vec![(
            "edit_file",
            json!({"path": "f.txt", "edits": [{"old_string": "l2\n", "new_string": "TWO\n"}]}),
        )],
    ));
    ok(env, &["ask", "change it"]);
}

#[test]
fn colour_only_when_asked_or_on_a_terminal() {
    let (env, fake) = fake_env(json!({}));
    with_pending_edit(&fake, &env);
    let piped = stdout(&ok(&env, &["diff"]));
    assert!(
        piped.contains("+TWO\n") && !piped.contains('\x1b'),
        "{piped}"
    );
    let coloured = stdout(&ok(&env, &["diff", "--color", "always"]));
    assert!(coloured.contains("\x1b[32m+TWO"), "{coloured:?}");
    let never = stdout(&ok(&env, &["diff", "--color", "never"]));
    assert_eq!(never, piped);
}

#[test]
fn show_names_events_as_a_user_would() {
    let (env, fake) = fake_env(json!({}));
    with_pending_edit(&fake, &env);
    let md = stdout(&ok(&env, &["show"]));
    assert!(md.contains("_added f.txt_"), "{md}");
    assert!(!md.contains("UserAddFile"), "{md}");
}

#[test]
fn a_misspelled_config_key_is_warned_with_a_guess() {
    let (env, fake) = fake_env(json!({"defualt_model": "x/y"}));
    with_pending_edit(&fake, &env);
    let err = stderr(&ok(&env, &["status"]));
    assert!(err.contains("unknown key defualt_model"), "{err}");
    assert!(err.contains("did you mean default_model?"), "{err}");
}

#[test]
fn a_wrong_type_in_the_config_is_called_so() {
    let (env, _fake) = fake_env(json!({"stream_timeout_secs": "soon"}));
    env.write("f.txt", TEN);
    ok(&env, &["init"]);
    let err = fails(&env, &["ask", "hi"]);
    assert!(
        err.contains("stream_timeout_secs has the wrong type"),
        "{err}"
    );
    assert!(!err.contains("not valid JSON"), "{err}");
}

#[test]
fn an_unknown_model_is_warned_against_the_list() {
    let (env, fake) = fake_env(json!({}));
    fake.set_models(Reply::Http {
        status: 200,
        headers: vec![],
        body: json!({"data": [{"id": "vendor/big", "context_length": 1000,
                               "pricing": {"prompt": "0", "completion": "0"}}]})
        .to_string(),
    });
    project_with(&env, &[("f.txt", TEN)]);
    fake.push_sse(response("", "Hi.", vec![]));
    let err = stderr(&ok(&env, &["ask", "--model", "vendor/bgi", "hi"]));
    assert!(
        err.contains("model vendor/bgi is not in the models list"),
        "{err}"
    );
    assert!(err.contains("did you mean vendor/big?"), "{err}");
    fake.push_sse(response("", "Hi.", vec![]));
    let err = stderr(&ok(&env, &["ask", "--model", "vendor/big", "hi"]));
    assert!(!err.contains("warning"), "{err}");
}

#[test]
fn nothing_to_act_on_is_said_so() {
    let (env, _fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN)]);
    let err = fails(&env, &["reject", "f.txt"]);
    assert!(err.contains("f.txt has no pending changes"), "{err}");
    assert!(!err.contains("File not found"), "{err}");
    let err = fails(&env, &["remove", "g.txt"]);
    assert!(err.contains("g.txt is not in the chat's context"), "{err}");
    let o = ok(&env, &["status"]);
    assert_eq!(stderr(&o), "", "no legend on every status");
    let help = stdout(&ok(&env, &["status", "--help"]));
    assert!(help.contains("M modified by the model"), "{help}");
    let help = stdout(&ok(&env, &["--help"]));
    for code in ["Exit status", "  3 ", "  4 ", "  130 "] {
        assert!(help.contains(code), "{code}: {help}");
    }
}
