// One install into the home argv[3] from the static store folder argv[2]; prints peak RSS.
import { installPack, openStore } from '../../packages/store-client/dist/index.js';

const [storeDir, home] = process.argv.slice(2);
const store = await openStore({ url: storeDir, env: {}, cacheDir: false });
await installPack(store, { type: 'pack', slug: 'bench-pack' }, { home, env: {} });
process.stdout.write(`maxRSS=${process.resourceUsage().maxRSS}\n`);
