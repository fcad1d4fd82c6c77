//! `code_execution`: a JavaScript async function body run in an embedded QuickJS (rquickjs),
//! whose only way out is this session's own tools.
//!
//! The engine runs on a thread of its own (it is not `Send`, and a busy script must not hold a
//! Tokio worker). Each `tools.<name>(args)` the script makes is sent to the async side, which
//! runs it as [`Toolbox::call`] runs a direct call, and sends the result back; the
//! script's promise settles when it arrives. The script sees `{text, data}` for a result
//! (`text`: the result's text; `data`: its `structuredContent`, or `null`), and a rejected
//! promise whose `Error.message` is the result's text for an error.
//!
//! The global object holds the language's built-ins (no `performance`; `Date` reads whole
//! seconds only), `tools` and `console.log` (captured into the answer); there is no module
//! loader, so `import()` fails, and nothing else (no `fetch`, `require`, `process`, `Deno`,
//! file system, network).
//!
//! Each inner call is also a line in the audit log (`--audit-log`), `tool: "code_execution"`
//! with the tool called as `target`.
//!
//! Bounds, each with a default and a flag (see `lib.rs`): wall time, CPU time (time running
//! script, enforced by the engine's interrupt handler), memory (the engine's limit), inner
//! calls, and bytes returned to the script. Going over one stops the script; the answer names
//! the bound and lists the inner calls made.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::rc::Rc;
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolResult, JsonObject};
use rquickjs::allocator::{Allocator, RustAllocator};
use rquickjs::context::intrinsic;
use rquickjs::promise::PromiseState;
use rquickjs::{
    CatchResultExt, CaughtError, Context, Ctx, Function, Object, Promise, Runtime, Value,
};
use serde_json::{json, Value as Json};
use tokio::sync::{mpsc, oneshot};

use super::results::{self, error, Rendered};
use super::Toolbox;
use crate::audit::{AuditRecord, Outcome as Audited};

/// The tool's name.
pub(crate) const NAME: &str = "code_execution";

/// How many of a failed script's first and last calls its error lists; the others are counted.
const LISTED_CALLS_FIRST: usize = 5;
const LISTED_CALLS_LAST: usize = 5;

/// Playwright MCP's name for a script of Playwright code, `async (page) => { … }`: here the
/// same sandbox as [`NAME`], with `page` made of this session's tools (script_page.js).
pub(crate) const RUN_CODE: &str = "browser_run_code_unsafe";

/// What a script is: a function body (`code_execution`), or Playwright code
/// (`browser_run_code_unsafe`): a function called with `page`, or a body using `page`.
pub(crate) enum Script {
    Body(String),
    Playwright(String),
}

impl Script {
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            Script::Body(code) | Script::Playwright(code) => code.trim().is_empty(),
        }
    }

    /// The tool that runs it, for its answers.
    fn tool(&self) -> &'static str {
        match self {
            Script::Body(_) => NAME,
            Script::Playwright(_) => RUN_CODE,
        }
    }

    /// The source the engine runs: one async call whose promise is the script's end, the
    /// script's first line on line 1 so that errors name its own lines.
    fn source(&self) -> String {
        match self {
            Script::Playwright(code) => {
                // page.url() is synchronous: a script that reads it before it navigates first
                // learns where it starts (one call more).
                let start = match (code.find(".url()"), code.find(".goto(")) {
                    (Some(url), goto) if goto.is_none_or(|goto| url < goto) => {
                        "await page.__readUrl(); "
                    }
                    _ => "",
                };
                if is_function(code) {
                    // `async (page) => { … };`: the statement's semicolon cannot stay inside
                    // the call's parentheses.
                    let code = code.trim_end().trim_end_matches(';');
                    format!("(async () => {{ {start}return await ({code}\n)(page); }})()")
                } else {
                    format!("(async () => {{ {start}{code}\n}})()")
                }
            }
            Script::Body(code) => format!("(async () => {{{code}\n}})()"),
        }
    }
}

/// Whether Playwright code is a function to call with `page` (`async (page) => …`, `async
/// function (page) { … }`) rather than a body of statements.
pub(super) fn is_function(code: &str) -> bool {
    let code = without_leading_comments(code);
    let code = code.strip_prefix("async").map_or(code, str::trim_start);
    code.starts_with("function")
        || (code.starts_with('(') && code.contains("=>") && {
            // `(page) => …` or `({ page }) => …`, not a statement that opens with a parenthesis.
            let close = code.find(')').unwrap_or(0);
            code[close + 1..].trim_start().starts_with("=>")
        })
        || code.split_once("=>").is_some_and(|(head, _)| {
            let head = head.trim();
            !head.is_empty()
                && head
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
        })
}

/// `code` from its first token: white space and `//` or `/* */` comments before it skipped.
fn without_leading_comments(code: &str) -> &str {
    let mut rest = code.trim_start();
    loop {
        if let Some(after) = rest.strip_prefix("//") {
            rest = after
                .split_once('\n')
                .map_or("", |(_, next)| next)
                .trim_start();
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after
                .split_once("*/")
                .map_or("", |(_, next)| next)
                .trim_start();
        } else {
            return rest;
        }
    }
}

/// How far a script may go.
#[derive(Debug, Clone, PartialEq)]
pub struct CodeLimits {
    /// From start to answer, waiting for tools included.
    pub wall_time: Duration,
    /// Time spent running the script itself (not waiting for tools).
    pub cpu_time: Duration,
    /// The engine's memory limit, in bytes.
    pub memory: usize,
    /// Inner tool calls.
    pub calls: usize,
    /// Bytes of results handed to the script (text plus `data` as JSON).
    pub bytes: usize,
    /// How the flags that set these bounds begin where this server runs (`--code-` for the
    /// bridge, `--mcp-code-` for the relay's HTTP `/mcp`), so an answer names the flag to change.
    pub flag_prefix: &'static str,
}

impl Default for CodeLimits {
    fn default() -> CodeLimits {
        CodeLimits {
            wall_time: Duration::from_secs(60),
            cpu_time: Duration::from_secs(10),
            memory: 64 << 20,
            calls: 100,
            bytes: 5_000_000,
            flag_prefix: "--code-",
        }
    }
}

/// Which bound stopped a script.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Bound {
    WallTime,
    CpuTime,
    Memory,
    Calls,
    Bytes,
}

impl Bound {
    fn describe(self, limits: &CodeLimits) -> String {
        let flag = limits.flag_prefix;
        match self {
            Bound::WallTime => format!(
                "the wall-time bound ({:?}, {flag}wall-time)",
                limits.wall_time
            ),
            Bound::CpuTime => format!(
                "the CPU-time bound ({:?} of running script, {flag}cpu-time)",
                limits.cpu_time
            ),
            Bound::Memory => format!("the memory bound ({} bytes, {flag}memory)", limits.memory),
            Bound::Calls => format!(
                "the inner-call bound ({} tool calls, {flag}max-calls)",
                limits.calls
            ),
            Bound::Bytes => format!(
                "the bound on bytes returned to the script ({} bytes, {flag}max-bytes)",
                limits.bytes
            ),
        }
    }

    fn key(self) -> &'static str {
        match self {
            Bound::WallTime => "wall_time",
            Bound::CpuTime => "cpu_time",
            Bound::Memory => "memory",
            Bound::Calls => "calls",
            Bound::Bytes => "bytes",
        }
    }
}

/// One inner call, as the answer lists it.
#[derive(Debug, Clone)]
struct InnerCall {
    tool: String,
    args: Json,
    /// `None` while in flight.
    ok: Option<bool>,
}

impl fmt::Display for InnerCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut args = self.args.to_string();
        if args.chars().count() > 200 {
            args = args.chars().take(200).collect::<String>() + "…";
        }
        let outcome = match self.ok {
            Some(true) => "ok",
            Some(false) => "error",
            None => "no answer yet",
        };
        write!(f, "{} {args} → {outcome}", self.tool)
    }
}

/// How a script ended.
enum End {
    /// Its return value as text (a string as-is, the rest as JSON).
    Returned(String),
    /// It threw (or would not compile): message and line.
    Threw(String),
    /// A bound stopped it.
    Stopped(Bound),
}

/// What the engine's thread hands back.
struct Outcome {
    end: End,
    calls: Vec<InnerCall>,
    logs: Vec<String>,
}

/// A call the script made, for the async side.
struct Request {
    id: u32,
    tool: String,
    args: JsonObject,
    /// The result's whole text, not its first part (`page`'s reads).
    whole: bool,
}

/// The state the engine's thread shares between the script's native function, the interrupt
/// handler and its own loop (all on that one thread).
struct Meter {
    started: Instant,
    /// Time spent waiting for tools, not running script.
    waited: Cell<Duration>,
    stopped: Cell<Option<Bound>>,
    calls: RefCell<Vec<InnerCall>>,
    logs: RefCell<Vec<String>>,
    bytes: Cell<usize>,
}

impl Meter {
    /// The bound the script is over now, if any (and remembers it).
    fn over(&self, limits: &CodeLimits) -> Option<Bound> {
        if let Some(bound) = self.stopped.get() {
            return Some(bound);
        }
        let elapsed = self.started.elapsed();
        let bound = if elapsed >= limits.wall_time {
            Some(Bound::WallTime)
        } else if elapsed.saturating_sub(self.waited.get()) >= limits.cpu_time {
            Some(Bound::CpuTime)
        } else {
            None
        };
        if bound.is_some() {
            self.stopped.set(bound);
        }
        bound
    }
}

/// Keeps the wrapper's helpers off the global object: it returns `tools`, `console` and the
/// function that settles a call's promise.
const PRELUDE: &str = r#"(function (call, names, log) {
  const pending = new Map();
  // `whole`: the result's text uncut, for `page` (script_page.js), which reads values with it.
  const invoke = function (name, args, whole) {
    // Made here, so that its stack names the script's line of the call.
    const failure = new Error("");
    return new Promise(function (resolve, reject) {
      const id = call(name, JSON.stringify(args === undefined ? {} : args), whole);
      pending.set(id, { resolve, reject, failure });
    });
  };
  const tools = {};
  for (const name of names) {
    tools[name] = function (args) { return invoke(name, args, false); };
  }
  const raw = function (name, args) { return invoke(name, args, true); };
  const show = function (v) {
    if (typeof v === "string") return v;
    try { const s = JSON.stringify(v); return s === undefined ? String(v) : s; }
    catch (e) { return String(v); }
  };
  const console = Object.freeze({
    log: function (...items) { log(items.map(show).join(" ")); },
  });
  const settle = function (id, ok, payload) {
    const p = pending.get(id);
    pending.delete(id);
    if (ok) { p.resolve(JSON.parse(payload)); return; }
    p.failure.message = payload;
    p.reject(p.failure);
  };
  // Coarse time: a script may read the date and whole seconds, never time anything finely
  // (no clock to measure the host or a page's timing with). Every way to the clock leads here:
  // Date.now, new Date(), Date() and the prototype's constructor.
  const RealDate = Date;
  const realNow = RealDate.now;
  const coarse = function () { return Math.floor(realNow.call(RealDate) / 1000) * 1000; };
  const CoarseDate = new Proxy(RealDate, {
    construct: function (target, args, newTarget) {
      return Reflect.construct(target, args.length === 0 ? [coarse()] : args, newTarget);
    },
    apply: function () { return new RealDate(coarse()).toString(); },
  });
  RealDate.now = coarse;
  Object.defineProperty(RealDate.prototype, "constructor", { value: CoarseDate });
  globalThis.Date = CoarseDate;
  return [Object.freeze(tools), console, settle, raw];
})"#;

/// Playwright's `page`, made of the script's tools: a function of `tools` and `raw`.
const PAGE: &str = include_str!("script_page.js");

/// The script's file name in stack traces.
const FILENAME: &str = "code";

impl Toolbox {
    /// Runs `code` under `limits`, its inner calls through [`Toolbox::call`].
    pub(super) async fn execute(&self, script: Script, limits: CodeLimits) -> CallToolResult {
        let tool = script.tool();
        let names: Vec<String> = self
            .tools
            .iter()
            .map(|tool| tool.name.to_string())
            .filter(|name| name != NAME && name != RUN_CODE)
            .collect();
        let (request_tx, mut request_rx) = mpsc::unbounded_channel::<Request>();
        let (reply_tx, reply_rx) = std_mpsc::channel::<(u32, CallToolResult)>();
        let (done_tx, mut done_rx) = oneshot::channel::<Outcome>();
        let deadline = tokio::time::Instant::now() + limits.wall_time;
        let engine_limits = limits.clone();
        let spawned = std::thread::Builder::new()
            .name("code_execution".into())
            .stack_size(16 << 20)
            .spawn(move || {
                let outcome = run_script(&script, &names, &engine_limits, request_tx, reply_rx);
                let _ = done_tx.send(outcome);
            });
        if let Err(e) = spawned {
            return error(format!("{tool} failed: could not start the engine: {e}"));
        }
        let outcome = loop {
            tokio::select! {
                outcome = &mut done_rx => break outcome,
                Some(request) = request_rx.recv() => {
                    // The same path as a direct call of that tool.
                    let started = Instant::now();
                    let call = self.call_tool_as(&request.tool, &request.args, request.whole);
                    // Past the deadline the engine has given up: drop the call.
                    let result = tokio::time::timeout_at(deadline, call).await;
                    self.audit_inner(tool, &request.tool, result.as_ref().ok(), started);
                    if let Ok(result) = result {
                        let _ = reply_tx.send((request.id, result));
                    }
                }
            }
        };
        let Ok(outcome) = outcome else {
            return error(format!("{tool} failed: the engine stopped unexpectedly"));
        };
        self.report(tool, outcome, &limits)
    }

    /// One line in the audit log for an inner call: `tool` is `code_execution`, `target` the
    /// tool the script called; no result means the script's time ran out first.
    fn audit_inner(
        &self,
        script: &str,
        tool: &str,
        result: Option<&CallToolResult>,
        started: Instant,
    ) {
        let (outcome, error) = match result {
            Some(result) if result.is_error != Some(true) => (Audited::Ok, None),
            Some(result) => (
                Audited::Error,
                text_of(result).lines().next().map(str::to_owned),
            ),
            None => (
                Audited::Error,
                Some("the script's wall time ran out before the answer".to_owned()),
            ),
        };
        self.audit.append(&AuditRecord {
            time: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            tool: script.to_owned(),
            target: Some(tool.to_owned()),
            variant: None,
            intent: None,
            outcome,
            error,
            duration_ms: (started.elapsed().as_secs_f64() * 1e6).round() / 1e3,
        });
    }

    /// The tool's answer for how the script ended.
    fn report(&self, tool: &str, outcome: Outcome, limits: &CodeLimits) -> CallToolResult {
        let Outcome { end, calls, logs } = outcome;
        let call_rows: Vec<Json> = calls
            .iter()
            .map(|c| json!({"tool": c.tool, "ok": c.ok}))
            .collect();
        let mut structured = json!({ "innerCalls": call_rows, "logs": logs });
        let logs_text = if logs.is_empty() {
            String::new()
        } else {
            format!("\n\nconsole.log:\n{}", logs.join("\n"))
        };
        let done_so_far = || {
            if calls.is_empty() {
                return "It had made no tool call.".to_owned();
            }
            let line = |i: usize| format!("{}. {}", i + 1, calls[i]);
            let mut lines: Vec<String>;
            if calls.len() <= LISTED_CALLS_FIRST + LISTED_CALLS_LAST + 2 {
                lines = (0..calls.len()).map(line).collect();
            } else {
                // A script stopped by the call bound made a hundred: its first and last calls
                // say what it was doing; the rest is counted (each is in `innerCalls`).
                let skipped = LISTED_CALLS_FIRST..calls.len() - LISTED_CALLS_LAST;
                let failed = calls[skipped.clone()]
                    .iter()
                    .filter(|c| c.ok == Some(false))
                    .count();
                lines = (0..LISTED_CALLS_FIRST).map(line).collect();
                lines.push(format!(
                    "… {} more call(s), {failed} of them failed …",
                    skipped.len()
                ));
                lines.extend((skipped.end..calls.len()).map(line));
            }
            format!(
                "It had made {} tool call(s):\n{}",
                calls.len(),
                lines.join("\n")
            )
        };
        match end {
            End::Returned(text) => {
                self.deliver(tool, Rendered::page(text + &logs_text, structured))
            }
            End::Threw(message) => {
                let result = error(format!(
                    "{tool}: the script failed: {message}\n{}{logs_text}",
                    done_so_far()
                ));
                results::with_page_fields(result, structured)
            }
            End::Stopped(bound) => {
                structured["stoppedBy"] = json!(bound.key());
                let result = error(format!(
                    "{tool}: the script was stopped: it went over {}.\n{}{logs_text}",
                    bound.describe(limits),
                    done_so_far()
                ));
                results::with_page_fields(result, structured)
            }
        }
    }
}

/// The engine's thread: runs the script to its end, a bound, or an error.
fn run_script(
    script: &Script,
    names: &[String],
    limits: &CodeLimits,
    requests: mpsc::UnboundedSender<Request>,
    replies: std_mpsc::Receiver<(u32, CallToolResult)>,
) -> Outcome {
    let meter = Rc::new(Meter {
        started: Instant::now(),
        waited: Cell::new(Duration::ZERO),
        stopped: Cell::new(None),
        calls: RefCell::new(Vec::new()),
        logs: RefCell::new(Vec::new()),
        bytes: Cell::new(0),
    });
    let end = match engine(script, names, limits, &meter, requests, replies) {
        Ok(end) => end,
        Err(message) => End::Threw(message),
    };
    let end = match meter.stopped.get() {
        Some(bound) => End::Stopped(bound),
        None => end,
    };
    let calls = meter.calls.borrow().clone();
    let logs = meter.logs.borrow().clone();
    Outcome { end, calls, logs }
}

fn engine(
    script: &Script,
    names: &[String],
    limits: &CodeLimits,
    meter: &Rc<Meter>,
    requests: mpsc::UnboundedSender<Request>,
    replies: std_mpsc::Receiver<(u32, CallToolResult)>,
) -> Result<End, String> {
    let refused = Rc::new(Cell::new(false));
    let allocator = BoundedAllocator {
        limit: limits.memory,
        used: 0,
        refused: Rc::clone(&refused),
    };
    let runtime = Runtime::new_with_alloc(allocator)
        .map_err(|e| format!("could not start the engine: {e}"))?;
    runtime.set_max_stack_size(1 << 20);
    {
        let meter = Rc::clone(meter);
        let limits = limits.clone();
        runtime.set_interrupt_handler(Some(Box::new(move || meter.over(&limits).is_some())));
    }
    let context = Context::builder()
        .with::<(
            intrinsic::Date,
            intrinsic::Eval,
            intrinsic::RegExpCompiler,
            intrinsic::RegExp,
            intrinsic::Json,
            intrinsic::Proxy,
            intrinsic::MapSet,
            intrinsic::TypedArrays,
            intrinsic::Promise,
            intrinsic::WeakRef,
        )>()
        .build(&runtime)
        .map_err(|e| format!("could not start the engine: {e}"))?;
    let end = context.with(|ctx| drive(&ctx, script, names, limits, meter, &requests, &replies));
    // Out of memory, the engine may fail to make even its error and throw `null` instead of
    // "out of memory": a script that failed after the allocator refused it ran into the
    // memory bound, whatever it threw.
    let end = match end {
        Ok(End::Threw(_)) if meter.stopped.get().is_none() && refused.get() => {
            meter.stopped.set(Some(Bound::Memory));
            Ok(End::Stopped(Bound::Memory))
        }
        other => other,
    };
    drop(context);
    // The handler holds the meter; let the runtime go first.
    runtime.set_interrupt_handler(None);
    end
}

/// The engine's allocator: Rust's, counting what the engine holds and refusing past the
/// memory bound. It is the bound (not QuickJS's own limit) so that running into it is known for
/// certain: out of memory, QuickJS may throw `null` instead of its "out of memory" error.
struct BoundedAllocator {
    limit: usize,
    used: usize,
    refused: Rc<Cell<bool>>,
}

impl BoundedAllocator {
    /// Whether `more` bytes fit; notes the refusal when they do not.
    fn fits(&mut self, more: usize) -> bool {
        let fits = self.used.saturating_add(more) <= self.limit;
        if !fits {
            self.refused.set(true);
        }
        fits
    }

    /// `ptr`, just allocated by `RustAllocator` (or null), counted as held.
    fn counted(&mut self, ptr: *mut u8) -> *mut u8 {
        if !ptr.is_null() {
            // SAFETY: a non-null `ptr` was just allocated by RustAllocator.
            self.used += unsafe { RustAllocator::usable_size(ptr) };
        }
        ptr
    }
}

// SAFETY: every pointer comes from, and goes back to, `RustAllocator`, which upholds the
// trait's contract; this type only counts and refuses (a null pointer, which the contract
// allows).
unsafe impl Allocator for BoundedAllocator {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if !self.fits(size) {
            return std::ptr::null_mut();
        }
        let ptr = RustAllocator.alloc(size);
        self.counted(ptr)
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        let Some(total) = count.checked_mul(size) else {
            return std::ptr::null_mut();
        };
        if !self.fits(total) {
            return std::ptr::null_mut();
        }
        let ptr = RustAllocator.calloc(count, size);
        self.counted(ptr)
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        // SAFETY: the caller hands back a pointer this allocator (RustAllocator) made.
        unsafe {
            self.used = self.used.saturating_sub(RustAllocator::usable_size(ptr));
            RustAllocator.dealloc(ptr);
        }
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        // SAFETY: as for dealloc; on refusal the old block stays valid, as realloc's contract
        // says of a null answer.
        unsafe {
            let old = RustAllocator::usable_size(ptr);
            if new_size > old && !self.fits(new_size - old) {
                return std::ptr::null_mut();
            }
            let moved = RustAllocator.realloc(ptr, new_size);
            if !moved.is_null() {
                self.used = self.used.saturating_sub(old) + RustAllocator::usable_size(moved);
            }
            moved
        }
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        // SAFETY: as for dealloc.
        unsafe { RustAllocator::usable_size(ptr) }
    }
}

/// Within the context: sets up the globals (for Playwright code, also those Playwright MCP's
/// scripts have: script_page.js), starts the script and settles its calls until it ends.
fn drive<'js>(
    ctx: &Ctx<'js>,
    script: &Script,
    names: &[String],
    limits: &CodeLimits,
    meter: &Rc<Meter>,
    requests: &mpsc::UnboundedSender<Request>,
    replies: &std_mpsc::Receiver<(u32, CallToolResult)>,
) -> Result<End, String> {
    let setup = || -> rquickjs::Result<Function<'js>> {
        let call = {
            let meter = Rc::clone(meter);
            let limits = limits.clone();
            let requests = requests.clone();
            Function::new(
                ctx.clone(),
                move |ctx: Ctx<'js>,
                      tool: String,
                      args: String,
                      whole: bool|
                      -> rquickjs::Result<u32> {
                    if meter.over(&limits).is_some() {
                        return Err(rquickjs::Exception::throw_internal(&ctx, "stopped"));
                    }
                    let parsed: Option<JsonObject> = serde_json::from_str(&args).ok();
                    let Some(parsed) = parsed else {
                        return Err(rquickjs::Exception::throw_type(
                            &ctx,
                            &format!("tools.{tool}: the argument must be an object"),
                        ));
                    };
                    let id = meter.calls.borrow().len();
                    if id >= limits.calls {
                        meter.stopped.set(Some(Bound::Calls));
                        return Err(rquickjs::Exception::throw_internal(&ctx, "stopped"));
                    }
                    meter.calls.borrow_mut().push(InnerCall {
                        tool: tool.clone(),
                        args: Json::Object(parsed.clone()),
                        ok: None,
                    });
                    let id = id as u32;
                    let _ = requests.send(Request {
                        id,
                        tool,
                        args: parsed,
                        whole,
                    });
                    Ok(id)
                },
            )?
        };
        let log = {
            let meter = Rc::clone(meter);
            Function::new(ctx.clone(), move |line: String| {
                let mut logs = meter.logs.borrow_mut();
                if logs.len() < 1000 {
                    logs.push(line);
                }
            })?
        };
        let mut options = rquickjs::context::EvalOptions::default();
        options.filename = Some("prelude".into());
        let prelude: Function = ctx.eval_with_options(PRELUDE, options)?;
        let parts: rquickjs::Array = prelude.call((call, names.to_vec(), log))?;
        let tools: Object = parts.get(0)?;
        let console: Object = parts.get(1)?;
        let settle: Function = parts.get(2)?;
        let raw: Function = parts.get(3)?;
        options = rquickjs::context::EvalOptions::default();
        options.filename = Some("page".into());
        let make_page: Function = ctx.eval_with_options(PAGE, options)?;
        let made: rquickjs::Array = make_page.call((tools.clone(), raw))?;
        let page: Object = made.get(0)?;
        ctx.globals().set("tools", tools)?;
        ctx.globals().set("console", console)?;
        ctx.globals().set("page", page)?;
        if matches!(script, Script::Playwright(_)) {
            let globals: Object = made.get(1)?;
            for key in globals.keys::<String>() {
                let key = key?;
                let value: Value = globals.get(&key)?;
                ctx.globals().set(key, value)?;
            }
        }
        Ok(settle)
    };
    let settle = setup()
        .catch(ctx)
        .map_err(|e| format!("could not set up the engine: {e}"))?;
    let mut options = rquickjs::context::EvalOptions::default();
    options.filename = Some(FILENAME.into());
    options.strict = false;
    let promise: Promise = match ctx.eval_with_options(script.source(), options).catch(ctx) {
        Ok(promise) => promise,
        Err(e) => return Ok(thrown(e, limits, meter)),
    };
    loop {
        while ctx.execute_pending_job() {
            if meter.stopped.get().is_some() {
                break;
            }
        }
        if let Some(bound) = meter.stopped.get() {
            return Ok(End::Stopped(bound));
        }
        match promise.state() {
            PromiseState::Resolved => {
                let value: Value = promise
                    .result()
                    .expect("resolved")
                    .map_err(|e| e.to_string())?;
                return Ok(End::Returned(returned(ctx, value)));
            }
            PromiseState::Rejected => {
                let Some(Err(e)) = promise.result::<Value>().map(|r| r.catch(ctx)) else {
                    return Err("the script's promise was rejected without a reason".into());
                };
                return Ok(thrown(e, limits, meter));
            }
            PromiseState::Pending => {}
        }
        let in_flight = meter.calls.borrow().iter().any(|c| c.ok.is_none());
        if !in_flight {
            return Ok(End::Threw(
                "the script is waiting for a promise that nothing will settle (only the \
                 promises of tools.* calls settle here; there are no timers)"
                    .into(),
            ));
        }
        let left = limits.wall_time.saturating_sub(meter.started.elapsed());
        let waiting = Instant::now();
        let reply = replies.recv_timeout(left);
        meter.waited.set(meter.waited.get() + waiting.elapsed());
        let Ok((id, result)) = reply else {
            meter.stopped.set(Some(Bound::WallTime));
            return Ok(End::Stopped(Bound::WallTime));
        };
        let failed = result.is_error == Some(true);
        if let Some(call) = meter.calls.borrow_mut().get_mut(id as usize) {
            call.ok = Some(!failed);
        }
        let payload = if failed {
            text_of(&result)
        } else {
            json!({
                "text": text_of(&result),
                "data": result.structured_content.clone().unwrap_or(Json::Null),
            })
            .to_string()
        };
        let bytes = meter.bytes.get() + payload.len();
        meter.bytes.set(bytes);
        if bytes > limits.bytes {
            meter.stopped.set(Some(Bound::Bytes));
            return Ok(End::Stopped(Bound::Bytes));
        }
        if let Err(e) = settle.call::<_, ()>((id, !failed, payload)).catch(ctx) {
            return Ok(thrown(e, limits, meter));
        }
    }
}

/// The text blocks of a result, joined.
fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The script's return value as the tool's text: a string as-is, the rest as JSON.
fn returned<'js>(ctx: &Ctx<'js>, value: Value<'js>) -> String {
    if let Some(s) = value.as_string() {
        return s.to_string().unwrap_or_default();
    }
    if value.is_undefined() {
        return "(the script returned nothing)".into();
    }
    match ctx.json_stringify(value) {
        Ok(Some(s)) => s.to_string().unwrap_or_default(),
        Ok(None) => "(the script returned a value JSON cannot hold)".into(),
        Err(e) => format!("(the script's value could not be turned into JSON: {e})"),
    }
}

/// How a thrown value reads: its message and the script's line.
fn thrown(e: CaughtError<'_>, limits: &CodeLimits, meter: &Meter) -> End {
    if let Some(bound) = meter.stopped.get() {
        return End::Stopped(bound);
    }
    match e {
        CaughtError::Exception(exception) => {
            let message = exception.message().unwrap_or_default();
            if message.contains("out of memory") {
                meter.stopped.set(Some(Bound::Memory));
                return End::Stopped(Bound::Memory);
            }
            if message == "interrupted" {
                if let Some(bound) = meter.over(limits) {
                    return End::Stopped(bound);
                }
            }
            let name: String = exception
                .as_object()
                .get::<_, rquickjs::Coerced<String>>("name")
                .map(|n| n.0)
                .unwrap_or_else(|_| "Error".into());
            let line = exception.stack().as_deref().and_then(script_line);
            match line {
                Some(line) => End::Threw(format!("{name}: {message} (line {line})")),
                None => End::Threw(format!("{name}: {message}")),
            }
        }
        CaughtError::Value(value) => {
            let text = value
                .as_string()
                .and_then(|s| s.to_string().ok())
                .or_else(|| {
                    value
                        .ctx()
                        .json_stringify(value.clone())
                        .ok()
                        .flatten()
                        .and_then(|s| s.to_string().ok())
                })
                .unwrap_or_else(|| "a value".into());
            End::Threw(format!("the script threw {text}"))
        }
        CaughtError::Error(e) => {
            if matches!(e, rquickjs::Error::Allocation) {
                meter.stopped.set(Some(Bound::Memory));
                return End::Stopped(Bound::Memory);
            }
            End::Threw(e.to_string())
        }
    }
}

/// The first line of the script named in a stack trace (`code:LINE:COL`).
fn script_line(stack: &str) -> Option<u32> {
    let marker = format!("{FILENAME}:");
    let at = stack.find(&marker)?;
    let rest = &stack[at + marker.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}
