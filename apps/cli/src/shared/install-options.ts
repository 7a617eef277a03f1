import type { Command } from 'commander';
import { storeOption, type StoreFlags } from './store-options.js';
import { addTrustRootOptions, type TrustFlags } from './trust.js';

export type { StoreFlags } from './store-options.js';
export { storeOption } from './store-options.js';

export interface InstallFlags extends StoreFlags, TrustFlags {
  force?: boolean;
  allowDowngrade?: boolean;
  requireSigned?: boolean;
  to?: string;
  plainHttp?: boolean;
  lock?: string;
  frozen?: boolean;
}

export function installOptions(command: Command): Command {
  return addTrustRootOptions(
    storeOption(command)
      .option('--force', 'replace an installed version (or a non-empty --to folder)')
      .option(
        '--allow-downgrade',
        'install a version older than the installed current one (refused by default)',
      )
      .option(
        '--require-signed',
        'refuse a pack whose pack.sig does not verify (also PACKWARDEN_REQUIRE_SIGNED_PACK=1)',
      )
      .option('--plain-http', 'oci:// over plain HTTP (loopback registries only)')
      .option(
        '--lock <file>',
        'record what is installed in this lockfile (packwarden.lock); required with --frozen',
      )
      .option('--frozen', 'install exactly what the --lock file lists, refuse any change'),
  );
}
