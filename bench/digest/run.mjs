// bench/digest: packwarden's Pack digest v1 against the coreutils/OpenSSL way of hashing the
// same bytes, measured in one run on this machine. See bench/README.md.
//   node bench/digest/run.mjs [--runs N] [--keep]
import { execFileSync, spawnSync } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliBin, ensureBuilt, fmtMs, timeCommand, timeInterleaved, verdict } from '../lib.mjs';

const runs = Number(process.argv[process.argv.indexOf('--runs') + 1] || 5) || 5;
const keep = process.argv.includes('--keep');
const MiB = 1024 * 1024;
const MANIFEST = (name) =>
  `apiVersion: agenthippo.ai/v1\nkind: Agent\nmetadata: {name: ${name}, version: 1.0.0}\n`;

ensureBuilt(['pack-digest']);
for (const tool of ['openssl', 'sha256sum', 'find', 'xargs', 'sort']) {
  if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0)
    throw new Error(`${tool} is needed for the baseline`);
}
const work = mkdtempSync(join(tmpdir(), 'pw-bench-digest-'));

/** `count` files of `size` bytes: one random block, each file made distinct by its first bytes. */
function bigFiles(dir, count, size) {
  mkdirSync(dir, { recursive: true });
  const block = randomFillSync(Buffer.allocUnsafe(size));
  const names = [];
  for (let i = 0; i < count; i++) {
    block.writeUInt32LE(i, 0);
    const name = `blob-${i}.bin`;
    writeFileSync(join(dir, name), block);
    names.push(name);
  }
  writeFileSync(join(dir, 'agent.yaml'), MANIFEST('big'));
  return names;
}

function smallFiles(dir, count) {
  const pool = randomFillSync(Buffer.allocUnsafe(8 * 1024 + count));
  for (let i = 0; i < count; i++) {
    const folder = join(dir, `d${String(i % 200).padStart(3, '0')}`);
    if (i < 200) mkdirSync(folder, { recursive: true });
    const size = 1024 + ((i * 7919) % (7 * 1024 + 1)); // 1–8 KiB, deterministic spread
    writeFileSync(join(folder, `f${i}.txt`), pool.subarray(i % count, (i % count) + size));
  }
  writeFileSync(join(dir, 'agent.yaml'), MANIFEST('small'));
}

/** The three ways to hash one tree, interleaved round by round. */
function compareOn(dir, baseline) {
  const [base, lib, cli] = timeInterleaved(
    [
      { name: 'baseline', ...baseline, cwd: dir },
      {
        name: 'library',
        command: process.execPath,
        args: [join(import.meta.dirname, 'measure.mjs'), dir],
        node: true,
        measure: (stdout) => JSON.parse(stdout).ms,
      },
      { name: 'cli', command: process.execPath, args: [cliBin, 'pack', 'digest', dir], node: true },
    ],
    { runs },
  );
  return { base, lib, cli };
}

function report(label, baseLabel, { base, lib, cli }) {
  console.log(label);
  console.log(`    ${baseLabel.padEnd(30)}${fmtMs(base.ms)}`);
  console.log(
    `    computePackDigest (library)   ${fmtMs(lib.ms)}   ${lib.ratio.toFixed(2)}×  ${verdict(lib.ratio, 0.8)}`,
  );
  console.log(
    `    packwarden pack digest (CLI)  ${fmtMs(cli.ms)}   ${cli.ratio.toFixed(2)}×  (whole process, incl. Node start-up)`,
  );
}

try {
  console.log(
    `bench/digest on ${availableParallelism()} cores, Node ${process.version}: medians of ${runs} interleaved rounds after a warm-up round (page cache warm); ratios are medians of per-round ratios\n`,
  );

  // (a) six 64 MiB files
  const a = join(work, 'six-64mib');
  const names = bigFiles(a, 6, 64 * MiB);
  report(
    '(a) six 64 MiB files (384 MiB)',
    'openssl dgst -sha256',
    compareOn(a, { command: 'openssl', args: ['dgst', '-sha256', ...names] }),
  );

  // (b) 20,000 files of 1–8 KiB
  const b = join(work, 'small-20k');
  smallFiles(b, 20_000);
  console.log('');
  report(
    '(b) 20,000 files of 1–8 KiB in 200 folders',
    'find|sort|xargs sha256sum',
    compareOn(b, {
      command: 'bash',
      args: ['-c', 'find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum'],
    }),
  );

  // (c) peak memory on a 1 GiB tree
  rmSync(a, { recursive: true, force: true });
  const c = join(work, 'one-gib');
  bigFiles(c, 16, 64 * MiB);
  const memLib = timeCommand(process.execPath, [join(import.meta.dirname, 'measure.mjs'), c], {
    runs: 1,
    node: true,
  });
  const memCli = timeCommand(process.execPath, [cliBin, 'pack', 'digest', c], {
    runs: 1,
    node: true,
  });
  const ok = (mib) => (mib < 150 ? 'ok (target < 150 MB)' : 'MISSED (target < 150 MB)');
  console.log('\n(c) peak RSS digesting a 1 GiB tree (16 × 64 MiB)');
  console.log(
    `    library process               ${memLib.rssMiB.toFixed(0).padStart(6)} MiB   ${ok(memLib.rssMiB * 1.048576)}`,
  );
  console.log(
    `    packwarden pack digest (CLI)  ${memCli.rssMiB.toFixed(0).padStart(6)} MiB   ${ok(memCli.rssMiB * 1.048576)}`,
  );

  // The CLI and the library must agree, or the timings mean nothing.
  const measured = (dir) =>
    JSON.parse(
      execFileSync(process.execPath, [join(import.meta.dirname, 'measure.mjs'), dir], {
        encoding: 'utf8',
      }),
    );
  const viaCli = execFileSync(process.execPath, [cliBin, 'pack', 'digest', b], {
    encoding: 'utf8',
  });
  if (viaCli.slice(0, 64) !== measured(b).digest) throw new Error('CLI and library digests differ');
} finally {
  if (keep) console.log(`\n(trees kept in ${work})`);
  else rmSync(work, { recursive: true, force: true });
}
