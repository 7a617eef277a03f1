import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import {
  SecretSet,
  type EngineEmitter,
  type EngineRunOptions,
  type KillRequest,
} from '@packwarden/runner-host';
import * as z from 'zod';
import type { CommandWrapper, WrappableCommand } from './command-wrapper.js';
import type { PackEngine, PackIdentity } from './pack-engine.js';
import { effectiveFileAccess } from './permissions.js';
import type { ResolvedExecSpec } from './exec-spec.js';
import { StderrTail } from './stderr-tail.js';

export interface CreateExecEngineOptions {
  pack: PackIdentity;
  /** The pack folder (`PACKWARDEN_PACK_DIR` for the command). */
  packDir: string;
  /** The environment the command starts from (the sandbox's own). Default `process.env`. */
  baseEnv?: Record<string, string | undefined>;
  /** Bytes of stderr kept for the failure message. Default 16 KiB. */
  stderrTailBytes?: number;
  /** After a cancel: SIGTERM to the process group, then SIGKILL after this. Default 2000 ms. */
  killGraceMs?: number;
  /** A stdout line longer than this is skipped (reported). Default 16 MiB. */
  maxLineBytes?: number;
  /** Confinement: rewrites the command of every turn (`bwrap … -- <command>`). Default: none. */
  wrap?: CommandWrapper;
}

const text = z.string().max(16 * 1024 * 1024);
const execEventSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), delta: text }),
  z.object({ type: z.literal('thinking'), delta: text }),
  z.object({
    type: z.literal('tool_start'),
    toolCallId: z.string(),
    name: z.string(),
    input: z.unknown().optional(),
  }),
  z.object({
    type: z.literal('tool_end'),
    toolCallId: z.string(),
    name: z.string(),
    output: z.unknown().optional(),
    isError: z.boolean().optional(),
  }),
  z.object({ type: z.literal('progress'), message: text }),
  z.object({ type: z.literal('warning'), code: z.string(), message: text }),
  z.object({ type: z.literal('session'), nativeSessionId: z.string().min(1) }),
  z.object({
    type: z.literal('log'),
    level: z.enum(['debug', 'info', 'warn', 'error']),
    message: text,
  }),
  z.object({
    type: z.literal('error'),
    message: text,
    code: z.string().optional(),
    retryable: z.boolean().optional(),
  }),
]);
type ExecEvent = z.infer<typeof execEventSchema>;

const WIRE_CODE = /^[a-z][a-z0-9_]{0,63}$/;

type Child = ChildProcessByStdio<Writable, Readable, Readable>;

function runFailure(code: string, message: string, retryable = false): Error {
  return Object.assign(new Error(message), { code, retryable });
}

function killGroup(child: Child, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}

async function dispatch(event: ExecEvent, emitter: EngineEmitter): Promise<Error | undefined> {
  switch (event.type) {
    case 'text':
      return void (await emitter.text(event.delta));
    case 'thinking':
      return void (await emitter.thinking(event.delta));
    case 'tool_start':
      return void (await emitter.toolStart({
        toolCallId: event.toolCallId,
        name: event.name,
        input: event.input,
      }));
    case 'tool_end':
      return void (await emitter.toolEnd({
        toolCallId: event.toolCallId,
        name: event.name,
        output: event.output,
        ...(event.isError !== undefined ? { isError: event.isError } : {}),
      }));
    case 'progress':
      return void (await emitter.progress(event.message));
    case 'warning':
      return void (await emitter.warning(event.code, event.message));
    case 'session':
      return void (await emitter.session(event.nativeSessionId));
    case 'log':
      return void emitter.log(event.level, event.message);
    case 'error':
      return runFailure(
        event.code !== undefined && WIRE_CODE.test(event.code) ? event.code : 'exec_error',
        event.message,
        event.retryable === true,
      );
  }
}

function turnEnvironment(
  spec: ResolvedExecSpec,
  packDir: string,
  options: CreateExecEngineOptions,
  runOptions: EngineRunOptions,
  workspaceRoot: string,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(options.baseEnv ?? process.env))
    if (value !== undefined) env[key] = value;
  Object.assign(env, spec.env, runOptions.turnEnv ?? {});
  const set = (key: string, value: string | undefined) => {
    if (value !== undefined) env[key] = value;
    else delete env[key];
  };
  set('PACKWARDEN_RUN_ID', runOptions.runId);
  set('PACKWARDEN_WORKSPACE', workspaceRoot);
  set('PACKWARDEN_PACK_DIR', packDir);
  set(
    'PACKWARDEN_FILE_ACCESS',
    effectiveFileAccess(runOptions.permissions?.fileAccess, options.pack.fileAccess),
  );
  set('PACKWARDEN_AGENT_ID', options.pack.id);
  set('PACKWARDEN_AGENT_VERSION', options.pack.version);
  set('PACKWARDEN_MODEL_ID', runOptions.modelId ?? options.pack.model);
  set('PACKWARDEN_BASE_URL', runOptions.baseUrl);
  set('PACKWARDEN_MODEL_TOKEN', runOptions.modelToken);
  set('PACKWARDEN_NATIVE_SESSION_ID', runOptions.nativeSessionId);
  return env;
}

/**
 * The `exec` engine: each turn runs the pack's command in the workspace, in its own process
 * group. The message goes to its stdin; JSON lines on its stdout become frames (the last line
 * counts even without a newline); its stderr is kept as a bounded, scrubbed tail for the failure
 * message. Exit 0 ends the turn, anything else fails it; what is left of the group then is
 * killed. A cancel sends SIGTERM to the group and SIGKILL after `killGraceMs`.
 */
export function createExecEngine(
  spec: ResolvedExecSpec,
  options: CreateExecEngineOptions,
): PackEngine {
  const killGraceMs = options.killGraceMs ?? 2000;
  const maxLineBytes = options.maxLineBytes ?? 16 * 1024 * 1024;
  const children = new Map<string, Child>();

  return {
    id: 'exec',
    displayName: `exec: ${spec.program}`,
    async stream(message, runOptions, emitter, runtime, signal) {
      const secrets = new SecretSet();
      secrets.addRun(runOptions);
      const stderrTail = new StderrTail(options.stderrTailBytes ?? 16 * 1024, secrets);

      let child: Child;
      try {
        // Every child goes through the wrapper (confinement), never around it.
        // The walls of this turn are never wider than its file access: a run frame that narrows
        // the pack's declaration narrows them too (the command is pack code: it need not obey
        // PACKWARDEN_FILE_ACCESS).
        const command = (options.wrap ?? ((given: WrappableCommand) => given))({
          file: spec.program,
          args: spec.args,
          cwd: runtime.workspaceRoot,
          env: turnEnvironment(spec, options.packDir, options, runOptions, runtime.workspaceRoot),
          fileAccess: effectiveFileAccess(
            runOptions.permissions?.fileAccess,
            options.pack.fileAccess,
          ),
        });
        child = spawn(command.file, [...command.args], {
          cwd: command.cwd,
          env: command.env,
          detached: true,
          stdio: ['pipe', 'pipe', 'pipe'],
        });
      } catch (error) {
        throw runFailure(
          'exec_spawn_failed',
          `cannot start ${spec.program}: ${(error as Error).message}`,
        );
      }
      children.set(runOptions.runId, child);
      const exited = new Promise<{
        code: number | null;
        signal: NodeJS.Signals | null;
        error?: Error;
      }>((resolve) => {
        child.once('error', (error) => resolve({ code: null, signal: null, error }));
        child.once('close', (code, exitSignal) => resolve({ code, signal: exitSignal }));
      });
      // A turn leaves nothing behind: what is left of its process group when the command exits
      // is killed (it would also hold stdout open and keep the turn from ending).
      child.once('exit', () => killGroup(child, 'SIGKILL'));
      child.stderr.on('data', (chunk: Buffer) => stderrTail.push(chunk));
      child.stdin.on('error', () => {});
      child.stdin.end(message);

      let killTimer: ReturnType<typeof setTimeout> | undefined;
      const onAbort = () => {
        killGroup(child, 'SIGTERM');
        killTimer = setTimeout(() => killGroup(child, 'SIGKILL'), killGraceMs);
        killTimer.unref();
      };
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });

      let failure: Error | undefined;
      const handleLine = async (line: string) => {
        if (line.trim() === '') return;
        let json: unknown;
        try {
          json = JSON.parse(line);
        } catch {
          emitter.log('warn', 'exec engine: a stdout line is not JSON; skipped');
          return;
        }
        const parsed = execEventSchema.safeParse(json);
        if (!parsed.success) return; // unknown event types and fields are ignored
        const outcome = await dispatch(parsed.data, emitter);
        failure ??= outcome;
      };

      try {
        let pending: Buffer[] = [];
        let pendingBytes = 0;
        let skipping = false;
        for await (const chunk of child.stdout as AsyncIterable<Buffer>) {
          let start = 0;
          for (
            let newline = chunk.indexOf(10);
            newline !== -1;
            newline = chunk.indexOf(10, start)
          ) {
            const piece = chunk.subarray(start, newline);
            start = newline + 1;
            if (skipping) {
              skipping = false;
              pending = [];
              pendingBytes = 0;
              continue;
            }
            pending.push(piece);
            const line = Buffer.concat(pending).toString('utf8');
            pending = [];
            pendingBytes = 0;
            await handleLine(line);
          }
          if (start < chunk.length && !skipping) {
            pending.push(chunk.subarray(start));
            pendingBytes += chunk.length - start;
            if (pendingBytes > maxLineBytes) {
              emitter.log('warn', `exec engine: a stdout line over ${maxLineBytes} bytes; skipped`);
              skipping = true;
              pending = [];
              pendingBytes = 0;
            }
          }
        }
        if (!skipping && pending.length > 0)
          await handleLine(Buffer.concat(pending).toString('utf8'));
      } catch (error) {
        killGroup(child, 'SIGKILL');
        throw error;
      } finally {
        const result = await exited;
        signal.removeEventListener('abort', onAbort);
        if (killTimer !== undefined) clearTimeout(killTimer);
        children.delete(runOptions.runId);
        if (!signal.aborted) {
          if (result.error !== undefined) {
            failure ??= runFailure(
              'exec_spawn_failed',
              `cannot start ${spec.program}: ${result.error.message}`,
            );
          } else if (result.code !== 0) {
            const tail = secrets.scrubText(stderrTail.text()).trim();
            const how =
              result.signal !== null
                ? `was killed by ${result.signal}`
                : `exited with code ${result.code}`;
            failure ??= runFailure(
              'exec_failed',
              `${spec.program} ${how}${tail !== '' ? `; stderr: ${tail}` : ''}`,
            );
          }
        }
      }
      if (!signal.aborted && failure !== undefined) throw failure;
    },
    kill(request: KillRequest) {
      const child = children.get(request.runId);
      if (child !== undefined) killGroup(child, 'SIGKILL');
    },
  };
}
