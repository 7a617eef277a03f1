#!/usr/bin/env node
// Seeded, time-boxed property fuzzing of every parser of untrusted input (issue 16).
//
//   node fuzz/run.mjs                       # every target, 5 s each, a fresh random seed
//   node fuzz/run.mjs --budget-ms 60000     # the longer run (README: "Fuzzing")
//   node fuzz/run.mjs --only tar,frames --seed 1234
//   node fuzz/run.mjs --replay              # only the saved regressions
//
// A target is `fuzz/targets/<name>.mjs` exporting `target = { name, arbitrary(fc), check(input) }`.
// `check` resolves when the parser kept its promises for that input (a typed error is a kept
// promise) and throws when it broke one (an untyped error, a crash, output outside its bounds,
// a secret in its output, a verdict that depends on chunking...). Targets load the built
// packages (`dist/`), the code users run, so build first (`pnpm build`).
//
// A failure is shrunk by fast-check and saved as `fuzz/regressions/<name>/<sha>.json`; every
// saved input is replayed before the random runs, so a finding stays a regression test.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import fc from 'fast-check';

const here = dirname(fileURLToPath(import.meta.url));
const { values } = parseArgs({
  options: {
    'budget-ms': { type: 'string', default: '5000' },
    seed: { type: 'string' },
    only: { type: 'string' },
    replay: { type: 'boolean', default: false },
  },
});
const budgetMs = Number(values['budget-ms']);
if (!Number.isSafeInteger(budgetMs) || budgetMs < 100) {
  console.error('fuzz: --budget-ms takes a whole number of milliseconds >= 100');
  process.exit(2);
}
const seed =
  values.seed === undefined ? (Date.now() ^ (Math.random() * 0x7fffffff)) | 0 : Number(values.seed);
if (!Number.isSafeInteger(seed)) {
  console.error('fuzz: --seed takes an integer');
  process.exit(2);
}
const only = values.only ? new Set(values.only.split(',').map((s) => s.trim())) : undefined;

// Inputs are saved as JSON; byte arrays travel as {"$bytes": base64}.
const encode = (v) =>
  JSON.stringify(
    v,
    (_k, x) => (x instanceof Uint8Array ? { $bytes: Buffer.from(x).toString('base64') } : x),
    2,
  );
const decode = (text) =>
  JSON.parse(text, (_k, x) =>
    x && typeof x === 'object' && typeof x.$bytes === 'string' && Object.keys(x).length === 1
      ? new Uint8Array(Buffer.from(x.$bytes, 'base64'))
      : x,
  );

const listFolder = (dir) => {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
};
const targetFiles = listFolder(join(here, 'targets'))
  .filter((f) => f.endsWith('.mjs'))
  .sort();
if (targetFiles.length === 0) {
  console.error('fuzz: no target in fuzz/targets/');
  process.exit(1);
}
let failures = 0;
for (const file of targetFiles) {
  const { target } = await import(pathToFileURL(join(here, 'targets', file)).href);
  if (only && !only.has(target.name)) continue;
  const regressionDir = join(here, 'regressions', target.name);
  let replayed = 0;
  const saved = listFolder(regressionDir).filter((f) => f.endsWith('.json'));
  for (const f of saved.sort()) {
    const { input } = decode(readFileSync(join(regressionDir, f), 'utf8'));
    try {
      await target.check(input);
      replayed++;
    } catch (error) {
      failures++;
      console.log(
        `✗ ${target.name}: regression ${f} fails again: ${String(error?.stack ?? error)}`,
      );
    }
  }
  if (values.replay) {
    console.log(`✓ ${target.name}: ${replayed} regression input(s) replayed`);
    continue;
  }
  const started = Date.now();
  const details = await fc.check(
    fc.asyncProperty(target.arbitrary(fc), async (input) => {
      await target.check(input);
    }),
    {
      seed,
      numRuns: Number.MAX_SAFE_INTEGER,
      interruptAfterTimeLimit: budgetMs,
      markInterruptAsFailure: false,
    },
  );
  const ms = Date.now() - started;
  if (details.failed) {
    failures++;
    const input = details.counterexample?.[0];
    const text = encode({ seed, path: details.counterexample_path, input });
    const name = createHash('sha256').update(encode(input)).digest('hex').slice(0, 16);
    mkdirSync(regressionDir, { recursive: true });
    writeFileSync(join(regressionDir, `${name}.json`), text + '\n');
    console.log(
      `✗ ${target.name}: failed after ${details.numRuns} runs (seed ${seed}); shrunk input saved as ` +
        `fuzz/regressions/${target.name}/${name}.json\n  ${String(details.errorInstance?.stack ?? details.error)}`,
    );
  } else {
    console.log(
      `✓ ${target.name}: ${details.numRuns} runs in ${ms} ms, seed ${seed}, ${replayed} regression(s) replayed`,
    );
  }
}
console.log(failures === 0 ? 'fuzz: clean' : `fuzz: ${failures} failure(s)`);
process.exit(failures === 0 ? 0 : 1);
