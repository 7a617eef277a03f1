/**
 * The program of the Node child that hosts a custom engine (README, "Out of process"). It is
 * kept as JavaScript text, run with `node --input-type=module -e`, because the child must start
 * from plain Node whatever built this package (tests run the TypeScript sources, users run
 * `dist/`), and a file next to the sources would not be published. It speaks newline-delimited
 * JSON on fd 3 (stdout and stderr stay the engine's own console) and trusts only the parent.
 *
 * Before the engine module loads, a resolve hook (`module.register`) and a wrapper of CommonJS
 * resolution refuse any module outside the engine's roots (the verified engine folder and pack)
 * other than `node:` built-ins: a bare import of a package the pack does not ship must fail, not
 * resolve upward into a writable `node_modules` (issue 9, W1).
 */

/** Marker carried by the message of a refused resolution, across the hooks thread. */
export const RESOLVE_REFUSED_MARKER = '[packwarden:resolve-refused]';

const SHARED = String.raw`
const MARKER = '[packwarden:resolve-refused]';
function insideRoots(roots, path, rel, sep, isAbsolute) {
  return roots.some((root) => {
    const r = rel(root, path);
    return r === '' || (r !== '..' && !r.startsWith('..' + sep) && !isAbsolute(r));
  });
}
`;

/** The ES module registered with `module.register`: `initialize({ roots })` and `resolve`. */
export const RESOLVE_HOOKS_SOURCE = String.raw`
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { relative, isAbsolute, sep } from 'node:path';
${SHARED}
let roots = [];
export function initialize(data) { roots = Array.isArray(data && data.roots) ? data.roots : []; }
function allowed(url) {
  if (url.startsWith('node:')) return true;
  if (!url.startsWith('file:')) return false;
  let path = fileURLToPath(url);
  try { path = realpathSync(path); } catch {}
  return insideRoots(roots, path, relative, sep, isAbsolute);
}
export async function resolve(specifier, context, nextResolve) {
  const result = await nextResolve(specifier, context);
  if (!allowed(result.url)) {
    const error = new Error(MARKER + ' ' + JSON.stringify(specifier) + ' resolves to ' + result.url + ', outside the verified engine and pack');
    error.code = 'ERR_PACKWARDEN_RESOLVE_REFUSED';
    throw error;
  }
  return result;
}
`;

/** The child's main program. */
export const ENGINE_CHILD_SOURCE = String.raw`
import { Socket } from 'node:net';
import Module, { register } from 'node:module';
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { relative, isAbsolute, sep } from 'node:path';
${SHARED}
const channel = new Socket({ fd: 3, readable: true, writable: true });
function send(message) {
  let line;
  try { line = JSON.stringify(message); } catch {
    line = JSON.stringify({ ...message, input: undefined, output: '[unserializable]' });
  }
  channel.write(line + '\n');
}
function errorOf(value) {
  const e = value !== null && typeof value === 'object' ? value : { message: String(value) };
  const out = { message: typeof e.message === 'string' ? e.message : String(value) };
  if (typeof e.code === 'string') out.code = e.code;
  if (out.message.includes(MARKER)) out.code = 'engine_resolve_refused';
  if (e.retryable === true) out.retryable = true;
  return out;
}
process.on('unhandledRejection', (reason) => {
  send({ t: 'log', level: 'warn', message: 'unhandled rejection in the engine: ' + errorOf(reason).message });
});
process.on('uncaughtException', (error) => {
  send({ t: 'log', level: 'error', message: 'uncaught exception in the engine: ' + errorOf(error).message });
  channel.end(() => process.exit(70));
});

let Engine;
let instance;
const runs = new Map();

function hidden(target, key, value) {
  if (value !== undefined) Object.defineProperty(target, key, { value, enumerable: false, writable: false });
  return target;
}
function routingOf(data) {
  const routing = { ...data.routing };
  delete routing.apiKey;
  return Object.freeze(hidden(routing, 'apiKey', data.routing && data.routing.apiKey));
}
function loggerFor(id) {
  const log = (level) => (message) => send({ t: 'log', id, level, message: String(message) });
  return Object.freeze({ debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') });
}
function answerOf(outcome) {
  const answered = outcome && outcome.outcome === 'answered';
  return {
    outcome: outcome && typeof outcome.outcome === 'string' ? outcome.outcome : 'cancelled',
    selected: answered && Array.isArray(outcome.selected) ? outcome.selected : [],
    freeText: answered && typeof outcome.freeText === 'string' ? outcome.freeText : null,
    declined: outcome && outcome.outcome === 'declined',
    timedOut: outcome && outcome.outcome === 'timeout',
    cancelled: !outcome || outcome.outcome === 'cancelled',
  };
}

// The contract passes tool input and results as JSON text; a text that is a JSON object or
// array travels as that value (drivers render structure), anything else as the string itself.
function structured(value) {
  if (typeof value !== 'string') return value;
  const first = value.trimStart()[0];
  if (first !== '{' && first !== '[') return value;
  try { return JSON.parse(value); } catch { return value; }
}
function emitterFor(id, run) {
  const call = (method, payload) => new Promise((resolve) => {
    if (run.ended) return resolve(undefined);
    const seq = ++run.seq;
    run.pending.set(seq, resolve);
    send({ t: 'emit', id, seq, method, ...payload });
  });
  const toolIds = new Map();
  let tools = 0;
  const text = (value) => (typeof value === 'string' ? value : String(value ?? ''));
  return Object.freeze({
    text: (delta) => call('text', { delta: text(delta) }),
    thinking: (delta) => call('thinking', { delta: text(delta) }),
    toolStart(first, input, toolCallId) {
      if (first !== null && typeof first === 'object')
        return call('toolStart', { toolCallId: text(first.toolCallId), name: text(first.name), input: first.input });
      const name = text(first ?? 'tool');
      const callId = toolCallId === undefined || toolCallId === null || toolCallId === '' ? 'tool-' + ++tools : text(toolCallId);
      toolIds.set(name, callId);
      return call('toolStart', { toolCallId: callId, name, input: structured(input) });
    },
    toolEnd(first, toolCallId, result, isError) {
      if (first !== null && typeof first === 'object')
        return call('toolEnd', { toolCallId: text(first.toolCallId), name: text(first.name), output: first.output, isError: first.isError === true });
      const name = text(first ?? 'tool');
      const callId = toolCallId === undefined || toolCallId === null || toolCallId === '' ? toolIds.get(name) ?? 'tool-' + ++tools : text(toolCallId);
      return call('toolEnd', { toolCallId: callId, name, output: structured(result), isError: isError === true });
    },
    progress: (message) => call('progress', { message: text(message) }),
    async question(payload) {
      const p = payload !== null && typeof payload === 'object' ? payload : { prompt: text(payload) };
      const options = Array.isArray(p.options)
        ? p.options.map((o) => (o !== null && typeof o === 'object' ? text(o.label) : text(o)))
        : undefined;
      const request = { prompt: text(p.prompt) };
      if (options !== undefined) request.options = options;
      if (typeof p.timeoutMs === 'number') request.timeoutMs = p.timeoutMs;
      return answerOf(await call('question', request));
    },
    error: (value) => call('error', errorOf(value)),
    done: (result) => call('done', result && typeof result.nativeSessionId === 'string' ? { nativeSessionId: result.nativeSessionId } : {}),
    warning: (code, message) => call('warning', { code: text(code), message: text(message) }),
    session: (nativeSessionId) => call('session', { nativeSessionId: text(nativeSessionId) }),
    log: (level, message) => send({ t: 'log', id, level: text(level), message: text(message) }),
  });
}

async function runTurn(id, data) {
  const run = { seq: 0, pending: new Map(), ended: false, controller: new AbortController() };
  runs.set(id, run);
  const turn = {
    message: data.message,
    ...(data.modelId !== undefined ? { modelId: data.modelId } : {}),
    workspaceRoot: data.workspaceRoot,
    additionalDirectories: Object.freeze([...data.additionalDirectories]),
    permissions: Object.freeze({ ...data.permissions }),
    routing: routingOf(data),
    session: Object.freeze({ ...data.session }),
    agent: Object.freeze({ ...data.agent }),
    mcpServers: Object.freeze(data.mcpServers),
    emitter: emitterFor(id, run),
    runtime: Object.freeze({
      logger: loggerFor(id),
      invalidateEngineInstance: () => send({ t: 'invalidate' }),
      stateDir: data.stateDir,
    }),
    signal: run.controller.signal,
  };
  hidden(turn, 'env', Object.freeze({ ...data.env }));
  try {
    if (!instance) throw new Error('the engine has no instance');
    try { process.chdir(data.workspaceRoot); } catch {}
    const result = await instance.run(Object.freeze(turn));
    const nativeSessionId = result !== null && typeof result === 'object' && typeof result.nativeSessionId === 'string' ? result.nativeSessionId : undefined;
    send({ t: 'end', id, ok: true, ...(nativeSessionId ? { nativeSessionId } : {}) });
  } catch (error) {
    send({ t: 'end', id, ok: false, error: errorOf(error) });
  } finally {
    run.ended = true;
    for (const resolve of run.pending.values()) resolve(undefined);
    runs.delete(id);
  }
}

function guardRequire(roots) {
  const original = Module._resolveFilename;
  Module._resolveFilename = function (request, parent, isMain, options) {
    const filename = original.call(this, request, parent, isMain, options);
    if (Module.isBuiltin(filename)) return filename;
    let path = filename;
    try { path = realpathSync(filename); } catch {}
    if (!insideRoots(roots, path, relative, sep, isAbsolute)) {
      const error = new Error(MARKER + ' ' + JSON.stringify(request) + ' resolves to ' + filename + ', outside the verified engine and pack');
      error.code = 'ERR_PACKWARDEN_RESOLVE_REFUSED';
      throw error;
    }
    return filename;
  };
}

async function load(message) {
  try {
    register('data:text/javascript,' + encodeURIComponent(message.hooks), { data: { roots: message.roots } });
    guardRequire(message.roots);
    const namespace = await import(pathToFileURL(message.entry).href);
    const exported = message.exportName ? namespace[message.exportName] : namespace.default;
    if (typeof exported === 'function' && exported.prototype && typeof exported.prototype.run === 'function') Engine = exported;
    else if (exported !== null && typeof exported === 'object' && typeof exported.run === 'function') Engine = exported;
    else return send({ t: 'load_failed', kind: 'export', message: 'must export ' + (message.exportName ? 'a class ' + message.exportName : 'by default a class') + ' with a run(turn) method' });
    send({ t: 'loaded' });
  } catch (error) {
    const text = errorOf(error).message;
    send({ t: 'load_failed', kind: text.includes(MARKER) ? 'resolve' : 'import', message: text });
  }
}

async function construct(message) {
  try {
    if (instance && typeof instance.dispose === 'function' && instance !== Engine) await instance.dispose();
  } catch (error) {
    send({ t: 'log', level: 'warn', message: 'dispose failed: ' + errorOf(error).message });
  }
  instance = undefined;
  try {
    const init = { ...message.init, routing: routingOf(message.init) };
    instance = typeof Engine === 'function' ? new Engine(Object.freeze(init)) : Engine;
    send({ t: 'constructed' });
  } catch (error) {
    send({ t: 'construct_failed', message: errorOf(error).message });
  }
}

async function handle(message) {
  switch (message.t) {
    case 'load': return load(message);
    case 'instance': return construct(message);
    case 'run': return runTurn(message.id, message.turn);
    case 'ack': case 'answer': {
      const run = runs.get(message.id);
      const resolve = run && run.pending.get(message.seq);
      if (resolve) { run.pending.delete(message.seq); resolve(message.value); }
      return;
    }
    case 'cancel': { const run = runs.get(message.id); if (run) run.controller.abort(); return; }
    case 'maintain': {
      try { if (instance && typeof instance.onMaintenance === 'function') await instance.onMaintenance(loggerFor(undefined)); }
      catch (error) { send({ t: 'log', level: 'warn', message: 'onMaintenance failed: ' + errorOf(error).message }); }
      return send({ t: 'maintained' });
    }
    case 'dispose': {
      try { if (instance && typeof instance.dispose === 'function') await instance.dispose(); }
      catch (error) { send({ t: 'log', level: 'warn', message: 'dispose failed: ' + errorOf(error).message }); }
      instance = undefined;
      return send({ t: 'disposed' });
    }
  }
}

let buffered = '';
channel.setEncoding('utf8');
channel.on('data', (chunk) => {
  buffered += chunk;
  let newline;
  while ((newline = buffered.indexOf('\n')) !== -1) {
    const line = buffered.slice(0, newline);
    buffered = buffered.slice(newline + 1);
    if (line.trim() !== '') void handle(JSON.parse(line));
  }
});
channel.on('close', () => process.exit(0));
channel.on('error', () => process.exit(0));
`;
