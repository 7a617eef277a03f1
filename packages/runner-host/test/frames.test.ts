import { access, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  driverFrameSchemas,
  framesJsonSchema,
  hostFrameSchemas,
  parseDriverFrame,
  parseHostFrame,
} from '../src/protocol.js';
import { packageDir } from './helpers.js';

describe('frame schemas', () => {
  it('drop unknown fields instead of rejecting the frame', () => {
    expect(parseDriverFrame({ type: 'cancel', runId: 'r', future: { x: 1 } })).toEqual({
      kind: 'frame',
      frame: { type: 'cancel', runId: 'r' },
    });
  });

  it('report unknown types as unknown, and invalid known frames as invalid', () => {
    expect(parseDriverFrame({ type: 'teleport' })).toEqual({ kind: 'unknown', type: 'teleport' });
    expect(parseDriverFrame({ type: 'toString' })).toEqual({ kind: 'unknown', type: 'toString' });
    const invalid = parseDriverFrame({ type: 'run', runId: 'r' });
    expect(invalid).toMatchObject({
      kind: 'invalid',
      type: 'run',
      issues: expect.stringContaining('message'),
    });
    expect(parseHostFrame({ nope: 1 })).toMatchObject({ kind: 'invalid' });
  });

  it('accept every frame of the protocol table', () => {
    const hostFrames = [
      {
        type: 'welcome',
        protocol: 1,
        host: { name: 'h' },
        engines: [{ id: 'e', displayName: 'E' }],
        capabilities: {},
      },
      { type: 'accepted', runId: 'r', seq: 1 },
      { type: 'text', runId: 'r', seq: 2, delta: 'd' },
      { type: 'thinking', runId: 'r', seq: 3, delta: 'd' },
      { type: 'tool_start', runId: 'r', seq: 4, toolCallId: 't', name: 'n', input: { a: 1 } },
      {
        type: 'tool_end',
        runId: 'r',
        seq: 5,
        toolCallId: 't',
        name: 'n',
        output: 'o',
        isError: true,
        truncated: true,
      },
      { type: 'progress', runId: 'r', seq: 6, message: 'm' },
      { type: 'warning', runId: 'r', seq: 7, code: 'c', message: 'm' },
      { type: 'session', runId: 'r', seq: 8, nativeSessionId: 'n' },
      { type: 'question', runId: 'r', seq: 9, questionId: 'q', prompt: 'p', options: ['a'] },
      { type: 'question_resolved', runId: 'r', seq: 10, questionId: 'q', outcome: 'answered' },
      { type: 'result', runId: 'r', seq: 11, stopReason: 'end_turn', nativeSessionId: 'n' },
      { type: 'failed', runId: 'r', seq: 11, error: { code: 'c', message: 'm', retryable: false } },
      { type: 'ping', id: 1 },
      { type: 'pong', id: 'x' },
      { type: 'log', level: 'warn', message: 'm', code: 'c' },
      { type: 'bye' },
      { type: 'fatal', code: 'c', message: 'm' },
    ];
    for (const frame of hostFrames) expect(parseHostFrame(frame)).toEqual({ kind: 'frame', frame });
    const driverFrames = [
      { type: 'hello', protocols: [1], capabilities: { questions: true } },
      {
        type: 'run',
        runId: 'r',
        message: 'm',
        engineId: 'e',
        permissions: { fileAccess: 'write' },
        turnEnv: { A: 'b' },
        additionalDirectories: ['/x'],
      },
      { type: 'answer', questionId: 'q', selected: ['a'], freeText: 'f' },
      { type: 'cancel', runId: 'r' },
      { type: 'shutdown' },
    ];
    for (const frame of driverFrames)
      expect(parseDriverFrame(frame)).toEqual({ kind: 'frame', frame });
    expect(Object.keys(hostFrameSchemas).length + Object.keys(driverFrameSchemas).length).toBe(26);
  });
});

describe('JSON Schema', () => {
  it('is checked in exactly as generated from the zod schemas (run `pnpm generate:schema`)', async () => {
    const shipped = JSON.parse(
      await readFile(join(packageDir, 'src/frames.schema.json'), 'utf8'),
    ) as unknown;
    expect(shipped).toEqual(framesJsonSchema());
  });

  it('is shipped in dist, and tolerates unknown fields', async () => {
    await access(join(packageDir, 'dist/frames.schema.json'));
    const schema = framesJsonSchema() as {
      $defs: Record<string, { additionalProperties?: unknown }>;
    };
    expect(Object.keys(schema.$defs)).toHaveLength(26);
    for (const definition of Object.values(schema.$defs))
      expect(definition.additionalProperties).not.toBe(false);
  });
});

describe('entry points', () => {
  it('the zod schemas are in `/protocol`, not in the main entry; the parsers are in both', async () => {
    const main: Record<string, unknown> = await import('../src/index.js');
    const protocol: Record<string, unknown> = await import('../src/protocol.js');
    const schemaNames = Object.keys(protocol).filter((name) => /Schemas?$/.test(name));
    expect(schemaNames.length).toBeGreaterThanOrEqual(33);
    expect(schemaNames).toContain('runFrameSchema');
    expect(schemaNames).toContain('framesJsonSchema');
    expect(Object.keys(main).filter((name) => /Schemas?$/.test(name))).toEqual([]);
    for (const name of ['parseDriverFrame', 'parseHostFrame', 'MAX_FRAME_BYTES']) {
      expect(protocol[name]).toBe(main[name]);
    }
  });
});
