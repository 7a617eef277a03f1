import { describe, expect, it } from 'vitest';
import { framesJsonSchema } from '../src/protocol.js';
import {
  narrowerFileAccess,
  parseDriverFrame,
  requestedFileAccess,
  toEngineFileAccess,
  type EngineRunOptions,
  type RunnerEngine,
} from '../src/index.js';
import { InProcessHost } from './in-process.js';

describe('file access on the wire (issue 10.4)', () => {
  it("accepts the contract's words nested or bare, and the older words", () => {
    for (const word of ['read-only', 'workspace-write', 'full', 'none', 'read', 'write']) {
      const nested = { type: 'run', runId: 'r', message: 'm', permissions: { fileAccess: word } };
      const bare = { type: 'run', runId: 'r', message: 'm', fileAccess: word };
      expect(parseDriverFrame(nested).kind).toBe('frame');
      expect(parseDriverFrame(bare).kind).toBe('frame');
    }
    const unknown = { type: 'run', runId: 'r', message: 'm', fileAccess: 'root' };
    expect(parseDriverFrame(unknown).kind).toBe('invalid');
    // `permissions: {}` asks for nothing, like no permissions at all.
    const empty = { type: 'run', runId: 'r', message: 'm', permissions: {} };
    expect(parseDriverFrame(empty).kind).toBe('frame');
  });

  it("maps every wire word to the contract's, and orders the contract's words", () => {
    const words = ['none', 'read', 'write', 'read-only', 'workspace-write', 'full'] as const;
    expect(words.map(toEngineFileAccess)).toEqual([
      'none',
      'read-only',
      'workspace-write',
      'read-only',
      'workspace-write',
      'full',
    ]);
    const order = ['none', 'read-only', 'workspace-write', 'full'] as const;
    for (const [i, a] of order.entries()) {
      for (const [j, b] of order.entries()) {
        expect(narrowerFileAccess(a, b)).toBe(order[Math.min(i, j)]);
      }
    }
  });

  it('normalises to the contract words; two fields that disagree give the narrower', () => {
    expect(requestedFileAccess({})).toBeUndefined();
    expect(requestedFileAccess({ permissions: {} })).toBeUndefined();
    expect(requestedFileAccess({ permissions: { fileAccess: 'read' } })).toBe('read-only');
    expect(requestedFileAccess({ permissions: { fileAccess: 'write' } })).toBe('workspace-write');
    expect(requestedFileAccess({ fileAccess: 'none' })).toBe('none');
    expect(requestedFileAccess({ fileAccess: 'full' })).toBe('full');
    expect(requestedFileAccess({ permissions: { fileAccess: 'full' }, fileAccess: 'read' })).toBe(
      'read-only',
    );
    expect(
      requestedFileAccess({ permissions: { fileAccess: 'none' }, fileAccess: 'workspace-write' }),
    ).toBe('none');
  });

  it('the engine sees only contract words, whatever the driver sent', async () => {
    const seen: (EngineRunOptions['permissions'] | undefined)[] = [];
    const probe: RunnerEngine<unknown> = {
      id: 'probe',
      displayName: 'Probe',
      async stream(_m, options) {
        seen.push(options.permissions);
      },
    };
    const host = new InProcessHost(probe);
    await host.hello();
    const requests = [
      { permissions: { fileAccess: 'workspace-write' } },
      { fileAccess: 'read-only' },
      { permissions: { fileAccess: 'write' } },
      { permissions: { fileAccess: 'full' }, fileAccess: 'read' },
      {},
    ];
    for (const [i, fields] of requests.entries()) {
      host.send({ type: 'run', runId: `r${i}`, message: 'm', ...fields });
      expect(await host.terminal(`r${i}`)).toMatchObject({ type: 'result' });
    }
    host.send({ type: 'run', runId: 'bad', message: 'm', permissions: { fileAccess: 'root' } });
    expect(await host.terminal('bad')).toMatchObject({
      type: 'failed',
      error: { code: 'invalid_frame' },
    });
    await host.close();
    expect(seen).toEqual([
      { fileAccess: 'workspace-write' },
      { fileAccess: 'read-only' },
      { fileAccess: 'workspace-write' },
      { fileAccess: 'read-only' },
      undefined,
    ]);
  });

  it('the JSON Schema lists every accepted word, for both fields', () => {
    const run = (
      framesJsonSchema().$defs as Record<string, { properties: Record<string, unknown> }>
    ).driver_run;
    const words = ['read-only', 'workspace-write', 'full', 'none', 'read', 'write'];
    expect(run?.properties.fileAccess).toMatchObject({ enum: words });
    expect(run?.properties.permissions).toMatchObject({
      properties: { fileAccess: { enum: words } },
    });
  });
});
