//! The model API outside a turn: the provider, titles, the model list and the balance.

use super::*;
use super::{Call, Ctx, Session, chat_key};
use crate::chat::ChatKey;
use crate::chat::model::Message;
use crate::error::ErrorCode;
use crate::error::{Error, Result};
use crate::llm::models::{ModelsCache, parse_models};
use crate::llm::request::{ChatMessage, ChatRequest, Role};
use crate::llm::{ApiError, Provider};
use crate::project::fsutil::write_json_atomic;
use crate::prompt::TITLE_PROMPT;
use crate::prompt::assemble::{self};
use crate::protocol::params;
use crate::protocol::replies::*;

use serde_json::Value;
use std::sync::Arc;

/// How long a decision that needs the model list waits for its first fetch.
const MODELS_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Hours the model list in `~/.bb7/models.json` is used before it is fetched again.
const MODELS_TTL_HOURS: i64 = 24;

/// How long after `init` the remote client starts being built.
const WARM_DELAY: std::time::Duration = std::time::Duration::from_millis(50);

impl Session {
    pub(super) fn provider(&mut self) -> Result<Arc<dyn Provider>> {
        if let Some(p) = &self.provider {
            return Ok(p.clone());
        }
        // The remote endpoint: the top-level keys, or `providers.remote` over them.
        let endpoint = crate::llm::providers::Providers::from_config(&self.config).remote;
        self.check_cleartext(&endpoint)?;
        // A client still being built is not waited for: building one here is as fast.
        let warmed = self
            .warming
            .take()
            .filter(|w| w.is_finished())
            .and_then(|w| w.join().ok());
        let p = match warmed {
            Some(Ok(p)) => p,
            _ => endpoint.connect()?,
        };
        self.provider = Some(p.clone());
        Ok(p)
    }

    /// Starts building the remote client on a low-priority thread, so the first `send`
    /// does not wait for it (the TLS setup reads the system's root certificates, 5 ms).
    /// The thread first lets [`WARM_DELAY`] pass, leaving the CPU to the requests that
    /// follow `init` (`chat_new`, `chat_get`). Called once the project and config are
    /// known; any later change of them goes through `init` again, which starts over.
    pub(super) fn warm_provider(&mut self) {
        if self.provider.is_some() {
            return;
        }
        let endpoint = crate::llm::providers::Providers::from_config(&self.config).remote;
        self.warming = std::thread::Builder::new()
            .name("bb7-connect".into())
            .spawn(move || {
                crate::project::flush_queue::lower_priority();
                std::thread::sleep(WARM_DELAY);
                endpoint.connect()
            })
            .ok();
    }

    /// After a chat's first answer (`request_id` is its `send`'s, which a failure is
    /// reported with), when the chat still has a default name: names it from its first
    /// question at once, without a model (`chat::local_title`), then with `title_model`
    /// when one is set, whose title replaces the local one when it comes.
    pub(super) fn maybe_auto_title(&mut self, key: &ChatKey, request_id: &str, ctx: &Ctx) {
        let chat = match &self.active {
            Some(a) if a.chat.id == key.id => a.chat.clone(),
            _ => return,
        };
        if !assemble::is_first_exchange(&chat) || !chat.name.starts_with("Chat ") {
            return;
        }
        let first = chat
            .messages
            .iter()
            .find(|m| m.role == "user")
            .map(Message::text)
            .unwrap_or_default();
        if let Some(title) = crate::chat::local_title::from_question(&first) {
            match self.apply_title(key, &title) {
                Ok(()) => ctx.outbox.emit(
                    &crate::protocol::events::TurnMessage::TitleUpdated {
                        chat_id: key.id.clone(),
                        title,
                    },
                    None,
                ),
                Err(e) => tracing::warn!(error = %e.message, "cannot save a local title"),
            }
        }
        let Some(title_model) = self.config.title_model.clone().filter(|m| !m.is_empty()) else {
            return;
        };
        if let Ok(provider) = self.provider() {
            let job = TitleJob {
                chat: key.clone(),
                content: first,
                request_id: Some(request_id.to_owned()),
            };
            spawn_title(provider, title_model, job, ctx.clone());
        }
    }

    /// `generate_title`: replies `ok`, then a `title_updated` event.
    pub(super) fn generate_title(
        &mut self,
        args: params::GenerateTitle,
        call: &Call<'_>,
    ) -> Result<Ack> {
        let ctx = call.ctx;
        let id = args.chat_id.as_str().to_owned();
        let content = args.content.as_str().to_owned();
        let store = self.find_store(&id)?;
        // Without a configured title model no model is called: titles cost money and
        // would rename a chat the user may just have named.
        let model = self
            .config
            .title_model
            .clone()
            .filter(|m| !m.is_empty())
            .ok_or_else(|| Error::invalid("title_model not configured"))?;
        let provider = self.provider()?;
        let job = TitleJob {
            chat: chat_key(&store, &id),
            content,
            request_id: call.request_id.map(str::to_owned),
        };
        spawn_title(provider, model, job, ctx.clone());
        Ok(Ack {})
    }

    pub(super) fn apply_title(&mut self, key: &ChatKey, title: &str) -> Result<()> {
        let store = self.store_for(key)?;
        if let Some(a) = self.active.as_mut()
            && a.chat.id == key.id
            && a.store.global == key.global
        {
            let mut chat = a.chat.clone();
            store.rename(&mut chat, title)?;
            a.chat = chat;
            return Ok(());
        }
        if self.is_busy(key) {
            let mut chat = store.load(&key.id)?;
            return store.rename(&mut chat, title);
        }
        let _lock = crate::project::lock::ChatLock::acquire(&store.chat_dir(&key.id)?)?;
        let mut chat = store.load(&key.id)?;
        store.rename(&mut chat, title)
    }

    /// `get_models`: from the on-disk cache unless `refresh`, else fetched in the
    /// background (the reply then comes later).
    pub(super) fn get_models(
        &mut self,
        args: params::GetModels,
        call: &Call<'_>,
    ) -> Result<NowOrLater<Models<'_>>> {
        let (ctx, request_id) = (call.ctx, call.request_id);
        let refresh = args.refresh.unwrap_or(false);
        if args.reset_tools == Some(true) {
            let dir = &self.dirs()?.state;
            let mut state = crate::config::GlobalState::load(dir);
            state.reset_tools();
            state.save(dir)?;
        }
        let cache_path = self.dirs()?.state.join("models.json");
        let cached = ModelsCache::load(&cache_path);
        if let Some(c) = &cached
            && !refresh
            && c.is_fresh(chrono::Duration::hours(MODELS_TTL_HOURS))
        {
            return Ok(NowOrLater::Now(Models {
                models: c.models.clone().into(),
                stale: false,
            }));
        }
        let stale = cached.map(|c| c.models);
        // With no remote key but a local server configured (a local-only setup), the
        // list is the local server's: it needs no key.
        let providers = crate::llm::providers::Providers::from_config(&self.config);
        let (provider, base_url) = match self.provider() {
            Err(e) if e.code == ErrorCode::Api => {
                let Some(local) = providers.local.as_ref() else {
                    return Err(e);
                };
                let base_url = local.base_url.clone();
                let provider = self.provider_for(crate::llm::providers::ProviderRole::Local)?;
                (provider, base_url)
            }
            other => (other?, providers.remote.base_url.clone()),
        };
        let local = crate::llm::url::is_loopback(&base_url);
        let outbox = ctx.outbox.clone();
        let rid = request_id.map(str::to_owned);
        tokio::spawn(async move {
            match provider.get_json("models".into()).await {
                Ok(v) => {
                    let mut models = parse_models(&v);
                    // A server on this machine whose list gives no context (Ollama):
                    // asked per model, a few at most; a server that cannot say for
                    // the first is not asked again.
                    if local {
                        for m in models.iter_mut().filter(|m| m.context_length == 0).take(16) {
                            match crate::llm::models::ollama_context(&*provider, &m.id).await {
                                Some(n) => m.context_length = n,
                                None => break,
                            }
                        }
                    }
                    let cache = ModelsCache::new(models);
                    let _ = write_json_atomic(&cache_path, &cache);
                    let reply = Models {
                        models: cache.models.as_slice().into(),
                        stale: false,
                    };
                    outbox.emit(&reply, rid.as_deref());
                }
                // An old list beats none when the API cannot be reached.
                Err(_) if stale.is_some() => {
                    let models = stale.as_deref().unwrap_or_default();
                    let reply = Models {
                        models: models.into(),
                        stale: true,
                    };
                    outbox.emit(&reply, rid.as_deref());
                }
                Err(e) => outbox.send_error(&Error::from(e), rid.as_deref()),
            }
        });
        Ok(NowOrLater::Later)
    }

    /// Fetches the model list and saves it at `cache_path`, waiting for it on this
    /// thread, at most [`MODELS_WAIT`]: for a decision that needs the list when none
    /// was ever fetched (may this model read images?), once, since the list is then
    /// cached. `None` when it cannot be fetched in time, or on a runtime that cannot
    /// wait here (a single-threaded one).
    pub(super) fn fetch_models_now(&mut self, cache_path: &std::path::Path) -> Option<ModelsCache> {
        use tokio::runtime::{Handle, RuntimeFlavor};
        let handle = Handle::try_current().ok()?;
        if handle.runtime_flavor() != RuntimeFlavor::MultiThread {
            return None;
        }
        let provider = self.provider().ok()?;
        let answer = tokio::task::block_in_place(|| {
            handle.block_on(async {
                tokio::time::timeout(MODELS_WAIT, provider.get_json("models".into())).await
            })
        });
        let cache = ModelsCache::new(parse_models(&answer.ok()?.ok()?));
        let _ = write_json_atomic(cache_path, &cache);
        Some(cache)
    }

    /// `get_balance`: `{"type":"balance","total_credits","total_usage"}` from
    /// `/credits`; servers without it get a clear error.
    pub(super) fn get_balance(&mut self, _: params::NoParams, call: &Call<'_>) -> Result<Deferred> {
        let (ctx, request_id) = (call.ctx, call.request_id);
        let provider = self.provider()?;
        let outbox = ctx.outbox.clone();
        let rid = request_id.map(str::to_owned);
        tokio::spawn(async move {
            match provider.get_json("credits".into()).await {
                Ok(v) => {
                    let d = &v["data"];
                    let reply = Balance {
                        total_credits: d["total_credits"].as_f64().unwrap_or(0.0),
                        total_usage: d["total_usage"].as_f64().unwrap_or(0.0),
                    };
                    outbox.emit(&reply, rid.as_deref());
                }
                Err(ApiError::Http { status: 404, .. }) => outbox.send_error(
                    &Error::new(
                        ErrorCode::Api,
                        "This model API has no balance endpoint (/credits)",
                    ),
                    rid.as_deref(),
                ),
                Err(e) => outbox.send_error(&Error::from(e), rid.as_deref()),
            }
        });
        Ok(Deferred)
    }
}

/// A title to generate: for `chat`, from `content` (the first user message). A failure
/// is reported with `request_id` (the `send` or `generate_title` that started it): the
/// reference plugin hands a reply without one to whatever request it waits for.
pub(super) struct TitleJob {
    /// The chat to name.
    pub chat: ChatKey,
    /// What the title summarizes.
    pub content: String,
    /// The request that started it (none when it came without one).
    pub request_id: Option<String>,
}

pub(super) fn spawn_title(provider: Arc<dyn Provider>, model: String, job: TitleJob, ctx: Ctx) {
    tokio::spawn(async move {
        let excerpt: String = job.content.chars().take(2000).collect();
        let mut request = ChatRequest::new(
            model,
            vec![
                ChatMessage::text(Role::System, TITLE_PROMPT),
                ChatMessage::text(Role::User, excerpt),
            ],
        );
        request.max_tokens = Some(30);
        match provider.complete(&request).await {
            Ok(v) => {
                let raw = v
                    .pointer("/choices/0/message/content")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let title = clean_title(raw);
                if !title.is_empty() {
                    let _ = ctx.background.send(BackgroundResult::Title {
                        chat: job.chat,
                        title,
                        request_id: job.request_id,
                    });
                }
            }
            // Nothing goes on the wire: the reference plugin hands any message whose
            // request it no longer waits for to the oldest request it does wait for,
            // so a late error would answer an unrelated request. The chat keeps its
            // name; the debug log says why.
            Err(e) => tracing::warn!(
                request_id = job.request_id.as_deref().unwrap_or(""),
                error = %e.user_message(),
                "title generation failed"
            ),
        }
    });
}

pub(super) fn clean_title(raw: &str) -> String {
    let line = raw.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let t = line
        .trim()
        .trim_matches(|c| c == '"' || c == '\'' || c == '*' || c == '#')
        .trim();
    let t = t.trim_end_matches(['.', '!', '?']);
    t.chars().take(80).collect()
}
