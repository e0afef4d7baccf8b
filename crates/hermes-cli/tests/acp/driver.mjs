#!/usr/bin/env node
// A generic ACP (Agent Client Protocol v1) test client for `hermes acp`, built on the official
// TypeScript SDK's client side (`@agentclientprotocol/sdk`, stable v1 entrypoint).
//
//   ACP_SDK=$HERMES_MCP_PEERS/acp/node_modules node driver.mjs scenario.json
//
// It spawns the scenario's agent, speaks ACP to it over stdio through the SDK, runs the
// scenario's steps in order and prints ONE JSON object on stdout (exit 0); an unexpected
// failure prints {"fatal": "..."} (exit 1). README.md beside this file documents the scenario
// and output formats.
import { spawn } from "node:child_process";
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import util from "node:util";
import { pathToFileURL } from "node:url";

const DEFAULT_TIMEOUT_MS = 30000;
const DEFAULT_RAW_WAIT_MS = 500;
const CLOSE_WAIT_MS = 10000;
const DEFAULT_CAPABILITIES = { fs: { readTextFile: true, writeTextFile: true }, terminal: true };
const PERMISSION_KINDS = ["allow_once", "allow_always", "reject_once", "reject_always"];

const out = {
  results: [],
  updates: [],
  permission_requests: [],
  fs_reads: [],
  fs_writes: [],
  terminal_calls: [],
  raw_stdout: [],
  raw_stdin: [],
  client_errors: [],
  other_messages: [],
  sdk_log: [],
  agent_exit: null,
  session_id: null,
  protocol_version: null,
};

// ---------------------------------------------------------------------------------------------
// stdout belongs to the final JSON object alone: anything the SDK (or this script) logs through
// console.* is kept in `sdk_log` and echoed to stderr.
let emitted = false;
function emit(obj, code) {
  if (emitted) return;
  emitted = true;
  process.stdout.write(JSON.stringify(obj) + "\n", () => process.exit(code));
}
function fatal(err) {
  const message = err instanceof Error ? err.message : String(err);
  emit({ fatal: message, stack: err instanceof Error ? err.stack ?? null : null, partial: out }, 1);
}
for (const level of ["log", "info", "warn", "error", "debug", "trace"]) {
  console[level] = (...args) => {
    const text = util.formatWithOptions({ depth: 6, breakLength: Infinity }, ...args);
    out.sdk_log.push(text);
    process.stderr.write(`[driver ${level}] ${text}\n`);
  };
}
process.on("unhandledRejection", (reason) => {
  console.error("unhandled rejection:", reason instanceof Error ? reason.message : reason);
});
process.on("uncaughtException", (err) => fatal(err));

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
// Lets every notification handler the SDK has already dispatched finish (they run as
// microtasks), so updates sent before a response are recorded before the step's result.
const drain = () => new Promise((resolve) => setImmediate(resolve));

// Subset match: every key of `want` must match `got`; an array in `want` means "any of".
function matchValue(got, want) {
  if (Array.isArray(want)) return want.some((alt) => matchValue(got, alt));
  if (want !== null && typeof want === "object") {
    if (got === null || typeof got !== "object") return false;
    return Object.entries(want).every(([k, v]) => matchValue(got[k], v));
  }
  return got === want;
}
function matchUpdate(update, pattern) {
  for (const [key, want] of Object.entries(pattern)) {
    if (key === "title_contains") {
      if (typeof update?.title !== "string" || !update.title.includes(want)) return false;
    } else if (key === "text_contains") {
      const text = update?.content?.text;
      if (typeof text !== "string" || !text.includes(want)) return false;
    } else if (key === "permission_request") {
      continue; // handled by the permission handler, not by updates
    } else if (!matchValue(update?.[key], want)) {
      return false;
    }
  }
  return true;
}

function errorInfo(err) {
  if (err && typeof err === "object" && typeof err.code === "number") {
    return { code: err.code, message: String(err.message ?? ""), data: err.data ?? null };
  }
  return {
    code: null,
    message: err instanceof Error ? err.message : String(err),
    data: err?.timeout ? { timeout: true } : null,
  };
}

async function main() {
  // ------------------------------------------------------------------------------ scenario, SDK
  const scenarioPath = process.argv[2];
  if (!scenarioPath) throw new Error("usage: node driver.mjs SCENARIO.json");
  const scenario = JSON.parse(fs.readFileSync(scenarioPath, "utf8"));
  if (!Array.isArray(scenario.agent) || scenario.agent.length === 0) {
    throw new Error('scenario.agent must be a non-empty array, e.g. ["/path/hermes", "acp"]');
  }
  const steps = Array.isArray(scenario.steps) ? scenario.steps : [];
  const buffers = scenario.buffers ?? {};
  const defaultTimeout = scenario.timeout_ms ?? DEFAULT_TIMEOUT_MS;

  const sdkRoot = process.env.ACP_SDK;
  if (!sdkRoot) throw new Error("ACP_SDK must name the node_modules dir holding @agentclientprotocol/sdk");
  const pkgDir = path.join(path.resolve(sdkRoot), "@agentclientprotocol", "sdk");
  const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8"));
  const entry = pkg.exports?.["."]?.import ?? pkg.main;
  const acp = await import(pathToFileURL(path.join(pkgDir, entry)).href);
  const { client, methods, ndJsonStream, RequestError } = acp;
  if (typeof client !== "function" || !methods || typeof ndJsonStream !== "function") {
    throw new Error(`@agentclientprotocol/sdk ${pkg.version} lacks client()/methods/ndJsonStream`);
  }
  // The SDK hands the agent's responses over unvalidated; the driver checks them against the
  // SDK's own generated v1 zod schemas (an internal module of the pinned version) and notes a
  // mismatch as `schema_error` on the step's result.
  const responseSchemas = {};
  try {
    const z = await import(pathToFileURL(path.join(pkgDir, "dist", "v1", "schema", "zod.gen.js")).href);
    const pairs = {
      initialize: z.zInitializeResponse,
      authenticate: z.zAuthenticateResponse,
      logout: z.zLogoutResponse,
      "session/new": z.zNewSessionResponse,
      "session/load": z.zLoadSessionResponse,
      "session/list": z.zListSessionsResponse,
      "session/resume": z.zResumeSessionResponse,
      "session/close": z.zCloseSessionResponse,
      "session/delete": z.zDeleteSessionResponse,
      "session/set_mode": z.zSetSessionModeResponse,
      "session/set_config_option": z.zSetSessionConfigOptionResponse,
      "session/prompt": z.zPromptResponse,
    };
    for (const [m, schema] of Object.entries(pairs)) if (schema?.safeParse) responseSchemas[m] = schema;
  } catch (e) {
    console.error(`response schemas unavailable (${e.message}); responses are not checked`);
  }

  // ------------------------------------------------------------------------------ agent process
  const env = { ...process.env };
  for (const [k, v] of Object.entries(scenario.env ?? {})) {
    if (v === null) delete env[k];
    else env[k] = String(v);
  }
  const stderrFd = scenario.stderr ? fs.openSync(scenario.stderr, "w") : "ignore";
  const agent = spawn(scenario.agent[0], scenario.agent.slice(1), {
    cwd: scenario.cwd ?? undefined,
    env,
    stdio: ["pipe", "pipe", stderrFd],
  });
  await new Promise((resolve, reject) => {
    agent.once("spawn", resolve);
    agent.once("error", (e) => reject(new Error(`cannot start agent ${scenario.agent[0]}: ${e.message}`)));
  });
  if (typeof stderrFd === "number") fs.closeSync(stderrFd);
  let agentExit = null;
  const agentExited = new Promise((resolve) => {
    agent.on("exit", (code, signal) => {
      agentExit = { exit_code: code, signal };
      resolve();
    });
  });
  agent.stdin.on("error", (e) => console.error("agent stdin:", e.message));

  // Messages the agent sent that carry an id and a method (its requests to us), by id, so the
  // handlers can record the params exactly as sent (the SDK hands them over schema-parsed,
  // with unknown keys stripped).
  const agentRequests = new Map();
  const idKey = (id) => JSON.stringify(id ?? null);

  // Tee of the agent's stdout: every line is kept in raw_stdout, then fed to the SDK.
  let inputController;
  const input = new ReadableStream({
    start(controller) {
      inputController = controller;
    },
  });
  let inputOpen = true;
  const onAgentLine = (bytes) => {
    const text = bytes.toString("utf8").replace(/\r$/, "");
    out.raw_stdout.push(text);
    try {
      const msg = JSON.parse(text);
      if (msg && typeof msg === "object" && typeof msg.method === "string" && "id" in msg) {
        agentRequests.set(idKey(msg.id), msg);
      }
    } catch {
      // not JSON: the SDK answers it with a parse error on its own
    }
    if (inputOpen) inputController.enqueue(new Uint8Array(Buffer.concat([bytes, Buffer.from("\n")])));
  };
  let pending = Buffer.alloc(0);
  agent.stdout.on("data", (chunk) => {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    let nl;
    while ((nl = pending.indexOf(10)) >= 0) {
      onAgentLine(pending.subarray(0, nl));
      pending = pending.subarray(nl + 1);
    }
  });
  agent.stdout.on("end", () => {
    if (pending.length) onAgentLine(pending);
    pending = Buffer.alloc(0);
    if (inputOpen) {
      inputOpen = false;
      try {
        inputController.close();
      } catch {
        // the SDK already cancelled its side of the stream
      }
    }
  });

  // What the driver writes to the agent: kept in raw_stdin; error answers to the agent's
  // requests (ours or the SDK's own validation failures) are also kept in client_errors.
  const writeToAgent = (text) =>
    new Promise((resolve, reject) => {
      if (agent.stdin.destroyed || agent.stdin.writableEnded) {
        reject(new Error("agent stdin is closed"));
        return;
      }
      agent.stdin.write(text, (err) => (err ? reject(err) : resolve()));
    });
  const observeOutgoing = (text) => {
    for (const line of text.split("\n")) {
      if (!line) continue;
      out.raw_stdin.push(line);
      try {
        const msg = JSON.parse(line);
        if (msg && !("method" in msg) && "id" in msg && msg.error) {
          const req = agentRequests.get(idKey(msg.id));
          out.client_errors.push({ id: msg.id, method: req?.method ?? null, error: msg.error });
          agentRequests.delete(idKey(msg.id));
        } else if (msg && !("method" in msg) && "id" in msg) {
          agentRequests.delete(idKey(msg.id));
        }
      } catch {
        // our own output is always JSON
      }
    }
  };
  const output = new WritableStream({
    write(chunk) {
      const text = Buffer.from(chunk).toString("utf8");
      observeOutgoing(text);
      return writeToAgent(text);
    },
  });

  // ------------------------------------------------------------------------------ client state
  let currentSession = null;
  const cancelWatches = new Set(); // {sessionId, pattern, index, permissionIndex}
  const waiters = new Set(); // wait_for_update: {pattern, resolve}
  const heldPermissions = []; // "wait" permissions: {sessionId, resolve}
  const cancelledSessions = new Set();
  let conn = null;

  const rawParams = (requestId, parsed) => {
    const raw = agentRequests.get(idKey(requestId));
    return raw && raw.params !== undefined ? raw.params : parsed;
  };

  const sendCancel = (sessionId) => {
    cancelledSessions.add(sessionId);
    const sent = conn.agent.notify(methods.agent.session.cancel, { sessionId });
    // Per ACP, a client that cancels answers its pending permission requests with "cancelled".
    for (const held of heldPermissions.splice(0)) {
      if (held.sessionId === sessionId) held.resolve({ outcome: { outcome: "cancelled" } });
      else heldPermissions.push(held);
    }
    return sent;
  };

  const onUpdate = (params) => {
    const index = out.updates.length;
    out.updates.push(params);
    const update = params?.update ?? {};
    for (const watch of cancelWatches) {
      if (watch.index !== null || watch.permissionIndex !== null) continue;
      if (watch.pattern.permission_request) continue;
      if (params?.sessionId !== watch.sessionId || !matchUpdate(update, watch.pattern)) continue;
      watch.index = index;
      sendCancel(watch.sessionId).catch((e) => console.error("session/cancel:", e.message));
    }
    for (const w of waiters) {
      if (matchUpdate(update, w.pattern) && (!w.sessionId || w.sessionId === params?.sessionId)) {
        waiters.delete(w);
        w.resolve(index);
      }
    }
  };

  const permissionChoice = (index) => {
    const p = scenario.permission ?? "allow_once";
    if (Array.isArray(p)) return p.length ? p[Math.min(index, p.length - 1)] : "allow_once";
    return p;
  };

  // ------------------------------------------------------------------------------ terminals
  const terminals = new Map();
  let nextTerminal = 1;
  const terminalOf = (params) => {
    const t = terminals.get(params.terminalId);
    if (!t) throw new RequestError(-32002, `Resource not found: terminal ${params.terminalId}`, { terminalId: params.terminalId });
    return t;
  };
  const killTerminal = (t) => {
    if (t.status) return;
    try {
      process.kill(-t.child.pid, "SIGKILL");
    } catch {
      try {
        t.child.kill("SIGKILL");
      } catch {
        // already gone
      }
    }
  };
  const createTerminal = async (params) => {
    const tenv = { ...process.env };
    for (const v of params.env ?? []) tenv[v.name] = v.value;
    const args = params.args ?? [];
    const opts = { cwd: params.cwd ?? undefined, env: tenv, detached: true, stdio: ["ignore", "pipe", "pipe"] };
    // Without args the command is a shell command line (as editors run it); with args, a program.
    const child = args.length ? spawn(params.command, args, opts) : spawn(params.command, { ...opts, shell: "/bin/sh" });
    try {
      await new Promise((resolve, reject) => {
        child.once("spawn", resolve);
        child.once("error", reject);
      });
    } catch (e) {
      throw RequestError.internalError({ details: `cannot run ${params.command}: ${e.message}` });
    }
    const t = {
      child,
      limit: typeof params.outputByteLimit === "number" ? params.outputByteLimit : null,
      buf: Buffer.alloc(0),
      truncated: false,
      status: null,
    };
    const append = (chunk) => {
      let buf = Buffer.concat([t.buf, chunk]);
      if (t.limit !== null && buf.length > t.limit) {
        let start = buf.length - t.limit;
        while (start < buf.length && (buf[start] & 0xc0) === 0x80) start++; // keep UTF-8 whole
        buf = Buffer.from(buf.subarray(start));
        t.truncated = true;
      }
      t.buf = buf;
    };
    child.stdout.on("data", append);
    child.stderr.on("data", append);
    t.done = new Promise((resolve) => {
      let exited = false;
      child.on("exit", (code, signal) => {
        exited = true;
        t.status = { exitCode: code, signal };
        // Output pipes can outlive the process (background grandchildren); don't wait forever.
        setTimeout(resolve, 300);
      });
      child.on("close", () => exited && resolve());
    });
    const terminalId = `term-${nextTerminal++}`;
    terminals.set(terminalId, t);
    return { terminalId };
  };

  // ------------------------------------------------------------------------------ the SDK client
  const identity = (p) => p;
  const app = client({ name: "hermes-acp-test-driver" })
    // The SDK's session-update router validates every session/update against the v1 schema
    // before this handler (an invalid one is dropped and logged to sdk_log); the identity
    // parser keeps the params exactly as the agent sent them.
    .onNotification(methods.client.session.update, identity, ({ params }) => onUpdate(params))
    .onRequest(methods.client.session.requestPermission, async ({ params, requestId }) => {
      const index = out.permission_requests.length;
      out.permission_requests.push(rawParams(requestId, params));
      for (const watch of cancelWatches) {
        if (watch.pattern.permission_request && watch.permissionIndex === null && watch.index === null && watch.sessionId === params.sessionId) {
          watch.permissionIndex = index;
          sendCancel(watch.sessionId).catch((e) => console.error("session/cancel:", e.message));
        }
      }
      const choice = permissionChoice(index);
      if (choice === "cancelled" || cancelledSessions.has(params.sessionId)) {
        return { outcome: { outcome: "cancelled" } };
      }
      if (choice === "wait") {
        return new Promise((resolve) => heldPermissions.push({ sessionId: params.sessionId, resolve }));
      }
      if (!PERMISSION_KINDS.includes(choice)) console.error(`unknown permission choice ${choice}`);
      const option = (params.options ?? []).find((o) => o.kind === choice);
      if (!option) {
        console.error(`permission request offers no option of kind ${choice}; answering cancelled`);
        return { outcome: { outcome: "cancelled" } };
      }
      return { outcome: { outcome: "selected", optionId: option.optionId } };
    })
    .onRequest(methods.client.fs.readTextFile, async ({ params, requestId }) => {
      out.fs_reads.push(rawParams(requestId, params));
      let text;
      if (Object.hasOwn(buffers, params.path)) {
        text = String(buffers[params.path]);
      } else {
        try {
          text = await fsp.readFile(params.path, "utf8");
        } catch (e) {
          if (e.code === "ENOENT" || e.code === "ENOTDIR") throw RequestError.resourceNotFound(params.path);
          throw RequestError.internalError({ details: `${params.path}: ${e.message}` });
        }
      }
      if (params.line != null || params.limit != null) {
        const lines = text.split(/(?<=\n)/);
        const start = Math.max(0, (params.line ?? 1) - 1);
        const end = params.limit != null ? start + params.limit : lines.length;
        text = lines.slice(start, end).join("");
      }
      return { content: text };
    })
    .onRequest(methods.client.fs.writeTextFile, async ({ params, requestId }) => {
      out.fs_writes.push(rawParams(requestId, params));
      try {
        await fsp.mkdir(path.dirname(params.path), { recursive: true });
        await fsp.writeFile(params.path, params.content, "utf8");
      } catch (e) {
        throw RequestError.internalError({ details: `${params.path}: ${e.message}` });
      }
      if (Object.hasOwn(buffers, params.path)) buffers[params.path] = params.content;
      return {};
    })
    .onRequest(methods.client.terminal.create, async ({ params, requestId }) => {
      out.terminal_calls.push({ method: methods.client.terminal.create, params: rawParams(requestId, params) });
      return createTerminal(params);
    })
    .onRequest(methods.client.terminal.output, async ({ params, requestId }) => {
      out.terminal_calls.push({ method: methods.client.terminal.output, params: rawParams(requestId, params) });
      const t = terminalOf(params);
      const res = { output: t.buf.toString("utf8"), truncated: t.truncated };
      if (t.status) res.exitStatus = { ...t.status };
      return res;
    })
    .onRequest(methods.client.terminal.waitForExit, async ({ params, requestId }) => {
      out.terminal_calls.push({ method: methods.client.terminal.waitForExit, params: rawParams(requestId, params) });
      const t = terminalOf(params);
      await t.done;
      return { ...t.status };
    })
    .onRequest(methods.client.terminal.kill, async ({ params, requestId }) => {
      out.terminal_calls.push({ method: methods.client.terminal.kill, params: rawParams(requestId, params) });
      killTerminal(terminalOf(params));
      return {};
    })
    .onRequest(methods.client.terminal.release, async ({ params, requestId }) => {
      out.terminal_calls.push({ method: methods.client.terminal.release, params: rawParams(requestId, params) });
      const t = terminalOf(params);
      killTerminal(t);
      terminals.delete(params.terminalId);
      return {};
    })
    .onRequest("*", ({ method, params, requestId }) => {
      out.other_messages.push({ kind: "request", method, params: rawParams(requestId, params) ?? null });
      throw RequestError.methodNotFound(method);
    })
    .onNotification("*", ({ method, params }) => {
      out.other_messages.push({ kind: "notification", method, params: params ?? null });
    });

  conn = app.connect(ndJsonStream(output, input));
  const ctx = conn.agent;

  // ------------------------------------------------------------------------------ steps
  const withTimeout = (promise, ms, what) => {
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => {
        const e = new Error(`timeout: ${what} got no answer within ${ms} ms`);
        e.timeout = true;
        reject(e);
      }, ms);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
  };
  const call = async (method, params, ms) => {
    try {
      const response = await withTimeout(ctx.request(method, params), ms, method);
      await drain();
      const res = { ok: true, response: response ?? null };
      const checked = responseSchemas[method]?.safeParse(response ?? {});
      if (checked && !checked.success) res.schema_error = checked.error.issues;
      return res;
    } catch (e) {
      await drain();
      return { ok: false, error: errorInfo(e) };
    }
  };
  const session = (id) => (id === undefined || id === "$current" ? currentSession : id);
  const withSession = (params) =>
    params && typeof params === "object" && params.sessionId === "$current" ? { ...params, sessionId: currentSession } : params;

  let closed = false;
  const closeAgent = async () => {
    closed = true;
    if (!agent.stdin.writableEnded) agent.stdin.end();
    let killed = false;
    if (!agentExit) await Promise.race([agentExited, sleep(CLOSE_WAIT_MS)]);
    if (!agentExit) {
      killed = true;
      agent.kill("SIGKILL");
      await Promise.race([agentExited, sleep(2000)]);
    }
    out.agent_exit = { ...(agentExit ?? { exit_code: null, signal: null }), killed };
    return out.agent_exit;
  };

  const background = [];
  const prompt = async (step, sessionId) => {
    const blocks = step.prompt ?? [
      ...(step.text !== undefined ? [{ type: "text", text: step.text }] : []),
      ...(step.resources ?? []),
    ];
    cancelledSessions.delete(sessionId); // a new turn: permissions are answered normally again
    const watch = step.cancel_on ? { sessionId, pattern: step.cancel_on, index: null, permissionIndex: null } : null;
    if (watch) cancelWatches.add(watch);
    const res = await call(methods.agent.session.prompt, { sessionId, prompt: blocks }, step.timeout_ms ?? defaultTimeout);
    if (watch) {
      cancelWatches.delete(watch);
      res.cancel_sent_at_update = watch.index;
      if (watch.pattern.permission_request) res.cancel_sent_at_permission = watch.permissionIndex;
    }
    return res;
  };

  const runStep = async (step) => {
    const ms = step.timeout_ms ?? defaultTimeout;
    switch (step.op) {
      case "initialize": {
        const params = step.params ?? {
          protocolVersion: step.protocolVersion ?? 1,
          clientCapabilities: step.clientCapabilities ?? DEFAULT_CAPABILITIES,
          clientInfo: { name: "hermes-acp-test-driver", version: "1" },
        };
        const res = await call(methods.agent.initialize, params, ms);
        if (res.ok) out.protocol_version = res.response?.protocolVersion ?? null;
        return res;
      }
      case "new_session": {
        const params = step.params ?? {
          cwd: step.cwd ?? scenario.cwd ?? process.cwd(),
          mcpServers: step.mcpServers ?? [],
          ...(step.additionalDirectories ? { additionalDirectories: step.additionalDirectories } : {}),
        };
        const res = await call(methods.agent.session.new, params, ms);
        if (res.ok && res.response?.sessionId) currentSession = res.response.sessionId;
        return res;
      }
      case "load_session": {
        const sessionId = session(step.sessionId);
        const params = withSession(step.params) ?? {
          sessionId,
          cwd: step.cwd ?? scenario.cwd ?? process.cwd(),
          mcpServers: step.mcpServers ?? [],
        };
        const res = await call(methods.agent.session.load, params, ms);
        if (res.ok) currentSession = params.sessionId;
        return res;
      }
      case "prompt":
      case "prompt_session": {
        const sessionId = step.op === "prompt" ? session(step.sessionId) : step.sessionId;
        if (step.nowait) return { deferred: prompt(step, sessionId) };
        return prompt(step, sessionId);
      }
      case "set_mode":
        return call(methods.agent.session.setMode, withSession(step.params) ?? { sessionId: session(step.sessionId), modeId: step.modeId }, ms);
      case "set_config_option": {
        const params = withSession(step.params) ?? {
          sessionId: session(step.sessionId),
          configId: step.configId,
          ...(step.type ? { type: step.type } : {}),
          value: step.value,
        };
        return call(methods.agent.session.setConfigOption, params, ms);
      }
      case "request":
        return call(step.method, withSession(step.params ?? {}), ms);
      case "notify":
      case "cancel": {
        try {
          if (step.op === "cancel") await sendCancel(session(step.sessionId));
          else await ctx.notify(step.method, withSession(step.params ?? {}));
          await drain();
          return { ok: true, response: null };
        } catch (e) {
          return { ok: false, error: errorInfo(e) };
        }
      }
      case "wait_for_update": {
        const pattern = step.match ?? {};
        const sessionId = step.sessionId ? session(step.sessionId) : null;
        const from = step.from ?? 0;
        const found = out.updates.findIndex(
          (u, i) => i >= from && matchUpdate(u?.update ?? {}, pattern) && (!sessionId || u?.sessionId === sessionId),
        );
        if (found >= 0) return { ok: true, response: { index: found } };
        let waiter;
        const wait = new Promise((resolve) => {
          waiter = { pattern, sessionId, resolve };
          waiters.add(waiter);
        });
        try {
          return { ok: true, response: { index: await withTimeout(wait, ms, "wait_for_update") } };
        } catch (e) {
          waiters.delete(waiter);
          return { ok: false, error: errorInfo(e) };
        }
      }
      case "raw": {
        const before = out.raw_stdout.length;
        const line = String(step.line);
        try {
          observeOutgoing(line + "\n");
          await writeToAgent(line + "\n");
        } catch (e) {
          return { ok: false, error: errorInfo(e) };
        }
        await sleep(step.wait_ms ?? DEFAULT_RAW_WAIT_MS);
        return { ok: true, response: { stdout: out.raw_stdout.slice(before) } };
      }
      case "sleep":
        await sleep(step.ms ?? 0);
        await drain();
        return { ok: true, response: null };
      case "close":
        return { ok: true, response: await closeAgent() };
      default:
        return { ok: false, error: { code: null, message: `unknown op ${JSON.stringify(step.op)}`, data: null } };
    }
  };

  for (const step of steps) {
    const slot = { op: step.op, ...(step.name !== undefined ? { name: step.name } : {}) };
    out.results.push(slot);
    let res;
    try {
      res = await runStep(step);
    } catch (e) {
      res = { ok: false, error: errorInfo(e) };
    }
    if (res.deferred) {
      // a nowait prompt: its result lands in this slot when it settles
      Object.assign(slot, { ok: null, pending: true });
      background.push(
        res.deferred.then((r) => {
          delete slot.pending;
          Object.assign(slot, r);
        }),
      );
    } else {
      Object.assign(slot, res);
    }
  }
  if (!closed) await closeAgent();
  await Promise.allSettled(background);
  await drain();
  for (const t of terminals.values()) killTerminal(t);
  for (const held of heldPermissions.splice(0)) held.resolve({ outcome: { outcome: "cancelled" } });
  conn.close();
  out.session_id = currentSession;
  emit(out, 0);
}

main().catch(fatal);
