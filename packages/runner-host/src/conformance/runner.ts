import { conformanceCases, type CaseContext } from './cases.js';
import { RawPeer, type ConformanceTarget } from './peer.js';

export interface ConformanceOptions {
  /** Run only the cases whose name contains one of these strings. */
  only?: readonly string[];
  /** Longest wait for an ordinary reply. Default 10000 ms. */
  timeoutMs?: number;
  /** Longest wait for a run whose engine ignores cancel: the host's grace period plus slack. Default 15000 ms. */
  cancelTimeoutMs?: number;
  /** Called as each case finishes (the CLI prints one line here). */
  onResult?: (result: ConformanceCaseResult) => void;
}

export interface ConformanceCaseResult {
  name: string;
  ok: boolean;
  ms: number;
  /** The failure, or a measurement the case reports. */
  detail?: string;
}

export interface ConformanceReport {
  ok: boolean;
  results: ConformanceCaseResult[];
}

/**
 * Runs the protocol's conformance cases against a host. With `{ stdio }` every case starts a
 * fresh host from the command line; with `{ socket }` every case opens a fresh connection, and
 * the last case (host killed mid-run) kills the host process: through the target's `killHost`
 * when given, else through the scripted engine's `crash` step (an in-process engine only).
 */
export async function runConformance(
  target: ConformanceTarget,
  options: ConformanceOptions = {},
): Promise<ConformanceReport> {
  const cases = conformanceCases
    .filter((c) => options.only === undefined || options.only.some((o) => c.name.includes(o)))
    .sort((a, b) => Number(a.endsHost === true) - Number(b.endsHost === true));
  const results: ConformanceCaseResult[] = [];
  for (const testCase of cases) {
    const peers: RawPeer[] = [];
    const context: CaseContext = {
      target,
      timeoutMs: options.timeoutMs ?? 10_000,
      cancelTimeoutMs: options.cancelTimeoutMs ?? 15_000,
      open: async (openOptions) => {
        const peer = await RawPeer.open(target, openOptions);
        peers.push(peer);
        return peer;
      },
    };
    const started = Date.now();
    let result: ConformanceCaseResult;
    try {
      const detail = await testCase.run(context);
      result = {
        name: testCase.name,
        ok: true,
        ms: Date.now() - started,
        ...(detail ? { detail } : {}),
      };
    } catch (error) {
      result = {
        name: testCase.name,
        ok: false,
        ms: Date.now() - started,
        detail: error instanceof Error ? error.message : String(error),
      };
    }
    await Promise.allSettled(peers.map((peer) => peer.close()));
    results.push(result);
    options.onResult?.(result);
  }
  return { ok: results.every((r) => r.ok), results };
}
