// One verifyPack in a fresh process, as a service that imports the libraries pays it at start:
// import @packwarden/pack-signature and @packwarden/trust-root (built dist/ or argv[4], argv[5]),
// load the keys file argv[3], verify the pack argv[2]. Exits 1 unless it verified.
import { pathToFileURL } from 'node:url';

const [pack, keysFile, signature, trustRoot] = process.argv.slice(2);
const { verifyPack } = await import(
  signature ? pathToFileURL(signature).href : '../../packages/pack-signature/dist/index.js'
);
const { loadPackTrustRoot, selectTrustedKey } = await import(
  trustRoot ? pathToFileURL(trustRoot).href : '../../packages/trust-root/dist/index.js'
);
const root = await loadPackTrustRoot({ keysFile, env: {} });
const result = await verifyPack(pack, {
  selectKey: (kid, at) => selectTrustedKey(root, kid, { at }),
});
if (result.kind !== 'verified') {
  console.error(result.message);
  process.exitCode = 1;
}
