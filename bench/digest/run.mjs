// bench/digest: packwarden's Pack digest v1 against the coreutils/OpenSSL way of hashing the
// same bytes, measured in one run on this machine. See bench/README.md.
//   node bench/digest/run.mjs [--runs N] [--keep] [--against REF,… [--overlay PKG,… [--base REF]]]
// --against REF,… adds, per REF, the library and CLI built from git REF as rows of the same interleaved
// rounds; the current rows are then built the same way, from the working tree (or from --base,
// default HEAD, with only the --overlay packages taken from the working tree).
import { execFileSync, spawnSync } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  buildAt,
  cliBin as distCliBin,
  ensureBuilt,
  envWithoutExtraCaCerts,
  fmtMs,
  timeCommand,
  timeInterleaved,
  verdict,
  watchCpuTime,
} from '../lib.mjs';

const flag = (name) =>
  process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined;
const runs = Number(flag('--runs') || 5) || 5;
const keep = process.argv.includes('--keep');
const againstRefs = (flag('--against') ?? '').split(',').filter(Boolean);
const overlay = (flag('--overlay') ?? '').split(',').filter(Boolean);
const overlayBase = flag('--base') ?? 'HEAD';
const MiB = 1024 * 1024;
const MANIFEST = (name) =>
  `apiVersion: agenthippo.ai/v1\nkind: Agent\nmetadata: {name: ${name}, version: 1.0.0}\n`;

ensureBuilt(['pack-digest']);
const measureScript = join(import.meta.dirname, 'measure.mjs');
/** What is measured: the dist builds, or both sides built alike by buildAt for --against. */
const variants = [{ label: '', cliBin: distCliBin, lib: undefined }];
if (againstRefs.length > 0) {
  const current = await buildAt(overlay.length > 0 ? overlayBase : 'worktree', {
    cli: true,
    packages: ['pack-digest'],
    overlay,
  });
  variants.splice(0, 1, {
    label: overlay.length > 0 ? `${overlayBase}+${overlay.join('+')}` : 'worktree',
    cliBin: current.cliBin,
    lib: current.lib('pack-digest'),
  });
  for (const ref of againstRefs) {
    const before = await buildAt(ref, { cli: true, packages: ['pack-digest'] });
    variants.push({ label: ref, cliBin: before.cliBin, lib: before.lib('pack-digest') });
  }
}
const cliBin = variants[0].cliBin;
const builds = variants.map((variant) => variant.lib && join(variant.lib, '..', '..', '..'));
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

/** The ways to hash one tree (baseline, then library and CLI per variant), interleaved. */
function compareOn(dir, baseline) {
  const entries = [{ name: 'baseline', ...baseline, cwd: dir }];
  for (const variant of variants) {
    entries.push(
      {
        name: 'library',
        command: process.execPath,
        args: [measureScript, dir, ...(variant.lib ? [variant.lib] : [])],
        node: true,
        measure: (stdout) => JSON.parse(stdout).ms,
      },
      // The same process timed whole (Node start-up, import, exit included), as the CLI is. The
      // in-process figure leaves those out: next to it the CLI looked far slower than the
      // library (issue 14), mostly from what any Node process pays on a loaded machine.
      {
        name: 'library-process',
        command: process.execPath,
        args: [measureScript, dir, ...(variant.lib ? [variant.lib] : [])],
        node: true,
      },
      {
        name: 'cli',
        command: process.execPath,
        args: [variant.cliBin, 'pack', 'digest', dir],
        node: true,
      },
      // The same without NODE_EXTRA_CA_CERTS, which Node parses at every start (lib.mjs), when
      // this environment sets it: the baselines are not Node and never pay it.
      ...(envWithoutExtraCaCerts
        ? [
            {
              name: 'cli-without-extra-ca-certs',
              command: process.execPath,
              args: [variant.cliBin, 'pack', 'digest', dir],
              node: true,
              env: envWithoutExtraCaCerts,
            },
          ]
        : []),
    );
  }
  const [base, ...rows] = timeInterleaved(entries, { runs });
  return { base, rows };
}

function report(label, baseLabel, { base, rows }, cliTarget) {
  console.log(label);
  console.log(`    ${baseLabel.padEnd(38)}${fmtMs(base.ms)}`);
  const perVariant = envWithoutExtraCaCerts ? 4 : 3;
  variants.forEach((variant, i) => {
    const [lib, libProcess, cli, cliWithout] = rows.slice(perVariant * i, perVariant * (i + 1));
    const tag = variant.label ? ` [${variant.label}]` : '';
    console.log(
      `    ${`computePackDigest (library)${tag}`.padEnd(38)}${fmtMs(lib.ms)}   ${lib.ratio.toFixed(2)}×  ${verdict(lib.ratio, 0.8)}`,
    );
    console.log(
      `    ${`library, whole process${tag}`.padEnd(38)}${fmtMs(libProcess.ms)}   ${libProcess.ratio.toFixed(2)}×  (the CLI adds the next row minus this one)`,
    );
    console.log(
      `    ${`packwarden pack digest (CLI)${tag}`.padEnd(38)}${fmtMs(cli.ms)}   ${cli.ratio.toFixed(2)}×  ${verdict(cli.ratio, cliTarget)} (whole process)`,
    );
    if (cliWithout)
      console.log(
        `    ${`  the same, NODE_EXTRA_CA_CERTS unset${tag}`.padEnd(38)}${fmtMs(cliWithout.ms)}   ${cliWithout.ratio.toFixed(2)}×  ${verdict(cliWithout.ratio, cliTarget)}`,
      );
  });
}

try {
  console.log(
    `bench/digest on ${availableParallelism()} cores, Node ${process.version}: medians of ${runs} interleaved rounds after a warm-up round (page cache warm); ratios are medians of per-round ratios\n`,
  );
  const cpuTime = watchCpuTime();

  // (a) six 64 MiB files
  const a = join(work, 'six-64mib');
  const names = bigFiles(a, 6, 64 * MiB);
  report(
    '(a) six 64 MiB files (384 MiB)',
    'openssl dgst -sha256',
    compareOn(a, { command: 'openssl', args: ['dgst', '-sha256', ...names] }),
    0.8,
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
    0.6,
  );

  // (c) peak memory on a 1 GiB tree
  rmSync(a, { recursive: true, force: true });
  const c = join(work, 'one-gib');
  bigFiles(c, 16, 64 * MiB);
  const ok = (mib) => (mib < 150 ? 'ok (target < 150 MB)' : 'MISSED (target < 150 MB)');
  console.log('\n(c) peak RSS digesting a 1 GiB tree (16 × 64 MiB)');
  for (const variant of variants) {
    const tag = variant.label ? ` [${variant.label}]` : '';
    const memLib = timeCommand(
      process.execPath,
      [measureScript, c, ...(variant.lib ? [variant.lib] : [])],
      { runs: 1, node: true },
    );
    const memCli = timeCommand(process.execPath, [variant.cliBin, 'pack', 'digest', c], {
      runs: 1,
      node: true,
    });
    console.log(
      `    ${`library process${tag}`.padEnd(38)}${memLib.rssMiB.toFixed(0).padStart(6)} MiB   ${ok(memLib.rssMiB * 1.048576)}`,
    );
    console.log(
      `    ${`packwarden pack digest (CLI)${tag}`.padEnd(38)}${memCli.rssMiB.toFixed(0).padStart(6)} MiB   ${ok(memCli.rssMiB * 1.048576)}`,
    );
  }

  // The CLI and the library must agree, or the timings mean nothing.
  const measured = (dir) =>
    JSON.parse(
      execFileSync(
        process.execPath,
        [measureScript, dir, ...(variants[0].lib ? [variants[0].lib] : [])],
        {
          encoding: 'utf8',
        },
      ),
    );
  const viaCli = execFileSync(process.execPath, [cliBin, 'pack', 'digest', b], {
    encoding: 'utf8',
  });
  if (viaCli.slice(0, 64) !== measured(b).digest) throw new Error('CLI and library digests differ');
  const spent = cpuTime();
  if (spent !== undefined) console.log(`\n${spent}`);
} finally {
  if (keep) console.log(`\n(trees kept in ${work})`);
  else rmSync(work, { recursive: true, force: true });
  for (const build of builds) if (build) rmSync(build, { recursive: true, force: true });
}
