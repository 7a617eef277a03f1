import { describe, expect, it } from 'vitest';
import { spawnRunner, type RunEvent } from '../src/index.js';

// An engine's text is queued as it comes and encoded when written (deltas of one run merge while
// they wait). JSON escapes a control character as six bytes, so a delta the host took for small
// can encode over the host's `maxFrameBytes`: that must never throw where nothing catches it
// (the host's process would die, every session with it). The host is a real child process
// running the built package; the engine in it is the attacker.

const dist = new URL('../dist/index.js', import.meta.url).href;
const MAX_FRAME_BYTES = 8192;

/** `burst`: every delta is handed over before any is written, so they merge while queued. */
function hostSource(deltas: string, burst: boolean): string {
  return `
import { startRunnerHost } from ${JSON.stringify(dist)};
const engine = {
  id: 'hostile',
  displayName: 'Hostile',
  async stream(message, options, emitter) {
    ${
      burst
        ? `await Promise.all(${deltas}.map((delta) => emitter.text(delta)));`
        : `for (const delta of ${deltas}) await emitter.text(delta);`
    }
  },
};
const host = startRunnerHost({
  engine,
  runtime: {},
  input: process.stdin,
  output: process.stdout,
  endOutput: false,
  maxFrameBytes: ${MAX_FRAME_BYTES},
});
await host.done;
process.exit(0);
`;
}

async function runAgainst(deltas: string, burst = false) {
  const { client, child } = spawnRunner(
    process.execPath,
    ['--input-type=module', '-e', hostSource(deltas, burst)],
    { stderr: 'pipe', idleTimeoutMs: 10_000, maxFrameBytes: MAX_FRAME_BYTES },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  await client.welcome;
  const handle = client.run({ message: 'go' });
  const events: RunEvent[] = [];
  for await (const event of handle) events.push(event);
  const outcome = await handle.outcome;
  await client.shutdown().catch(() => {});
  return { events, outcome, code: await exited, stderr };
}

function textOf(events: RunEvent[]): string {
  return events
    .filter((event) => event.type === 'text')
    .map((event) => (event as { delta: string }).delta)
    .join('');
}

describe('engine deltas never encode over maxFrameBytes', () => {
  it('one delta of control characters (6 bytes each in JSON) arrives whole, in frames under the cap', async () => {
    const text = '\u0001'.repeat(4000);
    const { events, outcome, code, stderr } = await runAgainst(JSON.stringify([text, 'end']));
    expect(stderr).not.toContain('ERR_FRAME_TOO_LARGE');
    expect(outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    expect(textOf(events)).toBe(`${text}end`);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, i) => i + 1));
    expect(code).toBe(0);
  });

  it('small deltas that merge while queued (lone surrogates, U+2028) stay under the cap when merged', async () => {
    const pieces = Array.from({ length: 200 }, (_, i) =>
      i % 2 === 0 ? '\ud800'.repeat(50) : '\u2028'.repeat(50),
    );
    const { events, outcome, code, stderr } = await runAgainst(JSON.stringify(pieces), true);
    expect(stderr).not.toContain('ERR_FRAME_TOO_LARGE');
    expect(outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    expect(textOf(events)).toBe(pieces.join(''));
    expect(code).toBe(0);
  });
});
