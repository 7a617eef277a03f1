// Times one computePackDigest call in this process (the library as a service embeds it) and
// prints {"ms": …}. Run by bench/digest/run.mjs, which adds the peak-RSS probe.
import { computePackDigest } from '../../packages/pack-digest/dist/index.js';

const start = process.hrtime.bigint();
const result = await computePackDigest(process.argv[2]);
const ms = Number(process.hrtime.bigint() - start) / 1e6;
process.stdout.write(
  `${JSON.stringify({ ms, digest: result.digest, files: result.entries.length })}\n`,
);
