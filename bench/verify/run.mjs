// bench/verify: `packwarden pack verify` on a signed 200-file pack against `node -e 0` (how
// much a verification adds to starting Node at all), and warm in-process verifyPack throughput.
//   node bench/verify/run.mjs [--runs N]
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliBin, ensureBuilt, fmtMs, repoRoot, timeInterleaved, verdict } from '../lib.mjs';

const runs = Number(process.argv[process.argv.indexOf('--runs') + 1] || 15) || 15;
ensureBuilt(['pack-digest', 'pack-manifest', 'trust-root', 'pack-signature']);
const work = mkdtempSync(join(tmpdir(), 'pw-bench-verify-'));

try {
  // A signed pack of 200 files (1–4 KiB), like a real pack with skills and hooks.
  const pack = join(work, 'pack');
  mkdirSync(pack);
  writeFileSync(
    join(pack, 'agent.yaml'),
    'apiVersion: agenthippo.ai/v1\nkind: Agent\nmetadata: {name: bench, version: 1.0.0}\n',
  );
  for (let i = 1; i < 200; i++) {
    const dir = join(pack, 'skills', `s${i % 20}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `f${i}.md`), `${'x'.repeat(1024 + ((i * 37) % 3072))}\n`);
  }
  const cli = (...args) =>
    execFileSync(process.execPath, [cliBin, ...args], { cwd: work, encoding: 'utf8' });
  const key = JSON.parse(
    cli('pack', 'keygen', '--kid', 'bench', '-o', join(work, 'key.pem'), '--json'),
  );
  writeFileSync(join(work, 'keys.json'), JSON.stringify({ bench: key.publicKeyPem }));
  cli('pack', 'sign', pack, '--key', join(work, 'key.pem'), '--kid', 'bench');

  console.log(
    `bench/verify on ${availableParallelism()} cores, Node ${process.version}, medians of ${runs} interleaved rounds after a warm-up round\n`,
  );
  const [baseline, verify] = timeInterleaved(
    [
      { name: 'node -e 0', command: process.execPath, args: ['-e', '0'] },
      {
        name: 'verify',
        command: process.execPath,
        args: [cliBin, 'pack', 'verify', pack, '--keys', join(work, 'keys.json')],
      },
    ],
    { runs },
  );
  console.log('CLI, signed 200-file pack, keys file');
  console.log(`    node -e 0                              ${fmtMs(baseline.ms)}`);
  console.log(
    `    packwarden pack verify <pack> --keys   ${fmtMs(verify.ms)}   ${verify.ratio.toFixed(2)}×  ${verdict(verify.ratio, 2.5)}`,
  );

  // Warm, in-process: what a control plane or sandbox that imports the libraries pays per pack.
  const { verifyPack } = await import(join(repoRoot, 'packages/pack-signature/dist/index.js'));
  const { loadPackTrustRoot, selectTrustedKey } = await import(
    join(repoRoot, 'packages/trust-root/dist/index.js')
  );
  const root = await loadPackTrustRoot({ keysFile: join(work, 'keys.json'), env: {} });
  const selectKey = (kid, at) => selectTrustedKey(root, kid, { at });
  for (let i = 0; i < 20; i++) {
    const result = await verifyPack(pack, { selectKey });
    if (result.kind !== 'verified') throw new Error(`expected verified, got ${result.kind}`);
  }
  let count = 0;
  const start = process.hrtime.bigint();
  let elapsed = 0;
  while (elapsed < 3000) {
    await verifyPack(pack, { selectKey });
    count++;
    elapsed = Number(process.hrtime.bigint() - start) / 1e6;
  }
  console.log('\nIn-process, warm (trust root loaded once)');
  console.log(
    `    verifyPack throughput                  ${(count / (elapsed / 1000)).toFixed(0).padStart(6)} packs/s   (${(elapsed / count).toFixed(2)} ms each, ${count} verifications)`,
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}
