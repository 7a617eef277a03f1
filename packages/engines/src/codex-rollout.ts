import { constants } from 'node:fs';
import { lstat, open, readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { typedEntry } from '@packwarden/pack-manifest/fs';
import { isJsonObject, type JsonObject } from './json-object.js';

/** Bounds on what is read of a codex session rollout (it is codex's file, not ours). */
export const ROLLOUT_LIMITS = Object.freeze({
  /** Bytes of the rollout file read (its end: the turn that just ran). */
  maxBytes: 16 * 1024 * 1024,
  /** Folders visited under `$CODEX_HOME/sessions` while looking for it. */
  maxEntries: 10_000,
  /** Refused calls reported per turn. */
  maxCalls: 1000,
});

/** A tool call codex refused itself (no item of it reached the event stream). */
export interface RefusedCall {
  callId: string;
  name: string;
  input: unknown;
  output: string;
}

/** Whether `path` is a folder itself, not a link to one: the walk never lists through a link. */
async function isRealFolder(path: string): Promise<boolean> {
  try {
    const info = await lstat(path);
    return info.isDirectory() && !info.isSymbolicLink();
  } catch {
    return false;
  }
}

async function findRollout(
  dir: string,
  threadId: string,
  budget: { left: number },
): Promise<string | undefined> {
  if (!(await isRealFolder(dir))) return undefined;
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return undefined;
  }
  for (const dirent of entries) {
    budget.left -= 1;
    if (budget.left <= 0) return undefined;
    // A type readdir left out (DT_UNKNOWN: NFS, FUSE, XFS without ftype) comes from lstat, so the
    // rollout is found there too (a symlink stays a symlink and is never followed).
    let entry;
    try {
      entry = typedEntry(dir, dirent);
    } catch {
      continue;
    }
    const path = join(dir, entry.name);
    if (
      entry.isFile() &&
      entry.name.startsWith('rollout-') &&
      entry.name.endsWith(`-${threadId}.jsonl`)
    )
      return path;
    if (entry.isDirectory()) {
      const found: string | undefined = await findRollout(path, threadId, budget);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

/**
 * Whether the descriptor `fd` is the file at exactly `path`. `O_NOFOLLOW` guards only the last
 * component: a folder on the way swapped for a link after `findRollout` checked it would still be
 * followed. On Linux the kernel says which file was opened (`/proc/self/fd`), so a path through a
 * link shows as the place it led to. Elsewhere pack code is not confined (docs/sandbox.md,
 * "Confinement"), so it can read what a link would show anyway: the lstat walk is enough there.
 */
async function openedAt(fd: number, path: string): Promise<boolean> {
  if (process.platform !== 'linux') return true;
  try {
    return (await readlink(`/proc/self/fd/${fd}`)) === path;
  } catch {
    return false;
  }
}

/**
 * The last `maxBytes` of the rollout at `path` (a cut first line dropped), or `undefined` when
 * what is there now is not a plain regular file reached without any link (`path` must be a real
 * path). Between `findRollout`'s `readdir` and this open, a confined command of another session
 * that can write codex's state folder may swap the file for a symlink (to a host file, whose JSON
 * lines would become tool frames sent to the driver), a folder on the way for one, a FIFO (which
 * would hang the turn) or a hard link to a host file: the open follows no symlink and never
 * waits, and the descriptor itself, not the path, must be a regular file with one link, opened
 * at exactly `path`.
 */
export async function readRolloutTail(path: string, maxBytes: number): Promise<string | undefined> {
  let handle;
  try {
    handle = await open(
      path,
      constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0),
    );
  } catch {
    return undefined;
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile() || stats.nlink !== 1) return undefined;
    if (!(await openedAt(handle.fd, path))) return undefined;
    const { size } = stats;
    const length = Math.min(size, maxBytes);
    const buffer = Buffer.alloc(length);
    let filled = 0;
    while (filled < length) {
      const { bytesRead } = await handle.read(
        buffer,
        filled,
        length - filled,
        size - length + filled,
      );
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    const text = buffer.subarray(0, filled).toString('utf8');
    // A cut first line is not JSON: drop it.
    return size > maxBytes ? text.slice(text.indexOf('\n') + 1) : text;
  } finally {
    await handle.close();
  }
}

const turnOf = (payload: JsonObject): unknown =>
  payload.turn_id ??
  (isJsonObject(payload.internal_chat_message_metadata_passthrough)
    ? payload.internal_chat_message_metadata_passthrough.turn_id
    : undefined);

/**
 * The tool calls of the last turn of thread `threadId` that codex answered itself without running
 * them (a patch outside the writable roots, an escalation under `approval_policy = never`, an
 * unknown tool): its JSONL event stream carries no item for them, so the engine reads them from
 * the session rollout in `$CODEX_HOME/sessions` (engines README, "Tool frames"). A call counts as
 * run when an `item_completed` event of the turn carries its call id. Best effort and bounded:
 * an unreadable rollout gives `undefined`. `codexHome` is a real path (`openCliTurn`'s `home`);
 * nothing below it is read through a link, and it must not have become one itself since.
 */
export async function refusedCalls(
  codexHome: string,
  threadId: string,
): Promise<RefusedCall[] | undefined> {
  if (!(await isRealFolder(codexHome))) return undefined;
  const path = await findRollout(join(codexHome, 'sessions'), threadId, {
    left: ROLLOUT_LIMITS.maxEntries,
  });
  if (path === undefined) return undefined;
  let text: string | undefined;
  try {
    text = await readRolloutTail(path, ROLLOUT_LIMITS.maxBytes);
  } catch {
    return undefined;
  }
  if (text === undefined) return undefined;
  const records: JsonObject[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const record: unknown = JSON.parse(line);
      if (isJsonObject(record) && isJsonObject(record.payload)) records.push(record);
    } catch {
      // A line codex is still writing, or one cut by the bound: skipped.
    }
  }
  let turn: unknown;
  for (const record of records) {
    const payload = record.payload as JsonObject;
    if (record.type === 'event_msg' && payload.type === 'task_started') turn = payload.turn_id;
  }
  if (turn === undefined) return undefined;
  const calls = new Map<string, { name: string; input: unknown }>();
  const outputs = new Map<string, string>();
  const ran = new Set<string>();
  for (const record of records) {
    const payload = record.payload as JsonObject;
    if (turnOf(payload) !== turn) continue;
    if (record.type === 'response_item' && typeof payload.call_id === 'string') {
      if (payload.type === 'function_call' || payload.type === 'custom_tool_call') {
        let input: unknown = payload.arguments ?? payload.input;
        if (typeof input === 'string') {
          try {
            input = JSON.parse(input);
          } catch {
            // Free-form input (a patch): kept as text.
          }
        }
        calls.set(payload.call_id, { name: String(payload.name), input });
      } else if (
        payload.type === 'function_call_output' ||
        payload.type === 'custom_tool_call_output'
      ) {
        outputs.set(
          payload.call_id,
          typeof payload.output === 'string' ? payload.output : JSON.stringify(payload.output),
        );
      }
    } else if (
      record.type === 'event_msg' &&
      payload.type === 'item_completed' &&
      isJsonObject(payload.item) &&
      typeof payload.item.id === 'string'
    ) {
      ran.add(payload.item.id);
    }
  }
  const refused: RefusedCall[] = [];
  for (const [callId, call] of calls) {
    if (ran.has(callId) || !outputs.has(callId)) continue;
    refused.push({ callId, ...call, output: outputs.get(callId) ?? '' });
    if (refused.length >= ROLLOUT_LIMITS.maxCalls) break;
  }
  return refused;
}
